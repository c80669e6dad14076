"""Classical preemption: which running jobs to evict so a pending job fits.

Source: Kueue ``pkg/scheduler/preemption/preemption.go`` (``classicalPreemptions``,
``fillBackWorkloads``, ``workloadFits``, ``queueUnderNominalInResourcesNeedingPreemption``).

1. Candidates are collected and ordered (:mod:`scheduling.admission.candidates`).
2. Attempts, with ``forbidden`` = borrowWithinCohort is Never:

   * no candidate of another tenant, or (``forbidden`` and the tenant is not strictly under
     nominal in every needed resource): one attempt that allows borrowing;
   * ``forbidden`` and no hierarchical candidate: without borrowing, then with;
   * otherwise: with borrowing, then without.

3. In an attempt, candidates are taken in order, skipping those not valid on the state left
   by the removals so far (Kueue ``candidateIsValid``: ``ReclaimWithoutBorrowing`` ones only
   when borrowing is not allowed; another tenant's job only while its tenant, and every
   subtree up to the common ancestor, is above quota). After each removal: does the job fit
   (placed, quota fits, and within nominal unless borrowing is allowed)?
4. Fill-back: victims are added back in reverse order (the last one excepted); one that is
   not needed stays.

Topology-aware victim choice (ours, issue 31): a preemptor that must land in one domain
tries the candidates of the domain freed by the fewest victims first
(:mod:`scheduling.admission.topology_victims`).

So a borrower is reclaimed down to its nominal quota even when that evicts a whole gang
bigger than its excess (Kueue has no "never below nominal" law).
"""

from __future__ import annotations

from scheduling.admission.candidates import (
    Candidate,
    Search,
    Variant,
    collect_classical,
    invalid_rule,
)
from scheduling.admission.outcomes import PreemptionReason
from scheduling.admission.topology_victims import prefer_domain
from scheduling.admission.types import FlavorResource, RunningWorkload

REASON_OF = {
    Variant.WITHIN_TENANT: PreemptionReason.IN_TENANT,
    Variant.HIERARCHICAL_RECLAIM: PreemptionReason.RECLAIM_WITHIN_COHORT,
    Variant.RECLAIM_WITHOUT_BORROWING: PreemptionReason.RECLAIM_WITHIN_COHORT,
    Variant.RECLAIM_WHILE_BORROWING: PreemptionReason.RECLAIM_WHILE_BORROWING,
}


class Target:
    """A chosen victim with the reason and message of its eviction."""

    __slots__ = ("workload", "reason", "message")

    def __init__(self, workload: RunningWorkload, reason: PreemptionReason, message: str) -> None:
        self.workload = workload
        self.reason = reason
        self.message = message


def classical_targets(search: Search) -> list[Target] | None:
    """Kueue ``classicalPreemptions``: the victims, or None when no set makes the job fit.

    The tree and placer are left as they were; ``search.outcome`` holds the job's placement
    with the victims removed; ``search.rejected`` the candidates that could not be used.
    """
    lists = collect_classical(search)
    ordered = prefer_domain(
        search,
        lists.ordered(search),
        lambda c: c.workload,
        lambda c: invalid_rule(search, c, True) is None,
    )
    forbidden = search.ask.queue.borrow_within_cohort.forbidden
    no_other = not lists.hierarchy and not lists.priority
    if no_other or (forbidden and not _under_nominal(search)):
        attempts = [True]
    elif forbidden and not lists.hierarchy:
        attempts = [False, True]
    else:
        attempts = [True, False]
    for borrow in attempts:
        taken: list[Candidate] = []
        for candidate in ordered:
            rule = invalid_rule(search, candidate, borrow)
            if rule is not None:
                if candidate.workload.id not in {t.workload.id for t in taken}:
                    search.reject(candidate.workload, rule)
                continue
            search.remove(candidate.workload)
            taken.append(candidate)
            if search.fits(borrow):
                kept = fill_back(search, [c.workload for c in taken], borrow)
                by_id = {c.workload.id: c for c in taken}
                for workload in kept:
                    search.restore(workload)
                return [_target(search, by_id[w.id]) for w in kept]
        for candidate in reversed(taken):
            search.restore(candidate.workload)
    return None


def fill_back(search: Search, taken: list[RunningWorkload], borrow: bool) -> list[RunningWorkload]:
    """Kueue ``fillBackWorkloads``: add victims back in reverse order (the last excepted) and
    keep out only the needed ones. Expects ``taken`` removed and the job fitting; returns the
    needed victims, still removed, and leaves ``search.outcome`` at the final placement."""
    kept = list(taken)
    for index in range(len(kept) - 2, -1, -1):
        workload = kept[index]
        search.restore(workload)
        if search.fits(borrow):
            kept.pop(index)
        else:
            search.remove(workload)
    search.fits(borrow)
    return kept


def _under_nominal(search: Search) -> bool:
    """Kueue ``queueUnderNominalInResourcesNeedingPreemption``: usage < nominal (strictly)
    in every needed resource."""
    node = search.node
    return all(node.usage.get(fr, 0) < node.subtree.get(fr, 0) for fr in search.ask.frs)


def _target(search: Search, candidate: Candidate) -> Target:
    workload, entry = candidate.workload, search.ask.entry
    reason = REASON_OF[candidate.variant]
    if candidate.variant == Variant.WITHIN_TENANT:
        message = within_tenant_message(entry.id, entry.priority, workload, entry.tenant)
    elif candidate.variant == Variant.RECLAIM_WHILE_BORROWING:
        message = (
            f"preempted by {entry.id} of tenant {entry.tenant} (priority "
            f"{entry.priority} > {workload.priority}) while tenant {entry.tenant} "
            f"borrows (borrowWithinCohort)"
        )
    else:
        message = reclaim_message(search, workload)
    return Target(workload, reason, message)


def within_tenant_message(
    preemptor_id: str, priority: int, workload: RunningWorkload, tenant: str
) -> str:
    """``preempted by P (priority 5 > 1) in tenant T`` (or ``=`` for an equal-priority,
    newer victim under ``LowerOrNewerEqualPriority``)."""
    sign = ">" if priority > workload.priority else "="
    newer = ", submitted later" if sign == "=" else ""
    return (
        f"preempted by {preemptor_id} (priority {priority} {sign} {workload.priority}"
        f"{newer}) in tenant {tenant}"
    )


def reclaim_message(search: Search, workload: RunningWorkload) -> str:
    """``reclaimed by tenant A for J: tenant B borrows F D (usage U > nominal N)``, naming
    the first needed flavor resource the victim's tenant borrows."""
    entry, tree = search.ask.entry, search.tree
    node = tree.node(workload.tenant)
    borrowed: list[FlavorResource] = [
        fr
        for fr in sorted(search.ask.frs)
        if tree.borrowing_with(node, fr, 0) and workload.charges.get(fr, 0) > 0
    ] or tree.borrowing_resources(workload.tenant)
    head = f"reclaimed by tenant {entry.tenant} for {entry.id}"
    if not borrowed:
        return head
    fr = borrowed[0]
    return (
        f"{head}: tenant {workload.tenant} borrows {fr[0]} {fr[1].value} (usage "
        f"{tree.usage(workload.tenant, fr)} > nominal {tree.nominal(workload.tenant, fr)})"
    )
