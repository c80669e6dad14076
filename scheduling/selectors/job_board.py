"""Queue position and estimated start of queued jobs, for the jobs pages and the API.

Position is the 1-based rank of a queued job in its queue in admission order (priority
descending, then submission time, then id: the order Kueue's queue heads use). The estimated
start is a range (:func:`scheduling.admission.eta.estimate_queue_starts`) over the job's
resource group: its usable devices, the jobs holding devices there (their declared run time
from start) and every queued job of the group ahead of it (all queues: one admission cycle
serves the group), each asking the devices of :func:`scheduling.selectors.demand.job_demands`.
A gang under a ``required`` topology starts no earlier than one domain of its level has its
devices free (:func:`scheduling.selectors.topology_eta.required_domain_starts`).
The first :data:`MAX_ESTIMATED` queued jobs of a group are estimated; later ones get none.

What the pages and the API show is that range made honest
(:func:`scheduling.admission.eta.honest_estimate`): widened per time the job was passed over
or preempted, ``overdue`` once the first window recorded for it
(:class:`scheduling.models.JobStartEstimate`) has passed, ``unknown`` with a reason when it
cannot be bounded.

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
from scheduling.admission.eta import (
    HonestEstimate,
    StartRange,
    UnknownReason,
    WaitHistory,
    estimate_queue_starts,
    honest_estimate,
    quota_unbounded,
)
from scheduling.admission.eta_domains import narrow_to_domain
from scheduling.choices import JobState
from scheduling.models import Job, JobStartEstimate, Queue
from scheduling.selectors.allocation import device_loads, in_group
from scheduling.selectors.demand import PresentModels, job_demands
from scheduling.selectors.topology_eta import required_domain_starts
from tenants.models import ResourceGroup

__all__ = [
    "MAX_ESTIMATED",
    "GroupRanges",
    "QueueSlot",
    "queue_slots",
    "group_start_ranges",
    "store_start_ranges",
]

#: Queued jobs per group given an estimate (the estimate is quadratic in the queue length).
MAX_ESTIMATED = 500
ADMISSION_ORDER = (F("priority").desc(), F("created").asc(), F("id").asc())


@dataclass(frozen=True)
class QueueSlot:
    """Where a queued job stands: ``position`` (1 = next in its queue), ``eta`` (the computed
    start range, or None: asks more than the group has, or too far back in the queue) and
    ``estimate`` (what the user is told: :func:`scheduling.admission.eta.honest_estimate`,
    with its state and confidence)."""

    position: int
    eta: StartRange | None
    estimate: HonestEstimate


@dataclass(frozen=True)
class GroupRanges:
    """The start ranges of one group's first :data:`MAX_ESTIMATED` queued jobs, what is
    stored for the jobs pages.

    Attributes:
        ranges: ``{job id: start range or None}``.
        step_s: widening step (s): the mean declared run time of the jobs holding devices in
            the group (at least :data:`MIN_STEP_S`).
        unbounded: queued jobs whose quota no job end frees
            (:func:`scheduling.admission.eta.quota_unbounded`).
        heads: ``{queue id: job id}`` of the job at position 1 of each queue.
    """

    ranges: dict[int, StartRange | None]
    step_s: float
    unbounded: frozenset[int]
    heads: dict[int, int]


#: Widening step floor (s) of a group without running jobs.
MIN_STEP_S = 60.0


def group_start_ranges(
    group: ResourceGroup, now: datetime, models: PresentModels | None = None
) -> GroupRanges:
    """:class:`GroupRanges` of the first :data:`MAX_ESTIMATED` queued jobs of ``group``
    (module docstring). Six queries; for a group with a topology up to four more
    (:func:`~scheduling.selectors.topology_eta.required_domain_starts`)."""
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
    ends = {
        d.job_id: (started.get(d.job_id) or d.admitted_at or now) + timedelta(seconds=d.duration_s)
        for d in holding
    }
    running = [(ends[d.job_id], d.devices) for d in holding]
    queued_jobs = Job.objects.filter(queue__resource_group=group, state=JobState.QUEUED).order_by(
        *ADMISSION_ORDER
    )[:MAX_ESTIMATED]
    queued = job_demands(queued_jobs, models)
    ranges = estimate_queue_starts(
        now, capacity, running, [(d.devices, d.duration_s) for d in queued]
    )
    # a gang under a required topology waits for one domain with room (issue 31)
    domain_starts = required_domain_starts(group, now, loads, holding, ends, queued)
    ranges = [
        narrow_to_domain(r, domain_starts[d.job_id]) if d.job_id in domain_starts else r
        for d, r in zip(queued, ranges, strict=True)
    ]
    holders = {d.tenant_id for d in holding}
    unbounded, heads = set(), {}
    for pk, queue_id, tenant_id, causes in queued_jobs.values_list(
        "pk", "queue_id", "tenant_id", "pending_causes"
    ):
        heads.setdefault(queue_id, pk)
        if quota_unbounded(causes[0] if causes else None, tenant_id in holders):
            unbounded.add(pk)
    durations = [d.duration_s for d in holding]
    return GroupRanges(
        {d.job_id: r for d, r in zip(queued, ranges, strict=True)},
        max(MIN_STEP_S, sum(durations) / len(durations)) if durations else MIN_STEP_S,
        frozenset(unbounded),
        heads,
    )


#: Seconds a group's stored start ranges stay readable (the gauges task rewrites them every
#: ``TELEMETRY_GAUGES_S``, 30 s by default).
START_RANGES_TTL_S = 600


def _ranges_key(group_id: int) -> str:
    return f"job-board:start-ranges:{group_id}"


def store_start_ranges(now: datetime | None = None) -> dict[int, GroupRanges]:
    """Compute :func:`group_start_ranges` of every resource group and keep them in the cache
    for the jobs pages (called by the gauges beat task, so no page request computes them).
    Returns ``{group id: GroupRanges}`` (what
    :func:`scheduling.services.estimates.record_start_estimates` records)."""
    now = now or timezone.now()
    models = PresentModels.present()
    out = {}
    for group in ResourceGroup.objects.all():
        out[group.pk] = group_start_ranges(group, now, models)
        with contextlib.suppress(*CACHE_ERRORS):
            cache.set(_ranges_key(group.pk), out[group.pk], START_RANGES_TTL_S)
    return out


def _start_ranges(
    group_ids: set[int], now: datetime, *, compute_missing: bool = True
) -> dict[int, GroupRanges]:
    """``{group id: GroupRanges}`` of these groups: the stored ones (one cache read); a group
    not stored (the gauges task has not run yet, or the cache is down) is computed now and
    stored, unless ``compute_missing`` is False (its jobs then have none). A job queued after
    the last store has none until the next one."""
    try:
        stored = cache.get_many([_ranges_key(pk) for pk in group_ids])
    except CACHE_ERRORS:
        stored = {}
    out = {
        pk: stored[_ranges_key(pk)]
        for pk in group_ids
        if isinstance(stored.get(_ranges_key(pk)), GroupRanges)
    }
    missing = [pk for pk in group_ids if pk not in out]
    if missing and compute_missing:
        models = PresentModels.present()
        for group in ResourceGroup.objects.filter(pk__in=missing):
            out[group.pk] = group_start_ranges(group, now, models)
            with contextlib.suppress(*CACHE_ERRORS):
                cache.set(_ranges_key(group.pk), out[group.pk], START_RANGES_TTL_S)
    return out


@dataclass(frozen=True)
class _Standing:
    """One queued job's row of :func:`_positions`."""

    group_id: int
    position: int
    history: WaitHistory


