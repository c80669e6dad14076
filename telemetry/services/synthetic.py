"""Synthetic telemetry: realistic samples for the running pods of simulated clusters (the
simulated backend runs pods in the database only, so no exporter reports them)."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from django.utils import timezone

from scheduling.choices import Backend, PlacementState
from scheduling.models import Device, PlacementDevice
from telemetry.attribution import ATTRIBUTED, DEVICE_ONLY, AttributedSample
from telemetry.exporters import POD_MEM_USED, POD_UTIL, TEMP
from telemetry.services.device_health import apply_health
from telemetry.services.ingestion import store_samples
from telemetry.synthetic import device_values, pod_values

__all__ = ["synthetic_tick"]


def synthetic_tick(*, now: datetime | None = None, max_idle_devices: int = 256) -> int:
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
            removed_at__isnull=True,
            node__cluster__backend=Backend.SIMULATED,
            node__removed_at__isnull=True,
        )
        .exclude(pk__in=list(by_device))
        .order_by("pk")
        .values_list("pk", "uuid")[:max_idle_devices]
    )
    samples: list[AttributedSample] = []
    health_values: dict[int, dict[str, float]] = {}
    for device_id in sorted(by_device):
        values = _booked_device_samples(by_device[device_id], device_id, now, samples)
        health_values[device_id] = {TEMP: values[TEMP]}
    epoch = now.timestamp()
    for device_id, uuid in idle:
        values = device_values([], device_id, epoch)
        health_values[device_id] = {TEMP: values[TEMP]}
        samples.extend(
            AttributedSample(m, v, DEVICE_ONLY, "", device_id, uuid) for m, v in values.items()
        )
    store_samples(samples, now)
    apply_health(health_values, now=now, source="simulated")
    return len(samples)


def _booked_device_samples(
    holders: list, device_id: int, now: datetime, samples: list[AttributedSample]
) -> dict[str, float]:
    """Append the pod samples of each booking on one device and the device's own samples
    (attributed to the job when a single booking holds it); return the device values."""
    loads = []
    for b in holders:
        p = b.placement
        started = p.started_at or p.created
        elapsed = max(0.0, (now - started).total_seconds())
        load = pod_values(p.pk, b.memory_mib, b.cores_percent, elapsed, p.job.kind)
        loads.append(load)
        for metric, value in ((POD_UTIL, load.util_percent), (POD_MEM_USED, load.memory_used_mib)):
            samples.append(
                AttributedSample(
                    metric,
                    value,
                    ATTRIBUTED,
                    "",
                    device_id,
                    b.device.uuid,
                    p.pk,
                    p.job_id,
                    p.job.tenant_id,
                )
            )
    first = holders[0]
    elapsed = max(0.0, (now - (first.placement.started_at or now)).total_seconds())
    values = device_values(loads, device_id, elapsed)
    for metric, value in values.items():
        if len(holders) == 1:
            p = first.placement
            samples.append(
                AttributedSample(
                    metric,
                    value,
                    ATTRIBUTED,
                    "",
                    device_id,
                    first.device.uuid,
                    p.pk,
                    p.job_id,
                    p.job.tenant_id,
                )
            )
        else:
            samples.append(
                AttributedSample(metric, value, DEVICE_ONLY, "", device_id, first.device.uuid)
            )
    return values
