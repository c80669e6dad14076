"""Inventory sync, step 2: write an :class:`~.plan.InventoryPlan` node by node.

Each node (its row and the devices it reports) is written in its own savepoint: a database
error while writing one node (a value a column cannot hold that slipped past the schema)
rolls back only that node, which is then flagged (``Node.error``) and keeps its devices as
they were; every other node is written.

Rules (see :mod:`scheduling.services.inventory`): devices are keyed by uuid and move with
their uuid; the same uuid on two nodes of one sync, or live in another cluster, is a
conflict (reported, never merged, the row stays where it was and is marked unhealthy);
devices of a pool whose ResourceSlice could not be read stay as they were, flagged with the
slice's error; devices and nodes that disappeared get ``removed_at``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from django.db import DatabaseError, transaction

from scheduling.models import Cluster, Device, DeviceModel, Node
from scheduling.services.inventory.device_models import model_for
from scheduling.services.inventory.plan import InventoryPlan, Reported
from scheduling.services.kube_reconcile import handle_lost_node

logger = logging.getLogger(__name__)

__all__ = ["InventoryReport", "InventoryWriter"]


@dataclass
class InventoryReport:
    """What one sync did.

    Attributes:
        cluster: cluster name.
        locked_out: another sync of the cluster held the lock (nothing done).
        nodes: names of the nodes seen, sorted.
        nodes_added / nodes_removed: names, sorted.
        devices_added / devices_updated / devices_removed: uuids, sorted.
        partitions: number of DRA partition devices (not stored).
        errors: node parse errors, slice errors and conflicts, in this order.
        lost_groups: resource group ids where a lost node freed capacity.
    """

    cluster: str
    locked_out: bool = False
    nodes: list[str] = field(default_factory=list)
    nodes_added: list[str] = field(default_factory=list)
    nodes_removed: list[str] = field(default_factory=list)
    devices_added: list[str] = field(default_factory=list)
    devices_updated: list[str] = field(default_factory=list)
    devices_removed: list[str] = field(default_factory=list)
    partitions: int = 0
    errors: list[str] = field(default_factory=list)
    lost_groups: set[int] = field(default_factory=set)


@dataclass
class _NodeResult:
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)


class InventoryWriter:
    """Writes one plan inside the caller's transaction (which holds the sync lock)."""

    def __init__(self, cluster: Cluster, plan: InventoryPlan, now: datetime,
                 report: InventoryReport) -> None:
        self.cluster, self.plan, self.now, self.report = cluster, plan, now, report
        self.errors = list(plan.errors)
        self.errored = set(plan.errored)
        self.models: dict[str, DeviceModel] = {}
        self.seen: set[str] = set()
        self.existing: dict[str, Node] = {}
        self.rows: dict[str, Device] = {}

    def run(self) -> None:
        """Write nodes and devices, then removals; fill the report."""
        self.existing = {n.name: n for n in Node.objects.select_for_update().filter(
            cluster=self.cluster)}
        uuids = list(self.plan.where)
        self.rows = {d.uuid: d for d in Device.objects.select_for_update().select_related(
            "node__cluster").filter(uuid__in=uuids)}
        owned: dict[str, list[str]] = {}
        for uuid in sorted(self.plan.where):
            owned.setdefault(self.plan.where[uuid][0], []).append(uuid)
        for name in sorted(self.plan.nodes):
            self._node_in_savepoint(name, owned.get(name, []))
        self.report.nodes = sorted(self.plan.nodes)
        self._flag_broken_pools()
        self._remove_gone()
        self._remove_vanished_nodes()
        self.report.devices_added.sort()
        self.report.devices_updated.sort()
        self.report.errors = self.errors

    # -- one node ---------------------------------------------------------------------------

    def _node_in_savepoint(self, name: str, uuids: list[str]) -> None:
        models = dict(self.models)
        result = _NodeResult()
        try:
            with transaction.atomic():
                row, added = self._node_row(name)
                for uuid in uuids:
                    self._device(uuid, row, result)
        except DatabaseError as exc:
            self.models = models  # rows created in the savepoint are gone
            self._flag_node(name, f"not written: {exc}".splitlines()[0][:500])
            return
        if added:
            self.report.nodes_added.append(name)
        self.report.devices_added.extend(result.added)
        self.report.devices_updated.extend(result.updated)
        self.seen |= result.seen
        self.errors.extend(result.errors)

    def _node_row(self, name: str) -> tuple[Node, bool]:
        core = self.plan.nodes[name]
        values = {"cpu_milli": core.cpu_milli, "memory_mib": core.memory_mib,
                  "labels": dict(core.labels), "schedulable": core.schedulable,
                  "error": core.error or "", "removed_at": None}
        row = self.existing.get(name)
        if row is None:
            row = Node.objects.create(cluster=self.cluster, name=name, **values)
            self.existing[name] = row
            return row, True
        changed = [k for k, v in values.items() if getattr(row, k) != v]
        if changed:
            for k in changed:
                setattr(row, k, values[k])
            row.save(update_fields=[*changed, "updated"])
        return row, False

    def _flag_node(self, name: str, error: str) -> None:
        self.errored.add(name)
        self.errors.append(f"Node {name}: {error}")
        row = self.existing.get(name)
        if row is None:
            row = Node.objects.create(cluster=self.cluster, name=name, error=error,
                                      schedulable=False)
            self.existing[name] = row
            self.report.nodes_added.append(name)
        else:
            Node.objects.filter(pk=row.pk).update(error=error, updated=self.now)

    # -- one device -------------------------------------------------------------------------

    def _conflict(self, uuid: str, row: Device | None) -> str | None:
        node_names = self.plan.where[uuid]
        if len(node_names) > 1:
            return (f"device {uuid} registered on nodes {', '.join(node_names)}; "
                    "not merged, kept out of placement")
        if (row is not None and row.node.cluster_id != self.cluster.pk
                and row.removed_at is None and row.node.removed_at is None):
            return (f"device {uuid} on node {node_names[0]} is already registered in "
                    f"cluster {row.node.cluster.name} (node {row.node.name}); not merged")
        return None

    def _device(self, uuid: str, node: Node, result: _NodeResult) -> None:
        rep: Reported = self.plan.per_node[node.name][uuid]
        row = self.rows.get(uuid)
        conflict = self._conflict(uuid, row)
        result.seen.add(uuid)
        if conflict:
            result.errors.append(conflict)
            if row is not None:
                Device.objects.filter(pk=row.pk).update(healthy=False, error=conflict,
                                                        updated=self.now)
                result.updated.append(uuid)
            elif len(self.plan.where[uuid]) > 1:
                values = self._values(rep, node)
                Device.objects.create(uuid=uuid, **{**values, "healthy": False,
                                                    "error": conflict})
                result.added.append(uuid)
            return
        values = self._values(rep, node)
        if row is None:
            Device.objects.create(uuid=uuid, **values)
            result.added.append(uuid)
            return
        changed = [k for k, v in values.items() if getattr(row, k) != v]
        if changed:
            for k in changed:
                setattr(row, k, values[k])
            row.save(update_fields=[*changed, "updated"])
            result.updated.append(uuid)

    def _values(self, rep: Reported, node: Node) -> dict:
        """Field values of the live Device row for ``rep`` reported on ``node``."""
        dev = rep.dev
        return {"node": node, "model": model_for(dev, self.models), "index": dev.index,
                "numa": dev.numa, "memory_mib": dev.memory_mib,
                "cores_percent": dev.cores_percent, "split_count": max(1, dev.split_count),
                "healthy": dev.healthy, "cordoned": dev.cordoned, "mode": dev.mode,
                "source": rep.source, "dra_device": rep.dra_name, "error": "",
                "removed_at": None}

    # -- removals ---------------------------------------------------------------------------

    def _broken_pool_devices(self):
        q = Device.objects.none()
        for driver, pool in self.plan.broken_pools:
            q |= Device.objects.filter(node__cluster=self.cluster, source="dra",
                                       dra_device__startswith=f"{driver}/{pool}/")
        return q

    def _flag_broken_pools(self) -> None:
        """Devices of a pool whose slice could not be read: kept, unhealthy, flagged."""
        for (driver, pool), error in self.plan.broken_pools.items():
            (Device.objects.filter(node__cluster=self.cluster, source="dra",
                                   removed_at__isnull=True,
                                   dra_device__startswith=f"{driver}/{pool}/")
             .exclude(uuid__in=self.seen)
             .update(healthy=False, error=error[:1000], updated=self.now))

    def _remove_gone(self) -> None:
        """Devices of present, readable nodes that are no longer reported."""
        gone = (Device.objects.filter(node__cluster=self.cluster, removed_at__isnull=True)
                .exclude(uuid__in=self.seen).exclude(node__name__in=self.errored))
        if self.plan.slice_list_failed:
            gone = gone.exclude(source="dra")
        if self.plan.broken_pools:
            gone = gone.exclude(pk__in=self._broken_pool_devices().values("pk"))
        self.report.devices_removed = sorted(gone.values_list("uuid", flat=True))
        gone.update(removed_at=self.now, updated=self.now)

    def _remove_vanished_nodes(self) -> None:
        for name, node in sorted(self.existing.items()):
            if name in self.plan.nodes or node.removed_at is not None:
                continue
            live = Device.objects.filter(node=node, removed_at__isnull=True)
            lost = list(live.values_list("uuid", flat=True))
            live.update(removed_at=self.now, updated=self.now)
            self.report.devices_removed = sorted({*self.report.devices_removed, *lost})
            Node.objects.filter(pk=node.pk).update(removed_at=self.now, schedulable=False,
                                                   updated=self.now)
            self.report.nodes_removed.append(name)
            self.report.lost_groups |= handle_lost_node(
                node.pk, f"node {name} vanished from cluster {self.cluster.name}",
                now=self.now)
