"""Inventory sync of a kubernetes cluster: Node objects and ResourceSlices -> Node/Device rows.

Sources (both read through :class:`~scheduling.kube.gateway.KubernetesGateway`):

* Node objects: HAMi register annotations (JSON and legacy formats, every vendor HAMi
  registers; capacity-only vendors such as Cambricon synthesised from ``status.capacity``),
  parsed by :func:`scheduling.kube.inventory.nodes_to_snapshot` (docs/hami.md §3.4). A stale
  handshake (``Requesting_<t>`` older than 60 s, allocatable 0) marks devices unhealthy; a
  cordoned or NotReady node is not schedulable.
* ResourceSlices (resource.k8s.io v1 / v1beta2 / v1beta1): whole devices of known DRA drivers
  (e.g. HAMi's ``hami-core-gpu.project-hami.io`` with ``cores`` / ``memory`` consumable
  capacity and ``allowMultipleAllocations``) via
  :func:`scheduling.kube.inventory.dra_devices_to_placement`. A tainted (NoSchedule/NoExecute)
  device is unhealthy. Partition devices (consuming shared counters: MIG, vNPU templates) are
  counted in the report but not stored as devices.

Rules of the write (one transaction, single-flight per cluster):

* Devices are keyed by uuid. A device seen on another node of the cluster moves there
  (history kept). The same uuid on two nodes in one sync, or on a live node of another
  cluster, is a conflict: reported (``Device.error``, ``Cluster.inventory_errors``), never
  merged; the row stays where it was and is marked unhealthy.
* A device reported by both sources on the same node is one device; the source matching the
  cluster's submission mode wins (``dra`` -> the ResourceSlice, otherwise the annotation).
* A node whose registration cannot be parsed keeps its devices as they were and gets the
  error in ``Node.error`` (kept out of placement); the other nodes sync normally.
* Devices and nodes that disappeared get ``removed_at`` (rows are never deleted: bookings and
  history refer to them). A vanished node's live placements are handled by
  :func:`scheduling.services.kube_reconcile.handle_lost_node` (jobs failed or requeued
  according to their restart policy).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from django.db import connection, transaction
from django.utils import timezone

from core import locks
from scheduling.backends.kubernetes import gateway_for
from scheduling.choices import Backend, SlicingMode
from scheduling.kube.errors import KubeError
from scheduling.kube.inventory import (
    dra_devices_to_placement,
    nodes_to_snapshot,
    slices_to_inventory,
)
from scheduling.models import Cluster, Device, DeviceModel, Node
from scheduling.placement.types import Device as CoreDevice
from scheduling.services.kube_reconcile import handle_lost_node

logger = logging.getLogger(__name__)

KUBE_INVENTORY_SYNC_LOCK = locks.KUBE_INVENTORY_SYNC
"""Advisory lock namespace of the per-cluster inventory sync (next to core.locks)."""

__all__ = ["InventoryReport", "sync_cluster_inventory", "apply_inventory",
           "KUBE_INVENTORY_SYNC_LOCK"]


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


def _slicing_mode(dev: CoreDevice) -> str:
    if dev.mode == "mig" or dev.mig_profiles:
        return SlicingMode.TEMPLATE
    if dev.vendor in ("MLU", "DCU") and dev.split_count > 1:
        return SlicingMode.UNIT
    if dev.split_count <= 1:
        return SlicingMode.WHOLE
    return SlicingMode.FRACTIONAL


def _valid_nodes(objs: list[dict], errors: list[str]) -> list[dict]:
    seen: set[str] = set()
    out = []
    for i, obj in enumerate(objs):
        name = (obj.get("metadata") or {}).get("name") if isinstance(obj, dict) else None
        if not isinstance(name, str) or not name:
            errors.append(f"Node #{i}: no metadata.name; skipped")
            continue
        if name in seen:
            errors.append(f"Node {name}: listed twice; second copy skipped")
            continue
        seen.add(name)
        out.append(obj)
    return out


def sync_cluster_inventory(cluster_id: int, *, gateway=None,
                           now: datetime | None = None) -> InventoryReport:
    """List Nodes and ResourceSlices of a kubernetes cluster and write them (see module doc).

    Args:
        cluster_id: a Cluster with ``backend = kubernetes``.
        gateway: a :class:`~scheduling.kube.gateway.KubeGateway` (default: the cluster's).
        now: current time (handshake staleness, ``removed_at``).

    Returns:
        :class:`InventoryReport`.

    Raises:
        ValueError: the cluster is not a kubernetes cluster.
        KubeError: listing Nodes failed (nothing is written: a failed list never marks the
            inventory removed). A failed ResourceSlice list is reported in ``errors`` and
            DRA devices are left as they were.
    """
    cluster = Cluster.objects.get(pk=cluster_id)
    if cluster.backend != Backend.KUBERNETES:
        raise ValueError(f"cluster {cluster.name!r} is {cluster.backend}, not kubernetes")
    now = now or timezone.now()
    if gateway is None:
        gateway = gateway_for(cluster)
    node_objs = gateway.list_nodes().items
    slice_error = None
    try:
        slices = gateway.list_resource_slices().items
    except KubeError as exc:
        slices = []
        slice_error = f"ResourceSlices not listed: {exc.message}"
    return apply_inventory(cluster, node_objs, slices, now=now, slice_error=slice_error)


def apply_inventory(cluster: Cluster, node_objs: list[dict], slices: list[dict], *,
                    now: datetime, slice_error: str | None = None) -> InventoryReport:
    """Write listed Node / ResourceSlice dicts for ``cluster`` (the pure-input half of
    :func:`sync_cluster_inventory`; see the module docstring for the rules)."""
    report = InventoryReport(cluster=cluster.name)
    errors: list[str] = []
    node_objs = _valid_nodes(list(node_objs), errors)
    snap = nodes_to_snapshot(node_objs, now=now)
    # registration errors (a NotReady node is not one: its devices are still listed)
    errored = sorted(name for name, core in snap.nodes.items()
                     if core.error and not core.error.startswith("node not Ready"))
    errors.extend(f"Node {name}: {snap.nodes[name].error}" for name in errored)
    inv = slices_to_inventory(slices)
    errors.extend(inv.errors)
    if slice_error:
        errors.append(slice_error)
    report.partitions = sum(1 for d in inv.devices if d.is_partition)
    dra_by_key = {}
    for d in inv.devices:
        if not d.is_partition:
            dra_by_key[(d.node, d.uuid or f"{d.pool}/{d.name}")] = d
    # 1. candidate devices per node, both sources; same uuid on the same node = one device
    prefer_dra = cluster.submission_mode == "dra"
    per_node: dict[str, dict[str, tuple[CoreDevice, str, str]]] = defaultdict(dict)
    for name, node in snap.nodes.items():
        for dev in node.devices:
            per_node[name][dev.uuid] = (dev, "hami", "")
    for dev in dra_devices_to_placement(inv):
        if dev.node not in snap.nodes:
            errors.append(f"ResourceSlice device {dev.uuid} is on node {dev.node!r}, which is "
                          "not listed; skipped")
            continue
        d = dra_by_key.get((dev.node, dev.uuid))
        dra_name = f"{d.driver}/{d.pool}/{d.name}" if d else ""
        if dev.uuid in per_node[dev.node] and not prefer_dra:
            continue
        if dev.uuid in per_node[dev.node]:
            # keep the HAMi type (the model name quotas know) when the slice has none
            hami = per_node[dev.node][dev.uuid][0]
            dev.type = dev.type or hami.type
        per_node[dev.node][dev.uuid] = (dev, "dra", dra_name)
    # 2. conflicts: the same uuid on two nodes of this sync
    where: dict[str, list[str]] = defaultdict(list)
    for name in sorted(per_node):
        for uuid in per_node[name]:
            where[uuid].append(name)
    duplicates = {u: ns for u, ns in where.items() if len(ns) > 1}

    with transaction.atomic():
        with connection.cursor() as cur:
            cur.execute("SELECT pg_try_advisory_xact_lock(%s, %s)",
                        [KUBE_INVENTORY_SYNC_LOCK, cluster.pk])
            if not cur.fetchone()[0]:
                report.locked_out = True
                return report
        existing_nodes = {n.name: n for n in Node.objects.select_for_update().filter(
            cluster=cluster)}
        nodes: dict[str, Node] = {}
        for name in sorted(snap.nodes):
            core = snap.nodes[name]
            row = existing_nodes.get(name)
            values = {"cpu_milli": core.cpu_milli, "memory_mib": core.memory_mib,
                      "labels": dict(core.labels), "schedulable": core.schedulable,
                      "error": core.error or "", "removed_at": None}
            if row is None:
                row = Node.objects.create(cluster=cluster, name=name, **values)
                report.nodes_added.append(name)
            else:
                if any(getattr(row, k) != v for k, v in values.items()):
                    for k, v in values.items():
                        setattr(row, k, v)
                    row.save(update_fields=[*values, "updated"])
            nodes[name] = row
        report.nodes = sorted(nodes)
        all_uuids = [u for name in per_node for u in per_node[name]]
        rows = {d.uuid: d for d in Device.objects.select_for_update().select_related(
            "node__cluster").filter(uuid__in=all_uuids)}
        models: dict[str, DeviceModel] = {}
        seen: set[str] = set()
        for uuid in sorted(where):
            node_names = where[uuid]
            dev, source, dra_name = per_node[node_names[0]][uuid]
            row = rows.get(uuid)
            conflict = None
            if uuid in duplicates:
                conflict = (f"device {uuid} registered on nodes {', '.join(node_names)}; "
                            "not merged, kept out of placement")
            elif (row is not None and row.node.cluster_id != cluster.pk
                  and row.removed_at is None and row.node.removed_at is None):
                conflict = (f"device {uuid} on node {node_names[0]} is already registered "
                            f"in cluster {row.node.cluster.name} (node {row.node.name}); "
                            "not merged")
            if conflict:
                errors.append(conflict)
                seen.add(uuid)
                if row is not None:
                    Device.objects.filter(pk=row.pk).update(healthy=False, error=conflict,
                                                            updated=now)
                    report.devices_updated.append(uuid)
                elif uuid in duplicates:
                    values = _device_values(dev, nodes[node_names[0]], source, dra_name, models)
                    Device.objects.create(uuid=uuid, **{**values, "healthy": False,
                                                        "error": conflict})
                    report.devices_added.append(uuid)
                continue
            seen.add(uuid)
            values = _device_values(dev, nodes[node_names[0]], source, dra_name, models)
            if row is None:
                Device.objects.create(uuid=uuid, **values)
                report.devices_added.append(uuid)
                continue
            changed = [k for k, v in values.items() if getattr(row, k) != v]
            if changed:
                for k in changed:
                    setattr(row, k, values[k])
                row.save(update_fields=[*changed, "updated"])
                report.devices_updated.append(uuid)
        # 3. gone: devices of present, parsable nodes no longer reported; vanished nodes
        gone = (Device.objects.filter(node__cluster=cluster, removed_at__isnull=True)
                .exclude(uuid__in=seen).exclude(node__name__in=errored))
        if slice_error:
            gone = gone.exclude(source="dra")
        report.devices_removed = sorted(gone.values_list("uuid", flat=True))
        gone.update(removed_at=now, updated=now)
        vanished = [n for name, n in existing_nodes.items()
                    if name not in nodes and n.removed_at is None]
        if vanished:
            for node in vanished:
                live = Device.objects.filter(node=node, removed_at__isnull=True)
                lost = list(live.values_list("uuid", flat=True))
                live.update(removed_at=now, updated=now)
                report.devices_removed = sorted({*report.devices_removed, *lost})
                Node.objects.filter(pk=node.pk).update(removed_at=now, schedulable=False,
                                                       updated=now)
                report.nodes_removed.append(node.name)
                report.lost_groups |= handle_lost_node(
                    node.pk, f"node {node.name} vanished from cluster {cluster.name}", now=now)
        report.devices_added.sort()
        report.devices_updated.sort()
        report.errors = errors
        Cluster.objects.filter(pk=cluster.pk).update(inventory_errors=errors,
                                                     inventory_synced_at=now)
    if errors:
        logger.warning("inventory sync %s: %d problem(s): %s", cluster.name, len(errors),
                       "; ".join(errors[:5]))
    return report


def _device_values(dev: CoreDevice, node: Node, source: str, dra_name: str,
                   models: dict[str, DeviceModel]) -> dict:
    """Field values of the live Device row for ``dev`` reported on ``node`` (no error)."""
    return {"node": node, "model": _model_for(dev, models), "index": dev.index,
            "numa": dev.numa, "memory_mib": dev.memory_mib, "cores_percent": dev.cores_percent,
            "split_count": max(1, dev.split_count), "healthy": dev.healthy,
            "cordoned": dev.cordoned, "mode": dev.mode, "source": source,
            "dra_device": dra_name, "error": "", "removed_at": None}


def _model_for(dev: CoreDevice, cache: dict[str, DeviceModel]) -> DeviceModel:
    """The DeviceModel named by the registered type (created from the device when new)."""
    name = dev.type or dev.vendor
    model = cache.get(name)
    if model is None:
        model, _ = DeviceModel.objects.get_or_create(name=name, defaults={
            "vendor": dev.vendor, "memory_mib": dev.memory_mib,
            "cores_percent": dev.cores_percent, "split_count": max(1, dev.split_count),
            "slicing_mode": _slicing_mode(dev)})
        cache[name] = model
    return model
