"""Rollups and retention: raw samples to 1-minute and 1-hour buckets, then pruning.

The work runs as many short transactions, never one long one (issue #14: the rollup's single
transaction held key-share locks on devices and jobs across the admission cycle's row locks
and deadlocked with it): each window of :data:`MINUTE_WINDOW` / one hour is aggregated by one
read, its rows are upserted in batches of ``telemetry.services.batches.ROW_BATCH`` (each its
own transaction, locks taken in the documented order), and the window's watermark advances
only after all its batches are in. A rollup interrupted anywhere is therefore redone from the
last finished window on the next run, with the same result (upserts on the bucket key).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.db.models import Count, Max, Min, Sum
from django.db.models.functions import Trunc
from django.utils import timezone

from telemetry import conf
from telemetry.attribution import MIG_UNMATCHED
from telemetry.models import DeviceHealthEvent, Rollup, RollupWatermark, Sample
from telemetry.services.batches import write_in_batches

__all__ = ["HOUR", "MINUTE", "floor_time", "rollup"]

MINUTE, HOUR = 60, 3600
#: Span of raw samples aggregated by one read of the minute rollup.
MINUTE_WINDOW = timedelta(minutes=10)
#: Span of minute rollups aggregated by one read of the hour rollup.
HOUR_WINDOW = timedelta(hours=1)
#: The rollup key (``rollup_unique_bucket``); an upsert on it makes a batch idempotent.
KEY_FIELDS = ["resolution_s", "bucket", "metric", "device", "job"]
VALUE_FIELDS = ["tenant", "count", "total", "minimum", "maximum"]


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


def _aggregate(
    resolution_s: int, source, time_field: str, start: datetime, end: datetime, aggregates: dict
) -> list[Rollup]:
    """The rollups of ``[start, end)`` at ``resolution_s`` computed from ``source`` rows (one
    read; sorted by device then job so neighbouring batches lock few common rows)."""
    kind = "minute" if resolution_s == MINUTE else "hour"
    rows = (
        source.filter(**{f"{time_field}__gte": start, f"{time_field}__lt": end})
        .exclude(device_id__isnull=True)
        .annotate(b=Trunc(time_field, kind, tzinfo=UTC))
        .values("b", "metric", "device_id", "job_id", "tenant_id")
        .annotate(**aggregates)
        .order_by("device_id", "job_id", "b", "metric")
    )
    return [
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


def _upsert(chunk) -> None:
    Rollup.objects.bulk_create(
        chunk, update_conflicts=True, unique_fields=KEY_FIELDS, update_fields=VALUE_FIELDS
    )


def _roll_windows(
    resolution_s: int, source, time_field: str, start: datetime, end: datetime, spec: tuple
) -> int:
    """Roll ``[start, end)`` up window by window (``spec`` = (window, aggregates)); the
    watermark of ``resolution_s`` advances after each finished window. Returns rows written."""
    window, aggregates = spec
    written = 0
    lo = start
    while lo < end:
        hi = min(lo + window, end)
        rows = _aggregate(resolution_s, source, time_field, lo, hi, aggregates)
        written += write_in_batches(rows, _upsert)
        _set_watermark(resolution_s, max(hi, _watermark(resolution_s, hi)))
        lo = hi
    return written


def _roll_minutes(now: datetime, grace: timedelta) -> int:
    """Closed minutes from the minute watermark minus the grace (late samples count)."""
    minute_end = floor_time(now, MINUTE)
    first = Sample.objects.aggregate(t=Min("time"))["t"]
    minute_from = _watermark(MINUTE, floor_time(first, MINUTE) if first else minute_end)
    minute_start = floor_time(min(minute_from - grace, minute_end), MINUTE)
    aggregates = {"n": Count("id"), "s": Sum("value"), "lo": Min("value"), "hi": Max("value")}
    written = _roll_windows(
        MINUTE,
        # an unmatched MIG instance's series is no figure of the device nor of a job
        Sample.objects.exclude(reason=MIG_UNMATCHED),
        "time",
        minute_start,
        minute_end,
        (MINUTE_WINDOW, aggregates),
    )
    _set_watermark(MINUTE, max(minute_end, minute_from))
    return written


def _roll_hours(now: datetime) -> int:
    """Closed hours from the hour watermark minus one hour, from the minute rollups."""
    hour_end = floor_time(now, HOUR)
    first_minute = Rollup.objects.filter(resolution_s=MINUTE).aggregate(t=Min("bucket"))["t"]
    hour_from = _watermark(HOUR, floor_time(first_minute, HOUR) if first_minute else hour_end)
    hour_start = min(hour_from - timedelta(hours=1), hour_end)
    aggregates = {"n": Sum("count"), "s": Sum("total"), "lo": Min("minimum"), "hi": Max("maximum")}
    written = _roll_windows(
        HOUR,
        Rollup.objects.filter(resolution_s=MINUTE),
        "bucket",
        hour_start,
        hour_end,
        (HOUR_WINDOW, aggregates),
    )
    _set_watermark(HOUR, max(hour_end, hour_from))
    return written


def _prune(now: datetime, grace: timedelta) -> dict[str, int]:
    """Retention: each delete is its own statement (no row of another table is locked).
    Nothing is dropped that is not rolled up yet (cuts never pass the watermarks' grace)."""
    minute_end, hour_end = floor_time(now, MINUTE), floor_time(now, HOUR)
    raw_cut = min(
        now - timedelta(seconds=conf.get("TELEMETRY_RAW_RETENTION_S")), minute_end - grace
    )
    minute_cut = min(
        now - timedelta(seconds=conf.get("TELEMETRY_MINUTE_RETENTION_S")),
        hour_end - timedelta(hours=1),
    )
    hour_cut = now - timedelta(seconds=conf.get("TELEMETRY_HOUR_RETENTION_S"))
    out = {
        "pruned_samples": Sample.objects.filter(time__lt=raw_cut).delete()[0],
        "pruned_minutes": Rollup.objects.filter(
            resolution_s=MINUTE, bucket__lt=minute_cut
        ).delete()[0],
        "pruned_hours": Rollup.objects.filter(resolution_s=HOUR, bucket__lt=hour_cut).delete()[0],
    }
    DeviceHealthEvent.objects.filter(time__lt=hour_cut).delete()
    return out


def rollup(*, now: datetime | None = None) -> dict[str, int]:
    """Roll raw samples up to 1-minute buckets and those to 1-hour buckets, then prune.

    Closed minutes (before ``floor(now, 1 min)``) are rebuilt from the watermark minus
    ``TELEMETRY_ROLLUP_GRACE_S`` (so late samples count); closed hours from the hour watermark
    minus one hour. Retention never drops data that is not rolled up yet. Runs as short
    transactions (module docstring); safe to run beside admission cycles and to re-run.

    Returns:
        Counts: ``minute_rows``, ``hour_rows`` (rows written, re-rolled ones included),
        ``pruned_samples``, ``pruned_minutes``, ``pruned_hours``.
    """
    now = now or timezone.now()
    grace = timedelta(seconds=conf.get("TELEMETRY_ROLLUP_GRACE_S"))
    out = {"minute_rows": _roll_minutes(now, grace), "hour_rows": _roll_hours(now)}
    out.update(_prune(now, grace))
    return out
