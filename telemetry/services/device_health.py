"""Device health: fold measured values into each device's health state, write health events,
and hand verdict changes to the inventory (:func:`scheduling.services.devices.set_device_health`).
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from core.exceptions import NotFound
from core.locks import DEVICE_HEALTH, xact_lock
from scheduling.models import Device
from scheduling.services.devices import set_device_health
from telemetry import conf
from telemetry.health import HealthState, clear_sticky, evaluate
from telemetry.models import DeviceHealth, DeviceHealthEvent

__all__ = ["apply_health", "clear_device_health"]


def _temperature_limit(config, default: float) -> float:
    """``config.temperature_limit_c`` of a device model, else ``default`` (°C)."""
    limit = (config or {}).get("temperature_limit_c") if isinstance(config, dict) else None
    return float(limit) if isinstance(limit, int | float) else default


def _fold(
    device: Device,
    row: DeviceHealth | None,
    values: dict[str, float],
    limit: float,
    now: datetime,
    source: str,
    events: list[DeviceHealthEvent],
) -> None:
    """Fold one device's ``values`` into its health ``row`` (created on first sight), append
    its events, save the row and hand a verdict change to the inventory."""
    before = HealthState(
        healthy=row.healthy if row else True,
        reasons=dict(row.reasons) if row else {},
        counters=dict(row.counters) if row else {},
    )
    after, found = evaluate(before, values, limit)
    events.extend(
        DeviceHealthEvent(
            serial=device.uuid,
            device=device,
            node_name=device.node.name,
            cluster_name=device.node.cluster.name,
            time=now,
            kind=event.kind,
            severity=event.severity,
            value=event.value,
            message=event.message,
            source=source[:100],
        )
        for event in found
    )
    # First sight: only an unhealthy verdict touches Device.healthy (the inventory's own
    # flag, e.g. HAMi registration health, is not overridden by "healthy").
    flip = (not after.healthy) if row is None else after.healthy != row.healthy
    if row is None:
        row = DeviceHealth(serial=device.uuid, device=device, changed_at=now)
    row.device, row.serial = device, device.uuid
    row.healthy, row.reasons, row.counters = after.healthy, after.reasons, after.counters
    row.checked_at = now
    if flip:
        row.changed_at = now
    row.save()
    if flip:
        set_device_health(
            device.pk, healthy=after.healthy, reason="; ".join(sorted(after.reasons.values()))
        )


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
        d.pk: d
        for d in Device.objects.filter(pk__in=list(values)).select_related("node__cluster", "model")
    }
    default_limit = float(conf.get("TELEMETRY_TEMPERATURE_LIMIT_C"))
    events: list[DeviceHealthEvent] = []
    with transaction.atomic():
        # one fold at a time (two scrapes, or a scrape and the simulated tick): each reads the
        # stored state, then writes it, and two at once both inserted a device's first row
        # (telemetry_devicehealth_serial_key) or lost one's counters
        xact_lock(DEVICE_HEALTH, 0)
        # by device too: a device re-keyed by the inventory (a Hygon DCU-0 whose serial became
        # known) keeps its health record, which then takes the new key
        states = {
            h.device_id or h.serial: h
            for h in DeviceHealth.objects.filter(
                Q(serial__in=[d.uuid for d in devices.values()]) | Q(device_id__in=list(devices))
            )
        }
        for pk in sorted(devices):
            device = devices[pk]
            row = states.get(device.pk) or states.get(device.uuid)
            limit = _temperature_limit(device.model.config, default_limit)
            _fold(device, row, values[pk], limit, now, source, events)
        DeviceHealthEvent.objects.bulk_create(events)
    return events


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
            serial=serial,
            device=device,
            node_name=device.node.name if device else "",
            cluster_name=device.node.cluster.name if device else "",
            time=now,
            kind="cleared",
            severity="info",
            message=f"sticky conditions cleared by {user or 'operator'}",
        )
        if after.healthy != row.healthy:
            row.changed_at = now
        row.healthy, row.reasons = after.healthy, after.reasons
        row.save()
        if device is not None:
            set_device_health(device.pk, healthy=after.healthy)
    return row
