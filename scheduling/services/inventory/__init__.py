"""Inventory sync of a kubernetes cluster: Node objects and ResourceSlices -> Node/Device rows.

Sources (both read through :class:`~scheduling.kube.gateway.KubernetesGateway`):

* Node objects: HAMi register annotations (JSON and legacy formats, every vendor HAMi
  registers; capacity-only vendors such as Cambricon synthesised from ``status.capacity``),
  parsed by :func:`scheduling.kube.inventory.nodes_to_snapshot` (shared/docs/hami.md §3.4) with the
  device catalogue (:func:`scheduling.selectors.device_models.get_catalogue`: a Cambricon
  card's model from its per-model capacities or the plugin's ``Model`` label). A stale
  handshake (``Requesting_<t>`` older than 60 s, allocatable 0) marks devices unhealthy; a
  cordoned or NotReady node is not schedulable.
* ResourceSlices (resource.k8s.io v1 / v1beta2 / v1beta1): whole devices of known DRA drivers
  (e.g. HAMi's ``hami-core-gpu.project-hami.io`` with ``cores`` / ``memory`` consumable
  capacity and ``allowMultipleAllocations``) via
  :func:`scheduling.kube.inventory.dra_devices_to_placement`. A tainted (NoSchedule/NoExecute)
  device is unhealthy. Partition devices (consuming shared counters: MIG, vNPU templates) are
  counted in the report but not stored as devices.

Bad input touches only itself (issue 15): every registration field and slice is checked by a
schema with per-node bounds (:class:`~scheduling.kube.limits.InventoryLimits`, from the
``INVENTORY_MAX_*`` settings); a node whose registration cannot be read keeps its devices as
they were and gets the error in ``Node.error`` (kept out of placement); a slice that cannot be
read is reported and its pool's devices stay as they were, flagged; the other nodes and slices
sync normally, each node in its own savepoint (:mod:`.write`).

Rules of the write (one transaction, single-flight per cluster):

* Devices are keyed by identity (:mod:`scheduling.kube.identity`: the uuid, or
  ``DCU-<serial>`` for Hygon cards whatever id their node registers, the serial from the
  registration, the node's serial annotation / labels or the serial map that exporters feed,
  :mod:`.serials`). A device seen on another node of the cluster moves there (history kept):
  the same serial on another node later is a move, not a conflict. The same key on two nodes
  in one sync, or on a live node of another cluster, is a conflict: reported
  (``Device.error``, ``Cluster.inventory_errors``), never merged; the row stays where it was
  and is marked unhealthy.
* A device reported by both sources on the same node is one device; the source matching the
  cluster's submission mode wins (``dra`` -> the ResourceSlice, otherwise the annotation).
* Devices and nodes that disappeared get ``removed_at`` (rows are never deleted: bookings and
  history refer to them); a device still booked stays, flagged, until its pods end
  (:mod:`.removal`). MIG profiles are stored with the device (``Device.mig_profiles``).
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core import locks
from scheduling.backends.kubernetes import gateway_for
from scheduling.choices import Backend
from scheduling.kube.errors import KubeError
from scheduling.kube.limits import InventoryLimits
from scheduling.models import Cluster
from scheduling.selectors.device_models import get_catalogue
from scheduling.services.inventory.plan import plan_inventory
from scheduling.services.inventory.serials import serials_seen
from scheduling.services.inventory.write import InventoryReport, InventoryWriter

logger = logging.getLogger(__name__)

KUBE_INVENTORY_SYNC_LOCK = locks.KUBE_INVENTORY_SYNC
"""Advisory lock namespace of the per-cluster inventory sync (next to core.locks)."""

__all__ = [
    "InventoryReport",
    "sync_cluster_inventory",
    "apply_inventory",
    "inventory_limits",
    "KUBE_INVENTORY_SYNC_LOCK",
]


def inventory_limits() -> InventoryLimits:
    """The per-object bounds from the ``INVENTORY_MAX_*`` settings."""
    return InventoryLimits.from_settings(settings)


def sync_cluster_inventory(
    cluster_id: int, *, gateway=None, now: datetime | None = None
) -> InventoryReport:
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


def apply_inventory(
    cluster: Cluster,
    node_objs: list,
    slices: list,
    *,
    now: datetime,
    slice_error: str | None = None,
    limits: InventoryLimits | None = None,
) -> InventoryReport:
    """Write listed Node / ResourceSlice dicts for ``cluster`` (the pure-input half of
    :func:`sync_cluster_inventory`; see the module docstring for the rules).

    Never raises for bad input: each bad node or slice is flagged and reported.
    """
    catalogue = get_catalogue()
    plan = plan_inventory(
        node_objs,
        slices,
        prefer_dra=cluster.submission_mode == "dra",
        now=now,
        limits=limits or inventory_limits(),
        slice_error=slice_error,
        serials_seen=serials_seen(cluster),
        configs=catalogue.configs,
    )
    report = InventoryReport(cluster=cluster.name, partitions=plan.partitions)
    with transaction.atomic():
        if not locks.try_xact_lock(KUBE_INVENTORY_SYNC_LOCK, cluster.pk):
            report.locked_out = True
            return report
        InventoryWriter(cluster, plan, now, report).run()
        Cluster.objects.filter(pk=cluster.pk).update(
            inventory_errors=report.errors, inventory_synced_at=now
        )
    if report.errors or report.warnings:
        problems = report.errors + report.warnings
        logger.warning(
            "inventory sync %s: %d problem(s): %s",
            cluster.name,
            len(problems),
            "; ".join(problems[:5]),
        )
    return report
