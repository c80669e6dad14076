"""The scheduling tables' row locks, taken in the one order of ``core.locks.LOCK_ORDER``
(where each table's position and its reason are written): ``Job`` rows, then ``Placement``
rows, then ``Node`` and ``Device`` rows, each in primary-key order, through
``core.locks.lock_rows`` (``FOR NO KEY UPDATE OF`` the table itself, so no join locks another
table and no foreign-key check at commit waits on these locks).

Each transaction takes all its job locks in ONE ascending round (:func:`lock_jobs`) before it
writes any job or takes any other row lock, and never locks or updates another job after it
(a second round may wait on a lower job while holding a higher one). An ``UPDATE`` of
placements counts as taking their locks, so a writer that changes a job *and* its placements
locks the job first (cancel, reconcile, fail, preemption).

Placement rows released by others are read with ``SKIP LOCKED`` by the usage settlement (it
never waits, so it may run at any point). Cycles of different resource groups therefore run
in parallel: they share at most node and device rows (a node in two groups) and take those in
the same order.
"""

from __future__ import annotations

from collections.abc import Iterable

from core.locks import lock_rows
from scheduling.choices import BOOKED_PLACEMENT_STATES
from scheduling.models import Device, Job, Node, Placement


def lock_jobs(job_ids: Iterable[int]) -> list[int]:
    """``SELECT … FOR UPDATE`` the jobs (pk order); returns the ids that exist."""
    ids = sorted(set(job_ids))
    if not ids:
        return []
    return list(lock_rows(Job).filter(pk__in=ids).order_by("pk").values_list("pk", flat=True))


def lock_booked_placements(job_ids: Iterable[int]) -> list[int]:
    """Lock the booked placements of ``job_ids`` (pk order; after their jobs)."""
    ids = sorted(set(job_ids))
    if not ids:
        return []
    return list(
        lock_rows(Placement)
        .filter(job_id__in=ids, state__in=BOOKED_PLACEMENT_STATES)
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def lock_capacity_rows(
    node_ids: Iterable[int], device_ids: Iterable[int]
) -> tuple[dict[int, Node], dict[int, Device]]:
    """Lock nodes, then devices, each in pk order; returns them by pk."""
    nodes = {n.pk: n for n in lock_rows(Node).filter(pk__in=sorted(set(node_ids))).order_by("pk")}
    devices = {
        d.pk: d for d in lock_rows(Device).filter(pk__in=sorted(set(device_ids))).order_by("pk")
    }
    return nodes, devices
