"""Whether a resource group's admission cycle has anything new to decide.

A cycle that admits and preempts nothing while jobs stay pending marks its group blocked
(in the cache, for at most ``ADMISSION_IDLE_RECHECK_S``). The beat tick then skips the group
until something that can change the outcome happened after that cycle started: a job queued
in the group, a placement ended anywhere (capacity freed), a quota of the group or a device
changed, or the mark expired. Explicit triggers (a job arriving, capacity freed by a
reconcile, a cancel) always run a cycle.

The marks are an optimisation: while the cache (Redis) is unreachable nothing is marked and
every group counts as needing a cycle.
"""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime

from django.conf import settings
from django.core.cache import cache
from redis.exceptions import RedisError

from scheduling.choices import JobState
from scheduling.models import Device, Job, Placement
from tenants.models import Quota

CACHE_ERRORS = (RedisError, OSError)


def _key(group_id: int) -> str:
    return f"admission:blocked:{group_id}"


def mark_blocked(group_id: int, cycle_started: datetime) -> None:
    """Remember that the cycle started at ``cycle_started`` left every head pending."""
    with contextlib.suppress(*CACHE_ERRORS):  # unmarked: the next tick runs the cycle again
        cache.set(_key(group_id), cycle_started.timestamp(),
                  timeout=settings.ADMISSION_IDLE_RECHECK_S)


def clear_blocked(group_id: int) -> None:
    """Forget the mark (the group's last cycle changed something)."""
    with contextlib.suppress(*CACHE_ERRORS):  # a stale mark expires by itself
        cache.delete(_key(group_id))


def needs_cycle(group_id: int) -> bool:
    """True unless the group is marked blocked and nothing relevant changed since."""
    try:
        stamp = cache.get(_key(group_id))
    except CACHE_ERRORS:
        return True
    if stamp is None:
        return True
    since = datetime.fromtimestamp(stamp, tz=UTC)
    return (
        Job.objects.filter(
            queue__resource_group_id=group_id, state=JobState.QUEUED, created__gt=since
        ).exists()
        or Placement.objects.filter(ended_at__gt=since).exists()
        or Quota.objects.filter(resource_group_id=group_id, updated__gt=since).exists()
        or Device.objects.filter(updated__gt=since).exists()
    )
