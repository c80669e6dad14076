"""Kueue-style inadmissible set of a resource group (Kueue ``pkg/queue`` keeps workloads that
did not fit in ``inadmissibleWorkloads`` and moves them back to the heap only on events that
can change the answer; ``QueueInadmissibleWorkloads``).

A queued job of a ``BestEffortFIFO`` queue whose verdict was "does not fit" (quota —
``WaitingForQuota`` / ``ExceedsMaxQuota`` — or placement — ``Unschedulable``) is not examined
again by later cycles of its group until one of these happened after it was set aside:

- capacity was freed: a placement of any group ended (the group's nodes may be shared);
- a quota of the group changed, or a device, device model or node anywhere changed (health,
  cordon, new devices, a model's config fixed, node labels);
- a cycle of the group preempted victims (capacity moved between jobs: a higher head was
  admitted by preemption);
- the set expired (``ADMISSION_IDLE_RECHECK_S``: a safety net against an event missed).

Then the whole set is released at once (Kueue requeues all inadmissible workloads of the
cohort on such events). ``StrictFIFO`` jobs are never set aside: a blocked head must keep
blocking the jobs behind it; nor are the jobs of a group with starvation protection
(``reservation_after_s``): its reservation is elected among the pending heads. Jobs merely
``BlockedByHead`` are not set aside either.

Storage: one cache entry per group (Redis in production), ``{"since": epoch seconds of the
oldest entry, "ids": [job ids]}``; the "changed since" test is five ``EXISTS`` queries, run
once per cycle while the set is not empty.
"""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime

from django.conf import settings
from django.core.cache import cache

from core.dispatch import CACHE_ERRORS
from scheduling.admission import CycleResult, PendingCode
from scheduling.choices import QueueStrategy
from scheduling.models import Device, DeviceModel, Job, Node, Placement
from tenants.models import Quota, ResourceGroup

#: Verdict codes that set a job aside.
INADMISSIBLE_CODES = frozenset(
    {PendingCode.WAITING_FOR_QUOTA, PendingCode.EXCEEDS_MAX_QUOTA, PendingCode.UNSCHEDULABLE}
)


def _key(group_id: int) -> str:
    return f"admission:inadmissible:{group_id}"


def _changed_since(group_id: int, since: datetime) -> bool:
    return (
        Placement.objects.filter(ended_at__gt=since).exists()
        or Quota.objects.filter(resource_group_id=group_id, updated__gt=since).exists()
        or Device.objects.filter(updated__gt=since).exists()
        or DeviceModel.objects.filter(updated__gt=since).exists()
        or Node.objects.filter(updated__gt=since).exists()
    )


def inadmissible_ids(group_id: int) -> set[int]:
    """Ids of the group's jobs set aside (empty, and the set released, when something that can
    change their answer happened since the oldest was set aside). Without the cache (Redis
    down) nothing is set aside: every head is examined."""
    try:
        entry = cache.get(_key(group_id))
    except CACHE_ERRORS:
        return set()
    if not entry:
        return set()
    if _changed_since(group_id, datetime.fromtimestamp(entry["since"], tz=UTC)):
        release(group_id)
        return set()
    return set(entry["ids"])


def release(group_id: int) -> None:
    """Put every set-aside job of the group back (the next cycle examines them)."""
    with contextlib.suppress(*CACHE_ERRORS):  # unreadable: the entry expires by itself
        cache.delete(_key(group_id))


def set_aside(
    group_id: int, result: CycleResult, jobs: dict[str, Job], cycle_started: datetime
) -> int:
    """Set aside the jobs of ``result`` that did not fit (module docstring rule).

    Args:
        group_id: the group.
        result: the admission core's result of the cycle.
        jobs: ``{workload id: Job}`` of the cycle's heads (``queue`` loaded).
        cycle_started: the cycle's start time (the snapshot's time): events after it release
            the set.

    Returns:
        The number of jobs newly set aside.
    """
    if (
        result.preempted
        or ResourceGroup.objects.filter(pk=group_id, reservation_after_s__isnull=False).exists()
    ):
        release(group_id)  # starvation protection must see its pending heads age
        return 0
    ids = []
    for verdict in result.pending:
        job = jobs.get(verdict.workload_id)
        if (
            job is not None
            and verdict.code in INADMISSIBLE_CODES
            and job.queue.strategy == QueueStrategy.BEST_EFFORT_FIFO
        ):
            ids.append(job.pk)
    if not ids:
        return 0
    try:
        entry = cache.get(_key(group_id)) or {"since": cycle_started.timestamp(), "ids": []}
        known = set(entry["ids"])
        new = [pk for pk in ids if pk not in known]
        entry["ids"] = sorted(known | set(new))
        entry["since"] = min(entry["since"], cycle_started.timestamp())
        cache.set(_key(group_id), entry, timeout=settings.ADMISSION_IDLE_RECHECK_S)
    except CACHE_ERRORS:  # an optimisation only: the next cycle examines them again
        return 0
    return len(new)
