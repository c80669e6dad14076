"""Enqueue Celery tasks after the transaction that made them necessary commits, without ever
failing that (already committed) request when the broker is down.

A lost enqueue is not lost work: the beat ticks find it again from the database
(``admission_tick_task`` runs a cycle for every group with queued jobs,
``sweep_task`` re-submits placements left ``reserved``; see :mod:`scheduling.services.sweeper`).
"""

from __future__ import annotations

import logging

from django.db import transaction

logger = logging.getLogger(__name__)


def enqueue_after_commit(task, *args, countdown: float | None = None) -> None:
    """Publish ``task(*args)`` once the current transaction commits (at once outside one).

    A publishing error (broker unreachable after Celery's retry policy,
    ``CELERY_TASK_PUBLISH_RETRY_POLICY``) is logged as a warning and swallowed.
    """

    def publish() -> None:
        try:
            if countdown is None:
                task.delay(*args)
            else:
                task.apply_async(args, countdown=countdown)
        except Exception as exc:  # noqa: BLE001 - kombu/redis/OS errors alike; see docstring
            logger.warning("could not enqueue %s%r (%s); the beat sweep will redo it",
                           task.name, args, exc)

    transaction.on_commit(publish)
