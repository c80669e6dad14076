"""Reads of the telemetry app for pages and the API (a fixed number of queries each).

Page helpers for the node and device pages:

* :func:`device_series` — one metric of one device over a window (1-minute or 1-hour means);
* :func:`device_utilisation` — the chart set of a device (util, memory, temperature, power);
* :func:`latest_device_values` — the newest minute of each metric for many devices (card map);
* :func:`device_health_history` — current verdict and events of a device, by serial;
* :func:`unmatched_mig_series` — MIG series of a device that matched no booking (raw samples);
* :func:`job_efficiency` / :func:`tenant_efficiency` — allocated vs used per job and tenant;
* :func:`cost_report` — GPU-hours and cost per tenant, model and month.

Usage intervals for cost come from one place, :func:`usage_intervals`, which reads either the
placements (default) or the ledger (``TELEMETRY_COST_SOURCE = "ledger"``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Max, Min, Q, Sum
from django.utils import timezone

from scheduling.accounting import booking_charges
from scheduling.choices import BOOKED_PLACEMENT_STATES
from scheduling.models import Device, Job, PlacementDevice
from telemetry import cost as cost_core
from telemetry.attribution import MIG_UNMATCHED, UNATTRIBUTED
from telemetry.efficiency import Efficiency, UsedSeries
from telemetry.efficiency import job_efficiency as _job_efficiency
from telemetry.exporters import MEM_USED, POD_MEM_USED, POD_UTIL, POWER, TEMP, UTIL
from telemetry.models import (
    CapacityAlert,
    DeviceHealth,
    DeviceHealthEvent,
    DevicePrice,
    IdleJobFlag,
    Rollup,
    Sample,
    TrendRollup,
)
from tenants.models import LedgerInterval, Tenant

MINUTE, HOUR = 60, 3600
CHART_METRICS = (UTIL, MEM_USED, TEMP, POWER)


@dataclass(frozen=True, slots=True)
class Point:
    """One bucket of a series: start time, mean, min and max."""

    time: datetime
    mean: float
    minimum: float
    maximum: float


def pick_resolution(start: datetime, end: datetime) -> int:
    """1-minute buckets up to two days, 1-hour beyond."""
    return MINUTE if end - start <= timedelta(days=2) else HOUR


def _points(rollups) -> list[Point]:
    """Rollup rows merged per bucket, oldest first: sample-weighted mean, min and max."""
    rows = (
        rollups.values("bucket")
        .annotate(n=Sum("count"), s=Sum("total"), lo=Min("minimum"), hi=Max("maximum"))
        .order_by("bucket")
    )
    return [Point(r["bucket"], r["s"] / r["n"] if r["n"] else 0.0, r["lo"], r["hi"]) for r in rows]


def device_series(
    device_id: int,
    metric: str,
    start: datetime,
    end: datetime,
    resolution_s: int | None = None,
    job_ids: Iterable[int] | None = None,
) -> list[Point]:
    """A device's metric over ``[start, end)``: per bucket the sample-weighted mean over every
    holder (holders change mid-bucket), the min and the max.

    Args:
        job_ids: when given, only the rollups of these jobs (tenant-scoped views).
    """
    resolution_s = resolution_s or pick_resolution(start, end)
    rows = Rollup.objects.filter(
        resolution_s=resolution_s,
        device_id=device_id,
        metric=metric,
        bucket__gte=start,
        bucket__lt=end,
    )
    if job_ids is not None:
        rows = rows.filter(job_id__in=list(job_ids))
    return _points(rows)


def device_utilisation(
    device_id: int, start: datetime | None = None, end: datetime | None = None
) -> dict[str, list[Point]]:
    """Chart set of a device: ``{metric: points}`` for util, memory used, temperature, power.

    Defaults to the last six hours.
    """
    end = end or timezone.now()
    start = start or end - timedelta(hours=6)
    return {m: device_series(device_id, m, start, end) for m in CHART_METRICS}


def node_utilisation(
    node_id: int, start: datetime | None = None, end: datetime | None = None
) -> list[Point]:
    """Mean device utilisation of a node's present devices per bucket (node page chart)."""
    end = end or timezone.now()
    start = start or end - timedelta(hours=6)
    return _points(
        Rollup.objects.filter(
            resolution_s=pick_resolution(start, end),
            metric=UTIL,
            bucket__gte=start,
            bucket__lt=end,
            device__node_id=node_id,
            device__removed_at__isnull=True,
        )
    )


