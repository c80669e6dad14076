"""A group's cluster snapshot kept up to date between admission cycles (per worker process)
instead of rebuilt from the database every cycle.

Each process keeps, per resource group, the :class:`~scheduling.selectors.snapshot.ClusterState`
of its last cycle and a version of what it was built from. A cycle then:

1. reads the **inventory version** (one aggregate query each over devices, nodes and models:
   row count, highest id, latest ``updated``, and id sums over the healthy / cordoned /
   schedulable / present rows, so a flag flipped by an ``UPDATE`` that did not touch
   ``updated`` still changes it) and the group's node selector and device models; any
   difference → **full rebuild** (:func:`~scheduling.selectors.snapshot.build_cluster_state`);
2. otherwise reads the ids of the booked placements on the group's nodes (one query) and
   applies the **deltas**: placements booked since (their bookings read in three queries)
   are added, placements that left the booked states are taken out with exactly what they
   had booked;
3. hands the cycle a clone (the cycle's placer mutates its snapshot; the kept one only ever
   changes from database reads).

Correctness does not rest on the cache: whatever the snapshot said, the commit re-checks
every admission against the bookings read under the nodes' and devices' row locks
(:mod:`scheduling.services.admission_commit`), so a stale snapshot can cost a retry but never
over-admit. ``ADMISSION_SNAPSHOT_CACHE = False`` turns the cache off (a rebuild each cycle).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from django.conf import settings
from django.db.models import Case, Count, F, Max, Sum, Value, When

from scheduling.devices.overlay import Catalogue
from scheduling.models import Device, DeviceModel, Node
from scheduling.placement.types import ClusterSnapshot
from scheduling.selectors.running import forget_running
from scheduling.selectors.snapshot import (
    ClusterState,
    SnapshotIndex,
    booked_placements,
    build_cluster_state,
    read_bookings,
)
from tenants.models import ResourceGroup


@dataclass
class _Entry:
    version: tuple
    state: ClusterState


_entries: dict[int, _Entry] = {}
_lock = threading.Lock()
#: How the last call was answered (``"rebuild"``, ``"delta"``, ``"hit"``), for tests and logs.
last_outcome: dict[int, str] = {}


def _id_sum(**flag) -> Sum:
    return Sum(Case(When(then=F("id"), **flag), default=Value(0)))


def inventory_version(group: ResourceGroup) -> tuple:
    """What a group's cached snapshot depends on besides bookings (module docstring, 1):
    three aggregate queries."""
    common = {"n": Count("id"), "top": Max("id"), "updated": Max("updated")}
    devices = Device.objects.aggregate(
        **common,
        healthy=_id_sum(healthy=True),
        cordoned=_id_sum(cordoned=True),
        present=_id_sum(removed_at__isnull=True),
    )
    nodes = Node.objects.aggregate(
        **common, schedulable=_id_sum(schedulable=True), present=_id_sum(removed_at__isnull=True)
    )
    models = DeviceModel.objects.aggregate(**common)
    return (
        group.pk,
        repr(sorted((group.node_selector or {}).items())),
        tuple(group.device_models or ()),
        tuple(sorted(devices.items())),
        tuple(sorted(nodes.items())),
        tuple(sorted(models.items())),
    )


def _sync(state: ClusterState) -> bool:
    """Apply the booking deltas since ``state`` was last synced; returns True when any."""
    now = set(booked_placements(state.nodes).values_list("pk", flat=True))
    gone = [pk for pk in state.booked if pk not in now]
    new = sorted(now - set(state.booked))
    for pk in gone:
        state.apply(pk, state.booked[pk], -1)
    if new:
        placements = booked_placements(state.nodes).filter(pk__in=new)
        for pk, booked in read_bookings(placements, migs=state.has_mig()).items():
            state.apply(pk, booked, +1)
    return bool(gone or new)


def cluster_snapshot(
    group: ResourceGroup, catalogue: Catalogue | None = None
) -> tuple[ClusterSnapshot, SnapshotIndex]:
    """The group's cluster snapshot with every live booking, as
    :func:`~scheduling.selectors.snapshot.build_cluster_snapshot` builds it, from this
    process's cache (module docstring). The snapshot is the caller's own copy; the index is
    shared and must not be changed."""
    if not getattr(settings, "ADMISSION_SNAPSHOT_CACHE", True) or group.pk is None:
        state = build_cluster_state(group, catalogue)
        return state.snapshot, state.index
    version = inventory_version(group)
    with _lock:
        entry = _entries.get(group.pk)
        if entry is None or entry.version != version:
            entry = _Entry(version, build_cluster_state(group, catalogue))
            _entries[group.pk] = entry
            last_outcome[group.pk] = "rebuild"
            forget_running(group.pk)  # kept bookings carry device capacities
        else:
            last_outcome[group.pk] = "delta" if _sync(entry.state) else "hit"
        return entry.state.snapshot.clone(), entry.state.index


def forget(group_id: int | None = None) -> None:
    """Drop the cached snapshot of a group (every group when None) and the running rows kept
    with it."""
    forget_running(group_id)
    with _lock:
        if group_id is None:
            _entries.clear()
        else:
            _entries.pop(group_id, None)
