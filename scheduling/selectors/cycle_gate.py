"""Whether a resource group's admission cycle has anything new to decide.

A cycle that admits and preempts nothing while jobs stay pending marks its group blocked
(in the cache, for at most ``ADMISSION_IDLE_RECHECK_S``, or until the next time the cycle
said something changes by itself: a starvation reservation's expected start or expiry). The
beat tick then skips the group until something that can change the outcome happened after
that cycle started: a job queued in the group, a placement ended anywhere (capacity freed,
a terminating victim gone), a quota row of the group changed or was deleted, a queue, a
priority class, a tenant (fair-share weight) or the group itself (cohort options) changed,
a device changed, a per-user limit or a budget changed (or a budget was found spent or no
longer spent, :func:`tenants.services.record_budget_state`), or the mark expired.
Explicit triggers (a job arriving, capacity freed by a reconcile, a cancel) always run a
cycle.

The marks are an optimisation: while the cache (Redis) is unreachable nothing is marked and
every group counts as needing a cycle.
"""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime

from django.conf import settings
from django.core.cache import cache

from core.dispatch import CACHE_ERRORS
from scheduling.choices import JobState
from scheduling.models import Device, Job, Placement, PriorityClass, Queue
from tenants.models import Budget, Quota, ResourceGroup, Tenant, UserLimit


def _key(group_id: int) -> str:
    return f"admission:blocked:{group_id}"


def mark_blocked(group_id: int, cycle_started: datetime, wake_at: datetime | None = None) -> None:
    """Remember that the cycle started at ``cycle_started`` left every head pending, until
    ``wake_at`` at the latest (and never longer than ``ADMISSION_IDLE_RECHECK_S``)."""
    timeout = float(settings.ADMISSION_IDLE_RECHECK_S)
    if wake_at is not None:
        timeout = max(1.0, min(timeout, (wake_at - cycle_started).total_seconds()))
    quotas = Quota.objects.filter(resource_group_id=group_id).count()
    with contextlib.suppress(*CACHE_ERRORS):  # unmarked: the next tick runs the cycle again
        cache.set(_key(group_id), (cycle_started.timestamp(), quotas), timeout=timeout)


def clear_blocked(group_id: int) -> None:
    """Forget the mark (the group's last cycle changed something)."""
    with contextlib.suppress(*CACHE_ERRORS):  # a stale mark expires by itself
        cache.delete(_key(group_id))


def needs_cycle(group_id: int) -> bool:
    """True unless the group is marked blocked and nothing relevant changed since."""
    try:
        mark = cache.get(_key(group_id))
    except CACHE_ERRORS:
        return True
    if mark is None:
        return True
    stamp, quota_rows = mark if isinstance(mark, tuple | list) else (mark, None)
    since = datetime.fromtimestamp(stamp, tz=UTC)
    quotas = Quota.objects.filter(resource_group_id=group_id)
    return (
        Job.objects.filter(
            queue__resource_group_id=group_id, state=JobState.QUEUED, created__gt=since
        ).exists()
        or Placement.objects.filter(ended_at__gt=since).exists()
        or quotas.filter(updated__gt=since).exists()
        or (quota_rows is not None and quotas.count() != quota_rows)
        or Queue.objects.filter(resource_group_id=group_id, updated__gt=since).exists()
        or PriorityClass.objects.filter(updated__gt=since).exists()
        or Tenant.objects.filter(updated__gt=since).exists()
        or ResourceGroup.objects.filter(pk=group_id, updated__gt=since).exists()
        or Device.objects.filter(updated__gt=since).exists()
        or UserLimit.objects.filter(updated__gt=since).exists()
        or Budget.objects.filter(updated__gt=since).exists()
    )
