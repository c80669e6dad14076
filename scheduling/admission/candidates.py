"""Preemption candidates: who may be evicted for a pending job, in which order, and why the
others may not.

Sources (kubernetes-sigs/kueue):

* ``pkg/scheduler/preemption/classical/hierarchical_preemption.go``:
  ``collectSameQueueCandidates``, ``collectCandidatesForHierarchicalReclaim``,
  ``collectCandidatesInSubtree``, ``classifyPreemptionVariant``.
* ``pkg/scheduler/preemption/classical/candidate_generator.go``: ``NewCandidateIterator``
  (lists concatenated as evicted hierarchy, evicted priority, evicted same-queue, then the
  same three non-evicted) and ``candidateIsValid``.
* ``pkg/scheduler/preemption/common/ordering.go``: ``CandidatesOrdering`` (already evicted
  first, other ClusterQueues before the preemptor's, lower priority, newest admission, id).

Our extras beyond Kueue (kept, documented as such): a victim inside its minimum runtime, a
non-preemptible job (or one of a non-preemptible priority class) and, for other tenants'
jobs, a preemptor that has not waited ``preemption_delay_s`` yet (YuniKorn) are never
candidates. A terminating job (already evicted, its pods in their grace period) is always
first and costs nothing more: it is only waited for.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from enum import IntEnum
from typing import TYPE_CHECKING, Protocol

from scheduling.admission.outcomes import RejectedCandidate
from scheduling.admission.placer import FlavorChoice, PlacementOutcome, Placer, Undo
from scheduling.admission.policy import PreemptionPolicy, above_borrowing_threshold, policy_verdict
from scheduling.admission.running_index import Jobs, RunningIndex
from scheduling.admission.types import (
    Charges,
    CycleConfig,
    FlavorResource,
    GroupKind,
    PendingWorkload,
    QueueSpec,
    RunningWorkload,
)

if TYPE_CHECKING:
    from datetime import datetime

    from scheduling.admission.quota import QuotaNode, QuotaTree


class CycleView(Protocol):
    """What a preemption search reads from the running cycle."""

    tree: QuotaTree
    placer: Placer
    running: dict[str, RunningWorkload]
    running_index: RunningIndex
    now: datetime
    config: CycleConfig
    group_kind: GroupKind

    def class_preemptible(self, name: str | None) -> bool: ...  # noqa: D102

    def quota_charges(self, workload: RunningWorkload) -> Charges: ...  # noqa: D102


class Variant(IntEnum):
    """Kueue ``preemptionVariant`` of a candidate."""

    WITHIN_TENANT = 1
    HIERARCHICAL_RECLAIM = 2
    RECLAIM_WITHOUT_BORROWING = 3
    RECLAIM_WHILE_BORROWING = 4


@dataclass(slots=True)
class Candidate:
    """A running job that may be evicted, with its variant and the least common ancestor
    (``lca``) of its tenant and the preemptor's (None for the preemptor's own jobs)."""

    workload: RunningWorkload
    variant: Variant
    lca: QuotaNode | None = None


@dataclass(frozen=True, slots=True)
class Ask:
    """What a pending job asks preemption for.

    Attributes:
        entry: the pending job.
        queue: its queue (policies).
        pod_count: pods to place.
        flavors: allowed flavors per pod set (None = no restriction).
        requests: its charges (from a placement, or an estimate on an empty cluster) on the
            flavor resources whose quota counts for its tenant.
        frs: the flavor resources that need preemption (Kueue ``frsNeedPreemption``).
        preemptible: its effective preemptibility (False = must fit nominal).
    """

    entry: PendingWorkload
    queue: QueueSpec
    pod_count: int
    flavors: FlavorChoice
    requests: dict[FlavorResource, int]
    frs: frozenset[FlavorResource]
    preemptible: bool = True


@dataclass(slots=True)
class Search:
    """Mutable state of one preemption search on the cycle's tree and placer.

    Removed candidates are taken out of both the quota tree and the placer; :meth:`restore`
    puts them back. ``outcome`` is the last successful placement of :meth:`fits`; ``tried``
    tells whether any candidate was valid.
    """

    cycle: CycleView
    ask: Ask
    rejected: dict[str, RejectedCandidate] = field(default_factory=dict)
    undo: dict[str, Undo] = field(default_factory=dict)
    outcome: PlacementOutcome | None = None
    tried: bool = False

    @property
    def tree(self) -> QuotaTree:
        """The cycle's quota tree."""
        return self.cycle.tree

    @property
    def node(self) -> QuotaNode:
        """The preemptor's tenant node."""
        return self.cycle.tree.node(self.ask.entry.tenant)

    # -- bookkeeping --------------------------------------------------------------------

    def reject(self, workload: RunningWorkload, rule: str) -> None:
        """Record why ``workload`` could not be used (the last rule wins)."""
        self.rejected[workload.id] = RejectedCandidate(workload.id, workload.tenant, rule)

    def reject_all(self, key: tuple, jobs: Jobs, rule: str) -> None:
        """:meth:`reject` every job of ``jobs`` with ``rule``; ``key`` identifies ``jobs``
        in the cycle's :class:`RunningIndex` (the records are built once per cycle)."""
        self.rejected.update(self.cycle.running_index.rejections(key, jobs, rule))

    def uses_needed(self, workload: RunningWorkload) -> bool:
        """Kueue ``WorkloadUsesResources``: it holds a flavor resource that needs preemption."""
        return any(workload.charges.get(fr, 0) > 0 for fr in self.ask.frs)

    def charges(self, workload: RunningWorkload) -> Charges:
        """What evicting ``workload`` frees in the cycle's quota tree: nothing for a victim
        of an earlier preemptor of the cycle, whose charges the search runs without (Kueue
        ``fits`` in ``pkg/scheduler/scheduler.go``); only its devices the preemptor's hold
        leaves are freed."""
        return self.cycle.quota_charges(workload)

    def remove(self, workload: RunningWorkload) -> None:
        """Take ``workload`` out of the tree and the placer (simulated eviction)."""
        self.undo[workload.id] = self.cycle.placer.remove(workload.id)
        self.tried = True
        self.cycle.tree.remove(workload.tenant, self.charges(workload))
        self.rejected.pop(workload.id, None)

    def restore(self, workload: RunningWorkload) -> None:
        """Undo :meth:`remove`."""
        self.undo.pop(workload.id)()
        self.cycle.tree.add(workload.tenant, self.charges(workload))

    def place(self) -> PlacementOutcome:
        """Where the job lands on the placer's current state (the quota tree plays no part)."""
        ask = self.ask
        return self.cycle.placer.try_place(ask.entry, ask.pod_count, ask.flavors)

    def fits(self, borrow: bool, outcome: PlacementOutcome | None = None) -> bool:
        """Kueue ``workloadFits``: placed, within quota (with borrowing only if ``borrow``).
        ``outcome``: :meth:`place` already done on the current placer state."""
        ask = self.ask
        outcome = self.place() if outcome is None else outcome
        if not outcome.placed:
            return False
        tree = self.cycle.tree
        if tree.check_fit(ask.entry.tenant, outcome.charges, allow_borrowing=ask.preemptible):
            return False
        if not borrow and not tree.within_nominal(ask.entry.tenant, outcome.charges):
            return False
        self.outcome = outcome
        return True

    # -- protections and order -------------------------------------------------------------

    def protection(self, workload: RunningWorkload) -> str | None:
        """Our extra protections (module docstring), or None when it may be evicted."""
        if workload.terminating:
            return None
        elastic = self.cycle.group_kind == GroupKind.ELASTIC
        if not elastic and not (
            workload.preemptible and self.cycle.class_preemptible(workload.priority_class)
        ):
            return "non-preemptible"
        until = workload.started_at + timedelta(seconds=workload.min_runtime_s)
        if self.cycle.now < until:
            return f"minimum runtime: until {until.isoformat()}"
        if workload.tenant != self.ask.entry.tenant:
            waited = (self.cycle.now - self.ask.entry.created_at).total_seconds()
            delay = self.cycle.config.preemption_delay_s
            if waited < delay:
                return f"preemption delay: waited {waited:g}s of {delay:g}s"
        return None

    def order_key(self, workload: RunningWorkload) -> tuple:
        """Kueue ``CandidatesOrdering`` key (lower = evicted first)."""
        return (
            not workload.terminating,
            workload.tenant == self.ask.entry.tenant,
            workload.priority,
            -workload.started_at.timestamp(),
            workload.id,
        )

    def policy_rule(
        self, workload: RunningWorkload, policy: PreemptionPolicy, field_name: str
    ) -> str | None:
        """Kueue ``SatisfiesPreemptionPolicy`` as a rejection rule (None = passes)."""
        entry = self.ask.entry
        verdict = policy_verdict(
            policy, entry.priority, entry.created_at, workload.priority, workload.queue_order_time
        )
        return None if verdict is None else f"{field_name} {verdict}"


