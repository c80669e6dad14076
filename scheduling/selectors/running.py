"""ORM → admission core: the running (and terminating) workloads of a resource group, read as
plain rows (no model instances: a cycle reads every booked placement of its group), kept per
process between cycles and read again only where the rows changed."""

from __future__ import annotations

import threading
from collections import defaultdict
from datetime import datetime
from typing import NamedTuple

from django.conf import settings
from django.db import connection

from scheduling.admission import Dimension, RunningWorkload
from scheduling.admission.charges import milli_share
from scheduling.choices import BOOKED_PLACEMENT_STATES, PlacementState
from scheduling.models import Placement, PlacementDevice, PlacementMigInstance
from scheduling.placement.types import DeviceUsage, MigInstance
from scheduling.selectors.db_placer import RunningBooking
from scheduling.selectors.snapshot import SnapshotIndex
from tenants import models as tm


class _PlacementRow(NamedTuple):
    """A booked placement with the job columns a :class:`RunningWorkload` needs."""

    pk: int
    job_id: int
    pod_index: int
    node_id: int
    cpu_milli: int
    host_memory_mib: int
    state: str
    evict_by: datetime | None
    updated: datetime
    tenant: str
    priority: int
    admitted_at: datetime | None
    created: datetime
    min_runtime_s: float
    preemptible: bool
    priority_class: str | None
    max_runtime_s: float | None


_PLACEMENT_COLUMNS = (
    "pk",
    "job_id",
    "pod_index",
    "node_id",
    "cpu_milli",
    "host_memory_mib",
    "state",
    "evict_by",
    "updated",
    "job__tenant__name",
    "job__priority",
    "job__admitted_at",
    "job__created",
    "job__min_runtime_s",
    "job__preemptible",
    "job__priority_class__name",
    "job__max_runtime_s",
)

#: ``values_list`` of a booking: placement, device uuid, model name, device memory / cores
#: capacity, booked memory / cores / slots
_BOOKING_COLUMNS = (
    "placement_id",
    "device__uuid",
    "device__model__name",
    "device__memory_mib",
    "device__cores_percent",
    "memory_mib",
    "cores_percent",
    "slots",
)


def _bookings(placements) -> dict[int, list[tuple]]:
    out: dict[int, list[tuple]] = defaultdict(list)
    rows = (
        PlacementDevice.objects.filter(placement__in=placements)
        .order_by("placement_id", "device_id")
        .values_list(*_BOOKING_COLUMNS)
    )
    for row in rows:
        out[row[0]].append(row[1:])
    return out


def _migs(placements) -> dict[int, list[tuple[str, MigInstance]]]:
    out: dict[int, list[tuple[str, MigInstance]]] = defaultdict(list)
    rows = (
        PlacementMigInstance.objects.filter(placement__in=placements)
        .order_by("pk")
        .values_list("placement_id", "device__uuid", "profile", "start", "size")
    )
    for placement_id, uuid, profile, start, size in rows:
        out[placement_id].append((uuid, MigInstance(profile, start, size)))
    return out


class _Kept(NamedTuple):
    """One booked placement as read: its row, bookings and MIG instances, and its token (the
    row's columns as text, :data:`_TOKENS_SQL`)."""

    token: tuple
    row: _PlacementRow
    bookings: list[tuple]
    migs: list[tuple[str, MigInstance]]


_kept: dict[int, dict[int, _Kept]] = {}
_kept_lock = threading.Lock()

#: Every column a :class:`_PlacementRow` holds, as text (cheap to decode, unlike timestamps),
#: and the placement row's version (``xmin``: a row written again, even with equal values,
#: is read again), per booked placement of a group: a row whose text is unchanged is
#: unchanged. Bookings and
#: MIG instances are written once with their placement; a change of the inventory (device
#: capacities) drops the kept rows (``snapshot_cache`` on a rebuild).
_TOKENS_SQL = """
    SELECT p.id, p.job_id, p.pod_index, p.node_id, p.cpu_milli, p.host_memory_mib, p.state,
           p.evict_by::text, p.updated::text, t.name, j.priority, j.admitted_at::text,
           j.created::text, j.min_runtime_s, j.preemptible, c.name, j.max_runtime_s,
           p.xmin::text
    FROM scheduling_placement p
    JOIN scheduling_job j ON j.id = p.job_id
    JOIN scheduling_queue q ON q.id = j.queue_id
    JOIN tenants_tenant t ON t.id = j.tenant_id
    LEFT JOIN scheduling_priorityclass c ON c.id = j.priority_class_id
    WHERE p.state = ANY(%s) AND q.resource_group_id = %s
"""


