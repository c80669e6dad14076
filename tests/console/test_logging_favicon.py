"""Routine Celery chatter logs at WARNING once a worker or beat has set up its logging."""

import logging
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
