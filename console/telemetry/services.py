"""Writes of the telemetry app: scrapes, sample ingestion, rollups and pruning, device health,
group gauges and capacity alerts, idle-job flags, simulated samples, prices.

Every function takes ``now`` (defaults to the current time) so tests can drive time.
"""

from __future__ import annotations

import logging
import socket
import time as _time
import urllib.error
import urllib.request
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation

from django.db import transaction
from django.db.models import Count, F, Max, Min, Q, Sum
from django.db.models.functions import Trunc
from django.utils import timezone

from console.telemetry import conf
from console.telemetry.attribution import (
    ATTRIBUTED,
    DEVICE_ONLY,
    AttributedSample,
    AttributionResult,
    BookingRef,
    DeviceRef,
    Inventory,
    attribute,
)
from console.telemetry.efficiency import idle_since
from console.telemetry.exporters import (
    ECC_DBE,
    ERROR_CODE,
    HEALTH,
    POD_MEM_USED,
    POD_UTIL,
    TEMP,
    UTIL,
    XID,
    XID_COUNT,
    normalise,
)
from console.telemetry.exposition import parse_exposition
from console.telemetry.health import HealthState, clear_sticky, evaluate
from console.telemetry.models import (
    CapacityAlert,
    DeviceHealth,
    DeviceHealthEvent,
    DevicePrice,
    GroupGauge,
    IdleJobFlag,
    Rollup,
    RollupWatermark,
    Sample,
    ScrapeStatus,
    ScrapeTarget,
)
from console.telemetry.simulate import device_values, pod_values
from core.exceptions import InvalidRequest, NotFound
from scheduling.choices import BOOKED_PLACEMENT_STATES, Backend, JobState, PlacementState
from scheduling.models import Device, DeviceModel, Job, PlacementDevice

logger = logging.getLogger(__name__)

MAX_PAYLOAD_BYTES = 32 * 1024 * 1024
MINUTE, HOUR = 60, 3600
HEALTH_METRICS = (HEALTH, XID, TEMP, ECC_DBE, XID_COUNT, ERROR_CODE)


class FetchError(Exception):
    """A scrape that got no payload; ``status`` is a :class:`ScrapeStatus` value."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def floor_time(when: datetime, resolution_s: int) -> datetime:
    """``when`` rounded down to a multiple of ``resolution_s`` seconds since the epoch."""
    ts = int(when.timestamp())
    return datetime.fromtimestamp(ts - ts % resolution_s, tz=when.tzinfo or UTC)


# --- scraping -------------------------------------------------------------------------------


def http_fetch(url: str, timeout_s: float) -> str:
    """GET ``url`` and return the decoded body.

    Raises:
        FetchError: timeout, unreachable host, HTTP error status, oversized or undecodable
            payload.
    """
    request = urllib.request.Request(url, headers={"Accept": "text/plain;version=0.0.4"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310
            body = response.read(MAX_PAYLOAD_BYTES + 1)
            charset = response.headers.get_content_charset() or "utf-8"
    except urllib.error.HTTPError as exc:
        raise FetchError(ScrapeStatus.HTTP_ERROR, f"HTTP {exc.code} {exc.reason}") from exc
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError | socket.timeout):
            raise FetchError(ScrapeStatus.TIMEOUT, f"timed out after {timeout_s:g} s") from exc
        raise FetchError(ScrapeStatus.UNREACHABLE, f"unreachable: {exc.reason}") from exc
    except TimeoutError as exc:
        raise FetchError(ScrapeStatus.TIMEOUT, f"timed out after {timeout_s:g} s") from exc
    except (ConnectionError, OSError) as exc:
        raise FetchError(ScrapeStatus.UNREACHABLE, f"unreachable: {exc}") from exc
    if len(body) > MAX_PAYLOAD_BYTES:
        raise FetchError(ScrapeStatus.BAD_PAYLOAD, f"payload over {MAX_PAYLOAD_BYTES} bytes")
    try:
        return body.decode(charset)
    except (UnicodeDecodeError, LookupError) as exc:
        raise FetchError(ScrapeStatus.BAD_PAYLOAD, f"undecodable payload: {exc}") from exc


def _inventory(keys: set[str], cluster_id: int | None, index_nodes: set[str]) -> Inventory:
    """Devices named by ``keys`` (any cluster: a serial is global) plus the devices of the
    cluster's nodes in ``index_nodes`` (for index fallback), and their live bookings."""
    devices = Device.objects.filter(removed_at__isnull=True).select_related("node")
    query = Q(uuid__in=keys)
    if index_nodes and cluster_id is not None:
        query |= Q(node__cluster_id=cluster_id, node__name__in=index_nodes)
    refs = [
        DeviceRef(d.pk, d.uuid, d.node.name, d.index) for d in devices.filter(query)
    ]
    bookings = [
        BookingRef(b.placement_id, b.placement.job_id, b.placement.job.tenant_id,
                   b.placement.backend_ref, b.device_id)
        for b in PlacementDevice.objects.filter(
            device_id__in=[r.device_id for r in refs],
            placement__state__in=BOOKED_PLACEMENT_STATES,
        ).select_related("placement__job")
    ]
    return Inventory.build(refs, bookings)