def _booked_rows(group: tm.ResourceGroup) -> list[_Kept]:
    """The group's booked placements with their bookings, in (job, pod index, pk) order,
    read again only where a row changed since this process last read them (one query of
    the rows as text, then three queries for the new or changed placements)."""
    with connection.cursor() as cursor:
        cursor.execute(_TOKENS_SQL, [list(BOOKED_PLACEMENT_STATES), group.pk])
        tokens = {row[0]: row for row in cursor.fetchall()}
    cache = getattr(settings, "ADMISSION_RUNNING_CACHE", True)
    with _kept_lock:
        kept = _kept.get(group.pk, {}) if cache else {}
        stale = [pk for pk, token in tokens.items() if pk not in kept or kept[pk].token != token]
        fresh = _read(stale, tokens) if stale else {}
        now = {pk: fresh.get(pk) or kept[pk] for pk in tokens}
        if cache:
            _kept[group.pk] = now
    return sorted(now.values(), key=lambda k: (k.row.job_id, k.row.pod_index, k.row.pk))


def _read(pks: list[int], tokens: dict[int, tuple]) -> dict[int, _Kept]:
    placements = Placement.objects.filter(pk__in=pks)
    rows = placements.values_list(*_PLACEMENT_COLUMNS)
    bookings, migs = _bookings(placements), _migs(placements)
    return {
        row[0]: _Kept(
            tokens[row[0]], _PlacementRow(*row), bookings.get(row[0], []), migs.get(row[0], [])
        )
        for row in rows
        if row[0] in tokens
    }


def forget_running(group_id: int | None = None) -> None:
    """Drop this process's kept rows of a group (every group when None)."""
    with _kept_lock:
        if group_id is None:
            _kept.clear()
        else:
            _kept.pop(group_id, None)


def running_workloads(
    group: tm.ResourceGroup,
    flavor_of_model: dict[str, str],
    index: SnapshotIndex,
    devices: dict[str, DeviceUsage],
) -> tuple[list[RunningWorkload], dict[str, RunningBooking]]:
    """Jobs of the group holding booked placements (terminating ones included: a preempted
    job keeps its devices and quota until its pods are gone), with charges recomputed from
    bookings.

    Charges per device booking: ``memory_mib``, ``cores_percent`` and the dominant
    milli-device share (:func:`scheduling.admission.milli_share` of the snapshot's device, else
    the registered one), under the flavor of the device's model (``flavor_of_model``; a model
    not in it is its own flavor). The bookings (MIG instances included) let a preemption
    search take a victim out of the cluster snapshot exactly as it was booked.

    The rows are kept per process between cycles and read again only where the database
    changed them (:func:`_booked_rows`; ``ADMISSION_RUNNING_CACHE = False`` reads every row
    every time): at thousands of running jobs, reading and parsing every row was most of a
    cycle's fixed cost.

    Returns:
        ``(running workloads by job id, {workload id: RunningBooking})``.
    """
    node_names = {pk: name for name, pk in index.node_ids.items()}
    first: dict[int, _PlacementRow] = {}
    charges: dict[int, dict] = defaultdict(lambda: defaultdict(int))
    evict_by: dict[int, list[datetime]] = defaultdict(list)
    held: dict[str, RunningBooking] = {}
    for kept in _booked_rows(group):
        p = kept.row
        first.setdefault(p.job_id, p)
        if p.state == PlacementState.TERMINATING:
            evict_by[p.job_id].append(p.evict_by or p.updated)
        booking = held.setdefault(str(p.job_id), RunningBooking(p.job_id))
        grants = []
        for uuid, model, dev_mem, dev_cores, mem, cores, slots in kept.bookings:
            info = devices.get(uuid)
            if info is not None:
                dev_mem, dev_cores = info.memory_mib, info.cores_percent
            flavor = flavor_of_model.get(model, model)
            job_charges = charges[p.job_id]
            job_charges[(flavor, Dimension.DEVICES)] += milli_share(mem, cores, dev_mem, dev_cores)
            job_charges[(flavor, Dimension.MEMORY_MIB)] += mem
            job_charges[(flavor, Dimension.CORES_PERCENT)] += cores
            grants.append((uuid, mem, cores, slots))
        booking.pods.append((node_names.get(p.node_id, ""), p.cpu_milli, p.host_memory_mib, grants))
        booking.migs.extend(kept.migs)
    workloads = [
        _running(p, dict(charges[pk]), evict_by.get(pk)) for pk, p in sorted(first.items())
    ]
    return workloads, held


def _running(p: _PlacementRow, charges: dict, evict_by: list[datetime] | None) -> RunningWorkload:
    return RunningWorkload(
        id=str(p.job_id),
        tenant=p.tenant,
        priority=p.priority,
        started_at=p.admitted_at or p.created,
        charges=charges,
        min_runtime_s=p.min_runtime_s,
        preemptible=p.preemptible,
        created_at=p.created,
        priority_class=p.priority_class,
        max_runtime_s=p.max_runtime_s,
        terminating=bool(evict_by),
        evict_by=max(evict_by) if evict_by else None,
    )
