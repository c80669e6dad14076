"""ORM → admission core: the running (and terminating) workloads of a resource group, read as
plain rows (three queries, no model instances: a cycle reads every booked placement of its
group)."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import NamedTuple

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

    Returns:
        ``(running workloads by job id, {workload id: RunningBooking})``.
    """
    node_names = {pk: name for name, pk in index.node_ids.items()}
    placements = Placement.objects.filter(
        state__in=BOOKED_PLACEMENT_STATES, job__queue__resource_group=group
    )
    rows = [
        _PlacementRow(*row)
        for row in placements.order_by("job_id", "pod_index", "pk").values_list(*_PLACEMENT_COLUMNS)
    ]
    bookings, migs = _bookings(placements), _migs(placements)
    first: dict[int, _PlacementRow] = {}
    charges: dict[int, dict] = defaultdict(lambda: defaultdict(int))
    evict_by: dict[int, list[datetime]] = defaultdict(list)
    held: dict[str, RunningBooking] = {}
    for p in rows:
        first.setdefault(p.job_id, p)
        if p.state == PlacementState.TERMINATING:
            evict_by[p.job_id].append(p.evict_by or p.updated)
        booking = held.setdefault(str(p.job_id), RunningBooking(p.job_id))
        grants = []
        for uuid, model, dev_mem, dev_cores, mem, cores, slots in bookings.get(p.pk, ()):
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
        booking.migs.extend(migs.get(p.pk, ()))
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
