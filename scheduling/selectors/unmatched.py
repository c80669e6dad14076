"""Bookings the inventory can no longer match: live placements on devices their node stopped
registering (``Device.missing_since``). Such a node takes nothing new until the bookings end
or move (``NodeBookingsUnmatched``, :meth:`scheduling.placement.types.NodeInfo
.unmatched_bookings`); ``/metrics`` counts them (``console_unmatched_bookings``)."""

from __future__ import annotations

from dataclasses import dataclass

from scheduling.choices import BOOKED_PLACEMENT_STATES
from scheduling.models import PlacementDevice

__all__ = ["UnmatchedNode", "unmatched_bookings_by_node"]


@dataclass(frozen=True)
class UnmatchedNode:
    """One node with unmatched bookings.

    Attributes:
        cluster / node: names.
        bookings: booked placements holding its missing devices (distinct placements).
        devices: uuids of those devices, sorted.
    """

    cluster: str
    node: str
    bookings: int
    devices: tuple[str, ...]


def unmatched_bookings_by_node() -> list[UnmatchedNode]:
    """Every present node with bookings on devices it no longer registers, by cluster and
    node name (one query)."""
    by_node: dict[tuple[str, str], tuple[set[int], set[str]]] = {}
    for cluster, node, uuid, placement in PlacementDevice.objects.filter(
        placement__state__in=BOOKED_PLACEMENT_STATES,
        device__missing_since__isnull=False,
        device__removed_at__isnull=True,
        device__node__removed_at__isnull=True,
    ).values_list(
        "device__node__cluster__name", "device__node__name", "device__uuid", "placement_id"
    ):
        ids, uuids = by_node.setdefault((cluster, node), (set(), set()))
        ids.add(placement)
        uuids.add(uuid)
    return [
        UnmatchedNode(cluster, node, len(ids), tuple(sorted(uuids)))
        for (cluster, node), (ids, uuids) in sorted(by_node.items())
    ]
