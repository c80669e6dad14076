"""Card map of a node and history of a device: each device with the slices booked on it.

Slices of tenants the viewer does not belong to are anonymised (``owner = "other tenant"``,
no job name or id), so the map never leaks another tenant's names.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from django.contrib.postgres.aggregates import ArrayAgg
from django.db.models import Count, Q, Sum, Value

from scheduling.choices import BOOKED_PLACEMENT_STATES
from scheduling.models import Device, Node, PlacementDevice

PALETTE = [
    "#2563eb",
    "#16a34a",
    "#d97706",
    "#9333ea",
    "#0891b2",
    "#db2777",
    "#65a30d",
    "#dc2626",
    "#4f46e5",
    "#0d9488",
]
OTHER_COLOUR = "#9ca3af"
OTHER_TENANT = "other tenant"


def tenant_colour(key: int | str) -> str:
    """A stable colour per tenant id (id modulo the palette, so the first ten tenants never
    share a colour) or per name (md5 of the name) for things without an id."""
    if isinstance(key, int):
        return PALETTE[key % len(PALETTE)]
    digest = hashlib.md5(key.encode(), usedforsecurity=False).hexdigest()
    return PALETTE[int(digest, 16) % len(PALETTE)]


@dataclass(frozen=True)
class Slice:
    """One booking on a device: ``memory_mib`` MiB, ``cores_percent`` %, ``slots`` tasks.

    ``visible`` is False for another tenant's booking: then ``tenant``/``job_name`` are the
    anonymous label and ``job_id`` is None.
    """

    memory_mib: int
    cores_percent: int
    slots: int
    tenant: str
    job_id: int | None
    job_name: str
    pod_index: int | None
    state: str
    colour: str
    visible: bool


@dataclass
class DeviceCard:
    """A device and its slices, with percentages of capacity for drawing."""

    device: Device
    slices: list[Slice] = field(default_factory=list)

    @property
    def used_memory_mib(self) -> int:
        return sum(s.memory_mib for s in self.slices)

    @property
    def used_cores_percent(self) -> int:
        return sum(s.cores_percent for s in self.slices)

    @property
    def used_slots(self) -> int:
        return sum(s.slots for s in self.slices)

    @property
    def free_memory_mib(self) -> int:
        return max(0, self.device.memory_mib - self.used_memory_mib)

    @property
    def free_cores_percent(self) -> int:
        return max(0, self.device.cores_percent - self.used_cores_percent)

    def _pct(self, amount: int, cap: int) -> float:
        return round(100.0 * amount / cap, 2) if cap else 0.0

    @property
    def memory_segments(self) -> list[tuple[Slice, float]]:
        return [(s, self._pct(s.memory_mib, self.device.memory_mib)) for s in self.slices]

    @property
    def cores_segments(self) -> list[tuple[Slice, float]]:
        return [(s, self._pct(s.cores_percent, self.device.cores_percent)) for s in self.slices]

    @property
    def health(self) -> str:
        """``removed``, ``unhealthy``, ``cordoned``, ``error`` or ``healthy``."""
        d = self.device
        if d.removed_at:
            return "removed"
        if not d.healthy:
            return "unhealthy"
        if d.cordoned:
            return "cordoned"
        if getattr(d, "error", ""):
            return "error"
        return "healthy"


def _slice(booking: PlacementDevice, viewer_tenant_ids: set[int] | None) -> Slice:
    placement = booking.placement
    job = placement.job
    visible = viewer_tenant_ids is None or job.tenant_id in viewer_tenant_ids
    if visible:
        return Slice(
            booking.memory_mib,
            booking.cores_percent,
            booking.slots,
            job.tenant.name,
            job.pk,
            job.name,
            placement.pod_index,
            placement.state,
            tenant_colour(job.tenant_id),
            True,
        )
    return Slice(
        booking.memory_mib,
        booking.cores_percent,
        booking.slots,
        OTHER_TENANT,
        None,
        OTHER_TENANT,
        None,
        placement.state,
        OTHER_COLOUR,
        False,
    )


def node_list(cluster: str | None = None):
    """Present and removed nodes with device count, booked cores and memory, and the
    sorted ``vendors`` / ``models`` (lists of str) of their present devices (one query)."""
    booked = Q(devices__bookings__placement__state__in=BOOKED_PLACEMENT_STATES)
    present = Q(devices__removed_at__isnull=True)
    nodes = (
        Node.objects.select_related("cluster")
        .annotate(
            device_count=Count(
                "devices", filter=Q(devices__removed_at__isnull=True), distinct=True
            ),
            unhealthy=Count(
                "devices",
                filter=Q(devices__healthy=False, devices__removed_at__isnull=True),
                distinct=True,
            ),
            booked_cores=Sum("devices__bookings__cores_percent", filter=booked),
            booked_memory_mib=Sum("devices__bookings__memory_mib", filter=booked),
            vendors=ArrayAgg(
                "devices__model__vendor",
                filter=present,
                distinct=True,
                default=Value([]),
                order_by="devices__model__vendor",
            ),
            models=ArrayAgg(
                "devices__model__name",
                filter=present,
                distinct=True,
                default=Value([]),
                order_by="devices__model__name",
            ),
        )
        .order_by("cluster__name", "name")
    )
    if cluster:
        nodes = nodes.filter(cluster__name=cluster)
    return nodes


def node_card_map(node: Node, viewer_tenant_ids: set[int] | None) -> list[DeviceCard]:
    """Device cards of a node, index order, with live bookings (two queries).

    Args:
        node: the node.
        viewer_tenant_ids: the viewer's tenant ids (None = platform admin sees every name).
    """
    devices = list(node.devices.select_related("model").order_by("removed_at", "index", "uuid"))
    cards = {d.pk: DeviceCard(d) for d in devices}
    for booking in (
        PlacementDevice.objects.filter(
            device__in=devices, placement__state__in=BOOKED_PLACEMENT_STATES
        )
        .select_related("placement__job__tenant")
        .order_by("placement__job_id", "id")
    ):
        cards[booking.device_id].slices.append(_slice(booking, viewer_tenant_ids))
    return list(cards.values())


@dataclass(frozen=True)
class HistoryRow:
    """One past or present booking of a device (on the node it had then)."""

    node: str
    cluster: str
    slice: Slice
    start: object
    end: object


def device_history(
    device: Device, viewer_tenant_ids: set[int] | None, limit: int = 200
) -> list[HistoryRow]:
    """Bookings of a device, newest first, across every node it was on (one query)."""
    rows = []
    for booking in (
        PlacementDevice.objects.filter(device=device)
        .select_related("placement__job__tenant", "placement__node__cluster")
        .order_by("-placement__created", "-id")[:limit]
    ):
        p = booking.placement
        rows.append(
            HistoryRow(
                p.node.name,
                p.node.cluster.name,
                _slice(booking, viewer_tenant_ids),
                p.started_at or p.submitted_at or p.created,
                p.ended_at,
            )
        )
    return rows
