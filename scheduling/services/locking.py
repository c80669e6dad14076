"""The one lock order of every writer of scheduling state (cycle, reconcile, submission,
rollups, cancel, inventory sync). Deadlock freedom follows from every transaction taking its
locks in this order, each table's rows in primary-key order:

1. advisory locks: the admission cycle lock of a resource group (``core.locks.ADMISSION_CYCLE``,
   taken by the cycle and the usage rollups; try-lock, never waits) and the per-cluster
   inventory / reconcile locks (try-locks too);
2. ``Job`` rows (pk order) — :func:`lock_jobs`;
3. ``Placement`` rows (pk order) — :func:`lock_booked_placements`; an ``UPDATE`` of
   placements counts as taking their locks here, so a writer that changes a job *and* its
   placements locks the job first (cancel, reconcile, fail, preemption);
4. ``Node`` rows, then 5. ``Device`` rows (pk order) — :func:`lock_capacity_rows`
   (the cycle's capacity re-check, the inventory sync);
6. ``Quota`` rows, then ``QuotaUsage`` rows (sorted by tenant, group, flavor, dimension;
   ``tenants.services``);
7. telemetry rows (``CycleStats``), after the scheduling transaction commits.

Each transaction takes all its job locks in ONE ascending round (:func:`lock_jobs`) before it
writes any job or takes any other row lock, and never locks or updates another job after it
(a second round may wait on a lower job while holding a higher one). A ``SELECT … FOR UPDATE``
that joins (a filter through a relation, ``select_related``) names ``of=("self",)``:
PostgreSQL would otherwise lock the joined rows too, outside this order.

Placement rows released by others are read with ``SKIP LOCKED`` by the usage settlement (it
never waits, so it may run at any point). PostgreSQL's ``FOR KEY SHARE`` locks taken by
inserts referencing a row (a ``PlacementDevice`` inserted for a device) follow the order
because the cycle locks the referenced nodes and devices before inserting.

Cycles of different resource groups therefore run in parallel: they share at most node and
device rows (a node in two groups) and take those in the same order.
"""

from __future__ import annotations

from collections.abc import Iterable

from scheduling.choices import BOOKED_PLACEMENT_STATES
from scheduling.models import Device, Job, Node, Placement


def lock_jobs(job_ids: Iterable[int]) -> list[int]:
    """``SELECT … FOR UPDATE`` the jobs (pk order); returns the ids that exist."""
    ids = sorted(set(job_ids))
    if not ids:
        return []
    return list(
        Job.objects.select_for_update()
        .filter(pk__in=ids)
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def lock_booked_placements(job_ids: Iterable[int]) -> list[int]:
    """Lock the booked placements of ``job_ids`` (pk order; after their jobs)."""
    ids = sorted(set(job_ids))
    if not ids:
        return []
    return list(
        Placement.objects.select_for_update()
        .filter(job_id__in=ids, state__in=BOOKED_PLACEMENT_STATES)
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def lock_capacity_rows(
    node_ids: Iterable[int], device_ids: Iterable[int]
) -> tuple[dict[int, Node], dict[int, Device]]:
    """Lock nodes, then devices, each in pk order; returns them by pk."""
    nodes = {
        n.pk: n
        for n in Node.objects.select_for_update()
        .filter(pk__in=sorted(set(node_ids)))
        .order_by("pk")
    }
    devices = {
        d.pk: d
        for d in Device.objects.select_for_update()
        .filter(pk__in=sorted(set(device_ids)))
        .order_by("pk")
    }
    return nodes, devices
