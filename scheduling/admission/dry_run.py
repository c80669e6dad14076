"""Dry-run helpers: "would this job be admitted now?" and "what does this quota change do?"
(tenancy.md §5, opportunity 2; kueue#15614, KAI#1783).

Both leave their inputs untouched: the submission preview runs a real cycle and rolls the
placer back; the quota-change dry run only works on a private quota tree.

Quota changes follow Kueue: shrinking or deleting a quota evicts nothing. Usage above the new
nominal quota counts as borrowing: the tenant cannot admit more there and its jobs become
reclaimable by the tenants whose quota they now use (``over_nominal`` lists them in reclaim
order). Only hard invariants (a borrowing limit, an aggregate cap, a cohort using more than
its total quota) list the jobs whose eviction would restore them if the change were enforced
at once (``victims``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from scheduling.admission.cycle import AdmissionCycle
from scheduling.admission.outcomes import Admission, PendingVerdict, PreemptionTarget
from scheduling.admission.placer import Placer
from scheduling.admission.quota import QuotaTree, fr_sort_key
from scheduling.admission.quota_fit import QuotaViolation
from scheduling.admission.types import (
    AdmissionInputError,
    AdmissionSnapshot,
    AggregateCapSpec,
    CycleConfig,
    Dimension,
    FlavorResource,
    PendingWorkload,
    QuotaSpec,
    RunningWorkload,
    TenantSpec,
)
from scheduling.admission.validation import validate_snapshot


@dataclass(frozen=True, slots=True)
class SubmissionPreview:
    """Answer of :func:`preview_submission`.

    Attributes:
        admitted: True when the job would be admitted in a cycle run now.
        admission: its admission (placement token, charges, borrowing), when admitted.
        victims: the preemptions it would issue (it is then admitted once they are gone).
        verdict: why it would stay pending (with its queue position), when not admitted.
        other_admissions: ids of other pending jobs the same cycle would admit.
    """

    admitted: bool
    admission: Admission | None
    victims: tuple[PreemptionTarget, ...]
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
    cycle = AdmissionCycle(
        replace(snapshot, pending=(*snapshot.pending, workload)), placer, config or CycleConfig()
    )
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
        other_admissions=tuple(
            a.workload_id for a in result.admitted if a.workload_id != workload.id
        ),
    )


@dataclass(frozen=True, slots=True)
class QuotaChangeVictim:
    """A running job whose eviction a hard invariant would need if enforced at once.

    Attributes:
        workload_id / tenant: the job.
        violation: the broken invariant its eviction resolves.
        earliest_eviction: ``max(now, started_at + min_runtime_s)``; apply the change
            gradually (YuniKorn ``quota.preemption.delay``) to respect minimum runtimes.
    """

    workload_id: str
    tenant: str
    violation: str
    earliest_eviction: datetime


@dataclass(frozen=True, slots=True)
class OverNominal:
    """A tenant whose usage would exceed its nominal quota after the change.

    Attributes:
        tenant / flavor_resource: where.
        usage / nominal: amounts after the change (usage counts its children's borrowing).
        jobs: the jobs of its subtree that are over the quota, in Kueue reclaim order
            (lowest priority, newest first): reclaiming them, in this order, brings it back
            to its nominal quota. Nothing is evicted now.
        message: ``"tenant T, flavor F, DIM: usage U > nominal N (over by X; reclaimable):
            jobs ...; nothing is evicted now"``.
    """

    tenant: str
    flavor_resource: FlavorResource
    usage: int
    nominal: int
    jobs: tuple[str, ...]
    message: str


@dataclass(frozen=True, slots=True)
class ChildExcess:
    """Children's quota rows that add up to more than their parent's row.

    Attributes:
        parent / flavor / dimension: where.
        parent_nominal: the parent's row (None = the parent has no row).
        children_total: the sum of the direct children's rows.
        children: ``{child: nominal}``.
    """

    parent: str
    flavor: str
    dimension: Dimension
    parent_nominal: int | None
    children_total: int
    children: tuple[tuple[str, int], ...]

    @property
    def message(self) -> str:
        """e.g. ``children's nominal 9 exceeds dept's 8 (flavor a100, devices)``."""
        have = "none" if self.parent_nominal is None else str(self.parent_nominal)
        return (
            f"children's nominal {self.children_total} exceeds {self.parent}'s {have} "
            f"(flavor {self.flavor}, {self.dimension.value})"
        )


@dataclass(frozen=True, slots=True)
class QuotaChangeImpact:
    """Answer of :func:`dry_run_quota_change`.

    Attributes:
        violations: hard invariants broken by the new quotas (nothing evicted).
        victims: a minimal set of running jobs whose eviction would restore them at once.
        unresolved: hard invariants that no eviction can fix (nothing evictable in scope).
        over_nominal: tenants that would use more than their nominal quota, with the jobs
            that become reclaimable.
        child_excess: parents whose children's rows would add up to more than their own.
    """

    violations: tuple[QuotaViolation, ...]
    victims: tuple[QuotaChangeVictim, ...]
    unresolved: tuple[QuotaViolation, ...]
    over_nominal: tuple[OverNominal, ...] = ()
    child_excess: tuple[ChildExcess, ...] = ()


def children_over_parent(
    tenants: Iterable[TenantSpec],
    quotas: Iterable[QuotaSpec],
    *,
    missing_parent_row_is_zero: bool = False,
) -> list[ChildExcess]:
    """Parents whose direct children's rows add up to more than the parent's row.

    Args:
        tenants: the tenant tree.
        quotas: the quota rows of one resource group.
        missing_parent_row_is_zero: report children of a parent without a row for that
            flavor resource (a tenant admin may only split what the parent has).
    """
    parent_of = {t.name: t.parent for t in tenants}
    rows = {(q.tenant, q.flavor, Dimension(q.dimension)): q.nominal for q in quotas}
    children: dict[tuple[str, str, Dimension], list[tuple[str, int]]] = {}
    for (tenant, flavor, dim), nominal in rows.items():
        parent = parent_of.get(tenant)
        if parent is not None:
            children.setdefault((parent, flavor, dim), []).append((tenant, nominal))
    out = []
    for key, kids in sorted(children.items()):
        total = sum(n for _, n in kids)
        have = rows.get(key)
        if have is None and not missing_parent_row_is_zero:
            continue
        if total > (have or 0):
            out.append(ChildExcess(key[0], key[1], key[2], have, total, tuple(sorted(kids))))
    return out


def dry_run_quota_change(
    snapshot: AdmissionSnapshot,
    changed: Iterable[QuotaSpec] = (),
    removed: Iterable[tuple[str, str, Dimension]] = (),
    caps: Iterable[AggregateCapSpec] | None = None,
) -> QuotaChangeImpact:
    """What does this quota change do? (module docstring)

    Applies ``changed`` rows (replacing rows with the same tenant/flavor/dimension),
    drops ``removed`` keys and, when given, replaces every aggregate cap. Then reports the
    tenants over nominal (with their reclaimable jobs), the parents whose children exceed
    them, and for each broken hard invariant (see :meth:`QuotaTree.violations`) one job at a
    time in the scope of the first violation: jobs of the tenant's subtree for
    ``over_limit``/``over_cap``, any job holding the resource for ``cohort_overcommit``.
    Victim order: preemptible first, then jobs of tenants above their nominal quota, then
    lowest priority, most recently started, id; the set is minimised (fill-back).

    Raises:
        AdmissionInputError: the snapshot or the new rows are inconsistent.
    """
    validate_snapshot(snapshot)
    rows = {(q.tenant, q.flavor, Dimension(q.dimension)): q for q in snapshot.quotas}
    for key in removed:
        rows.pop((key[0], key[1], Dimension(key[2])), None)
    for quota in changed:
        rows[(quota.tenant, quota.flavor, Dimension(quota.dimension))] = quota
    tree = QuotaTree(
        snapshot.group, snapshot.tenants, rows.values(), snapshot.caps if caps is None else caps
    )
    alive = {w.id: w for w in sorted(snapshot.running, key=lambda w: w.id)}
    for workload in alive.values():
        tree.add(workload.tenant, workload.charges)
    over = _over_nominal(tree, list(alive.values()))
    before = tuple(tree.violations())
    chosen = _enforce(tree, alive)
    unresolved = tuple(tree.violations()) if chosen is None else ()
    now = snapshot.now
    return QuotaChangeImpact(
        violations=before,
        victims=tuple(
            QuotaChangeVictim(
                workload_id=w.id,
                tenant=w.tenant,
                violation=message,
                earliest_eviction=max(now, w.started_at + timedelta(seconds=w.min_runtime_s)),
            )
            for w, message in (chosen or [])
        ),
        unresolved=unresolved,
        over_nominal=over,
        child_excess=tuple(children_over_parent(snapshot.tenants, rows.values())),
    )


def _reclaim_order(workload: RunningWorkload) -> tuple:
    """Kueue ``CandidatesOrdering`` within one tenant."""
    return (
        not workload.terminating,
        workload.priority,
        -workload.started_at.timestamp(),
        workload.id,
    )


def _over_nominal(tree: QuotaTree, running: list[RunningWorkload]) -> tuple[OverNominal, ...]:
    out = []
    for tenant in sorted(tree.tenant_names()):
        node = tree.node(tenant)
        subtree = set(tree.descendants(tenant))
        for fr in sorted(tree.managed, key=fr_sort_key):
            usage, nominal = node.usage.get(fr, 0), node.subtree.get(fr, 0)
            if usage <= nominal:
                continue
            jobs = sorted(
                (w for w in running if w.tenant in subtree and w.charges.get(fr, 0)),
                key=_reclaim_order,
            )
            taken = []
            for workload in jobs:
                if node.usage.get(fr, 0) <= nominal:
                    break
                tree.remove(workload.tenant, workload.charges)
                taken.append(workload)
            for workload in reversed(taken):
                tree.add(workload.tenant, workload.charges)
            names = ", ".join(w.id for w in taken) or "none of its own"
            out.append(
                OverNominal(
                    tenant,
                    fr,
                    usage,
                    nominal,
                    tuple(w.id for w in taken),
                    f"tenant {tenant}, flavor {fr[0]}, {fr[1].value}: usage {usage} > nominal "
                    f"{nominal} (over by {usage - nominal}; reclaimable): jobs {names} in reclaim "
                    f"order; nothing is evicted now",
                )
            )
    return tuple(out)


def _enforce(
    tree: QuotaTree, alive: dict[str, RunningWorkload]
) -> list[tuple[RunningWorkload, str]] | None:
    """Evict one job at a time until every hard invariant holds, then minimise; None when
    an invariant cannot be fixed (the tree is left as it was)."""
    chosen: list[tuple[RunningWorkload, str]] = []
    while violations := tree.violations():
        victim = _pick_victim(tree, violations[0], alive.values())
        if victim is None:
            for workload, _ in chosen:
                tree.add(workload.tenant, workload.charges)
            return None
        del alive[victim.id]
        tree.remove(victim.tenant, victim.charges)
        chosen.append((victim, violations[0].message))
    for index in range(len(chosen) - 2, -1, -1):
        workload, _ = chosen[index]
        tree.add(workload.tenant, workload.charges)
        if tree.violations():
            tree.remove(workload.tenant, workload.charges)
        else:
            chosen.pop(index)
    return chosen


def _pick_victim(
    tree: QuotaTree, violation: QuotaViolation, running: Iterable[RunningWorkload]
) -> RunningWorkload | None:
    if violation.kind == "over_cap":
        cap = violation.cap
        if cap is None:  # pragma: no cover - QuotaTree always sets it
            raise AdmissionInputError("over_cap violation without its cap")
        scope = set(tree.descendants(cap.tenant))
        wanted = None if cap.flavors is None else set(cap.flavors)

        def relevant(w: RunningWorkload) -> bool:
            return w.tenant in scope and any(
                a > 0 and Dimension(d) == cap.dimension and (wanted is None or f in wanted)
                for (f, d), a in w.charges.items()
            )
    else:
        fr = violation.flavor_resource
        scope_all = violation.tenant is None
        scope = set() if scope_all else set(tree.descendants(violation.tenant or ""))

        def relevant(w: RunningWorkload) -> bool:
            return (scope_all or w.tenant in scope) and fr is not None and w.charges.get(fr, 0) > 0

    candidates = [w for w in running if relevant(w)]
    if not candidates:
        return None
    return min(
        candidates,
        key=lambda w: (
            not w.preemptible,
            not tree.borrowing_resources(w.tenant),
            w.priority,
            -w.started_at.timestamp(),
            w.id,
        ),
    )
