"""Fair-sharing preemption: evict from the tenants with the highest dominant share first,
only while the strategies say the preemptor deserves it.

Sources (kubernetes-sigs/kueue): ``pkg/scheduler/preemption/preemption.go``
(``fairPreemptions``, ``findCandidates``, ``cqIsBorrowing``, ``runFirstFsStrategy``,
``runSecondFsStrategy``, ``workloadFitsForFairSharing``,
``queueWithinNominalInResourcesNeedingPreemption``) and
``pkg/scheduler/preemption/fairsharing/{ordering,target,least_common_ancestor}.go``
(``TargetClusterQueueOrdering``, almost-LCA shares).

1. Candidates: the preemptor's own jobs passing ``withinClusterQueue``, and the jobs passing
   ``reclaimWithinCohort`` of every other tenant that borrows in a needed resource; ordered by
   ``CandidatesOrdering``. ``borrowWithinCohort`` does not apply.
2. The preemptor's charges are added to the tree, so its shares include the job.
3. Target tenants come from the root down, the child with the highest share at each level
   (a cohort wins a tie with a tenant; two tenants tie-break by their first candidate); nodes
   that do not borrow or have no candidates are pruned, except on the preemptor's path.
4. Per target: the preemptor's own jobs are simply taken; when the preemptor stays within
   nominal with the job (``FairSharingPreemptWithinNominal``) any target job is taken;
   otherwise with the shares of the two children of the least common ancestor, the first
   strategy (S2-a ``LessThanOrEqualToFinalShare``) decides per job, and the jobs it refused
   get a second chance under S2-b ``LessThanInitialShare`` (one job per tenant).
5. Fill-back with borrowing allowed.

An inner tenant's own jobs count as one more child of that tenant, with its share (Kueue's
ClusterQueues never have children); jobs of the preemptor's own descendants are reclaimed
without a share test, as they borrow the preemptor's own pool.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from scheduling.admission.candidates import Search, eligible_jobs, jobs_by_tenant
from scheduling.admission.fair_share import (
    Share,
    compare,
    dominant_share,
    strategy_passes,
    strategy_unsatisfiable,
)
from scheduling.admission.outcomes import PreemptionReason
from scheduling.admission.policy import FairSharingStrategy, PreemptionPolicy
from scheduling.admission.preemption import (
    Target,
    fill_back,
    reclaim_message,
    within_tenant_message,
)
from scheduling.admission.quota import QuotaNode
from scheduling.admission.topology_victims import prefer_domain
from scheduling.admission.types import RunningWorkload


def find_candidates(search: Search) -> list[RunningWorkload]:
    """Kueue ``findCandidates``, sorted by ``CandidatesOrdering``.

    Whole tenants (within nominal, or a ``Never`` policy) and whole priorities the policy
    refuses are rejected as groups from the cycle's
    :class:`~scheduling.admission.running_index.RunningIndex`; only the jobs the policy may
    allow are looked at one by one.
    """
    tree, queue, node, frs = search.tree, search.ask.queue, search.node, search.ask.frs
    out: list[RunningWorkload] = []
    for tenant, jobs in jobs_by_tenant(search).items():
        if tenant == node.name:
            policy, name = queue.within_cluster_queue, "withinClusterQueue"
        else:
            policy, name = queue.reclaim_within_cohort, "reclaimWithinCohort"
            if policy != PreemptionPolicy.NEVER and tree.within_nominal_in(tree.node(tenant), frs):
                search.reject_all((frs, tenant), jobs, f"borrower within nominal: tenant {tenant}")
                continue
        if policy == PreemptionPolicy.NEVER:
            search.reject_all((frs, tenant), jobs, f"{name}: Never")
        else:
            out.extend(eligible_jobs(search, tenant, policy, name))
    return sorted(out, key=search.order_key)


@dataclass(slots=True)
class _Ordering:
    """Kueue ``TargetClusterQueueOrdering`` over tenant nodes; a node in the CQ role stands
    for its own jobs."""

    search: Search
    jobs: dict[str, list[RunningWorkload]]
    path: set[int] = field(default_factory=set)
    pruned_cq: set[int] = field(default_factory=set)
    pruned_cohort: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        node = self.search.node
        self.path = {id(n) for n in node.path_to_root()} | {id(node)}

    def targets(self) -> Iterator[QuotaNode]:
        """Yield target nodes until the root is pruned (pop or drop between yields)."""
        root = self.search.tree.root
        while id(root) not in self.pruned_cohort:
            target = self._next(root)
            if target is not None:
                yield target

    def pop(self, node: QuotaNode) -> RunningWorkload:
        """Take the next candidate of ``node``."""
        return self.jobs[node.name or ""].pop(0)

    def has_jobs(self, node: QuotaNode) -> bool:
        """``node`` still has candidates."""
        return bool(self.jobs.get(node.name or ""))

    def drop(self, node: QuotaNode) -> None:
        """Kueue ``DropQueue``."""
        self.pruned_cq.add(id(node))

    def _share(self, node: QuotaNode) -> Share:
        return dominant_share(self.search.tree, node)

    def _next(self, cohort: QuotaNode) -> QuotaNode | None:
        best_cq, best_cq_share = self._best_cq(cohort)
        best_cohort: tuple[QuotaNode, Share] | None = None
        for child in cohort.children:
            if not child.children or id(child) in self.pruned_cohort:
                continue
            share = self._share(child)
            if not share.borrowing and id(child) not in self.path:
                self.pruned_cohort.add(id(child))
            elif best_cohort is None or compare(share, best_cohort[1]) >= 0:
                best_cohort = (child, share)
        if best_cohort is None and best_cq is None:
            self.pruned_cohort.add(id(cohort))
            return None
        if best_cohort is not None and (
            best_cq_share is None or compare(best_cohort[1], best_cq_share) >= 0
        ):
            return self._next(best_cohort[0])
        return best_cq

    def _best_cq(self, cohort: QuotaNode) -> tuple[QuotaNode | None, Share | None]:
        options = [c for c in cohort.children if not c.children]
        if cohort.name is not None:
            options.append(cohort)  # an inner tenant's own jobs
        best, best_share = None, None
        for node in options:
            if id(node) in self.pruned_cq:
                continue
            share = self._share(node)
            if (not share.borrowing and node is not self.search.node) or not self.has_jobs(node):
                self.pruned_cq.add(id(node))
            elif best_share is None or compare(share, best_share) > 0:
                best, best_share = node, share
            elif compare(share, best_share) == 0 and best is not None:
                first = self.jobs[node.name or ""][0]
                current = self.jobs[best.name or ""][0]
                if self.search.order_key(first) < self.search.order_key(current):
                    best = node
        return best, best_share


def _almost_lcas(search: Search, target: QuotaNode) -> tuple[QuotaNode, QuotaNode] | None:
    """The children of the least common ancestor on the preemptor's and the target's side
    (Kueue ``getAlmostLCAs``); None when the target is the preemptor's descendant."""
    preemptor = search.node
    ancestors = preemptor.path_to_root()
    chain = [target, *target.path_to_root()]
    if preemptor in chain:
        return None
    lca = next(n for n in chain[1:] if n in ancestors)

    def below(node: QuotaNode) -> QuotaNode:
        walk = node
        while walk.parent is not lca:
            walk = walk.parent  # type: ignore[assignment]
        return walk

    return below(preemptor), below(target)