def latest_device_values(
    device_ids: Iterable[int], *, now: datetime | None = None, within_s: int = 600
) -> dict[int, dict[str, float]]:
    """Newest 1-minute mean of each chart metric per device (within ``within_s``).

    Returns:
        ``{device id: {metric: value}}``; devices without recent data are absent.
    """
    now = now or timezone.now()
    rows = (
        Rollup.objects.filter(
            resolution_s=MINUTE,
            device_id__in=list(device_ids),
            metric__in=CHART_METRICS,
            bucket__gte=now - timedelta(seconds=within_s),
        )
        .values("device_id", "metric", "bucket")
        .annotate(n=Sum("count"), s=Sum("total"))
    )
    newest: dict[tuple[int, str], tuple[datetime, float]] = {}
    for r in rows:
        key = (r["device_id"], r["metric"])
        if key not in newest or r["bucket"] > newest[key][0]:
            newest[key] = (r["bucket"], r["s"] / r["n"] if r["n"] else 0.0)
    out: dict[int, dict[str, float]] = defaultdict(dict)
    for (device_id, metric), (_, value) in newest.items():
        out[device_id][metric] = value
    return dict(out)


@dataclass(frozen=True)
class HealthHistory:
    """A device's health by serial: current verdict (None if never evaluated) and events."""

    serial: str
    device: Device | None
    current: DeviceHealth | None
    events: list[DeviceHealthEvent]


def device_health_history(serial: str, limit: int = 200) -> HealthHistory | None:
    """Health of the device with this serial / UUID across every node it was on.

    Returns:
        None when neither the inventory nor the health records know the serial.
    """
    device = Device.objects.filter(uuid=serial).select_related("node__cluster", "model").first()
    current = DeviceHealth.objects.filter(serial=serial).first()
    events = list(DeviceHealthEvent.objects.filter(serial=serial).order_by("-time", "-id")[:limit])
    if device is None and current is None and not events:
        return None
    return HealthHistory(serial, device, current, events)


# --- efficiency -----------------------------------------------------------------------------


def _allocations(job_ids: list[int]) -> dict[int, list[tuple[int, int, int]]]:
    """Per job, ``(device, memory_mib, cores_percent)`` of the latest placement of each pod."""
    rows = (
        PlacementDevice.objects.filter(placement__job_id__in=job_ids)
        .values_list(
            "placement__job_id",
            "placement__pod_index",
            "placement_id",
            "device_id",
            "memory_mib",
            "cores_percent",
        )
        .order_by("placement_id")
    )
    latest: dict[tuple[int, int], int] = {}
    for job_id, pod, placement_id, *_ in rows:
        latest[(job_id, pod)] = placement_id
    keep = set(latest.values())
    out: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
    for job_id, _pod, placement_id, device_id, mem, cores in rows:
        if placement_id in keep:
            out[job_id].append((device_id, mem, cores))
    return out


def _used(job_ids: list[int], start: datetime, end: datetime) -> dict[int, list[UsedSeries]]:
    rows = (
        Rollup.objects.filter(
            resolution_s=pick_resolution(start, end),
            job_id__in=job_ids,
            metric__in=[UTIL, MEM_USED, POD_UTIL, POD_MEM_USED],
            bucket__gte=start,
            bucket__lt=end,
        )
        .values("job_id", "device_id", "metric")
        .annotate(n=Sum("count"), s=Sum("total"))
    )
    out: dict[int, list[UsedSeries]] = defaultdict(list)
    for r in rows:
        out[r["job_id"]].append(
            UsedSeries(r["device_id"], r["metric"], r["s"] / r["n"] if r["n"] else 0.0, r["n"])
        )
    return out


@dataclass(frozen=True)
class JobEfficiencyRow:
    """A job with its efficiency and idle flag."""

    job: Job
    efficiency: Efficiency
    idle_since: datetime | None


def jobs_efficiency(
    jobs: Iterable[Job], start: datetime | None = None, end: datetime | None = None
) -> list[JobEfficiencyRow]:
    """Efficiency of each job over ``[start, end)`` (default: the last 24 hours)."""
    jobs = list(jobs)
    end = end or timezone.now()
    start = start or end - timedelta(hours=24)
    ids = [j.pk for j in jobs]
    alloc = _allocations(ids)
    used = _used(ids, start, end)
    idle = dict(IdleJobFlag.objects.filter(job_id__in=ids).values_list("job_id", "idle_since"))
    return [
        JobEfficiencyRow(
            j, _job_efficiency(alloc.get(j.pk, []), used.get(j.pk, [])), idle.get(j.pk)
        )
        for j in jobs
    ]


def job_efficiency(job: Job, start=None, end=None) -> JobEfficiencyRow:
    """Efficiency of one job (see :func:`jobs_efficiency`)."""
    return jobs_efficiency([job], start, end)[0]


@dataclass(frozen=True)
class TenantEfficiency:
    """Sum over a tenant's jobs active in the window."""

    tenant_id: int
    tenant_name: str
    jobs: int
    idle_jobs: int
    efficiency: Efficiency


