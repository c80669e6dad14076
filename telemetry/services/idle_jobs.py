"""Idle jobs: flag running jobs whose devices sat idle longer than the threshold."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from core.events import JOB_IDLE, emit
from scheduling.choices import BOOKED_PLACEMENT_STATES, JobState
from scheduling.models import Job, PlacementDevice
from telemetry import conf
from telemetry.efficiency import idle_since
from telemetry.exporters import POD_UTIL, UTIL
from telemetry.models import IdleJobFlag, Rollup
from telemetry.services.rollups import MINUTE, floor_time

__all__ = ["flag_idle_jobs", "job_minute_use"]


def job_minute_use(
    job_ids: Sequence[int], start: datetime, end: datetime
) -> dict[int, list[tuple[datetime, float]]]:
    """Per job, ``(minute, used cores percent summed over devices)`` from 1-minute rollups
    (pod-scope utilisation preferred over device-scope per device and minute)."""
    rows = Rollup.objects.filter(
        resolution_s=MINUTE,
        job_id__in=list(job_ids),
        metric__in=[POD_UTIL, UTIL],
        bucket__gte=start,
        bucket__lt=end,
    ).values_list("job_id", "bucket", "device_id", "metric", "total", "count")
    per: dict[tuple[int, datetime, int], dict[str, float]] = defaultdict(dict)
    for job_id, bucket, device_id, metric, total, count in rows:
        per[(job_id, bucket, device_id)][metric] = total / count if count else 0.0
    minutes: dict[tuple[int, datetime], float] = defaultdict(float)
    for (job_id, bucket, _device), values in per.items():
        minutes[(job_id, bucket)] += values.get(POD_UTIL, values.get(UTIL, 0.0))
    out: dict[int, list[tuple[datetime, float]]] = defaultdict(list)
    for (job_id, bucket), used in sorted(minutes.items()):
        out[job_id].append((bucket, used))
    return out


def _announce_idle(flag: IdleJobFlag) -> None:
    """``job.idle`` for a newly flagged job's tenant and submitter (once per flag)."""
    job = Job.objects.only("name", "submitted_by_id").get(pk=flag.job_id)
    emit(
        JOB_IDLE,
        tenant_id=flag.tenant_id,
        user_id=job.submitted_by_id,
        payload={
            "job": flag.job_id,
            "job_name": job.name,
            "idle_since": flag.idle_since.isoformat(),
            "used_cores_percent": round(flag.used_cores_percent, 1),
            "allocated_cores_percent": flag.allocated_cores_percent,
        },
    )


def flag_idle_jobs(*, now: datetime | None = None) -> list[int]:
    """Flag running jobs whose devices sat idle longer than ``TELEMETRY_IDLE_AFTER_S``
    (use below ``TELEMETRY_IDLE_THRESHOLD_PERCENT`` cores %); unflag the others.

    Returns:
        Ids of the jobs flagged now (new or still idle).
    """
    now = now or timezone.now()
    window = timedelta(seconds=conf.get("TELEMETRY_IDLE_AFTER_S"))
    threshold = float(conf.get("TELEMETRY_IDLE_THRESHOLD_PERCENT"))
    end = floor_time(now, MINUTE)
    running = dict(Job.objects.filter(state=JobState.RUNNING).values_list("pk", "tenant_id"))
    use = job_minute_use(list(running), end - window - timedelta(minutes=5), end)
    allocated = dict(
        PlacementDevice.objects.filter(
            placement__job_id__in=list(running), placement__state__in=BOOKED_PLACEMENT_STATES
        )
        .values("placement__job_id")
        .annotate(c=Sum("cores_percent"))
        .values_list("placement__job_id", "c")
    )
    flagged = []
    already = set(IdleJobFlag.objects.values_list("job_id", flat=True))
    with transaction.atomic():
        for job_id, minutes in sorted(use.items()):
            since = idle_since(minutes, end, threshold_percent=threshold, window=window)
            if since is None:
                continue
            flagged.append(job_id)
            recent = [u for m, u in minutes if m >= end - window]
            flag, _ = IdleJobFlag.objects.update_or_create(
                job_id=job_id,
                defaults={
                    "tenant_id": running[job_id],
                    "idle_since": since,
                    "flagged_at": now,
                    "used_cores_percent": sum(recent) / len(recent) if recent else 0.0,
                    "allocated_cores_percent": allocated.get(job_id) or 0,
                },
            )
            if job_id not in already:
                _announce_idle(flag)
        IdleJobFlag.objects.exclude(job_id__in=flagged).delete()
    return flagged
