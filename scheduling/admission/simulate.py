"""Dry-run helpers: "would this job be admitted now?" and "what would this quota change
preempt?" (tenancy.md §5, opportunity 2; kueue#15614, KAI#1783).

Both leave their inputs untouched: the submission preview runs a real cycle and rolls the
placer back; the quota-change simulation only works on a private quota tree.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from scheduling.admission.cycle import AdmissionCycle, validate_snapshot
from scheduling.admission.placer import Placer
from scheduling.admission.quota import QuotaTree, QuotaViolation
from scheduling.admission.types import (
    Admission,
    AdmissionInputError,
    AdmissionSnapshot,
    AggregateCap,
    CycleConfig,
    Dimension,
    PendingVerdict,
    PendingWorkload,
    Preemption,
    Quota,
    RunningWorkload,
)


@dataclass(frozen=True, slots=True)
class SubmissionPreview:
    """Answer of :func:`preview_submission`.

    Attributes:
        admitted: True when the job would be admitted in a cycle run now.
        admission: its admission (placement token, charges, borrowing), when admitted.
        victims: the preemptions it would cause.
        verdict: why it would stay pending (with its queue position), when not admitted.
        other_admissions: ids of other pending jobs the same cycle would admit.
    """

    admitted: bool
    admission: Admission | None
    victims: tuple[Preemption, ...]
    verdict: PendingVerdict | None
    other_admissions: tuple[str, ...]


def preview_submission(
    snapshot: AdmissionSnapshot,
    placer: Placer,
    workload: PendingWorkload,
    config: CycleConfig | None = None,
) -> SubmissionPreview:
    """Would ``workload`` be admitted now, where, and whom would it preempt?

    Runs a full cycle on ``snapshot`` with ``workload`` added to the pending jobs (so jobs
    ahead of it are admitted first, as they would be), then undoes every booking on the
    placer.

    Raises:
        AdmissionInputError: the snapshot or the workload is inconsistent (for instance the
            workload id already exists).
    """
    cycle = AdmissionCycle(replace(snapshot, pending=(*snapshot.pending, workload)), placer,
                           config or CycleConfig())
    try:
        result = cycle.run()
    finally:
        cycle.rollback()
    admission = next((a for a in result.admitted if a.workload_id == workload.id), None)
    verdict = next((v for v in result.pending if v.workload_id == workload.id), None)
    return SubmissionPreview(
        admitted=admission is not None,
        admission=admission,
        victims=tuple(p for p in result.preempted if p.preemptor_id == workload.id),
        verdict=verdict,
        other_admissions=tuple(a.workload_id for a in result.admitted
                               if a.workload_id != workload.id),
    )


@dataclass(frozen=True, slots=True)
class QuotaChangeVictim:
    """A running job a quota change would evict.

    Attributes:
        workload_id / tenant: the victim.
        violation: the broken invariant its eviction resolves.
        earliest_eviction: ``max(now, started_at + min_runtime_s)``; apply the change
            gradually (YuniKorn ``quota.preemption.delay``) to respect minimum runtimes.
    """

    workload_id: str
    tenant: str
    violation: str
    earliest_eviction: datetime


@dataclass(frozen=True, slots=True)
class QuotaChangeImpact:
    """Answer of :func:`simulate_quota_change`.

    Attributes:
        violations: invariants broken by the new quotas before any eviction.
        victims: a minimal set of running jobs whose eviction restores every invariant.
        unresolved: invariants that no eviction can fix (nothing evictable in scope).
    """

    violations: tuple[QuotaViolation, ...]
    victims: tuple[QuotaChangeVictim, ...]
    unresolved: tuple[QuotaViolation, ...]


def simulate_quota_change(
    snapshot: AdmissionSnapshot,
    changed: Iterable[Quota] = (),
    removed: Iterable[tuple[str, str, Dimension]] = (),
    caps: Iterable[AggregateCap] | None = None,
) -> QuotaChangeImpact:
    """What would this quota change preempt?

    Applies ``changed`` rows (replacing rows with the same tenant/flavor/dimension),
    drops ``removed`` keys and, when given, replaces every aggregate cap; then, while an
    invariant is broken (see :meth:`QuotaTree.violations`), evicts one job in the scope of
    the first violation: the tenant's own jobs on the flavor for ``no_quota``, jobs of the
    tenant's subtree for ``over_limit``/``over_cap``, any
    job holding the resource for ``cohort_overcommit``. Order: preemptible first, then jobs
    of tenants above their nominal quota, then lowest priority, most recently started, id.
    The set is finally minimised (fill-back in reverse order).

    Raises:
        AdmissionInputError: the snapshot or the new rows are inconsistent.
    """
    validate_snapshot(snapshot)
    rows = {(q.tenant, q.flavor, Dimension(q.dimension)): q for q in snapshot.quotas}
    for key in removed:
        rows.pop((key[0], key[1], Dimension(key[2])), None)
    for quota in changed:
        rows[(quota.tenant, quota.flavor, Dimension(quota.dimension))] = quota
    tree = QuotaTree(snapshot.group, snapshot.tenants, rows.values(),
                     snapshot.caps if caps is None else caps)
    alive = {w.id: w for w in sorted(snapshot.running, key=lambda w: w.id)}
    for workload in alive.values():
        tree.add(workload.tenant, workload.charges)
    before = tuple(tree.violations())
    chosen: list[tuple[RunningWorkload, str]] = []
    unresolved: tuple[QuotaViolation, ...] = ()
    while violations := tree.violations():
        victim = _pick_victim(tree, violations[0], alive.values())
        if victim is None:
            unresolved = tuple(violations)
            break
        del alive[victim.id]
        tree.remove(victim.tenant, victim.charges)
        chosen.append((victim, violations[0].message))
    final = [v.message for v in tree.violations()]
    for index in range(len(chosen) - 2, -1, -1):
        workload, _ = chosen[index]
        tree.add(workload.tenant, workload.charges)
        if [v.message for v in tree.violations()] == final:
            chosen.pop(index)
        else:
            tree.remove(workload.tenant, workload.charges)
    now = snapshot.now
    return QuotaChangeImpact(
        violations=before,
        victims=tuple(
            QuotaChangeVictim(
                workload_id=w.id, tenant=w.tenant, violation=message,
                earliest_eviction=max(now, w.started_at + timedelta(seconds=w.min_runtime_s)),
            ) for w, message in chosen
        ),
        unresolved=unresolved,
    )


def _pick_victim(tree: QuotaTree, violation: QuotaViolation,
                 running: Iterable[RunningWorkload]) -> RunningWorkload | None:
    if violation.kind == "over_cap":
        cap = violation.cap
        if cap is None:  # pragma: no cover - QuotaTree always sets it
            raise AdmissionInputError("over_cap violation without its cap")
        scope = set(tree.descendants(cap.tenant))
        wanted = None if cap.flavors is None else set(cap.flavors)

        def relevant(w: RunningWorkload) -> bool:
            return w.tenant in scope and any(
                a > 0 and Dimension(d) == cap.dimension and (wanted is None or f in wanted)
                for (f, d), a in w.charges.items())
    elif violation.kind == "no_quota":
        tenant, flavor = violation.tenant, violation.flavor

        def relevant(w: RunningWorkload) -> bool:
            return w.tenant == tenant and any(
                a > 0 and f == flavor for (f, _), a in w.charges.items())
    else:
        fr = violation.flavor_resource
        scope_all = violation.tenant is None
        scope = set() if scope_all else set(tree.descendants(violation.tenant or ""))

        def relevant(w: RunningWorkload) -> bool:
            return (scope_all or w.tenant in scope) and fr is not None and \
                w.charges.get(fr, 0) > 0

    candidates = [w for w in running if relevant(w)]
    if not candidates:
        return None
    return min(candidates, key=lambda w: (
        not w.preemptible,
        not tree.borrowing_resources(w.tenant),
        w.priority,
        -w.started_at.timestamp(),
        w.id,
    ))
