"""Flavor assignment per pod set with flavor fungibility, and the preemption gate.

Source: Kueue ``pkg/scheduler/flavorassigner/flavorassigner.go`` (``assignFlavors``,
``findFlavorForPodSets``, ``fitsResourceQuota``, ``canPreemptWhileBorrowing``,
``shouldTryNextFlavor``, ``isPreferred``) and ``pkg/scheduler/preemption/
preemption_oracle.go`` (``SimulatePreemption``).

For each pod set, in order, each flavor of the queue's list is tried with the pod sets
before it already on their chosen flavors (so their charges count, Kueue ``assumedUsage``):

* the job is placed on the flavor (our charges depend on the devices it lands on); a flavor
  where it cannot be placed even on an empty cluster is no fit (``NoMatchingFlavor``);
* the charges are checked against quota: ``Fit`` (with its borrowing height, Kueue
  ``FindHeightOfLowestSubtreeThatFits``), or no fit when above what the tenant could ever get
  (``ExceedsMaxQuota``);
* otherwise preemption may be tried only if, for each resource short of quota, the request
  fits the tenant's nominal quota, or a sub-cohort below the root could hold it
  (``mayReclaimInHierarchy``), or ``borrowWithinCohort`` is not Never, or fair sharing is on
  and ``reclaimWithinCohort`` is not Never (Kueue ``fitsResourceQuota`` gate); the preemption
  oracle then gives ``Preempt`` (a target in the own tenant), ``Reclaim`` (targets only in
  other tenants) or no candidates.

``shouldTryNextFlavor``: go on after a no fit or no candidates; after ``Preempt``/``Reclaim``
when ``whenCanPreempt`` is TryNextFlavor; after a borrowing fit when ``whenCanBorrow`` is
TryNextFlavor. Otherwise the flavor is taken. Among the flavors tried the preferred one wins
(``isPreferred``: a viable mode beats no candidates beats no fit; then
BorrowingOverPreemption compares the mode first and the borrowing height second,
PreemptionOverBorrowing the other way round).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

from scheduling.admission.candidates import Ask, Search
from scheduling.admission.cycle_state import CycleState
from scheduling.admission.fair_preemption import fair_targets
from scheduling.admission.outcomes import (
    CauseKind,
    PendingCause,
    PendingCode,
    RejectedCandidate,
    cause_of_code,
)
from scheduling.admission.placer import FlavorChoice, PlacementOutcome
from scheduling.admission.policy import (
    FlavorFungibility,
    FlavorPreference,
    FungibilityPolicy,
    PreemptionPolicy,
)
from scheduling.admission.preemption import Target, classical_targets
from scheduling.admission.quota import merge_charges
from scheduling.admission.quota_fit import QuotaBlock
from scheduling.admission.types import FlavorResource, PendingWorkload, QueueSpec


class Mode(IntEnum):
    """Kueue ``preemptionMode`` (higher is better)."""

    NO_FIT = 0
    NO_CANDIDATES = 1
    PREEMPT = 2
    RECLAIM = 3
    FIT = 4


@dataclass(slots=True)
class FlavorTry:
    """The outcome of trying the job (up to one pod set) on one flavor choice.

    Attributes:
        mode / borrow: Kueue ``granularMode`` (mode, borrowing height).
        flavors: the flavor choice per pod set.
        outcome: placement (with the victims removed for ``Preempt``/``Reclaim``).
        targets: the preemption victims (``Preempt``/``Reclaim`` only).
        code / causes / rejected: why it does not fit (other modes); ``reason`` and
            ``details`` are the causes' text lines (the first, the rest).
        requests: the quota-counted charges of the whole job on ``flavors`` (positive
            amounts; set once the preemption oracle is asked), for the quota a
            ``NO_CANDIDATES`` head reserves (:meth:`~scheduling.admission.quota.QuotaTree.
            quota_to_reserve`).
    """

    mode: Mode
    borrow: int
    flavors: FlavorChoice
    outcome: PlacementOutcome | None = None
    targets: list[Target] = field(default_factory=list)
    code: PendingCode = PendingCode.WAITING_FOR_QUOTA
    causes: list[PendingCause] = field(default_factory=list)
    rejected: dict[str, RejectedCandidate] = field(default_factory=dict)
    requests: dict[FlavorResource, int] = field(default_factory=dict)

    @property
    def reason(self) -> str:
        """The first cause's text ("" when none)."""
        return self.causes[0].text if self.causes else ""

    @property
    def details(self) -> list[str]:
        """The other causes' text lines."""
        return [c.text for c in self.causes[1:]]


