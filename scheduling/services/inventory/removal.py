"""Inventory sync, last step: what is no longer reported.

* A device of a present, readable node that its sources stopped reporting gets ``removed_at``
  - unless live placements book it: then it stays (``missing_since`` set, unhealthy, the
  bookings named in ``Device.error``, and "replaced by <uuid>" when another device now sits at
  its index) until they end; it never turns into free capacity while a pod may still use it,
  and its node takes no new placement meanwhile (``NodeBookingsUnmatched``: which registered
  device the pod really uses is unknown). Going missing is announced once
  (``inventory.bookings_unmatched`` event, a warning in the log) and counted in
  ``console_unmatched_bookings``. A later sync removes it once its bookings are gone.
* Devices of a node whose registration could not be read, of a pool whose slice could not be
  read, and DRA devices when the slice list failed are kept as they were.
* A node that vanished gets ``removed_at`` with its devices; its live placements are handled
  by :func:`scheduling.services.kube_pod_state.handle_lost_node` (jobs failed or requeued
  according to their restart policy).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any

from core.events import INVENTORY_BOOKINGS_UNMATCHED, emit
from scheduling.choices import BOOKED_PLACEMENT_STATES
from scheduling.models import Device, Node, PlacementDevice
from scheduling.services.kube_pod_state import handle_lost_node

InventoryWriter = Any
"""The :class:`~scheduling.services.inventory.write.InventoryWriter` calling (its cluster, plan,
now, report, seen and errored sets, existing nodes)."""

__all__ = ["remove_gone", "remove_vanished_nodes", "broken_pool_devices"]

logger = logging.getLogger(__name__)


def broken_pool_devices(w: InventoryWriter):
    """Devices of the pools whose ResourceSlice could not be read."""
    q = Device.objects.none()
    for driver, pool in w.plan.broken_pools:
        q |= Device.objects.filter(
            node__cluster=w.cluster, source="dra", dra_device__startswith=f"{driver}/{pool}/"
        )
    return q


def _replacements(w: InventoryWriter) -> dict[tuple[str, int, str], str]:
    """``{(node, index, vendor): reported key}`` of this sync's devices."""
    return {
        (name, rep.dev.index, rep.dev.vendor): key
        for name, reps in w.plan.per_node.items()
        for key, rep in reps.items()
    }


def _missing_text(row: Device, since, placements: list[int], replaced_by: str) -> str:
    text = (
        f"no longer registered since {since:%Y-%m-%d %H:%M:%S %Z}; booked by placement(s) "
        f"{', '.join(map(str, placements))}, kept booked until their pods end"
    )
    if replaced_by:
        text += f"; replaced by {replaced_by} at index {row.index}"
    return text


def remove_gone(w: InventoryWriter) -> None:
    """Devices of present, readable nodes that are no longer reported (module docstring)."""
    gone = (
        Device.objects.filter(node__cluster=w.cluster, removed_at__isnull=True)
        .exclude(uuid__in=w.seen)
        .exclude(node__name__in=w.errored)
    )
    if w.plan.slice_list_failed:
        gone = gone.exclude(source="dra")
    if w.plan.broken_pools:
        gone = gone.exclude(pk__in=broken_pool_devices(w).values("pk"))
    rows = list(gone.select_related("node", "model").order_by("uuid"))
    booked: dict[int, list[int]] = defaultdict(list)
    for device_id, placement_id in (
        PlacementDevice.objects.filter(
            device__in=[r.pk for r in rows], placement__state__in=BOOKED_PLACEMENT_STATES
        )
        .order_by("placement_id")
        .values_list("device_id", "placement_id")
    ):
        booked[device_id].append(placement_id)
    free = [r for r in rows if r.pk not in booked]
    Device.objects.filter(pk__in=[r.pk for r in free]).update(
        removed_at=w.now, missing_since=None, updated=w.now
    )
    w.report.devices_removed = [r.uuid for r in free]
    replaced = _replacements(w)
    for row in rows:
        if row.pk not in booked:
            continue
        since = row.missing_since or w.now
        by = replaced.get((row.node.name, row.index, row.model.vendor), "")
        text = _missing_text(row, since, booked[row.pk], by)
        Device.objects.filter(pk=row.pk).update(
            missing_since=since, healthy=False, updated=w.now, error=text
        )
        w.report.devices_missing.append(row.uuid)
        if row.missing_since is None:
            _announce_unmatched(w, row, booked[row.pk], by, text)


def _announce_unmatched(
    w: InventoryWriter, row: Device, placements: list[int], replaced_by: str, text: str
) -> None:
    """The ``inventory.bookings_unmatched`` event of a booked device gone missing (once, when
    it first goes missing) and a warning in the log."""
    logger.warning(
        "inventory: cluster %s node %s: %s", w.cluster.name, row.node.name, f"{row.uuid} {text}"
    )
    emit(
        INVENTORY_BOOKINGS_UNMATCHED,
        tenant_id=None,
        payload={
            "cluster": w.cluster.name,
            "node": row.node.name,
            "device": row.uuid,
            "placements": placements,
            "replaced_by": replaced_by,
            "message": f"device {row.uuid} on node {row.node.name}: {text}; the node takes "
            "no new placement until these bookings end or are rebound",
        },
    )


def remove_vanished_nodes(w: InventoryWriter) -> None:
    """Nodes of the cluster that are no longer listed, with their devices."""
    for name, node in sorted(w.existing.items()):
        if name in w.plan.nodes or node.removed_at is not None:
            continue
        live = Device.objects.filter(node=node, removed_at__isnull=True)
        lost = list(live.values_list("uuid", flat=True))
        live.update(removed_at=w.now, updated=w.now)
        w.report.devices_removed = sorted({*w.report.devices_removed, *lost})
        Node.objects.filter(pk=node.pk).update(removed_at=w.now, schedulable=False, updated=w.now)
        w.report.nodes_removed.append(name)
        w.report.lost_groups |= handle_lost_node(
            node.pk, f"node {name} vanished from cluster {w.cluster.name}", now=w.now
        )
