"""Queue position and estimated start of queued jobs, for the jobs pages and the API.

Position is the 1-based rank of a queued job in its queue in admission order (priority
descending, then submission time, then id: the order Kueue's queue heads use). The estimated
start is a range (:func:`scheduling.admission.eta.estimate_queue_starts`) over the job's
resource group: its usable devices, the jobs holding devices there (their declared run time
from start) and every queued job of the group ahead of it (all queues: one admission cycle
serves the group), each asking the devices of :func:`scheduling.selectors.demand.job_demands`.
The first :data:`MAX_ESTIMATED` queued jobs of a group are estimated; later ones get none.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import F, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from scheduling.admission.eta import StartRange, estimate_queue_starts
from scheduling.choices import JobState
from scheduling.models import Job
from scheduling.selectors.allocation import device_loads, in_group
from scheduling.selectors.demand import PresentModels, job_demands
from tenants.models import ResourceGroup

__all__ = ["MAX_ESTIMATED", "QueueSlot", "queue_slots", "group_start_ranges"]

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


def queue_slots(jobs, now: datetime | None = None) -> dict[int, QueueSlot]:
    """``{job id: QueueSlot}`` for the queued jobs among ``jobs`` (one query for the
    positions, five more per resource group involved).

    Args:
        jobs: an iterable of Job instances (e.g. one page of a list).
        now: the current time (default: now).
    """
    now = now or timezone.now()
    wanted = {j.pk for j in jobs if j.state == JobState.QUEUED}
    if not wanted:
        return {}
    queue_ids = {j.queue_id for j in jobs if j.pk in wanted}
    ranked = (
        Job.objects.filter(state=JobState.QUEUED, queue_id__in=queue_ids)
        .annotate(
            pos=Window(RowNumber(), partition_by=[F("queue_id")], order_by=list(ADMISSION_ORDER))
        )
        .values_list("id", "queue__resource_group_id", "pos")
    )
    positions: dict[int, tuple[int, int]] = {}
    groups: set[int] = set()
    for job_id, group_id, pos in ranked:
        if job_id in wanted:
            positions[job_id] = (group_id, pos)
            groups.add(group_id)
    ranges: dict[int, StartRange | None] = defaultdict(lambda: None)
    models = PresentModels.present() if groups else None
    for group in ResourceGroup.objects.filter(pk__in=groups):
        ranges.update(group_start_ranges(group, now, models))
    return {job_id: QueueSlot(pos, ranges[job_id]) for job_id, (_g, pos) in positions.items()}
