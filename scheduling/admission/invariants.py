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
    found = _quota_violations(snapshot)
    found.extend(_usage_drift(_stored_usage(snapshot), _recomputed_usage(snapshot)))
    if placements is not None and devices is not None:
        found.extend(_placement_findings(snapshot, placements, devices))
    return tuple(found)


def _quota_violations(snapshot: AdmissionSnapshot) -> list[InvariantViolation]:
    """Step 1: the running workloads' charges added to a :class:`QuotaTree`; its violations
    (``over_limit`` / ``cohort_overcommit`` / ``over_cap``, tenant order)."""
    tree = QuotaTree(snapshot.group, snapshot.tenants, snapshot.quotas, snapshot.caps)
    for workload in snapshot.running:
        tree.add(workload.tenant, workload.charges)
    return [InvariantViolation(v.kind, v.tenant, v.message) for v in tree.violations()]


def _recomputed_usage(snapshot: AdmissionSnapshot) -> dict[str, dict[FlavorResource, int]]:
    """``{tenant: {(flavor, dimension): amount}}`` summed from the running workloads' charges."""
    recomputed: dict[str, dict[FlavorResource, int]] = {}
    for workload in snapshot.running:
        recomputed[workload.tenant] = merge_charges(
            recomputed.get(workload.tenant, {}), workload.charges
        )
    return recomputed


def _stored_usage(snapshot: AdmissionSnapshot) -> dict[str, dict[FlavorResource, int]]:
    """``{tenant: {(flavor, dimension): amount}}`` summed from the stored usage rows."""
    stored: dict[str, dict[FlavorResource, int]] = {}
    for row in snapshot.usage:
        per = stored.setdefault(row.tenant, {})
        key = (row.flavor, Dimension(row.dimension))
        per[key] = per.get(key, 0) + row.amount
    return stored


def _usage_drift(
    stored: Mapping[str, Mapping[FlavorResource, int]],
    recomputed: Mapping[str, Mapping[FlavorResource, int]],
) -> list[InvariantViolation]:
    """Step 2: one ``usage_drift`` per (tenant, flavor, dimension) where the stored usage
    differs from the recomputed one (a missing entry counts as 0); tenant, then flavor and
    dimension order."""
    found = []
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
    return found


def _placement_findings(
    snapshot: AdmissionSnapshot,
    placements: Mapping[str, Decision],
    devices: Mapping[str, DeviceInfo],
) -> list[InvariantViolation]:
    """Step 3: per workload id (sorted), ``missing_placement`` (running, no placement),
    ``orphan_placement`` (placement, not running) or its ``charge_drift`` findings."""
    running = {w.id: w for w in snapshot.running}
    found = []
    for workload_id in sorted(set(running) | set(placements)):
        if workload_id not in placements:
            found.append(
                InvariantViolation(
                    "missing_placement",
                    workload_id,
                    f"running workload {workload_id} has no placement",
                )
            )
        elif workload_id not in running:
            found.append(
                InvariantViolation(
                    "orphan_placement",
                    workload_id,
                    f"placement of {workload_id} belongs to no running workload",
                )
            )
        else:
            expected = charges_for(placements[workload_id], devices, snapshot.group)
            found.extend(_charge_drift(workload_id, expected, running[workload_id].charges))
    return found


def _charge_drift(
    workload_id: str, expected: Mapping[FlavorResource, int], charges: Mapping[FlavorResource, int]
) -> list[InvariantViolation]:
    """One ``charge_drift`` per (flavor, dimension) where the workload's recorded charges
    differ from what its placement implies (``expected``)."""
    recorded = merge_charges(charges)
    return [
        InvariantViolation(
            "charge_drift",
            workload_id,
            f"workload {workload_id}, flavor {fr[0]}, {fr[1].value}: recorded "
            f"charge {recorded.get(fr, 0)}, placement implies {expected.get(fr, 0)}",
        )
        for fr in sorted(set(expected) | set(recorded), key=fr_sort_key)
        if expected.get(fr, 0) != recorded.get(fr, 0)
    ]