def ingest_payload(
    kind: str, text: str, *, cluster_id: int | None = None, target: ScrapeTarget | None = None,
    now: datetime | None = None,
):
    """Parse, normalise, attribute and store one exposition payload; evaluate device health.

    Returns:
        ``(ParseResult, NormaliseResult, AttributionResult)``.
    """
    now = now or timezone.now()
    parsed = parse_exposition(text)
    normalised = normalise(kind, parsed.samples)
    keys = {k for o in normalised.observations for k in o.device_keys}
    index_nodes = {o.node for o in normalised.observations if not o.device_keys and o.node}
    inventory = _inventory(keys, cluster_id, index_nodes)
    result = attribute(normalised.observations, inventory)
    store_samples(result.samples, now, target=target)
    values: dict[int, dict[str, float]] = {}
    for sample in result.samples:
        if sample.device_id is None or sample.metric not in HEALTH_METRICS:
            continue
        current = values.setdefault(sample.device_id, {})
        pick = min if sample.metric == HEALTH else max
        current[sample.metric] = pick(current.get(sample.metric, sample.value), sample.value)
    source = f"{target.cluster.name}/{target.name}" if target else kind
    apply_health(values, now=now, source=source)
    return parsed, normalised, result


def scrape_target(
    target_id: int, *, now: datetime | None = None,
    fetch: Callable[[str, float], str] = http_fetch,
) -> str:
    """Scrape one target and record the outcome on it; never raises for target trouble.

    Returns:
        The target's new ``last_status``.
    """
    target = ScrapeTarget.objects.select_related("cluster").get(pk=target_id)
    now = now or timezone.now()
    started = _time.monotonic()
    fields: dict = {"last_scrape_at": now}
    try:
        text = fetch(target.url, target.timeout_s)
        parsed, normalised, result = ingest_payload(
            target.kind, text, cluster_id=target.cluster_id, target=target, now=now
        )
    except FetchError as exc:
        fields.update(last_status=exc.status, last_error=exc.message, last_samples=0)
    except Exception as exc:  # noqa: BLE001 - one target's failure is recorded, never fatal
        logger.exception("processing scrape of target %s failed", target_id)
        fields.update(last_status=ScrapeStatus.ERROR, last_error=f"processing error: {exc}"[:500])
    else:
        if parsed.empty and parsed.rejected_lines:
            status = ScrapeStatus.BAD_PAYLOAD
        elif parsed.rejected_lines:
            status = ScrapeStatus.PARTIAL
        else:
            status = ScrapeStatus.OK
        fields.update(
            last_status=status,
            last_error=parsed.first_error,
            last_samples=len(parsed.samples),
            last_rejected_lines=parsed.rejected_lines,
            last_ignored=normalised.ignored,
            last_attributed=result.attributed,
            last_unattributed=dict(sorted(result.unattributed.items())),
            last_conflicts=result.conflicts,
            last_node_mismatches=result.node_mismatches,
        )
    fields["last_duration_ms"] = int((_time.monotonic() - started) * 1000)
    if fields["last_status"] in (ScrapeStatus.OK, ScrapeStatus.PARTIAL):
        fields.update(last_success_at=now, consecutive_failures=0)
    else:
        fields["consecutive_failures"] = F("consecutive_failures") + 1
    ScrapeTarget.objects.filter(pk=target.pk).update(**fields)
    return fields["last_status"]


