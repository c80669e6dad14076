"""Celery application (Django pattern: settings under ``CELERY_``, tasks autodiscovered)."""

import logging
import os

from celery import Celery
from celery.signals import after_setup_logger, worker_init, worker_process_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings.base")

app = Celery("console")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# The default for every thread: Celery's current app is thread-local, and a request served in
# a gunicorn thread would otherwise enqueue through an empty default app (NotRegistered).
app.set_default()


@after_setup_logger.connect
def _routine_loggers_quiet(**_kwargs) -> None:
    """Re-apply the levels of ``LOGGING["loggers"]`` (routine task chatter at WARNING) after
    the worker or beat set up logging from its ``--loglevel``."""
    from django.conf import settings  # noqa: PLC0415 - settings after Django set-up

    for name, config in settings.LOGGING.get("loggers", {}).items():
        if "level" in config:
            logging.getLogger(name).setLevel(config["level"])


@worker_init.connect
@worker_process_init.connect
def _tune_gc(**_kwargs) -> None:
    """The worker (before its pool forks, so a solo pool has them too) and each pool
    process: the garbage-collector thresholds of :mod:`core.gc_tuning`."""
    from core.gc_tuning import tune_gc  # noqa: PLC0415 - Django is set up by now

    tune_gc()
