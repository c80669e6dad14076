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

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.db import connection
from django.db.models import Sum

from scheduling.choices import BOOKED_PLACEMENT_STATES
from scheduling.models import Device, DeviceModel, Node, Placement, PlacementDevice
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
    "model_capacity_rows",
    "group_capacity_rows",
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


# --- the same rows aggregated by PostgreSQL (pages: no per-device row reaches Python) -------


def _loads_sql() -> tuple[str, list]:
    """A ``WITH loads AS (...)`` clause: one row per present device with its model, vendor,
    capacity, node labels, allocated ``share`` (module docstring) and booked memory."""
    t = {
        m.__name__: connection.ops.quote_name(m._meta.db_table)
        for m in (Device, DeviceModel, Node, Placement, PlacementDevice)
    }
    sql = f"""
        WITH booked AS (
            SELECT pd.device_id, SUM(pd.memory_mib) AS mem, SUM(pd.cores_percent) AS cores
            FROM {t["PlacementDevice"]} pd JOIN {t["Placement"]} p ON p.id = pd.placement_id
            WHERE p.state = ANY(%s) GROUP BY pd.device_id
        ), loads AS (
            SELECT dm.vendor, dm.name AS model, d.memory_mib, n.labels,
                   COALESCE(b.mem, 0) AS booked_mem,
                   LEAST(1.0, GREATEST(
                       COALESCE(b.mem, 0)::float / NULLIF(d.memory_mib, 0),
                       COALESCE(b.cores, 0)::float / NULLIF(d.cores_percent, 0), 0.0)) AS share
            FROM {t["Device"]} d
            JOIN {t["Node"]} n ON n.id = d.node_id
            JOIN {t["DeviceModel"]} dm ON dm.id = d.model_id
            LEFT JOIN booked b ON b.device_id = d.id
            WHERE d.removed_at IS NULL AND n.removed_at IS NULL
        )"""  # noqa: S608 - table names from the models
    return sql, [list(BOOKED_PLACEMENT_STATES)]


def model_capacity_rows() -> list[CapacityRow]:
    """:func:`capacity_by_model` computed by PostgreSQL: one query, whatever the number of
    devices (vendor then model order)."""
    sql, params = _loads_sql()
    with connection.cursor() as cursor:
        select = (
            " SELECT vendor, model, COUNT(*), COALESCE(SUM(memory_mib), 0), SUM(share),"
            " COALESCE(SUM(booked_mem), 0) FROM loads GROUP BY vendor, model ORDER BY vendor, model"
        )
        cursor.execute(sql + select, params)
        return [
            CapacityRow(model, vendor, n, int(mem), round(float(alloc or 0), 4), int(bmem))
            for vendor, model, n, mem, alloc, bmem in cursor.fetchall()
        ]


def group_capacity_rows(groups: Sequence[ResourceGroup] | None = None) -> list[CapacityRow]:
    """:func:`capacity_by_group` computed by PostgreSQL: one query for every group (a
    filtered aggregate per group: node labels contain the group's node selector, the model is
    one of its models when it names any), plus one for the groups unless given."""
    if groups is None:
        groups = list(ResourceGroup.objects.order_by("name"))
    groups = sorted(groups, key=lambda g: g.name)
    if not groups:
        return []
    sql, params = _loads_sql()
    columns = []
    for g in groups:
        where = "labels @> %s::jsonb"
        params.append(json.dumps(g.node_selector or {}))
        if g.device_models:
            where += " AND model = ANY(%s)"
            params.append(list(g.device_models))
        columns.append(
            f"COUNT(*) FILTER (WHERE {where}), COALESCE(SUM(memory_mib) FILTER (WHERE {where}), 0),"
            f" COALESCE(SUM(share) FILTER (WHERE {where}), 0),"
            f" COALESCE(SUM(booked_mem) FILTER (WHERE {where}), 0)"
        )
        params.extend(params[-(2 if g.device_models else 1) :] * 3)
    with connection.cursor() as cursor:
        select = " SELECT " + ", ".join(columns) + " FROM loads"  # noqa: S608 - values as params
        cursor.execute(sql + select, params)
        values = cursor.fetchone()
    return [
        CapacityRow(
            g.name,
            g.get_kind_display(),
            int(values[4 * i]),
            int(values[4 * i + 1]),
            round(float(values[4 * i + 2]), 4),
            int(values[4 * i + 3]),
        )
        for i, g in enumerate(groups)
    ]