def scrape_all(*, now: datetime | None = None, fetch=http_fetch) -> dict[int, str]:
    """Scrape every enabled target; one target's failure never stops the others."""
    out = {}
    for target_id in ScrapeTarget.objects.filter(enabled=True).values_list("pk", flat=True):
        out[target_id] = scrape_target(target_id, now=now, fetch=fetch)
    return out


def store_samples(
    samples: Iterable[AttributedSample], when: datetime, *, target: ScrapeTarget | None = None
) -> int:
    """Insert attributed samples as raw :class:`Sample` rows. Returns the row count."""
    rows = [
        Sample(
            time=when, target=target, metric=s.metric, value=s.value, status=s.status,
            reason=s.reason, device_id=s.device_id, device_key=s.device_key[:128],
            placement_id=s.placement_id, job_id=s.job_id, tenant_id=s.tenant_id,
        )
        for s in samples
    ]
    Sample.objects.bulk_create(rows, batch_size=2000)
    return len(rows)


# --- health ---------------------------------------------------------------------------------


def _temperature_limit(config, default: float) -> float:
    """``config.temperature_limit_c`` of a device model, else ``default`` (°C)."""
    limit = (config or {}).get("temperature_limit_c") if isinstance(config, dict) else None
    return float(limit) if isinstance(limit, int | float) else default


def apply_health(
    values: dict[int, dict[str, float]], *, now: datetime | None = None, source: str = ""
) -> list[DeviceHealthEvent]:
    """Fold device values into health state; write events; set ``Device.healthy`` on changes.

    Args:
        values: device id → canonical metric → value (health-related metrics only matter).
        now: evaluation time.
        source: where the values came from (target name), stored on events.

    Returns:
        The events written.
    """
    if not values:
        return []
    now = now or timezone.now()
    devices = {
        d.pk: d for d in Device.objects.filter(pk__in=list(values)).select_related(
            "node__cluster", "model")
    }
    default_limit = float(conf.get("TELEMETRY_TEMPERATURE_LIMIT_C"))
    states = {h.serial: h for h in DeviceHealth.objects.filter(
        serial__in=[d.uuid for d in devices.values()])}
    events: list[DeviceHealthEvent] = []
    with transaction.atomic():
        for pk in sorted(devices):
            device = devices[pk]
            row = states.get(device.uuid)
            before = HealthState(
                healthy=row.healthy if row else True,
                reasons=dict(row.reasons) if row else {},
                counters=dict(row.counters) if row else {},
            )
            limit = _temperature_limit(device.model.config, default_limit)
            after, found = evaluate(before, values[pk], limit)
            for event in found:
                events.append(DeviceHealthEvent(
                    serial=device.uuid, device=device, node_name=device.node.name,
                    cluster_name=device.node.cluster.name, time=now, kind=event.kind,
                    severity=event.severity, value=event.value, message=event.message,
                    source=source[:100],
                ))
            # First sight: only an unhealthy verdict touches Device.healthy (the inventory's
            # own flag, e.g. HAMi registration health, is not overridden by "healthy").
            flip = (not after.healthy) if row is None else after.healthy != row.healthy
            if row is None:
                row = DeviceHealth(serial=device.uuid, device=device, changed_at=now)
            row.device = device
            row.healthy, row.reasons, row.counters = after.healthy, after.reasons, after.counters
            row.checked_at = now
            if flip:
                row.changed_at = now
            row.save()
            if flip:
                set_device_healthy(device.pk, after.healthy)
        DeviceHealthEvent.objects.bulk_create(events)
    return events


def set_device_healthy(device_id: int, healthy: bool) -> bool:
    """Set ``Device.healthy`` (an unhealthy device leaves the schedulable pool: the snapshot
    hands ``healthy`` to the placement core). Returns True when the flag changed."""
    return bool(Device.objects.filter(pk=device_id).exclude(healthy=healthy).update(
        healthy=healthy))