def jobs_by_tenant(search: Search) -> dict[str, Jobs]:
    """Running jobs per tenant that hold a needed flavor resource (id order), from the
    cycle's index. Do not mutate."""
    return search.cycle.running_index.by_tenant(search.ask.frs)


def eligible(
    search: Search, workload: RunningWorkload, policy: PreemptionPolicy, field_name: str
) -> bool:
    """Policy and protections; records the rejection when not eligible."""
    rule = search.policy_rule(workload, policy, field_name) or search.protection(workload)
    if rule is not None:
        search.reject(workload, rule)
        return False
    return True


def eligible_jobs(
    search: Search, tenant: str, policy: PreemptionPolicy, field_name: str
) -> list[RunningWorkload]:
    """:func:`eligible` over ``tenant``'s jobs holding a needed flavor resource: the
    eligible ones (ascending priority, then id). A priority the policy refuses whatever the
    creation times is rejected as a group with the rule :func:`eligible` would record."""
    frs, preemptor = search.ask.frs, search.ask.entry.priority
    out: list[RunningWorkload] = []
    for priority, jobs in search.cycle.running_index.by_priority(frs, tenant):
        rule = None
        if _refuses_priority(policy, preemptor, priority):
            rule = search.policy_rule(jobs[0], policy, field_name)
        if rule is not None:  # the same rule for every job of this priority
            search.reject_all((frs, tenant, priority), jobs, rule)
            continue
        out.extend(w for w in jobs if eligible(search, w, policy, field_name))
    return out


