"""Queue position and estimated start of queued jobs, for the jobs pages (bounded queries).

Position is the 1-based rank of a queued job in its queue in admission order (priority
descending, then submission time, then id: the order Kueue's queue heads use). The estimated
start applies :func:`scheduling.admission.eta.estimate_start` to the queue's admissions of the
last hour (None without enough history).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import F, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from scheduling.admission.eta import estimate_start
from scheduling.choices import JobState
from scheduling.models import Job

ETA_WINDOW_S = 3600.0


@dataclass(frozen=True)
class QueueSlot:
    """Where a queued job stands: ``position`` (1 = next) and ``eta`` (or None)."""

    position: int
    eta: datetime | None


def queue_slots(jobs, now: datetime | None = None) -> dict[int, QueueSlot]:
    """``{job id: QueueSlot}`` for the queued jobs among ``jobs`` (two queries).

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
        .annotate(pos=Window(RowNumber(), partition_by=[F("queue_id")],
                             order_by=[F("priority").desc(), F("created").asc(), F("id").asc()]))
        .values_list("id", "queue_id", "pos")
    )
    departures: dict[int, list[datetime]] = defaultdict(list)
    for queue_id, admitted in Job.objects.filter(
        queue_id__in=queue_ids, admitted_at__gte=now - timedelta(seconds=ETA_WINDOW_S)
    ).values_list("queue_id", "admitted_at"):
        departures[queue_id].append(admitted)
    out = {}
    for job_id, queue_id, pos in ranked:
        if job_id in wanted:
            out[job_id] = QueueSlot(pos, estimate_start(pos, departures[queue_id], now,
                                                        ETA_WINDOW_S))
    return out