def clear_device_health(serial: str, *, now: datetime | None = None, user=None) -> DeviceHealth:
    """Clear sticky conditions (ECC / XID counter rises) of a device after an operator check.

    Raises:
        NotFound: no health record for ``serial``.
    """
    now = now or timezone.now()
    row = DeviceHealth.objects.filter(serial=serial).first()
    if row is None:
        raise NotFound(f"no health record for device {serial}")
    after = clear_sticky(HealthState(row.healthy, dict(row.reasons), dict(row.counters)))
    with transaction.atomic():
        device = Device.objects.filter(uuid=serial).select_related("node__cluster").first()
        DeviceHealthEvent.objects.create(
            serial=serial, device=device, node_name=device.node.name if device else "",
            cluster_name=device.node.cluster.name if device else "", time=now,
            kind="cleared", severity="info",
            message=f"sticky conditions cleared by {user or 'operator'}",
        )
        if after.healthy != row.healthy:
            row.changed_at = now
        row.healthy, row.reasons = after.healthy, after.reasons
        row.save()
        if device is not None:
            set_device_healthy(device.pk, after.healthy)
    return row


# --- rollups and retention ------------------------------------------------------------------


def _watermark(resolution_s: int, fallback: datetime) -> datetime:
    mark = RollupWatermark.objects.filter(resolution_s=resolution_s).first()
    return mark.done_until if mark else fallback


def _set_watermark(resolution_s: int, when: datetime) -> None:
    RollupWatermark.objects.update_or_create(
        resolution_s=resolution_s, defaults={"done_until": when}
    )


def _rebuild(resolution_s: int, source, time_field: str, start: datetime, end: datetime,
             aggregates: dict) -> int:
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
        Rollup(resolution_s=resolution_s, bucket=r["b"], metric=r["metric"],
               device_id=r["device_id"], job_id=r["job_id"], tenant_id=r["tenant_id"],
               count=r["n"], total=r["s"], minimum=r["lo"], maximum=r["hi"])
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
            MINUTE, Sample.objects.all(), "time", minute_start, minute_end,
            {"n": Count("id"), "s": Sum("value"), "lo": Min("value"), "hi": Max("value")},
        )
        _set_watermark(MINUTE, max(minute_end, minute_from))

        hour_end = floor_time(now, HOUR)
        first_minute = Rollup.objects.filter(resolution_s=MINUTE).aggregate(t=Min("bucket"))["t"]
        hour_from = _watermark(HOUR, floor_time(first_minute, HOUR) if first_minute else hour_end)
        hour_start = min(hour_from - timedelta(hours=1), hour_end)
        out["hour_rows"] = _rebuild(
            HOUR, Rollup.objects.filter(resolution_s=MINUTE), "bucket", hour_start, hour_end,
            {"n": Sum("count"), "s": Sum("total"), "lo": Min("minimum"), "hi": Max("maximum")},
        )
        _set_watermark(HOUR, max(hour_end, hour_from))

        raw_cut = min(now - timedelta(seconds=conf.get("TELEMETRY_RAW_RETENTION_S")),
                      minute_end - grace)
        minute_cut = min(now - timedelta(seconds=conf.get("TELEMETRY_MINUTE_RETENTION_S")),
                         hour_end - timedelta(hours=1))
        hour_cut = now - timedelta(seconds=conf.get("TELEMETRY_HOUR_RETENTION_S"))
        out["pruned_samples"] = Sample.objects.filter(time__lt=raw_cut).delete()[0]
        out["pruned_minutes"] = Rollup.objects.filter(
            resolution_s=MINUTE, bucket__lt=minute_cut).delete()[0]
        out["pruned_hours"] = Rollup.objects.filter(
            resolution_s=HOUR, bucket__lt=hour_cut).delete()[0]
        DeviceHealthEvent.objects.filter(time__lt=hour_cut).delete()
    return out


# --- simulated utilisation ------------------------------------------------------------------


