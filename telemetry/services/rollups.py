"""Rollups and retention: raw samples to 1-minute and 1-hour buckets, then pruning."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.db import transaction
from django.db.models import Count, Max, Min, Sum
from django.db.models.functions import Trunc
from django.utils import timezone

from telemetry import conf
from telemetry.models import DeviceHealthEvent, Rollup, RollupWatermark, Sample

__all__ = ["HOUR", "MINUTE", "floor_time", "rollup"]

MINUTE, HOUR = 60, 3600


def floor_time(when: datetime, resolution_s: int) -> datetime:
    """``when`` rounded down to a multiple of ``resolution_s`` seconds since the epoch."""
    ts = int(when.timestamp())
    return datetime.fromtimestamp(ts - ts % resolution_s, tz=when.tzinfo or UTC)


def _watermark(resolution_s: int, fallback: datetime) -> datetime:
    mark = RollupWatermark.objects.filter(resolution_s=resolution_s).first()
    return mark.done_until if mark else fallback


def _set_watermark(resolution_s: int, when: datetime) -> None:
    RollupWatermark.objects.update_or_create(
        resolution_s=resolution_s, defaults={"done_until": when}
    )


def _rebuild(
    resolution_s: int, source, time_field: str, start: datetime, end: datetime, aggregates: dict
) -> int:
    """Replace the rollups of ``[start, end)`` at ``resolution_s`` from ``source`` rows."""
    kind = "minute" if resolution_s == MINUTE else "hour"
    rows = (
        source.filter(**{f"{time_field}__gte": start, f"{time_field}__lt": end})
        .exclude(device_id__isnull=True)
        .annotate(b=Trunc(time_field, kind, tzinfo=UTC))
        .values("b", "metric", "device_id", "job_id", "tenant_id")
        .annotate(**aggregates)
        .order_by()
    )
    objs = [
        Rollup(
            resolution_s=resolution_s,
            bucket=r["b"],
            metric=r["metric"],
            device_id=r["device_id"],
            job_id=r["job_id"],
            tenant_id=r["tenant_id"],
            count=r["n"],
            total=r["s"],
            minimum=r["lo"],
            maximum=r["hi"],
        )
        for r in rows
    ]
    Rollup.objects.filter(resolution_s=resolution_s, bucket__gte=start, bucket__lt=end).delete()
    Rollup.objects.bulk_create(objs, batch_size=2000)
    return len(objs)


def rollup(*, now: datetime | None = None) -> dict[str, int]:
    """Roll raw samples up to 1-minute buckets and those to 1-hour buckets, then prune.

    Closed minutes (before ``floor(now, 1 min)``) are rebuilt from the watermark minus
    ``TELEMETRY_ROLLUP_GRACE_S`` (so late samples count); closed hours from the hour watermark
    minus one hour. Retention never drops data that is not rolled up yet.

    Returns:
        Counts: ``minute_rows``, ``hour_rows``, ``pruned_samples``, ``pruned_minutes``,
        ``pruned_hours``.
    """
    now = now or timezone.now()
    grace = timedelta(seconds=conf.get("TELEMETRY_ROLLUP_GRACE_S"))
    out = {}
    with transaction.atomic():
        minute_end = floor_time(now, MINUTE)
        first = Sample.objects.aggregate(t=Min("time"))["t"]
        minute_from = _watermark(MINUTE, floor_time(first, MINUTE) if first else minute_end)
        minute_start = min(minute_from - grace, minute_end)
        minute_start = floor_time(minute_start, MINUTE)
        out["minute_rows"] = _rebuild(
            MINUTE,
            Sample.objects.all(),
            "time",
            minute_start,
            minute_end,
            {"n": Count("id"), "s": Sum("value"), "lo": Min("value"), "hi": Max("value")},
        )
        _set_watermark(MINUTE, max(minute_end, minute_from))

        hour_end = floor_time(now, HOUR)
        first_minute = Rollup.objects.filter(resolution_s=MINUTE).aggregate(t=Min("bucket"))["t"]
        hour_from = _watermark(HOUR, floor_time(first_minute, HOUR) if first_minute else hour_end)
        hour_start = min(hour_from - timedelta(hours=1), hour_end)
        out["hour_rows"] = _rebuild(
            HOUR,
            Rollup.objects.filter(resolution_s=MINUTE),
            "bucket",
            hour_start,
            hour_end,
            {"n": Sum("count"), "s": Sum("total"), "lo": Min("minimum"), "hi": Max("maximum")},
        )
        _set_watermark(HOUR, max(hour_end, hour_from))

        raw_cut = min(
            now - timedelta(seconds=conf.get("TELEMETRY_RAW_RETENTION_S")), minute_end - grace
        )
        minute_cut = min(
            now - timedelta(seconds=conf.get("TELEMETRY_MINUTE_RETENTION_S")),
            hour_end - timedelta(hours=1),
        )
        hour_cut = now - timedelta(seconds=conf.get("TELEMETRY_HOUR_RETENTION_S"))
        out["pruned_samples"] = Sample.objects.filter(time__lt=raw_cut).delete()[0]
        out["pruned_minutes"] = Rollup.objects.filter(
            resolution_s=MINUTE, bucket__lt=minute_cut
        ).delete()[0]
        out["pruned_hours"] = Rollup.objects.filter(
            resolution_s=HOUR, bucket__lt=hour_cut
        ).delete()[0]
        DeviceHealthEvent.objects.filter(time__lt=hour_cut).delete()
    return out
