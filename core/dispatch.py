"""Enqueue Celery tasks by their registered name, after the current transaction commits.

A service must never import its app's ``tasks`` module: the tasks call the services, so the
two would import each other. Services call :func:`enqueue_on_commit` with a task-name
constant instead (each app keeps its names in one module, e.g. ``scheduling.dispatch``), and
the task runs only against rows that were committed (Saleor's ``call_event`` pattern).

Publishing never fails the (already committed) request: when the broker is down, the error is
logged and swallowed. A lost enqueue is not lost work: the beat ticks find it again from the
database (``admission_tick_task`` runs a cycle for every group with queued jobs, ``sweep_task``
re-submits placements left ``reserved``; see :mod:`scheduling.services.sweeper`).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from celery import current_app
from django.db import transaction
from redis.exceptions import RedisError

__all__ = ["enqueue_on_commit", "registered_task"]

logger = logging.getLogger(__name__)

CACHE_ERRORS = (RedisError, OSError)
"""What the Redis cache raises while it is unreachable (callers degrade instead of failing)."""
_import_lock = threading.Lock()


def registered_task(name: str) -> Any:
    """The task registered under ``name`` in the current Celery app.

    When ``name`` is not registered yet, every installed app's ``tasks`` module is imported
    first (Celery's autodiscovery, as a worker does at start-up).

    Raises:
        KeyError: no task has that name.
    """
    app = current_app
    if name not in app.tasks:
        # One thread imports: Celery marks the modules imported before importing them, so a
        # second request thread would look the task up half-way (gunicorn --threads).
        with _import_lock:
            if name not in app.tasks:
                app.loader.import_default_modules()
    return app.tasks[name]


def enqueue_on_commit(name: str, *args: Any, countdown: float | None = None) -> None:
    """Send task ``name`` with positional ``args`` once the current transaction commits (at
    once outside a transaction); ``countdown`` delays it by that many seconds.

    Sent through the task object (``delay`` / ``apply_async``), so ``task_always_eager`` runs
    it in-process. A publishing error (broker unreachable after Celery's retry policy,
    ``CELERY_TASK_PUBLISH_RETRY_POLICY``) is logged as a warning and swallowed.
    """

    transaction.on_commit(lambda: send_task(name, *args, countdown=countdown))


def send_task(name: str, *args: Any, countdown: float | None = None) -> bool:
    """Send task ``name`` now; a publishing error is logged as a warning and swallowed (the
    beat sweeps redo what was lost). Returns whether it was sent."""
    task = registered_task(name)
    try:
        if countdown is None:
            task.delay(*args)
        else:
            task.apply_async(args, countdown=countdown)
    except Exception as exc:  # noqa: BLE001 - kombu/redis/OS errors alike; see docstring
        logger.warning("could not enqueue %s%r (%s); the beat sweep will redo it", name, args, exc)
        return False
    return True