def tenant_efficiency(
    tenant_ids: Iterable[int] | None, start: datetime | None = None, end: datetime | None = None
) -> list[TenantEfficiency]:
    """Allocated vs used per tenant over jobs running in ``[start, end)`` (default 24 h).

    Args:
        tenant_ids: tenants to include (None = every tenant, platform admins).
    """
    end = end or timezone.now()
    start = start or end - timedelta(hours=24)
    jobs = (
        Job.objects.filter(started_at__isnull=False, started_at__lt=end)
        .filter(Q(finished_at__isnull=True) | Q(finished_at__gte=start))
        .select_related("tenant")
    )
    if tenant_ids is not None:
        jobs = jobs.filter(tenant_id__in=list(tenant_ids))
    rows = jobs_efficiency(jobs.order_by("tenant__name", "pk"), start, end)
    grouped: dict[int, list[JobEfficiencyRow]] = defaultdict(list)
    for row in rows:
        grouped[row.job.tenant_id].append(row)
    out = []
    for tenant_id, items in grouped.items():
        effs = [r.efficiency for r in items]
        mems = [e.used_memory_mib for e in effs if e.used_memory_mib is not None]
        cores = [e.used_cores_percent for e in effs if e.used_cores_percent is not None]
        out.append(
            TenantEfficiency(
                tenant_id=tenant_id,
                tenant_name=items[0].job.tenant.name,
                jobs=len(items),
                idle_jobs=sum(1 for r in items if r.idle_since is not None),
                efficiency=Efficiency(
                    allocated_memory_mib=sum(e.allocated_memory_mib for e in effs),
                    allocated_cores_percent=sum(e.allocated_cores_percent for e in effs),
                    used_memory_mib=sum(mems) if mems else None,
                    used_cores_percent=sum(cores) if cores else None,
                    devices_with_data=sum(e.devices_with_data for e in effs),
                ),
            )
        )
    return sorted(out, key=lambda t: t.tenant_name)


def idle_jobs(tenant_ids: Iterable[int] | None) -> list[IdleJobFlag]:
    """Jobs flagged idle, oldest idle first (tenant-scoped)."""
    rows = IdleJobFlag.objects.select_related("job", "tenant")
    if tenant_ids is not None:
        rows = rows.filter(tenant_id__in=list(tenant_ids))
    return list(rows.order_by("idle_since"))


# --- usage and cost -------------------------------------------------------------------------


def _intervals_from_placements(start, end, tenant_ids, now) -> list[cost_core.UsageInterval]:
    rows = (
        PlacementDevice.objects.filter(
            placement__started_at__isnull=False, placement__started_at__lt=end
        )
        .filter(Q(placement__ended_at__isnull=True) | Q(placement__ended_at__gt=start))
        .select_related("placement__job", "device__model")
    )
    if tenant_ids is not None:
        rows = rows.filter(placement__job__tenant_id__in=list(tenant_ids))
    out = []
    for b in rows:
        p = b.placement
        ended = p.ended_at
        if ended is None:
            ended = now if p.state in BOOKED_PLACEMENT_STATES else p.started_at
        model = b.device.model.name
        milli = booking_charges(
            model, b.device.memory_mib, b.device.cores_percent, b.memory_mib, b.cores_percent
        )[(model, "devices")]
        out.append(
            cost_core.UsageInterval(
                p.job.tenant_id,
                p.job_id,
                b.device_id,
                model,
                milli,
                p.started_at,
                max(ended, p.started_at),
            )
        )
    return out


def _intervals_from_ledger(start, end, tenant_ids, now) -> list[cost_core.UsageInterval]:
    rows = LedgerInterval.objects.filter(start__lt=end).filter(
        Q(end__isnull=True) | Q(end__gt=start)
    )
    if tenant_ids is not None:
        rows = rows.filter(tenant_id__in=list(tenant_ids))
    devices = dict(
        Device.objects.filter(uuid__in=rows.values("device_uuid")).values_list("uuid", "pk")
    )
    return [
        cost_core.UsageInterval(
            r.tenant_id,
            r.job_id,
            devices.get(r.device_uuid, 0),
            r.device_model,
            r.devices_milli,
            r.start,
            r.end or now,
        )
        for r in rows
    ]