@dataclass(slots=True)
class _Run:
    """One run of the fair-sharing strategies."""

    search: Search
    within_nominal: bool
    targets: list[Target] = field(default_factory=list)

    def fits(self) -> bool:
        """Kueue ``workloadFitsForFairSharing``: the simulated charges taken out first
        (only when the job is placed: the placement does not read the quota tree)."""
        tree, ask = self.search.tree, self.search.ask
        outcome = self.search.place()
        if not outcome.placed:
            return False
        tree.remove(ask.entry.tenant, ask.requests)
        try:
            return self.search.fits(True, outcome)
        finally:
            tree.add(ask.entry.tenant, ask.requests)

    def take(self, workload: RunningWorkload, reason: PreemptionReason, message: str) -> bool:
        self.search.remove(workload)
        self.targets.append(Target(workload, reason, message))
        return self.fits()

    def first(
        self, ordering: _Ordering, strategy: FairSharingStrategy
    ) -> tuple[bool, list[RunningWorkload]]:
        """Kueue ``runFirstFsStrategy``: (fits, retry candidates)."""
        retry: list[RunningWorkload] = []
        entry = self.search.ask.entry
        for node in ordering.targets():
            pair = _almost_lcas(self.search, node)
            if node is self.search.node:
                workload = ordering.pop(node)
                message = within_tenant_message(entry.id, entry.priority, workload, entry.tenant)
                if self.take(workload, PreemptionReason.IN_TENANT, message):
                    return True, retry
                continue
            if self.within_nominal or pair is None:
                workload = ordering.pop(node)
                message = reclaim_message(self.search, workload)
                if self.take(workload, PreemptionReason.RECLAIM_WITHIN_COHORT, message):
                    return True, retry
                continue
            if self._strategy_round(ordering, node, pair, strategy, retry):
                return True, retry
        return False, retry

    def _strategy_round(
        self,
        ordering: _Ordering,
        node: QuotaNode,
        pair: tuple[QuotaNode, QuotaNode],
        strategy: FairSharingStrategy,
        retry: list[RunningWorkload],
    ) -> bool:
        tree = self.search.tree
        preemptor_new, target_old = dominant_share(tree, pair[0]), dominant_share(tree, pair[1])
        if strategy_unsatisfiable(preemptor_new, target_old):
            while ordering.has_jobs(node):
                workload = ordering.pop(node)
                retry.append(workload)
                self.search.reject(
                    workload, f"fair sharing: preemptor share {preemptor_new.text()} (weight 0)"
                )
            return False
        while ordering.has_jobs(node):
            workload = ordering.pop(node)
            charges = self.search.charges(workload)
            tree.remove(workload.tenant, charges)
            target_new = dominant_share(tree, pair[1])
            tree.add(workload.tenant, charges)
            if strategy_passes(strategy, preemptor_new, target_old, target_new):
                message = self._message(workload, strategy, preemptor_new, target_old, target_new)
                return self.take(workload, PreemptionReason.FAIR_SHARING, message)
            retry.append(workload)
            self.search.reject(workload, _refusal(strategy, preemptor_new, target_old, target_new))
        return False

    def second(self, retry: list[RunningWorkload]) -> bool:
        """Kueue ``runSecondFsStrategy`` (S2-b, at most one job per tenant)."""
        jobs: dict[str, list[RunningWorkload]] = {}
        for workload in retry:
            jobs.setdefault(workload.tenant, []).append(workload)
        ordering = _Ordering(self.search, jobs)
        strategy = FairSharingStrategy.LESS_THAN_INITIAL_SHARE
        for node in ordering.targets():
            pair = _almost_lcas(self.search, node)
            workload = ordering.pop(node)
            if pair is not None:
                tree = self.search.tree
                pre, old = dominant_share(tree, pair[0]), dominant_share(tree, pair[1])
                if strategy_passes(strategy, pre, old, old):
                    message = self._message(workload, strategy, pre, old, None)
                    if self.take(workload, PreemptionReason.FAIR_SHARING, message):
                        return True
                else:
                    self.search.reject(workload, _refusal(strategy, pre, old, None))
            ordering.drop(node)
        return False

    def _message(
        self,
        workload: RunningWorkload,
        strategy: FairSharingStrategy,
        pre: Share,
        old: Share,
        new: Share | None,
    ) -> str:
        entry = self.search.ask.entry
        after = f" -> {new.text()}" if new is not None else ""
        return (
            f"preempted for fair sharing by tenant {entry.tenant} for {entry.id}: share "
            f"{pre.text()} vs tenant {workload.tenant} {old.text()}{after} ({strategy})"
        )