def _refuses_priority(policy: PreemptionPolicy, preemptor: int, candidate: int) -> bool:
    """:func:`~scheduling.admission.policy.policy_verdict` refuses every candidate of
    priority ``candidate``, whatever its and the preemptor's creation times."""
    if policy == PreemptionPolicy.NEVER:
        return True
    if policy == PreemptionPolicy.ANY or preemptor > candidate:
        return False
    return policy == PreemptionPolicy.LOWER_PRIORITY or preemptor < candidate


# -- classical collection (Kueue hierarchical_preemption.go) ---------------------------------


@dataclass(slots=True)
class CandidateLists:
    """The three candidate lists of Kueue's classical preemption."""

    same: list[Candidate] = field(default_factory=list)
    hierarchy: list[Candidate] = field(default_factory=list)
    priority: list[Candidate] = field(default_factory=list)

    def ordered(self, search: Search) -> list[Candidate]:
        """Kueue ``NewCandidateIterator`` order: evicted (terminating) of the hierarchy,
        priority and same-tenant lists, then the rest of each, each sorted by
        ``CandidatesOrdering``."""
        lists = [
            sorted(lst, key=lambda c: search.order_key(c.workload))
            for lst in (self.hierarchy, self.priority, self.same)
        ]
        evicted = [c for lst in lists for c in lst if c.workload.terminating]
        rest = [c for lst in lists for c in lst if not c.workload.terminating]
        return evicted + rest


def collect_classical(search: Search) -> CandidateLists:
    """Collect and classify the candidates (Kueue ``collectSameQueueCandidates`` and
    ``collectCandidatesForHierarchicalReclaim``); rejections are recorded on ``search``."""
    lists = CandidateLists()
    by_tenant = jobs_by_tenant(search)
    queue, node, frs = search.ask.queue, search.node, search.ask.frs
    own = node.name or ""
    if queue.within_cluster_queue == PreemptionPolicy.NEVER:
        if own in by_tenant:
            search.reject_all((frs, own), by_tenant[own], "withinClusterQueue: Never")
    else:
        for workload in eligible_jobs(
            search, own, queue.within_cluster_queue, "withinClusterQueue"
        ):
            lists.same.append(Candidate(workload, Variant.WITHIN_TENANT))
    if queue.reclaim_within_cohort == PreemptionPolicy.NEVER:
        for name, jobs in by_tenant.items():
            if name != node.name:
                search.reject_all((frs, name), jobs, "reclaimWithinCohort: Never")
        return lists
    tree = search.tree
    advantage, remaining = tree.fits_in_quota(node, search.ask.requests)
    _collect_subtree(search, by_tenant, node, None, node, advantage, lists)
    previous = node
    for ancestor in node.path_to_root():
        _collect_subtree(search, by_tenant, ancestor, previous, ancestor, advantage, lists)
        fits, remaining = tree.fits_in_quota(ancestor, remaining)
        advantage = advantage or fits
        previous = ancestor
    return lists


