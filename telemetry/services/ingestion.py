"""Ingestion: parse, normalise and attribute one exposition payload, store its samples and
fold its health values into device health."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db.models import Q
from django.utils import timezone

from scheduling.choices import BOOKED_PLACEMENT_STATES
from scheduling.devices.vendors import serial_vendor_of_exporter
from scheduling.models import Cluster, Device, PlacementDevice, PlacementMigInstance
from scheduling.services.inventory.plan import Sighting
from scheduling.services.inventory.serials import record_sightings
from telemetry.attribution import AttributedSample, BookingRef, DeviceRef, Inventory, attribute
from telemetry.exporters import (
    ECC_DBE,
    ERROR_CODE,
    HEALTH,
    TEMP,
    XID,
    XID_COUNT,
    Observation,
    normalise,
)
from telemetry.exposition import parse_exposition
from telemetry.models import Sample, ScrapeTarget
from telemetry.services.batches import write_in_batches
from telemetry.services.device_health import apply_health

__all__ = ["ingest_payload", "store_samples"]

HEALTH_METRICS = (HEALTH, XID, TEMP, ECC_DBE, XID_COUNT, ERROR_CODE)


def _inventory(keys: set[str], cluster_id: int | None, index_nodes: set[str]) -> Inventory:
    """Devices named by ``keys`` (their key or hardware serial; any cluster: a serial is
    global) plus the devices of the cluster's nodes in ``index_nodes`` (for index fallback),
    and their live bookings with the MIG GPU instances they hold."""
    devices = Device.objects.filter(removed_at__isnull=True).select_related("node")
    query = Q(uuid__in=keys) | Q(serial__in=keys)
    if index_nodes and cluster_id is not None:
        query |= Q(node__cluster_id=cluster_id, node__name__in=index_nodes)
    refs = [DeviceRef(d.pk, d.uuid, d.node.name, d.index, d.serial) for d in devices.filter(query)]
    booked = PlacementDevice.objects.filter(
        device_id__in=[r.device_id for r in refs], placement__state__in=BOOKED_PLACEMENT_STATES
    ).select_related("placement__job")
    instances: dict[tuple[int, int], list[str]] = {}
    for placement_id, device_id, gi in PlacementMigInstance.objects.filter(
        placement_id__in={b.placement_id for b in booked}, gpu_instance_id__isnull=False
    ).values_list("placement_id", "device_id", "gpu_instance_id"):
        instances.setdefault((placement_id, device_id), []).append(str(gi))
    bookings = [
        BookingRef(
            b.placement_id,
            b.placement.job_id,
            b.placement.job.tenant_id,
            b.placement.backend_ref,
            b.device_id,
            tuple(instances.get((b.placement_id, b.device_id), ())),
        )
        for b in booked
    ]
    return Inventory.build(refs, bookings)


def ingest_payload(
    kind: str,
    text: str,
    *,
    cluster_id: int | None = None,
    target: ScrapeTarget | None = None,
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
    index_nodes = {o.node for o in normalised.observations if o.node and o.index}
    inventory = _inventory(keys, cluster_id, index_nodes)
    result = attribute(normalised.observations, inventory)
    serial_vendor = serial_vendor_of_exporter(kind)
    if serial_vendor and cluster_id is not None:
        _record_serials(cluster_id, serial_vendor, normalised.observations, now)
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


def _record_serials(
    cluster_id: int, vendor: str, observations: Iterable[Observation], now: datetime
) -> None:
    """Feed the serial map (``DeviceSerial``) with what an exporter of ``vendor`` 's serials
    says (:func:`scheduling.devices.vendors.serial_vendor_of_exporter`; the DCU exporter):
    ``device_id`` (the bare serial) at (``node``, ``minor_number``). The next inventory sync
    keys a legacy index-based ``DCU-<index>`` registration by that serial
    (:mod:`scheduling.kube.identity`)."""
    sightings = {
        (o.device_keys[0], o.node, int(o.index))
        for o in observations
        if o.device_keys and o.node and o.index.isdigit()
    }
    if sightings:
        record_sightings(
            Cluster.objects.get(pk=cluster_id),
            [
                Sighting(vendor, serial, node, index, "exporter")
                for serial, node, index in sorted(sightings)
            ],
            now,
        )


def store_samples(
    samples: Iterable[AttributedSample], when: datetime, *, target: ScrapeTarget | None = None
) -> int:
    """Insert attributed samples as raw :class:`Sample` rows in short transactions
    (:func:`~telemetry.services.batches.write_in_batches`). Returns the row count."""
    rows = [
        Sample(
            time=when,
            target=target,
            metric=s.metric,
            value=s.value,
            status=s.status,
            reason=s.reason,
            device_id=s.device_id,
            device_key=s.device_key[:128],
            placement_id=s.placement_id,
            job_id=s.job_id,
            tenant_id=s.tenant_id,
        )
        for s in samples
    ]
    # short batches, key-share locks in lock order (telemetry.services.batches)
    return write_in_batches(rows, Sample.objects.bulk_create)