def should_try_next(attempt: FlavorTry, fungibility: FlavorFungibility) -> bool:
    """Kueue ``shouldTryNextFlavor``."""
    if attempt.mode in (Mode.NO_FIT, Mode.NO_CANDIDATES):
        return True
    if (
        attempt.mode in (Mode.PREEMPT, Mode.RECLAIM)
        and fungibility.when_can_preempt == FungibilityPolicy.TRY_NEXT_FLAVOR
    ):
        return True
    return attempt.borrow > 0 and fungibility.when_can_borrow == FungibilityPolicy.TRY_NEXT_FLAVOR


def is_preferred(a: FlavorTry, b: FlavorTry, fungibility: FlavorFungibility) -> bool:
    """Kueue ``isPreferred``: is ``a`` better than ``b``?"""
    if a.mode == Mode.NO_FIT:
        return False
    if b.mode == Mode.NO_FIT:
        return True
    if (a.mode == Mode.NO_CANDIDATES) != (b.mode == Mode.NO_CANDIDATES):
        return a.mode != Mode.NO_CANDIDATES
    if fungibility.preference == FlavorPreference.PREEMPTION_OVER_BORROWING:
        if a.borrow != b.borrow:
            return a.borrow < b.borrow
        return a.mode > b.mode
    if a.mode != b.mode:
        return a.mode > b.mode
    return a.borrow < b.borrow


def assign_flavors(
    cycle: CycleState, entry: PendingWorkload, queue: QueueSpec, pod_count: int | None = None
) -> FlavorTry:
    """Choose a flavor per pod set (module docstring) and evaluate the whole job on them.

    Args:
        cycle: the running cycle (tree and placer in their current state).
        entry: the pending job.
        queue: its queue.
        pod_count: pods to place (a partial gang); None = all.

    Returns:
        The try of the last pod set, which covers the whole job: its mode, placement or
        preemption targets, or why it does not fit.
    """
    options = queue_flavors(cycle, queue)
    sets = entry.sets()
    total = entry.pod_count if pod_count is None else pod_count
    chosen: list[tuple[str, ...] | None] = []
    attempt: FlavorTry | None = None
    placed = 0
    for pod_set in sets:
        placed = min(total, placed + pod_set.count)
        best: FlavorTry | None = None
        for option in options:
            choice = None if option is None and not chosen else (*chosen, option)
            attempt = evaluate(cycle, entry, queue, placed, choice)
            if not should_try_next(attempt, queue.fungibility):
                best = attempt
                break
            if best is None or is_preferred(attempt, best, queue.fungibility):
                best = attempt
        attempt = best
        if attempt is None or attempt.mode in (Mode.NO_FIT, Mode.NO_CANDIDATES):
            break
        chosen.append(None if attempt.flavors is None else attempt.flavors[-1])
        if placed >= total:
            break
    assert attempt is not None  # at least one pod set and one option
    return attempt


def queue_flavors(cycle: CycleState, queue: QueueSpec) -> list[tuple[str, ...] | None]:
    """The flavor options of a queue: one per listed flavor, or [None] (no choice)."""
    known = {f.name for f in cycle.snapshot.group.flavors}
    listed: list[tuple[str, ...] | None] = [(name,) for name in queue.flavors if name in known]
    return listed or [None]


