"""The overview's inventory-wide panels, computed by the gauges beat task (never in a page
request): the FGD fragmentation of the whole inventory and of every distinct scope of the
users' visible tenants, the measured utilisation per device model and vendor, and capacity vs
allocation per model and group with every queue's length.

Stored as :class:`~telemetry.models.DashboardPanel` rows; the overview reads them
(:func:`read_panel`) with one query each, whatever the inventory size. Their figures are as
fresh as the gauges task's period (``TELEMETRY_GAUGES_S``).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from datetime import datetime

from django.utils import timezone

from scheduling.models import Queue
from scheduling.selectors.allocation import (
    DeviceLoad,
    group_capacity_rows,
    model_capacity_rows,
    present_device_loads,
)
from scheduling.selectors.fragmentation import (
    Inventory,
    cluster_fragmentation,
    load_inventory,
    report_to_json,
)
from scheduling.selectors.overview import queue_lengths
from telemetry.exporters import UTIL
from telemetry.models import DashboardPanel
from telemetry.selectors import latest_device_values
from tenants.models import Quota, ResourceGroup
from tenants.selectors import visible_tenant_ids_by_user

__all__ = [
    "ALL_KEY",
    "CAPACITY_KEY",
    "UTIL_KEY",
    "TOP_FRAGMENTED_NODES",
    "compute_panels",
    "read_panel",
    "scope_key",
    "user_group_scopes",
]

ALL_KEY = "fragmentation:all"
UTIL_KEY = "measured-util"
CAPACITY_KEY = "capacity"
#: Rows of the overview's "most fragmented nodes" table.
TOP_FRAGMENTED_NODES = 10


def scope_key(group_ids) -> str:
    """Panel key of the union of these resource groups (ids in ascending order)."""
    return "fragmentation:groups:" + ",".join(str(pk) for pk in sorted(set(group_ids)))


def user_group_scopes() -> set[frozenset[int]]:
    """The distinct sets of resource groups the overview shows non-admin users: for each user
    with a membership, the groups where one of their visible tenants (their own tenants and,
    where tenant admin, every tenant below: ``tenants.selectors.visible_tenant_ids_by_user``)
    has a quota or a queue (:func:`scheduling.selectors.fragmentation.groups_for_tenants`).
    Four queries, whatever the number of users."""
    groups_of: dict[int, set[int]] = defaultdict(set)
    for rows in (Quota.objects, Queue.objects):
        for tenant_id, group_id in rows.values_list("tenant_id", "resource_group_id").distinct():
            groups_of[tenant_id].add(group_id)
    visible = visible_tenant_ids_by_user()
    return {frozenset(g for t in tenants for g in groups_of[t]) for tenants in visible.values()} - {
        frozenset()
    }


def _measured_util(loads: dict[int, DeviceLoad]) -> dict[str, float]:
    """Mean measured utilisation (%) of the present devices per model and per vendor, from
    the newest telemetry minute (devices without recent samples are left out)."""
    devices = {pk: (load.model, load.vendor) for pk, load in loads.items()}
    sums: dict[str, list[float]] = {}
    for pk, values in latest_device_values(devices).items():
        if UTIL in values:
            for key in devices[pk]:
                sums.setdefault(key, []).append(values[UTIL])
    return {key: sum(v) / len(v) for key, v in sums.items()}


def _capacity() -> dict:
    """Capacity vs allocation per device model and per resource group
    (:func:`~scheduling.selectors.allocation.model_capacity_rows`,
    :func:`~scheduling.selectors.allocation.group_capacity_rows`) and every queue's length
    (:func:`~scheduling.selectors.overview.queue_lengths`) as JSON."""
    return {
        "models": [dataclasses.asdict(r) for r in model_capacity_rows()],
        "groups": [dataclasses.asdict(r) for r in group_capacity_rows()],
        "queues": [dataclasses.asdict(r) for r in queue_lengths(None)],
    }


def _compute_one(key: str, inventory: Inventory | None) -> dict:
    """The data of one panel ``key`` (module docstring); ``inventory`` is read when a
    fragmentation panel needs it and none is given."""
    if key == UTIL_KEY:
        return _measured_util(present_device_loads())
    if key == CAPACITY_KEY:
        return _capacity()
    inventory = inventory or load_inventory()
    if key == ALL_KEY:
        report = cluster_fragmentation(None, inventory=inventory)
        nodes = [n for n in report.nodes if n.fragment_milli > 0 or n.stranded]
        return report_to_json(dataclasses.replace(report, nodes=nodes[:TOP_FRAGMENTED_NODES]))
    ids = {int(pk) for pk in key.rpartition(":")[2].split(",") if pk}
    chosen = list(ResourceGroup.objects.filter(pk__in=ids).order_by("name"))
    union = cluster_fragmentation(chosen, inventory=inventory)
    return report_to_json(dataclasses.replace(union, nodes=[]))


def read_panel(key: str) -> tuple[dict, datetime]:
    """``(data, computed_at)`` of the stored panel ``key`` (one query). A panel the gauges
    task has not stored yet (a fresh install before its first run, a scope whose membership
    changed since) is computed now, once, and stored: the next views read it."""
    row = DashboardPanel.objects.filter(key=key).values_list("data", "computed_at").first()
    if row is not None:
        return row[0], row[1]
    now = timezone.now()
    data = _compute_one(key, None)
    DashboardPanel.objects.update_or_create(key=key, defaults={"data": data, "computed_at": now})
    return data, now


def compute_panels(
    inventory: Inventory, loads: dict[int, DeviceLoad], groups: list[ResourceGroup], now: datetime
) -> int:
    """Compute and store every overview panel (module docstring). Returns the panel count."""
    panels = {
        ALL_KEY: _compute_one(ALL_KEY, inventory),
        UTIL_KEY: _measured_util(loads),
        CAPACITY_KEY: _capacity(),
    }
    known = {g.pk for g in groups}
    for scope in user_group_scopes():
        if scope & known:
            key = scope_key(scope & known)
            panels[key] = _compute_one(key, inventory)
    for key, data in panels.items():
        DashboardPanel.objects.update_or_create(
            key=key, defaults={"data": data, "computed_at": now}
        )
    DashboardPanel.objects.filter(key__startswith="fragmentation:groups:").exclude(
        key__in=list(panels)
    ).delete()
    return len(panels)
