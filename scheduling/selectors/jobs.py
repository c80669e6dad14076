"""Read side of jobs: queue position and estimated start of a queued job."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import Q

from scheduling.admission import estimate_start
from scheduling.choices import JobState
from scheduling.models import Job

ETA_WINDOW_S = 3600.0


def queue_position(job: Job) -> int | None:
    """1-based position of a queued job among the queued jobs of its queue, in admission
    order (priority desc, then submission time, then id); None when not queued."""
    if job.state != JobState.QUEUED:
        return None
    ahead = Job.objects.filter(queue_id=job.queue_id, state=JobState.QUEUED).filter(
        Q(priority__gt=job.priority)
        | Q(priority=job.priority, created__lt=job.created)
        | Q(priority=job.priority, created=job.created, pk__lt=job.pk)
    ).count()
    return ahead + 1


def queue_departures(queue_id: int, now: datetime, window_s: float = ETA_WINDOW_S
                     ) -> list[datetime]:
    """Admission times of the queue's jobs within ``window_s`` before ``now`` (the observed
    drain of the queue)."""
    since = now - timedelta(seconds=window_s)
    return list(
        Job.objects.filter(queue_id=queue_id, admitted_at__gte=since, admitted_at__lte=now)
        .values_list("admitted_at", flat=True)
    )


def job_estimated_start(job: Job, position: int | None, now: datetime) -> datetime | None:
    """Estimated start of a queued job: ``now + position / drain rate`` of its queue over the
    last hour (:func:`scheduling.admission.estimate_start`); None without enough history or
    when the job is not queued."""
    if position is None:
        return None
    return estimate_start(position, queue_departures(job.queue_id, now), now,
                          window_s=ETA_WINDOW_S)
