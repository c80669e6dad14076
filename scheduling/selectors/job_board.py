"""Queue position and estimated start of queued jobs, for the jobs pages and the API.

Position is the 1-based rank of a queued job in its queue in admission order (priority
descending, then submission time, then id: the order Kueue's queue heads use). The estimated
start is a range (:func:`scheduling.admission.eta.estimate_queue_starts`) over the job's
resource group: its usable devices, the jobs holding devices there (their declared run time
from start) and every queued job of the group ahead of it (all queues: one admission cycle
serves the group), each asking the devices of :func:`scheduling.selectors.demand.job_demands`.
The first :data:`MAX_ESTIMATED` queued jobs of a group are estimated; later ones get none.

The estimates need every device and every job holding devices in the group, so the gauges
beat task computes them (:func:`store_start_ranges`) and the jobs pages read them from the
cache: a page's cost does not grow with the inventory or the job history (issue #14).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.core.cache import cache
from django.db import connection
from django.db.models import F
from django.utils import timezone

from core.dispatch import CACHE_ERRORS
from scheduling.admission.eta import StartRange, estimate_queue_starts
from scheduling.choices import JobState
from scheduling.models import Job, Queue
from scheduling.selectors.allocation import device_loads, in_group
from scheduling.selectors.demand import PresentModels, job_demands
from tenants.models import ResourceGroup

__all__ = ["MAX_ESTIMATED", "QueueSlot", "queue_slots", "group_start_ranges", "store_start_ranges"]

#: Queued jobs per group given an estimate (the estimate is quadratic in the queue length).
MAX_ESTIMATED = 500
ADMISSION_ORDER = (F("priority").desc(), F("created").asc(), F("id").asc())


@dataclass(frozen=True)
class QueueSlot:
    """Where a queued job stands: ``position`` (1 = next in its queue) and ``eta`` (the start
    range, or None: asks more than the group has, or too far back in the queue)."""

    position: int
    eta: StartRange | None


def group_start_ranges(
    group: ResourceGroup, now: datetime, models: PresentModels | None = None
) -> dict[int, StartRange | None]:
    """``{job id: start range}`` of the first :data:`MAX_ESTIMATED` queued jobs of ``group``
    (module docstring). Five queries."""
    models = models or PresentModels.present()
    loads = device_loads()
    capacity = sum(1 for d in loads.values() if d.usable and in_group(d, group))
    holding = job_demands(
        Job.objects.filter(
            queue__resource_group=group, state__in=(JobState.ADMITTED, JobState.RUNNING)
        ).order_by("pk"),
        models,
    )
    started = dict(
        Job.objects.filter(pk__in=[d.job_id for d in holding]).values_list("pk", "started_at")
    )
    running = [
        (
            (started.get(d.job_id) or d.admitted_at or now) + timedelta(seconds=d.duration_s),
            d.devices,
        )
        for d in holding
    ]
    queued = job_demands(
        Job.objects.filter(queue__resource_group=group, state=JobState.QUEUED).order_by(
            *ADMISSION_ORDER
        )[:MAX_ESTIMATED],
        models,
    )
    ranges = estimate_queue_starts(
        now, capacity, running, [(d.devices, d.duration_s) for d in queued]
    )
    return {d.job_id: r for d, r in zip(queued, ranges, strict=True)}


#: Seconds a group's stored start ranges stay readable (the gauges task rewrites them every
#: ``TELEMETRY_GAUGES_S``, 30 s by default).
START_RANGES_TTL_S = 600


def _ranges_key(group_id: int) -> str:
    return f"job-board:start-ranges:{group_id}"


def store_start_ranges(now: datetime | None = None) -> int:
    """Compute :func:`group_start_ranges` of every resource group and keep them in the cache
    for the jobs pages (called by the gauges beat task, so no page request computes them).
    Returns the number of groups stored."""
    now = now or timezone.now()
    models = PresentModels.present()
    groups = list(ResourceGroup.objects.all())
    for group in groups:
        ranges = group_start_ranges(group, now, models)
        with contextlib.suppress(*CACHE_ERRORS):
            cache.set(_ranges_key(group.pk), ranges, START_RANGES_TTL_S)
    return len(groups)


def _start_ranges(
    group_ids: set[int], now: datetime, *, compute_missing: bool = True
) -> dict[int, StartRange | None]:
    """Start ranges of the queued jobs of these groups: the stored ones (one cache read);
    a group not stored (the gauges task has not run yet, or the cache is down) is computed
    now and stored, unless ``compute_missing`` is False (its jobs then have none). A job
    queued after the last store has none until the next one."""
    ranges: dict[int, StartRange | None] = {}
    try:
        stored = cache.get_many([_ranges_key(pk) for pk in group_ids])
    except CACHE_ERRORS:
        stored = {}
    missing = [pk for pk in group_ids if _ranges_key(pk) not in stored]
    for value in stored.values():
        ranges.update(value)
    if missing and compute_missing:
        models = PresentModels.present()
        for group in ResourceGroup.objects.filter(pk__in=missing):
            computed = group_start_ranges(group, now, models)
            ranges.update(computed)
            with contextlib.suppress(*CACHE_ERRORS):
                cache.set(_ranges_key(group.pk), computed, START_RANGES_TTL_S)
    return ranges


def _positions(wanted: set[int]) -> dict[int, tuple[int, int]]:
    """``{job id: (group id, position)}`` of the ``wanted`` queued jobs in one query: each
    position counts the queued jobs of its queue ahead of it in admission order (priority
    descending, then creation, then id) as three range counts on the ``(queue, state,
    priority, created)`` index, so the cost follows the page's jobs, not a scan of their
    queues."""
    job = connection.ops.quote_name(Job._meta.db_table)
    queue = connection.ops.quote_name(Queue._meta.db_table)
    ahead = f"SELECT COUNT(*) FROM {job} o WHERE o.queue_id = w.queue_id AND o.state = %s AND "  # noqa: S608
    sql = f"""
        SELECT w.id, q.resource_group_id, 1
            + ({ahead} o.priority > w.priority)
            + ({ahead} o.priority = w.priority AND o.created < w.created)
            + ({ahead} o.priority = w.priority AND o.created = w.created AND o.id < w.id)
        FROM {job} w JOIN {queue} q ON q.id = w.queue_id
        WHERE w.id = ANY(%s) AND w.state = %s
    """  # noqa: S608 - table names from the models, values as parameters
    with connection.cursor() as cursor:
        cursor.execute(sql, [*[JobState.QUEUED] * 3, sorted(wanted), JobState.QUEUED])
        return {job_id: (group_id, pos) for job_id, group_id, pos in cursor.fetchall()}


def queue_slots(
    jobs, now: datetime | None = None, *, fresh: bool = False, stored_only: bool = False
) -> dict[int, QueueSlot]:
    """``{job id: QueueSlot}`` for the queued jobs among ``jobs``: one query for the
    positions, one cache read for the start ranges the gauges task stored
    (:func:`store_start_ranges`), whatever the numbers of jobs and devices (a group not
    stored yet is computed now: five queries per group).

    Args:
        jobs: an iterable of Job instances (e.g. one page of a list).
        now: the current time (default: now).
        fresh: compute the start ranges now (five queries per group, reading every device
            and holding job of the group: one job's detail page and API answer), not the
            stored ones.
        stored_only: read the stored start ranges only (a group not stored yet gives its
            jobs none): exactly two round trips whatever the jobs (the API's lists).
    """
    now = now or timezone.now()
    jobs = list(jobs)
    wanted = {j.pk for j in jobs if j.state == JobState.QUEUED}
    if not wanted:
        return {}
    positions = _positions(wanted)
    groups = {g for g, _pos in positions.values()}
    if fresh:
        models = PresentModels.present()
        ranges: dict[int, StartRange | None] = {}
        for group in ResourceGroup.objects.filter(pk__in=groups):
            ranges.update(group_start_ranges(group, now, models))
    else:
        ranges = _start_ranges(groups, now, compute_missing=not stored_only)
    return {job_id: QueueSlot(pos, ranges.get(job_id)) for job_id, (_g, pos) in positions.items()}