def usage_intervals(
    start: datetime,
    end: datetime,
    tenant_ids: Iterable[int] | None = None,
    *,
    now: datetime | None = None,
    source: str | None = None,
) -> list[cost_core.UsageInterval]:
    """Device-holding intervals overlapping ``[start, end)``: the single source of cost.

    ``source`` (default ``settings.TELEMETRY_COST_SOURCE``, else ``"placements"``):
    ``"placements"`` reads Placement started/ended times and PlacementDevice bookings
    (fraction = ``booking_charges`` milli-devices); ``"ledger"`` reads the immutable
    ``tenants.LedgerInterval`` rows. An open interval runs to ``now``.
    """
    now = now or timezone.now()
    source = source or getattr(settings, "TELEMETRY_COST_SOURCE", "placements")
    ids = None if tenant_ids is None else list(tenant_ids)
    if source == "ledger":
        return _intervals_from_ledger(start, end, ids, now)
    if source != "placements":
        raise ValueError(f"unknown cost source {source!r}")
    return _intervals_from_placements(start, end, ids, now)


def prices() -> list[cost_core.Price]:
    """Every price row as core prices."""
    return [
        cost_core.Price(p.model.name, p.effective_from, p.per_hour, p.currency)
        for p in DevicePrice.objects.select_related("model").order_by(
            "model__name", "effective_from"
        )
    ]


@dataclass(frozen=True)
class CostReportRow:
    """A cost row with the tenant's name."""

    tenant_name: str
    row: cost_core.CostRow


def cost_report(
    start: datetime,
    end: datetime,
    tenant_ids: Iterable[int] | None = None,
    *,
    now: datetime | None = None,
) -> list[CostReportRow]:
    """GPU-hours and cost per tenant × model × month over ``[start, end)``."""
    ids = None if tenant_ids is None else list(tenant_ids)
    rows = cost_core.cost_report(usage_intervals(start, end, ids, now=now), prices(), start, end)
    names = dict(
        Tenant.objects.filter(pk__in={r.tenant_id for r in rows}).values_list("pk", "name")
    )
    return [CostReportRow(names.get(r.tenant_id, str(r.tenant_id)), r) for r in rows]


# --- alerts ---------------------------------------------------------------------------------


def open_capacity_alerts() -> list[CapacityAlert]:
    """Resource groups whose healthy capacity is below their guarantees now."""
    return list(
        CapacityAlert.objects.filter(resolved_at__isnull=True)
        .select_related("resource_group")
        .order_by("-opened_at")
    )


# --- trends ---------------------------------------------------------------------------------

#: Trend bucket size (s) for a span: 5-minute buckets up to a day, 1-hour beyond.
TREND_FINE_S, TREND_COARSE_S = 300, 3600


def trend_resolution(start: datetime, end: datetime) -> int:
    """Bucket size of the trend rollups read for ``[start, end)`` (6 h / 24 h: 300 s;
    7 d: 3600 s)."""
    return TREND_FINE_S if end - start <= timedelta(days=1) else TREND_COARSE_S


@dataclass(frozen=True)
class TrendPoint:
    """One trend bucket: start time, mean of its values, min and max."""

    time: datetime
    mean: float
    minimum: float
    maximum: float


def trend_series(
    scope: str, keys: Iterable[str], metrics: Iterable[str], start: datetime, end: datetime
) -> dict[tuple[str, str], list[TrendPoint]]:
    """Trend series of one scope (:class:`~telemetry.models.TrendScope`) in ONE query.

    Args:
        scope: e.g. ``"group"``.
        keys: the scope keys wanted (group ids as text, tenant ids, ``"<tenant>:<group>"``).
        metrics: metric names (``telemetry.services.trends.METRIC_UNITS``).
        start, end: the window; the resolution follows :func:`trend_resolution`.

    Returns:
        ``{(key, metric): [TrendPoint, oldest first]}``; a pair without buckets maps to [].
    """
    keys, metrics = list(keys), list(metrics)
    out: dict[tuple[str, str], list[TrendPoint]] = {(k, m): [] for k in keys for m in metrics}
    for row in (
        TrendRollup.objects.filter(
            resolution_s=trend_resolution(start, end),
            scope=scope,
            key__in=keys,
            metric__in=metrics,
            bucket__gte=start,
            bucket__lt=end,
        )
        .order_by("bucket")
        .values_list("key", "metric", "bucket", "count", "total", "minimum", "maximum")
    ):
        key, metric, bucket, n, total, lo, hi = row
        out[(key, metric)].append(TrendPoint(bucket, total / n if n else 0.0, lo, hi))
    return out


def unmatched_mig_series(device_id: int, since: datetime) -> int:
    """Raw samples of MIG series on device ``device_id`` since ``since`` whose (device, GPU
    instance) no booking of the console held (``mig_unmatched``: unattributed, charged to
    nobody); one query. Raw samples are kept ``TELEMETRY_RAW_RETENTION_S``."""
    return Sample.objects.filter(
        device_id=device_id, status=UNATTRIBUTED, reason=MIG_UNMATCHED, time__gte=since
    ).count()