def evaluate(
    cycle: CycleState,
    entry: PendingWorkload,
    queue: QueueSpec,
    pod_count: int,
    flavors: FlavorChoice,
) -> FlavorTry:
    """One flavor choice: fit, preempt/reclaim, no candidates or no fit (module docstring).

    Steps: place the job (or, failing that, estimate its charges on an empty cluster), check
    the charges against quota, and when they are short, pass Kueue's gate before preemption
    and ask the preemption oracle.
    """
    preemptible = cycle.effective_preemptible(entry)
    placed = _place_or_estimate(cycle, entry, pod_count, flavors)
    if isinstance(placed, FlavorTry):
        return placed
    outcome, requests = placed
    blocks = cycle.tree.check_fit(entry.tenant, requests, allow_borrowing=preemptible)
    verdict = _quota_verdict(cycle, entry, flavors, outcome, requests, blocks)
    if verdict is not None:
        return verdict
    attempt = _short_attempt(flavors, outcome, blocks)
    short = {b.flavor_resource for b in blocks if b.flavor_resource is not None}
    if blocks:
        refusal = _gate(cycle, entry, queue, {fr: requests[fr] for fr in short})
        if refusal is not None:
            attempt.causes.append(PendingCause(CauseKind.PREEMPTION, refusal))
            return attempt
    to_free = short if outcome.placed else set()
    quota_requests, frs = _preemption_scope(cycle, entry.tenant, requests, to_free)
    attempt.requests = quota_requests
    ask = Ask(entry, queue, pod_count, flavors, quota_requests, frs, preemptible)
    return _oracle(cycle, ask, attempt)


def _place_or_estimate(
    cycle: CycleState, entry: PendingWorkload, pod_count: int, flavors: FlavorChoice
) -> tuple[PlacementOutcome, dict[FlavorResource, int]] | FlavorTry:
    """Step 1: the placement on the cycle's state and the charges to check against quota
    (the placement's, or when it does not place, the estimate's on an empty cluster).

    Returns:
        ``(outcome, charges)``, or a ``NO_FIT`` try (``NoMatchingFlavor`` with a flavor
        choice, ``Unschedulable`` without) when even the empty cluster cannot hold the job.
    """
    outcome = cycle.placer.try_place(entry, pod_count, flavors)
    if outcome.placed:
        return outcome, dict(outcome.charges)
    estimate = cycle.placer.estimate(entry, pod_count, flavors)
    if not estimate.placed:
        code = PendingCode.NO_MATCHING_FLAVOR if flavors else PendingCode.UNSCHEDULABLE
        return FlavorTry(
            Mode.NO_FIT,
            0,
            flavors,
            code=code,
            causes=[cause_of_code(code, f"unschedulable: {estimate.reason}")],
        )
    return outcome, dict(estimate.charges)


def _quota_verdict(
    cycle: CycleState,
    entry: PendingWorkload,
    flavors: FlavorChoice,
    outcome: PlacementOutcome,
    requests: dict[FlavorResource, int],
    blocks: list[QuotaBlock],
) -> FlavorTry | None:
    """Step 2: the final answer the quota check alone gives, or None (preemption may help).

    ``NO_FIT`` (``ExceedsMaxQuota``) when a request is above what the tenant could ever get;
    ``FIT`` with its borrowing height when the job is placed and nothing blocks.
    """
    exceeds = [b for b in blocks if b.exceeds_max]
    if exceeds:
        return FlavorTry(
            Mode.NO_FIT,
            0,
            flavors,
            code=PendingCode.EXCEEDS_MAX_QUOTA,
            causes=[b.cause for b in exceeds],
        )
    if outcome.placed and not blocks:
        return FlavorTry(
            Mode.FIT, cycle.tree.borrowing_height(entry.tenant, requests), flavors, outcome=outcome
        )
    return None