def simulate_tick(*, now: datetime | None = None, max_idle_devices: int = 256) -> int:
    """Write one tick of realistic samples for running pods of simulated clusters.

    Pod-scope ``pod_util_percent`` / ``pod_memory_used_mib`` per booking and device-scope
    ``util_percent``, ``memory_used_mib``, ``temperature_c``, ``power_w`` per booked device
    (plus up to ``max_idle_devices`` idle simulated devices, so idle cards show too).

    Returns:
        Samples written.
    """
    now = now or timezone.now()
    bookings = list(
        PlacementDevice.objects.filter(
            placement__state=PlacementState.RUNNING,
            placement__node__cluster__backend=Backend.SIMULATED,
        ).select_related("placement__job", "device")
    )
    by_device: dict[int, list] = defaultdict(list)
    for b in bookings:
        by_device[b.device_id].append(b)
    idle = list(
        Device.objects.filter(
            removed_at__isnull=True, node__cluster__backend=Backend.SIMULATED,
            node__removed_at__isnull=True,
        ).exclude(pk__in=list(by_device)).order_by("pk").values_list("pk", "uuid")[
            :max_idle_devices]
    )
    samples: list[AttributedSample] = []
    health_values: dict[int, dict[str, float]] = {}
    for device_id in sorted(by_device):
        holders = by_device[device_id]
        loads = []
        for b in holders:
            p = b.placement
            started = p.started_at or p.created
            elapsed = max(0.0, (now - started).total_seconds())
            load = pod_values(p.pk, b.memory_mib, b.cores_percent, elapsed)
            loads.append(load)
            for metric, value in ((POD_UTIL, load.util_percent),
                                  (POD_MEM_USED, load.memory_used_mib)):
                samples.append(AttributedSample(
                    metric, value, ATTRIBUTED, "", device_id, b.device.uuid, p.pk, p.job_id,
                    p.job.tenant_id))
        first = holders[0]
        elapsed = max(0.0, (now - (first.placement.started_at or now)).total_seconds())
        values = device_values(loads, device_id, elapsed)
        health_values[device_id] = {TEMP: values[TEMP]}
        for metric, value in values.items():
            if len(holders) == 1:
                p = first.placement
                samples.append(AttributedSample(
                    metric, value, ATTRIBUTED, "", device_id, first.device.uuid, p.pk, p.job_id,
                    p.job.tenant_id))
            else:
                samples.append(AttributedSample(
                    metric, value, DEVICE_ONLY, "", device_id, first.device.uuid))
    epoch = now.timestamp()
    for device_id, uuid in idle:
        values = device_values([], device_id, epoch)
        health_values[device_id] = {TEMP: values[TEMP]}
        samples.extend(AttributedSample(m, v, DEVICE_ONLY, "", device_id, uuid)
                       for m, v in values.items())
    store_samples(samples, now)
    apply_health(health_values, now=now, source="simulated")
    return len(samples)


# --- group gauges and capacity alerts --------------------------------------------------------


def compute_group_gauges(*, now: datetime | None = None) -> list[GroupGauge]:
    """Allocation ratio, FGD fragmentation, healthy capacity and guarantees per resource
    group; open / resolve :class:`CapacityAlert` rows (whole group and per flavor)."""
    from scheduling.placement.fragmentation import snapshot_fragmentation
    from scheduling.selectors.fragmentation import target_workload
    from scheduling.selectors.snapshot import build_cluster_snapshot
    from tenants.models import Quota, ResourceGroup

    now = now or timezone.now()
    out = []
    for group in ResourceGroup.objects.order_by("pk"):
        snapshot, _ = build_cluster_snapshot(group)
        devices = [d for n in snapshot.nodes.values() for d in n.devices]
        cores = sum(d.cores_percent for d in devices)
        used = sum(d.used_cores_percent for d in devices)
        frag = snapshot_fragmentation(snapshot, target_workload(group))
        healthy_by_model: dict[str, int] = defaultdict(int)
        for d in devices:
            if d.healthy and not d.cordoned:
                healthy_by_model[d.type] += 1000
        guaranteed: dict[str, int] = defaultdict(int)
        for flavor, nominal in Quota.objects.filter(
            resource_group=group, dimension="devices"
        ).values_list("flavor", "nominal"):
            guaranteed[flavor] += nominal
        total_guaranteed = sum(guaranteed.values())
        healthy = sum(healthy_by_model.values())
        gauge, _ = GroupGauge.objects.update_or_create(
            resource_group=group,
            defaults={
                "capacity_milli": 1000 * len(devices),
                "allocation_ratio": used / cores if cores else 0.0,
                "fragmentation_rate": frag.rate,
                "fragment_milli": frag.fragment_milli,
                "healthy_milli": healthy,
                "guaranteed_milli": total_guaranteed,
                "computed_at": now,
            },
        )
        out.append(gauge)
        checks = {"*": (healthy, total_guaranteed)}
        for flavor, amount in guaranteed.items():
            if flavor != "*":
                checks[flavor] = (healthy_by_model.get(flavor, 0), amount)
        for flavor, (have, need) in checks.items():
            _update_alert(group, flavor, have, need, now)
    return out


