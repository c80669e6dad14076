"""Routine Celery chatter logs at WARNING once a worker or beat has set up its logging; no
start-up banner of django-axes."""

import logging
import os
import subprocess
import sys
from pathlib import Path

from django.contrib.staticfiles import finders

from console.celery import app


def test_routine_task_logs_at_warning_after_worker_logging_setup():
    names = ("celery.app.trace", "celery.worker.strategy", "celery.beat")
    for name in names:
        logging.getLogger(name).setLevel(logging.NOTSET)  # as if celery had reset them
    app.log.setup(loglevel="INFO")  # what `celery worker --loglevel INFO` does
    for name in names:
        logger = logging.getLogger(name)
        assert logger.getEffectiveLevel() == logging.WARNING, name
        assert not logger.isEnabledFor(logging.INFO)
    assert logging.getLogger("scheduling.services.cycle").isEnabledFor(logging.INFO)


def test_favicon_linked_and_served(client, db):
    page = client.get("/accounts/login/").content.decode()
    assert 'rel="icon" type="image/svg+xml"' in page and "console/favicon.svg" in page
    redirect = client.get("/favicon.ico")
    assert redirect.status_code == 301 and redirect["Location"].endswith("console/favicon.svg")
    assert "<svg" in Path(finders.find("console/favicon.svg")).read_text()


def test_a_manage_py_command_prints_no_axes_banner():
    """django-axes logs "AXES: BEGIN version ..." at INFO on every start unless
    ``AXES_VERBOSE`` is off (its documented setting); ``manage.py check`` needs no server."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "console.settings.base",
        "DATABASE_URL": "postgres://check@127.0.0.1:1/check",
        "REDIS_URL": "redis://127.0.0.1:1/0",
        "LOG_LEVEL": "INFO",
    }
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(  # noqa: S603 - fixed argv
        [sys.executable, "manage.py", "check"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "System check identified no issues" in done.stdout
    assert "AXES" not in done.stdout + done.stderr
