"""Usage per tenant and month in GPU-hours by device model (from placements).

A booking of a fraction of a device counts as that fraction of a device
(:func:`scheduling.accounting.booking_charges`, ``devices`` dimension: max of memory share and
cores share), so 2 h on half an A100 is 1 GPU-hour of ``NVIDIA-A100-SXM4-80GB``. The interval
runs from the placement's start (``started_at``, else ``submitted_at``) to its end
(``ended_at``, else ``now``), clipped to the month. Placements that never started count nothing.

``cost`` is left ``None`` here: the telemetry app fills it from its cost report (time-varying
prices per model, ``telemetry.selectors.cost_report``) and stores the rows of each month
(``telemetry.services.usage_months``, kept up to date by the rollup task) for the usage page.
"""

from __future__ import annotations

import calendar
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db.models import Q
from django.utils import timezone

from scheduling.accounting import booking_charges
from scheduling.models import PlacementDevice


@dataclass(frozen=True)
class UsageRow:
    """GPU-hours (device-equivalent hours) of one tenant on one model in the month."""

    tenant: str
    model: str
    vendor: str
    gpu_hours: float
    memory_gib_hours: float
    jobs: int
    cost: float | None


def month_bounds(month: str) -> tuple[datetime, datetime]:
    """``"YYYY-MM"`` → (first instant, first instant of the next month), UTC.

    Raises:
        ValueError: not a ``YYYY-MM`` month.
    """
    try:
        year, mon = (int(p) for p in month.split("-"))
        start = datetime(year, mon, 1, tzinfo=UTC)
        end = start + timedelta(days=calendar.monthrange(year, mon)[1])
    except (ValueError, TypeError, OverflowError) as exc:  # OverflowError: 9999-12
        raise ValueError(f"month must be YYYY-MM, got {month!r}") from exc
    return start, end


def _bookings(tenant_ids: set[int] | None, start: datetime, end: datetime):
    """Bookings whose placement interval overlaps ``[start, end)`` as value tuples."""
    bookings = PlacementDevice.objects.filter(
        Q(placement__started_at__lt=end)
        | Q(placement__started_at__isnull=True, placement__submitted_at__lt=end)
    ).filter(Q(placement__ended_at__isnull=True) | Q(placement__ended_at__gt=start))
    if tenant_ids is not None:
        bookings = bookings.filter(placement__job__tenant_id__in=tenant_ids)
    return bookings.values_list(
        "placement__job__tenant__name",
        "device__model__name",
        "device__model__vendor",
        "device__memory_mib",
        "device__cores_percent",
        "memory_mib",
        "cores_percent",
        "placement__started_at",
        "placement__submitted_at",
        "placement__ended_at",
        "placement__job_id",
    )


def monthly_usage(
    tenant_ids: set[int] | None, month: str, now: datetime | None = None
) -> list[UsageRow]:
    """Usage rows of one month, tenant then model order (one query).

    Args:
        tenant_ids: tenants to report (None = all).
        month: ``"YYYY-MM"``.
        now: end of still-open intervals (default: now).

    Raises:
        ValueError: malformed month.
    """
    start, end = month_bounds(month)
    now = now or timezone.now()
    acc: dict[tuple[str, str, str], list] = defaultdict(lambda: [0.0, 0.0, set()])
    for row in _bookings(tenant_ids, start, end):
        tenant, model, vendor, dmem, dcores, mem, cores, started, submitted, ended, job_id = row
        begin = started or submitted
        if begin is None:
            continue
        lo, hi = max(begin, start), min(ended or now, end, now)
        hours = (hi - lo).total_seconds() / 3600.0
        if hours <= 0:
            continue
        milli = booking_charges(model, dmem, dcores, mem, cores)[(model, "devices")]
        entry = acc[(tenant, model, vendor)]
        entry[0] += hours * milli / 1000.0
        entry[1] += hours * mem / 1024.0
        entry[2].add(job_id)
    return [
        UsageRow(tenant, model, vendor, round(gpu_h, 4), round(mem_h, 4), len(jobs), None)
        for (tenant, model, vendor), (gpu_h, mem_h, jobs) in sorted(acc.items())
    ]


def recent_months(now: datetime | None = None, count: int = 12) -> list[str]:
    """The last ``count`` months as ``"YYYY-MM"``, newest first."""
    now = now or timezone.now()
    year, mon = now.year, now.month
    out = []
    for _ in range(count):
        out.append(f"{year:04d}-{mon:02d}")
        year, mon = (year, mon - 1) if mon > 1 else (year - 1, 12)
    return out