def _collect_subtree(
    search: Search,
    by_tenant: dict[str, Jobs],
    current: QuotaNode,
    skip: QuotaNode | None,
    lca: QuotaNode,
    advantage: bool,
    lists: CandidateLists,
) -> None:
    """Kueue ``collectCandidatesInSubtree``: nodes over quota give candidates, subtrees
    within quota are skipped (their jobs are rejected with that rule)."""
    tree, frs = search.tree, search.ask.frs
    if current.name is not None and current is not search.node:
        _take_jobs(search, by_tenant, current, lca, advantage, lists)  # an inner tenant's jobs
    for child in current.children:
        if child is skip or child is search.node:
            continue
        if tree.within_nominal_in(child, frs):
            rule = (
                f"subtree within quota: {child.name}"
                if child.children
                else f"borrower within nominal: tenant {child.name}"
            )
            for name in tree.descendants(child.name or ""):
                if name in by_tenant:
                    search.reject_all((frs, name), by_tenant[name], rule)
            continue
        if child.children:
            _collect_subtree(search, by_tenant, child, None, lca, advantage, lists)
        else:
            _take_jobs(search, by_tenant, child, lca, advantage, lists)


def _take_jobs(
    search: Search,
    by_tenant: dict[str, Jobs],
    node: QuotaNode,
    lca: QuotaNode,
    advantage: bool,
    lists: CandidateLists,
) -> None:
    name, frs = node.name or "", search.ask.frs
    jobs = by_tenant.get(name, ())
    if jobs and search.tree.within_nominal_in(node, frs):
        search.reject_all((frs, name), jobs, f"borrower within nominal: tenant {node.name}")
        return
    if not jobs:
        return
    policy = search.ask.queue.reclaim_within_cohort
    for workload in eligible_jobs(search, name, policy, "reclaimWithinCohort"):
        variant = _classify(search, workload, advantage)
        target = lists.hierarchy if variant == Variant.HIERARCHICAL_RECLAIM else lists.priority
        target.append(Candidate(workload, variant, lca))


def _classify(search: Search, workload: RunningWorkload, advantage: bool) -> Variant:
    """Kueue ``classifyPreemptionVariant`` for another tenant's job."""
    if advantage:
        return Variant.HIERARCHICAL_RECLAIM
    borrow = search.ask.queue.borrow_within_cohort
    if borrow.forbidden or above_borrowing_threshold(
        workload.priority, search.ask.entry.priority, borrow.max_priority_threshold
    ):
        return Variant.RECLAIM_WITHOUT_BORROWING
    return Variant.RECLAIM_WHILE_BORROWING


def invalid_rule(search: Search, candidate: Candidate, borrow: bool) -> str | None:
    """Kueue ``candidateIsValid`` evaluated on the current (mutated) tree: None when valid,
    else the rule that makes it invalid now."""
    if candidate.variant == Variant.WITHIN_TENANT:
        return None
    workload = candidate.workload
    if borrow and candidate.variant == Variant.RECLAIM_WITHOUT_BORROWING:
        return _without_borrowing_rule(search, workload)
    tree, frs = search.tree, search.ask.frs
    node = tree.node(workload.tenant)
    if tree.within_nominal_in(node, frs):
        return f"borrower within nominal: tenant {workload.tenant}"
    if node is candidate.lca:
        return None
    walk = node.parent
    while walk is not None and walk is not candidate.lca:
        if tree.within_nominal_in(walk, frs):
            return f"subtree within quota: {walk.name}"
        walk = walk.parent
    return None


def _without_borrowing_rule(search: Search, workload: RunningWorkload) -> str:
    borrow = search.ask.queue.borrow_within_cohort
    tenant = search.ask.entry.tenant
    if borrow.forbidden:
        return f"borrowWithinCohort: Never, tenant {tenant} would borrow after the preemption"
    priority = search.ask.entry.priority
    if workload.priority >= priority:
        return f"borrowWithinCohort: priority {workload.priority} >= {priority}"
    return (
        f"borrowWithinCohort: priority {workload.priority} > threshold "
        f"{borrow.max_priority_threshold}"
    )
