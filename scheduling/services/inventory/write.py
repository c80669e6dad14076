"""Inventory sync, step 2: write an :class:`~.plan.InventoryPlan` node by node.

Each node (its row and the devices it reports) is written in its own savepoint: a database
error while writing one node (a value a column cannot hold that slipped past the schema)
rolls back only that node, which is then flagged (``Node.error``) and keeps its devices as
they were; every other node is written.

Rules (see :mod:`scheduling.services.inventory`): devices are keyed by identity (uuid, or
``DCU-<serial>``) and move with their key; the same key on two nodes of one sync, or live in
another cluster, is a conflict (reported, never merged, the row stays where it was and is
marked unhealthy). A device whose key changed while its registration id on the node did not
(a legacy ``DCU-0`` whose serial became known) is re-keyed: same row, bookings kept. Devices
of a pool whose ResourceSlice could not be read stay as they were, flagged with the slice's
error; removals are :mod:`.removal`'s.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from django.db import DatabaseError, transaction
from django.db.models import Q

from core.locks import lock_rows
from scheduling.kube.identity import provisional_key
from scheduling.models import Cluster, Device, DeviceModel, Node
from scheduling.placement.codec import device_profiles_to_json, profile_shape
from scheduling.services.inventory.device_models import model_for
from scheduling.services.inventory.plan import InventoryPlan, Reported
from scheduling.services.inventory.removal import remove_gone, remove_vanished_nodes
from scheduling.services.inventory.serials import record_sightings

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
        devices_missing: uuids no longer registered but still booked (kept, flagged).
        devices_rekeyed: ``{old uuid: new uuid}`` of devices identified anew.
        partitions: number of DRA partition devices (not stored).
        errors: node parse errors, slice errors and conflicts, in this order.
        warnings: devices identified by node and index only (no serial source yet).
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
    devices_missing: list[str] = field(default_factory=list)
    devices_rekeyed: dict[str, str] = field(default_factory=dict)
    partitions: int = 0
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    lost_groups: set[int] = field(default_factory=set)


@dataclass
class _NodeResult:
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)
    rekeyed: dict[str, str] = field(default_factory=dict)


class InventoryWriter:
    """Writes one plan inside the caller's transaction (which holds the sync lock)."""

    def __init__(
        self, cluster: Cluster, plan: InventoryPlan, now: datetime, report: InventoryReport
    ) -> None:
        self.cluster, self.plan, self.now, self.report = cluster, plan, now, report
        self.errors = list(plan.errors)
        self.errored = set(plan.errored)
        self.models: dict[str, DeviceModel] = {}
        self.seen: set[str] = set()
        self.existing: dict[str, Node] = {}
        self.rows: dict[str, Device] = {}
        self.by_registered: dict[tuple[int, str], Device] = {}

    def _load(self) -> None:
        """Lock the cluster's nodes, the devices with a reported key, and the rows a
        re-keyed device may be (same node, same registration id or provisional key)."""
        # nodes, then devices, each in pk order (scheduling.services.locking)
        self.existing = {
            n.name: n for n in lock_rows(Node).filter(cluster=self.cluster).order_by("pk")
        }
        self.rows = {
            d.uuid: d
            for d in lock_rows(Device)
            .select_related("node__cluster")
            .filter(uuid__in=list(self.plan.where))
            .order_by("pk")
        }
        old_ids = {
            rep.identity.hami_id
            for reps in self.plan.per_node.values()
            for rep in reps.values()
            if rep.identity and rep.identity.hami_id
        }
        if not old_ids:
            return
        provisional = {provisional_key(name, h) for name in self.plan.per_node for h in old_ids}
        for d in (
            lock_rows(Device)
            .select_related("node__cluster")
            .filter(node__cluster=self.cluster)
            .filter(Q(hami_id__in=old_ids) | Q(uuid__in=old_ids | provisional))
        ):
            self.by_registered[(d.node_id, d.uuid)] = d
            self.by_registered[(d.node_id, d.registered_id)] = d

    def run(self) -> None:
        """Write nodes and devices, then removals; fill the report."""
        self._load()
        owned: dict[str, list[str]] = {}
        for uuid in sorted(self.plan.where):
            owned.setdefault(self.plan.where[uuid][0], []).append(uuid)
        for name in sorted(self.plan.nodes):
            self._node_in_savepoint(name, owned.get(name, []))
        self.report.nodes = sorted(self.plan.nodes)
        self._flag_broken_pools()
        record_sightings(self.cluster, self.plan.sightings, self.now)
        remove_gone(self)
        remove_vanished_nodes(self)
        self.report.devices_added.sort()
        self.report.devices_updated.sort()
        self.report.errors = self.errors
        self.report.warnings = list(self.plan.warnings)

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
        self.report.devices_rekeyed.update(result.rekeyed)
        self.seen |= result.seen
        self.errors.extend(result.errors)

    def _node_row(self, name: str) -> tuple[Node, bool]:
        core = self.plan.nodes[name]
        values = {
            "cpu_milli": core.cpu_milli,
            "host_memory_mib": core.memory_mib,
            "labels": dict(core.labels),
            "schedulable": core.schedulable,
            "error": core.error or "",
            "removed_at": None,
        }
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
            row = Node.objects.create(
                cluster=self.cluster, name=name, error=error, schedulable=False
            )
            self.existing[name] = row
            self.report.nodes_added.append(name)
        else:
            Node.objects.filter(pk=row.pk).update(error=error, updated=self.now)

    # -- one device -------------------------------------------------------------------------

    def _conflict(self, uuid: str, row: Device | None) -> str | None:
        node_names = self.plan.where[uuid]
        if len(node_names) > 1:
            return (
                f"device {uuid} registered on nodes {', '.join(node_names)}; "
                "not merged, kept out of placement"
            )
        if (
            row is not None
            and row.node.cluster_id != self.cluster.pk
            and row.removed_at is None
            and row.node.removed_at is None
        ):
            return (
                f"device {uuid} on node {node_names[0]} is already registered in "
                f"cluster {row.node.cluster.name} (node {row.node.name}); not merged"
            )
        return None

    def _rekey_candidate(self, uuid: str, rep: Reported, node: Node) -> Device | None:
        """The row this device had under another key on the same node, if any (and not
        reported under that key in this sync)."""
        hami_id = rep.identity.hami_id if rep.identity else ""
        if not hami_id:
            return None
        for old in (hami_id, provisional_key(node.name, hami_id)):
            row = self.by_registered.get((node.pk, old))
            if row is not None and row.uuid != uuid and row.uuid not in self.plan.where:
                return row
        return None

    def _device(self, uuid: str, node: Node, result: _NodeResult) -> None:
        rep: Reported = self.plan.per_node[node.name][uuid]
        row = self.rows.get(uuid)
        if row is None and len(self.plan.where[uuid]) == 1:
            row = self._rekey_candidate(uuid, rep, node)
            if row is not None:
                result.rekeyed[row.uuid] = uuid
                row.uuid = uuid
                row.save(update_fields=["uuid", "updated"])
        conflict = self._conflict(uuid, row)
        result.seen.add(uuid)
        if conflict:
            result.errors.append(conflict)
            if row is not None:
                Device.objects.filter(pk=row.pk).update(
                    healthy=False, error=conflict, updated=self.now
                )
                result.updated.append(uuid)
            elif len(self.plan.where[uuid]) > 1:
                values = self._values(rep, node)
                Device.objects.create(uuid=uuid, **{**values, "healthy": False, "error": conflict})
                result.added.append(uuid)
            return
        values = self._values(rep, node)
        if row is None:
            Device.objects.create(uuid=uuid, **values)
            result.added.append(uuid)
            return
        # The console's own verdicts win over the registration: a device the console marked
        # unhealthy (telemetry, repeated failures) or cordoned (operator, health write-back)
        # stays so until the console clears it (scheduling.services.device_health).
        values["healthy"] = values["healthy"] and not row.console_unhealthy
        values["cordoned"] = values["cordoned"] or bool(row.cordon_reason)
        changed = [k for k, v in values.items() if getattr(row, k) != v]
        if changed:
            for k in changed:
                setattr(row, k, values[k])
            row.save(update_fields=[*changed, "updated"])
            result.updated.append(uuid)

    def _values(self, rep: Reported, node: Node) -> dict:
        """Field values of the live Device row for ``rep`` reported on ``node``."""
        dev, ident = rep.dev, rep.identity
        values = {
            "node": node,
            "model": model_for(dev, self.models),
            "index": dev.index,
            "numa": dev.numa,
            "memory_mib": dev.memory_mib,
            "cores_percent": dev.cores_percent,
            "split_count": max(1, dev.split_count),
            "healthy": dev.healthy,
            "cordoned": dev.cordoned,
            "mode": dev.mode,
            "source": rep.source,
            "dra_device": rep.dra_name,
            "removed_at": None,
            "missing_since": None,
            "hami_id": ident.hami_id if ident else "",
            "error": ident.warning.split(": ", 1)[-1] if ident and ident.warning else rep.note,
            "mig_profiles": device_profiles_to_json(
                profile_shape(dev.vendor), mig=dev.mig_profiles, custom=dev.custom, index=dev.index
            ),
        }
        if ident and ident.serial:
            values["serial"] = ident.serial
        return values

    # -- removals ---------------------------------------------------------------------------

    def _flag_broken_pools(self) -> None:
        """Devices of a pool whose slice could not be read: kept, unhealthy, flagged."""
        for (driver, pool), error in self.plan.broken_pools.items():
            (
                Device.objects.filter(
                    node__cluster=self.cluster,
                    source="dra",
                    removed_at__isnull=True,
                    dra_device__startswith=f"{driver}/{pool}/",
                )
                .exclude(uuid__in=self.seen)
                .update(healthy=False, error=error[:1000], updated=self.now)
            )
