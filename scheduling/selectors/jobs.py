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


ANOTHER_TENANT = "another tenant"
#: What a victim's tenant reads about a preemption by another tenant (never its name or job).
CROSS_TENANT_PREEMPTION_MESSAGE = (
    "capacity this job borrowed from the cohort was reclaimed for its owner"
)


def preemption_as_seen(preemption, *, platform_admin: bool) -> dict:
    """``{"preemptor", "preemptor_tenant", "message"}`` of a :class:`Preemption` row as the
    victim's tenant may see them: a preemptor of another tenant is anonymous (no job id,
    tenant name or message naming them); platform admins see everything."""
    cross = bool(preemption.preemptor_tenant) and (
        preemption.preemptor_tenant != preemption.victim_tenant)
    if cross and not platform_admin:
        return {"preemptor": None, "preemptor_tenant": ANOTHER_TENANT,
                "message": CROSS_TENANT_PREEMPTION_MESSAGE}
    return {"preemptor": preemption.preemptor_id, "preemptor_tenant":
            preemption.preemptor_tenant, "message": preemption.message}
