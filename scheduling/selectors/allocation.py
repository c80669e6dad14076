"""Device allocation: the one place that says how much of the inventory is allocated.

Every allocation figure of the console comes from here: the overview (per vendor, model and
resource group), the nodes list (per node), the quotas page (per resource group), ``/metrics``
(``console_allocation_ratio``, ``console_allocated_devices``) and the allocation trends.

A device's allocated share is ``min(1, max(booked memory / memory, booked cores / cores))``:
the larger of its booked shares. Taking the larger one matters: a memory-only booking (an
Ascend vNPU template books device memory and no HAMi cores percent) counts as much as a
cores-only one, so no vendor reads 0 % allocated while its memory is booked. A whole-device
booking is 1, a 40 % memory / 30 % cores slice is 0.4. The ``devices`` quota charge of a
booking (:mod:`scheduling.accounting`) uses the same rule per booking (rounded up to a
milli-device), so a tenant's usage and the allocation agree up to that rounding.

Present devices only (device and node not removed). Membership of a resource group is the
rule of :func:`scheduling.selectors.snapshot.group_devices` (every node-selector label
matches; the device is of one of the group's models when the group names models), applied in
Python so that all groups cost no query beyond reading them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.db.models import Sum

from scheduling.choices import BOOKED_PLACEMENT_STATES
from scheduling.models import Device, PlacementDevice
from tenants.models import ResourceGroup

__all__ = [
    "CapacityRow",
    "DeviceLoad",
    "device_loads",
    "present_device_loads",
    "capacity_by_model",
    "capacity_by_vendor",
    "capacity_by_group",
    "capacity_by_node",
    "in_group",
]


@dataclass(frozen=True)
class DeviceLoad:
    """Capacity and bookings of one present device.

    Attributes:
        node_id, model, vendor: where it is and what it is.
        memory_mib / cores_percent: registered capacity.
        share: allocated share (module docstring), 0..1.
        booked_memory_mib / booked_cores_percent: sums over its live bookings.
        labels: its node's labels (for group membership).
        usable: healthy and not cordoned.
    """

    node_id: int
    model: str
    vendor: str
    memory_mib: int
    cores_percent: int
    share: float
    booked_memory_mib: int
    booked_cores_percent: int
    labels: dict
    usable: bool = True


@dataclass(frozen=True)
class CapacityRow:
    """Capacity and allocation of a set of devices.

    ``allocated_devices`` is the sum of the devices' allocated shares (module docstring), in
    devices. ``*_pct`` are allocation ratios in percent of capacity.
    """

    label: str
    vendor: str
    devices: int
    memory_mib: int
    allocated_devices: float
    allocated_memory_mib: int

    @property
    def allocated_pct(self) -> float:
        return 100.0 * self.allocated_devices / self.devices if self.devices else 0.0

    @property
    def allocation_ratio(self) -> float:
        """Allocated devices / devices, 0..1 (``console_allocation_ratio``)."""
        return self.allocated_devices / self.devices if self.devices else 0.0

    @property
    def memory_pct(self) -> float:
        return 100.0 * self.allocated_memory_mib / self.memory_mib if self.memory_mib else 0.0


def device_loads(devices=None) -> dict[int, DeviceLoad]:
    """``{device id: DeviceLoad}`` of the present devices of ``devices`` (a Device queryset;
    None = every device). Two queries."""
    devices = (Device.objects.all() if devices is None else devices).filter(
        removed_at__isnull=True, node__removed_at__isnull=True
    )
    booked = {
        row[0]: row[1:]
        for row in PlacementDevice.objects.filter(
            placement__state__in=BOOKED_PLACEMENT_STATES, device__in=devices
        )
        .values("device_id")
        .annotate(mem=Sum("memory_mib"), cores=Sum("cores_percent"))
        .values_list("device_id", "mem", "cores")
    }
    loads = {}
    for (
        pk,
        node_id,
        model,
        vendor,
        mem_cap,
        cores_cap,
        labels,
        healthy,
        cordoned,
    ) in devices.values_list(
        "id",
        "node_id",
        "model__name",
        "model__vendor",
        "memory_mib",
        "cores_percent",
        "node__labels",
        "healthy",
        "cordoned",
    ):
        mem, cores = booked.get(pk, (0, 0))
        mem, cores = mem or 0, cores or 0
        share = max(mem / mem_cap if mem_cap else 0.0, cores / cores_cap if cores_cap else 0.0)
        loads[pk] = DeviceLoad(
            node_id,
            model,
            vendor,
            mem_cap,
            cores_cap,
            min(1.0, share),
            mem,
            cores,
            labels or {},
            healthy and not cordoned,
        )
    return loads


def present_device_loads() -> dict[int, DeviceLoad]:
    """:class:`DeviceLoad` of every present device (two queries); pass it to the
    ``capacity_by_*`` functions to read the inventory once."""
    return device_loads()


def _row(label: str, vendor: str, loads: Iterable[DeviceLoad]) -> CapacityRow:
    loads = list(loads)
    return CapacityRow(
        label=label,
        vendor=vendor,
        devices=len(loads),
        memory_mib=sum(d.memory_mib for d in loads),
        allocated_devices=round(sum(d.share for d in loads), 4),
        allocated_memory_mib=sum(d.booked_memory_mib for d in loads),
    )


def capacity_by_model(loads: dict[int, DeviceLoad] | None = None) -> list[CapacityRow]:
    """One row per device model with present devices, vendor then model order (two
    queries, none when ``loads`` is given)."""
    if loads is None:
        loads = present_device_loads()
    by_model: dict[tuple[str, str], list[DeviceLoad]] = {}
    for load in loads.values():
        by_model.setdefault((load.vendor, load.model), []).append(load)
    return [_row(model, vendor, rows) for (vendor, model), rows in sorted(by_model.items())]


def capacity_by_vendor(model_rows: list[CapacityRow]) -> list[CapacityRow]:
    """Vendor totals of :func:`capacity_by_model` rows (no query)."""
    totals: dict[str, list] = {}
    for row in model_rows:
        t = totals.setdefault(row.vendor, [0, 0, 0.0, 0])
        t[0] += row.devices
        t[1] += row.memory_mib
        t[2] += row.allocated_devices
        t[3] += row.allocated_memory_mib
    return [
        CapacityRow(vendor, vendor, n, mem, round(alloc, 4), alloc_mem)
        for vendor, (n, mem, alloc, alloc_mem) in sorted(totals.items())
    ]


def in_group(load: DeviceLoad, group: ResourceGroup) -> bool:
    """True when the device is one of the group's (module docstring)."""
    if any(load.labels.get(k) != v for k, v in group.node_selector.items()):
        return False
    return not group.device_models or load.model in group.device_models


def capacity_by_group(
    loads: dict[int, DeviceLoad] | None = None, groups: Sequence[ResourceGroup] | None = None
) -> list[CapacityRow]:
    """One row per resource group (name order; groups may share devices). One query for the
    groups unless given, two more unless ``loads`` is given."""
    if loads is None:
        loads = present_device_loads()
    if groups is None:
        groups = list(ResourceGroup.objects.order_by("name"))
    return [
        _row(g.name, g.get_kind_display(), (d for d in loads.values() if in_group(d, g)))
        for g in sorted(groups, key=lambda g: g.name)
    ]


def capacity_by_node(node_ids: Iterable[int]) -> dict[int, CapacityRow]:
    """``{node id: CapacityRow}`` of the given nodes' present devices (two queries; a node
    without present devices is absent). ``label`` is the node id as text."""
    by_node: dict[int, list[DeviceLoad]] = {}
    for load in device_loads(Device.objects.filter(node_id__in=list(node_ids))).values():
        by_node.setdefault(load.node_id, []).append(load)
    return {node_id: _row(str(node_id), "", rows) for node_id, rows in by_node.items()}