def _refusal(strategy: FairSharingStrategy, pre: Share, old: Share, new: Share | None) -> str:
    if strategy == FairSharingStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE and new is not None:
        return f"fair sharing {strategy}: {pre.text()} > {new.text()}"
    return f"fair sharing {strategy}: {pre.text()} >= {old.text()}"


def fair_targets(
    search: Search, strategies: tuple[FairSharingStrategy, ...]
) -> list[Target] | None:
    """Kueue ``fairPreemptions``: the victims, or None (tree and placer left unchanged)."""
    candidates = prefer_domain(search, find_candidates(search), lambda w: w, lambda _w: True)
    if not candidates:
        return None
    tree, ask = search.tree, search.ask
    jobs: dict[str, list[RunningWorkload]] = {}
    for workload in candidates:
        jobs.setdefault(workload.tenant, []).append(workload)
    tree.add(ask.entry.tenant, ask.requests)
    within = all(not tree.borrowing_with(search.node, fr, 0) for fr in ask.frs)
    run = _Run(search, within)
    try:
        fits, retry = run.first(_Ordering(search, jobs), strategies[0])
        if not fits and len(strategies) > 1:
            fits = run.second(retry)
    finally:
        tree.remove(ask.entry.tenant, ask.requests)
    if not fits:
        for target in reversed(run.targets):
            search.restore(target.workload)
        return None
    kept = fill_back(search, [t.workload for t in run.targets], True)
    for workload in kept:
        search.restore(workload)
    keep = {w.id for w in kept}
    return [t for t in run.targets if t.workload.id in keep]