def _short_attempt(
    flavors: FlavorChoice, outcome: PlacementOutcome, blocks: list[QuotaBlock]
) -> FlavorTry:
    """The ``NO_FIT`` try that stands unless preemption finds room: ``WaitingForQuota`` with
    the quota blocks as reasons, or ``Unschedulable`` (within quota but not placed now)."""
    if blocks:
        return FlavorTry(
            Mode.NO_FIT,
            0,
            flavors,
            code=PendingCode.WAITING_FOR_QUOTA,
            causes=[b.cause for b in blocks],
        )
    return FlavorTry(
        Mode.NO_FIT,
        0,
        flavors,
        code=PendingCode.UNSCHEDULABLE,
        causes=[cause_of_code(PendingCode.UNSCHEDULABLE, f"unschedulable: {outcome.reason}")],
    )


def _preemption_scope(
    cycle: CycleState,
    tenant: str,
    requests: dict[FlavorResource, int],
    to_free: set[FlavorResource],
) -> tuple[dict[FlavorResource, int], frozenset[FlavorResource]]:
    """Step 3: what the preemption search looks for.

    Returns:
        The quota-counted requests of ``tenant`` (positive amounts only), and the flavor
        resources to free: ``to_free`` (those short of quota when the job is placed), or when
        empty, every quota-counted request.
    """
    tree = cycle.tree
    node = tree.node(tenant)
    quota_requests = {
        fr: amount
        for fr, amount in merge_charges(requests).items()
        if amount > 0 and tree.counted(node, fr)
    }
    return quota_requests, frozenset(to_free or quota_requests)


def _gate(
    cycle: CycleState, entry: PendingWorkload, queue: QueueSpec, short: dict[FlavorResource, int]
) -> str | None:
    """Kueue's gate before preemption (``fitsResourceQuota``): None = may preempt."""
    if not queue.borrow_within_cohort.forbidden:
        return None
    if cycle.fair_sharing and queue.reclaim_within_cohort != PreemptionPolicy.NEVER:
        return None
    tree = cycle.tree
    node = tree.node(entry.tenant)
    for fr, need in sorted(short.items()):
        nominal = node.subtree.get(fr, 0)
        if nominal >= need or tree.lowest_fitting_height(node, fr, need)[1]:
            continue
        return (
            f"preemption: request {need} exceeds nominal {nominal} of tenant "
            f"{entry.tenant} in {fr[0]} {fr[1].value}; preemption needs the request "
            f"to fit the nominal quota (or borrowWithinCohort)"
        )
    return None


def _oracle(cycle: CycleState, ask: Ask, attempt: FlavorTry) -> FlavorTry:
    """Run the preemption search with the cycle's victims taken out of the quota tree
    (Kueue ``fits``: ``SimulateWorkloadRemoval`` of the workloads preempted in the cycle);
    the mode is Preempt/Reclaim or no candidates."""
    with cycle.victims_removed():
        return _search(cycle, ask, attempt)


def _search(cycle: CycleState, ask: Ask, attempt: FlavorTry) -> FlavorTry:
    search = Search(cycle, ask)
    if cycle.fair_sharing:
        targets = fair_targets(search, cycle.strategies)
    else:
        targets = classical_targets(search)
    if not targets or search.outcome is None:
        attempt.mode = Mode.NO_CANDIDATES
        attempt.rejected = search.rejected
        attempt.causes.append(
            PendingCause(
                CauseKind.PREEMPTION,
                "preemption: evicting every valid candidate would not make it fit"
                if search.tried
                else "preemption: no valid candidates",
            )
        )
        return attempt
    tree = cycle.tree
    own = any(t.workload.tenant == ask.entry.tenant for t in targets)
    for target in targets:
        tree.remove(target.workload.tenant, search.charges(target.workload))
    borrow = tree.borrowing_height(ask.entry.tenant, search.outcome.charges)
    for target in targets:
        tree.add(target.workload.tenant, search.charges(target.workload))
    return FlavorTry(
        Mode.PREEMPT if own else Mode.RECLAIM,
        borrow,
        ask.flavors,
        outcome=search.outcome,
        targets=targets,
    )