def _positions(wanted: set[int]) -> dict[int, _Standing]:
    """``{job id: _Standing}`` of the ``wanted`` queued jobs in one query: each position
    counts the queued jobs of its queue ahead of it in admission order (priority descending,
    then creation, then id) as three range counts on the ``(queue, state, priority,
    created)`` index, so the cost follows the page's jobs, not a scan of their queues; the
    job's preemptions and its first estimate (:class:`scheduling.models.JobStartEstimate`)
    come with it."""
    job = connection.ops.quote_name(Job._meta.db_table)
    queue = connection.ops.quote_name(Queue._meta.db_table)
    est = connection.ops.quote_name(JobStartEstimate._meta.db_table)
    ahead = f"SELECT COUNT(*) FROM {job} o WHERE o.queue_id = w.queue_id AND o.state = %s AND "  # noqa: S608
    sql = f"""
        SELECT w.id, q.resource_group_id, 1
            + ({ahead} o.priority > w.priority)
            + ({ahead} o.priority = w.priority AND o.created < w.created)
            + ({ahead} o.priority = w.priority AND o.created = w.created AND o.id < w.id),
            w.preemption_count, e.earliest, e.latest, e.passed_over, e.started_at
        FROM {job} w JOIN {queue} q ON q.id = w.queue_id LEFT JOIN {est} e ON e.job_id = w.id
        WHERE w.id = ANY(%s) AND w.state = %s
    """  # noqa: S608 - table names from the models, values as parameters
    with connection.cursor() as cursor:
        cursor.execute(sql, [*[JobState.QUEUED] * 3, sorted(wanted), JobState.QUEUED])
        rows = cursor.fetchall()
    return {
        job_id: _Standing(
            group_id,
            pos,
            WaitHistory(
                preemptions,
                passed or 0,
                StartRange(earliest, latest) if earliest is not None else None,
                started is not None,
            ),
        )
        for job_id, group_id, pos, preemptions, earliest, latest, passed, started in rows
    }


def _slot(job_id: int, standing: _Standing, group: GroupRanges | None, now: datetime) -> QueueSlot:
    """The :class:`QueueSlot` of one queued job from its group's ranges (None: not stored)."""
    unknown = None
    if group is None or job_id not in group.ranges:
        unknown = UnknownReason.NOT_ESTIMATED
    elif job_id in group.unbounded:
        unknown = UnknownReason.WAITS_FOR_QUOTA
    computed = group.ranges.get(job_id) if group is not None else None
    estimate = honest_estimate(
        now,
        computed,
        standing.history,
        step_s=group.step_s if group is not None else MIN_STEP_S,
        unknown=unknown,
    )
    return QueueSlot(standing.position, computed, estimate)


def queue_slots(
    jobs, now: datetime | None = None, *, fresh: bool = False, stored_only: bool = False
) -> dict[int, QueueSlot]:
    """``{job id: QueueSlot}`` for the queued jobs among ``jobs``: one query for the
    positions (with each job's preemptions and first estimate), one cache read for the start
    ranges the gauges task stored (:func:`store_start_ranges`), whatever the numbers of jobs
    and devices (a group not stored yet is computed now: six queries per group).

    Args:
        jobs: an iterable of Job instances (e.g. one page of a list).
        now: the current time (default: now).
        fresh: compute the start ranges now (six queries per group, reading every device
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
    groups = {s.group_id for s in positions.values()}
    if fresh:
        models = PresentModels.present()
        by_group = {
            group.pk: group_start_ranges(group, now, models)
            for group in ResourceGroup.objects.filter(pk__in=groups)
        }
    else:
        by_group = _start_ranges(groups, now, compute_missing=not stored_only)
    return {
        job_id: _slot(job_id, standing, by_group.get(standing.group_id), now)
        for job_id, standing in positions.items()
    }
