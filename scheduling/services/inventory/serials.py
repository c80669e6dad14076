"""The serial -> (node, index) map (:class:`~scheduling.models.DeviceSerial`): read for the
sync's identity rules, written from registrations, node annotations / labels and exporters."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from scheduling.models import Cluster, DeviceSerial
from scheduling.services.inventory.plan import Sighting

__all__ = ["serials_seen", "record_sightings"]


def serials_seen(cluster: Cluster, vendor: str = "DCU") -> dict[str, dict[int, str]]:
    """``{node name: {index: serial}}`` of ``vendor`` cards in ``cluster``; when two serials
    were seen at one (node, index) (a card was swapped), the latest wins."""
    out: dict[str, dict[int, str]] = {}
    rows = (
        DeviceSerial.objects.filter(cluster=cluster, vendor=vendor)
        .order_by("seen_at", "pk")
        .values_list("node_name", "index", "serial")
    )
    for node, index, serial in rows:
        out.setdefault(node, {})[index] = serial
    return out


def record_sightings(cluster: Cluster, sightings: Iterable[Sighting], now: datetime) -> int:
    """Upsert sightings (one statement): a serial seen elsewhere than recorded moves there.

    Returns:
        Number of sightings written.
    """
    rows = {
        (s.vendor, s.serial): DeviceSerial(
            vendor=s.vendor,
            serial=s.serial,
            cluster=cluster,
            node_name=s.node,
            index=s.index,
            source=s.source,
            seen_at=now,
        )
        for s in sightings
    }
    if rows:
        DeviceSerial.objects.bulk_create(
            list(rows.values()),
            update_conflicts=True,
            unique_fields=["vendor", "serial"],
            update_fields=["cluster", "node_name", "index", "source", "seen_at", "updated"],
        )
    return len(rows)