def _update_alert(group, flavor: str, healthy: int, guaranteed: int, now: datetime) -> None:
    open_alert = CapacityAlert.objects.filter(
        resource_group=group, flavor=flavor, resolved_at__isnull=True
    ).first()
    short = healthy < guaranteed
    if short and open_alert is None:
        message = (
            f"group {group.name}, flavor {flavor}: healthy capacity {healthy / 1000:g} devices "
            f"below guaranteed {guaranteed / 1000:g}"
        )
        CapacityAlert.objects.create(
            resource_group=group, flavor=flavor, opened_at=now, healthy_milli=healthy,
            guaranteed_milli=guaranteed, message=message,
        )
        logger.warning("capacity alert: %s", message)
    elif short:
        CapacityAlert.objects.filter(pk=open_alert.pk).update(
            healthy_milli=healthy, guaranteed_milli=guaranteed)
    elif open_alert is not None:
        CapacityAlert.objects.filter(pk=open_alert.pk).update(resolved_at=now)


# --- idle jobs ------------------------------------------------------------------------------


def job_minute_use(job_ids: Sequence[int], start: datetime, end: datetime
                   ) -> dict[int, list[tuple[datetime, float]]]:
    """Per job, ``(minute, used cores percent summed over devices)`` from 1-minute rollups
    (pod-scope utilisation preferred over device-scope per device and minute)."""
    rows = Rollup.objects.filter(
        resolution_s=MINUTE, job_id__in=list(job_ids), metric__in=[POD_UTIL, UTIL],
        bucket__gte=start, bucket__lt=end,
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
        ).values("placement__job_id").annotate(c=Sum("cores_percent"))
        .values_list("placement__job_id", "c")
    )
    flagged = []
    with transaction.atomic():
        for job_id, minutes in sorted(use.items()):
            since = idle_since(minutes, end, threshold_percent=threshold, window=window)
            if since is None:
                continue
            flagged.append(job_id)
            recent = [u for m, u in minutes if m >= end - window]
            IdleJobFlag.objects.update_or_create(
                job_id=job_id,
                defaults={
                    "tenant_id": running[job_id], "idle_since": since, "flagged_at": now,
                    "used_cores_percent": sum(recent) / len(recent) if recent else 0.0,
                    "allocated_cores_percent": allocated.get(job_id) or 0,
                },
            )
        IdleJobFlag.objects.exclude(job_id__in=flagged).delete()
    return flagged


# --- prices ---------------------------------------------------------------------------------


def set_price(model_name: str, effective_from: datetime, per_hour, currency: str = "USD"
              ) -> DevicePrice:
    """Create or replace the price of a device model from ``effective_from`` on.

    Raises:
        InvalidRequest: unknown model, negative or malformed price, bad currency, naive time.
    """
    model = DeviceModel.objects.filter(name=model_name).first()
    if model is None:
        raise InvalidRequest(f"unknown device model {model_name!r}", field="model")
    try:
        amount = Decimal(str(per_hour))
    except InvalidOperation as exc:
        raise InvalidRequest(f"price {per_hour!r} is not a number", field="per_hour") from exc
    if not amount.is_finite() or amount < 0:
        raise InvalidRequest("price must be a non-negative number", field="per_hour")
    if len(currency) != 3 or not currency.isalpha():
        raise InvalidRequest("currency must be a 3-letter code", field="currency")
    if timezone.is_naive(effective_from):
        raise InvalidRequest("effective_from needs a time zone", field="effective_from")
    price, _ = DevicePrice.objects.update_or_create(
        model=model, effective_from=effective_from,
        defaults={"per_hour": amount, "currency": currency.upper()},
    )
    return price


__all__ = [
    "AttributionResult",
    "FetchError",
    "apply_health",
    "clear_device_health",
    "compute_group_gauges",
    "flag_idle_jobs",
    "http_fetch",
    "ingest_payload",
    "rollup",
    "scrape_all",
    "scrape_target",
    "set_device_healthy",
    "set_price",
    "simulate_tick",
    "store_samples",
]
