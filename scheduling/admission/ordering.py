"""The order in which a round's queue heads are considered.

Sources (kubernetes-sigs/kueue): ``pkg/scheduler/scheduler.go`` (``makeClassicalIterator``:
lower borrowing height first, then higher priority, then FIFO) and
``pkg/scheduler/fair_sharing_iterator.go`` (``runTournament``, ``entryComparer.less``,
``computeDRS``): with fair sharing, every pick runs a tournament up the cohort tree on the
current state (so admissions already made count); at each level the child entries compare by
[preemptor first], not borrowing at this level on the resources they ask for
(``FairSharingPrioritizeNonBorrowing``), lower dominant share with the entry's charges
added, higher priority, FIFO.

Beyond Kueue: jobs that wait for their preemption victims go first in both modes (Kueue's
sticky preemptor head and ``PrioritizePreemptorWorkloads``), and with a history-aware fair
share the tenant's decayed usage divided by its weight orders heads before priority (Kueue
Admission Fair Sharing orders by usage before priority); entries admitted in this cycle add
their entry penalty.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scheduling.admission.cycle_state import CycleState
from scheduling.admission.fair_share import Share, compare, dominant_share
from scheduling.admission.types import FlavorResource, PendingWorkload

if TYPE_CHECKING:
    from scheduling.admission.quota import QuotaNode


@dataclass(frozen=True, slots=True)
class Nomination:
    """A head with its tentative charges (placed now, else on an empty cluster)."""

    entry: PendingWorkload
    charges: dict[FlavorResource, int]


def nominate(cycle: CycleState, entry: PendingWorkload) -> Nomination:
    """Tentative charges of ``entry`` on its queue's first flavor (no preemption)."""
    names = cycle.queues[entry.queue].flavors
    flavors = ((names[0],),) if names else None
    outcome = cycle.placer.try_place(entry, entry.pod_count, flavors)
    if not outcome.placed:
        outcome = cycle.placer.estimate(entry, entry.pod_count, flavors)
    return Nomination(entry, dict(outcome.charges) if outcome.placed else {})


def history_share(cycle: CycleState, tenant: str) -> float:
    """Decayed usage / weight of ``tenant`` (0 without a history-aware fair share)."""
    if cycle.snapshot.options.history is None:
        return 0.0
    node = cycle.tree.node(tenant)
    usage = node.history + cycle.penalties.get(tenant, 0.0)
    if usage <= 0:
        return 0.0
    return math.inf if node.weight == 0 else usage / node.weight


def round_order(cycle: CycleState, heads: list[PendingWorkload]) -> Iterator[PendingWorkload]:
    """Yield the round's heads in processing order (lazily: fair sharing re-picks after
    each processed head)."""
    nominations = [nominate(cycle, entry) for entry in heads]
    if not cycle.fair_sharing:
        yield from (n.entry for n in sorted(nominations, key=lambda n: _classical_key(cycle, n)))
        return
    remaining = {n.entry.id: n for n in nominations}
    tournament, version = None, -1
    while remaining:
        if tournament is None or version != cycle.version:  # shares change with the state
            tournament, version = _Tournament(cycle, list(remaining.values())), cycle.version
        winner = tournament.pick()
        tournament.discard(winner)
        del remaining[winner.id]
        yield winner


def _classical_key(cycle: CycleState, nomination: Nomination) -> tuple:
    entry = nomination.entry
    height = cycle.tree.borrowing_height(entry.tenant, nomination.charges)
    return (
        not entry.preempting,
        height,
        history_share(cycle, entry.tenant),
        -entry.priority,
        entry.created_at,
        entry.id,
    )


class _Tournament:
    """Kueue ``runTournament`` over the tenant tree for the given heads."""

    def __init__(self, cycle: CycleState, nominations: list[Nomination]) -> None:
        self.cycle = cycle
        self.by_tenant: dict[str, list[Nomination]] = {}
        for nomination in nominations:
            self.by_tenant.setdefault(nomination.entry.tenant, []).append(nomination)
        self.shares: dict[tuple[int, str], Share] = {}
        self.requested = {n.entry.id: n.charges for n in nominations}
        for nomination in nominations:
            self._compute(nomination)

    def _compute(self, nomination: Nomination) -> None:
        """Kueue ``computeDRS``: the share, with the entry added, of the node on its path
        below each ancestor."""
        tree, entry = self.cycle.tree, nomination.entry
        tree.add(entry.tenant, nomination.charges)
        try:
            node = tree.node(entry.tenant)
            share = dominant_share(tree, node)
            if node.children:
                self.shares[(id(node), entry.id)] = share
            for ancestor in node.path_to_root():
                self.shares[(id(ancestor), entry.id)] = share
                share = dominant_share(tree, ancestor)
        finally:
            tree.remove(entry.tenant, nomination.charges)

    def discard(self, entry: PendingWorkload) -> None:
        """Take a processed head out of the tournament."""
        heads = self.by_tenant[entry.tenant]
        heads[:] = [n for n in heads if n.entry.id != entry.id]

    def pick(self) -> PendingWorkload:
        """The winner at the root."""
        winner = self._run(self.cycle.tree.root)
        assert winner is not None
        return winner

    def _run(self, cohort: QuotaNode) -> PendingWorkload | None:
        candidates: list[PendingWorkload] = []
        for child in cohort.children:
            if child.children:
                best = self._run(child)
                if best is not None:
                    candidates.append(best)
            else:
                candidates.extend(self._heads(child))
        if cohort.name is not None:
            candidates.extend(self._heads(cohort))
        if not candidates:
            return None
        best = candidates[0]
        for current in candidates[1:]:
            if self._less(current, best, cohort):
                best = current
        return best

    def _heads(self, node: QuotaNode) -> list[PendingWorkload]:
        return [n.entry for n in self.by_tenant.get(node.name or "", [])]

    def _less(self, a: PendingWorkload, b: PendingWorkload, cohort: QuotaNode) -> bool:
        """Kueue ``entryComparer.less`` at ``cohort``."""
        if a.preempting != b.preempting:
            return a.preempting
        share_a, share_b = self.shares[(id(cohort), a.id)], self.shares[(id(cohort), b.id)]
        borrow_a = share_a.borrowing_on(self.requested[a.id])
        borrow_b = share_b.borrowing_on(self.requested[b.id])
        if borrow_a != borrow_b:
            return not borrow_a
        order = compare(share_a, share_b)
        if order != 0:
            return order < 0
        hist_a, hist_b = history_share(self.cycle, a.tenant), history_share(self.cycle, b.tenant)
        if hist_a != hist_b:
            return hist_a < hist_b
        if a.priority != b.priority:
            return a.priority > b.priority
        return (a.created_at, a.id) < (b.created_at, b.id)
