"""Issue 29: Celery delivery settings. Tasks are acknowledged after they ran and put back when
their pool process dies; every task has a time limit; the Redis broker's visibility timeout
(a message unacknowledged that long is delivered again) covers the longest a message stays
unacknowledged - its longest countdown (a retry's backoff) plus its run time - and no more,
so a task lost with its worker is redelivered after minutes, not Kombu's default hour."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys

import pytest
from django.apps import apps
from django.conf import settings

from console.celery import app

KOMBU_DEFAULT_VISIBILITY_S = 3600


@pytest.fixture(scope="module")
def tasks():
    """The console's registered tasks (Celery's built-ins left out): every installed app's
    ``tasks`` module imported, as the worker's autodiscovery does (not through
    ``app.loader.import_default_modules``, whose Django fix-up runs ``django.setup()`` again
    and so configures logging a second time for the rest of the test session)."""
    for config in apps.get_app_configs():
        if importlib.util.find_spec(f"{config.name}.tasks"):
            importlib.import_module(f"{config.name}.tasks")
    found = {name: t for name, t in app.tasks.items() if not name.startswith("celery.")}
    assert len(found) > 20
    return found


def _visibility_s() -> float:
    return app.conf.broker_transport_options["visibility_timeout"]


def test_every_task_is_acked_late_and_requeued_when_its_process_is_lost(tasks):
    assert app.conf.task_reject_on_worker_lost is True
    assert {name for name, t in tasks.items() if not t.acks_late} == set()


def test_every_task_has_a_time_limit_within_the_visibility_timeout(tasks):
    """A task running past the visibility timeout would be delivered to a second worker while
    the first still runs it; so would one waiting out its retry countdown."""
    countdown = settings.CELERY_LONGEST_COUNTDOWN_S
    limits = {name: t.time_limit or app.conf.task_time_limit for name, t in tasks.items()}
    assert {name for name, limit in limits.items() if not limit} == set()
    too_long = {n: s for n, s in limits.items() if countdown + s >= _visibility_s()}
    assert too_long == {}


def test_the_longest_countdowns_are_within_the_bound():
    """The retries that wait: a submission's autoretry backoff and a notification's."""
    from scheduling.tasks import submit_jobs_task

    assert submit_jobs_task.retry_backoff_max <= settings.CELERY_LONGEST_COUNTDOWN_S
    assert settings.NOTIFY_BACKOFF_MAX_S <= settings.CELERY_LONGEST_COUNTDOWN_S


def test_visibility_timeout_follows_the_configured_limits():
    """Defaults: 600 s countdown + 600 s run + 60 s margin; a longer time limit (environment)
    moves it along."""
    assert _visibility_s() == 1260 < KOMBU_DEFAULT_VISIBILITY_S
    script = (
        "import json, django; django.setup(); from django.conf import settings as s; "
        "print(json.dumps([s.CELERY_TASK_TIME_LIMIT, "
        "s.CELERY_BROKER_TRANSPORT_OPTIONS['visibility_timeout']]))"
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "console.settings.base",
        "DATABASE_URL": "postgres://unused@127.0.0.1:1/unused",
        "REDIS_URL": "redis://127.0.0.1:1/0",
        "SECRET_KEY": "celery-delivery-test-only",
        "CELERY_TASK_TIME_LIMIT_S": "1800",
    }
    out = subprocess.run(  # noqa: S603 - this interpreter, a fixed script
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [1800, 600 + 1800 + 60]
