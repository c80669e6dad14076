"""Invariant checker (DESIGN.md §7): no tenant above what its quota plus allowed borrowing
permits, no stored usage that differs from the usage recomputed from running jobs, and no
running job whose recorded charges differ from what its placement implies."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from scheduling.admission.charges import DeviceInfo, charges_for
from scheduling.admission.quota import QuotaTree, fr_sort_key, merge_charges
from scheduling.admission.types import AdmissionSnapshot, Dimension, FlavorResource
from scheduling.admission.validation import validate_snapshot
from scheduling.placement.types import Decision


@dataclass(frozen=True, slots=True)
class InvariantViolation:
    """One broken invariant.

    Attributes:
        kind: ``over_limit`` | ``cohort_overcommit`` | ``over_cap`` (quota),
            ``usage_drift`` (stored vs recomputed usage), ``charge_drift`` (recorded charges
            vs placement), ``missing_placement`` / ``orphan_placement``.
        subject: tenant or workload id concerned (None for the cohort).
        message: human-readable description with the amounts.
    """

    kind: str
    subject: str | None
    message: str


def check_invariants(
    snapshot: AdmissionSnapshot,
    placements: Mapping[str, Decision] | None = None,
    devices: Mapping[str, DeviceInfo] | None = None,
) -> tuple[InvariantViolation, ...]:
    """Report every broken invariant of ``snapshot`` (empty tuple = all hold).

    Args:
        snapshot: quotas, running workloads (their charges) and stored usage rows.
        placements: optional ``{workload id: placement Decision}`` of running jobs; with
            ``devices``, each job's charges are recomputed with
            :func:`~scheduling.admission.charges.charges_for` and compared.
        devices: device info by uuid (required with ``placements``).

    Returns:
        Quota violations (tenant order), then usage drift (tenant, flavor, dimension order),
        then placement findings (workload id order).

    Raises:
        AdmissionInputError: the snapshot is inconsistent.
        ValueError: ``placements`` given without ``devices``.
    """
    validate_snapshot(snapshot)
    if placements is not None and devices is None:
        raise ValueError("check_invariants: placements need devices")
    tree = QuotaTree(snapshot.group, snapshot.tenants, snapshot.quotas, snapshot.caps)
    recomputed: dict[str, dict[FlavorResource, int]] = {}
    for workload in snapshot.running:
        tree.add(workload.tenant, workload.charges)
        recomputed[workload.tenant] = merge_charges(
            recomputed.get(workload.tenant, {}), workload.charges
        )
    found = [InvariantViolation(v.kind, v.tenant, v.message) for v in tree.violations()]

    stored: dict[str, dict[FlavorResource, int]] = {}
    for row in snapshot.usage:
        per = stored.setdefault(row.tenant, {})
        key = (row.flavor, Dimension(row.dimension))
        per[key] = per.get(key, 0) + row.amount
    for tenant in sorted(set(stored) | set(recomputed)):
        have, want = stored.get(tenant, {}), recomputed.get(tenant, {})
        for fr in sorted(set(have) | set(want), key=fr_sort_key):
            if have.get(fr, 0) != want.get(fr, 0):
                found.append(
                    InvariantViolation(
                        "usage_drift",
                        tenant,
                        f"tenant {tenant}, flavor {fr[0]}, {fr[1].value}: stored usage "
                        f"{have.get(fr, 0)}, recomputed {want.get(fr, 0)}",
                    )
                )

    if placements is not None and devices is not None:
        running = {w.id: w for w in snapshot.running}
        for workload_id in sorted(set(running) | set(placements)):
            if workload_id not in placements:
                found.append(
                    InvariantViolation(
                        "missing_placement",
                        workload_id,
                        f"running workload {workload_id} has no placement",
                    )
                )
                continue
            if workload_id not in running:
                found.append(
                    InvariantViolation(
                        "orphan_placement",
                        workload_id,
                        f"placement of {workload_id} belongs to no running workload",
                    )
                )
                continue
            expected = charges_for(placements[workload_id], devices, snapshot.group)
            recorded = merge_charges(running[workload_id].charges)
            for fr in sorted(set(expected) | set(recorded), key=fr_sort_key):
                if expected.get(fr, 0) != recorded.get(fr, 0):
                    found.append(
                        InvariantViolation(
                            "charge_drift",
                            workload_id,
                            f"workload {workload_id}, flavor {fr[0]}, {fr[1].value}: recorded "
                            f"charge {recorded.get(fr, 0)}, placement implies "
                            f"{expected.get(fr, 0)}",
                        )
                    )
    return tuple(found)
