"""Per-queue preemption policy, flavor fungibility and fair-sharing strategies (Kueue API).

Sources (kubernetes-sigs/kueue, ``apis/kueue/v1beta2/clusterqueue_types.go``):

* ``ClusterQueuePreemption``: ``withinClusterQueue`` (Never | LowerPriority |
  LowerOrNewerEqualPriority), ``reclaimWithinCohort`` (Never | LowerPriority | Any),
  ``borrowWithinCohort`` {``policy``: Never | LowerPriority, ``maxPriorityThreshold``}; the CEL
  rule refuses ``reclaimWithinCohort: Never`` together with a ``borrowWithinCohort`` policy
  other than Never.
* ``FlavorFungibility``: ``whenCanBorrow`` (MayStopSearch default | TryNextFlavor),
  ``whenCanPreempt`` (MayStopSearch | TryNextFlavor default), ``preference``
  (BorrowingOverPreemption default | PreemptionOverBorrowing), allowed only when both are
  TryNextFlavor.
* Fair-sharing preemption strategies (``apis/config/v1beta2/configuration_types.go``,
  KEP-1714 rules S2-a / S2-b): ``LessThanOrEqualToFinalShare``, ``LessThanInitialShare``;
  allowed lists ``[S2-a]``, ``[S2-b]``, ``[S2-a, S2-b]`` (the default).

Our ClusterQueue is a tenant, so ``withinClusterQueue`` applies to the preemptor's own
tenant's jobs. Defaults differ from Kueue's (Never/Never) on purpose: a guaranteed (nominal)
quota that cannot be reclaimed is not guaranteed, so ``reclaimWithinCohort`` defaults to
``Any`` and ``withinClusterQueue`` to ``LowerPriority`` (the console's behaviour before
per-queue policies existed).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum


class PreemptionPolicy(StrEnum):
    """Kueue ``PreemptionPolicy`` (which candidates a preemptor may evict)."""

    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"
    LOWER_OR_NEWER_EQUAL_PRIORITY = "LowerOrNewerEqualPriority"
    ANY = "Any"


WITHIN_CLUSTER_QUEUE_POLICIES = frozenset(
    {
        PreemptionPolicy.NEVER,
        PreemptionPolicy.LOWER_PRIORITY,
        PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY,
    }
)
"""Values allowed for ``withinClusterQueue``."""

RECLAIM_WITHIN_COHORT_POLICIES = frozenset(
    {PreemptionPolicy.NEVER, PreemptionPolicy.LOWER_PRIORITY, PreemptionPolicy.ANY}
)
"""Values allowed for ``reclaimWithinCohort``."""


class BorrowWithinCohortPolicy(StrEnum):
    """Kueue ``BorrowWithinCohortPolicy``."""

    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"


@dataclass(frozen=True, slots=True)
class BorrowWithinCohort:
    """Kueue ``borrowWithinCohort``: may the preemptor borrow while reclaiming?

    Attributes:
        policy: ``Never`` (default) or ``LowerPriority``: other tenants' jobs of strictly lower
            priority may be preempted even though the preemptor then borrows.
        max_priority_threshold: only candidates with priority <= this may be preempted that
            way (None = no threshold).
    """

    policy: BorrowWithinCohortPolicy = BorrowWithinCohortPolicy.NEVER
    max_priority_threshold: int | None = None

    @property
    def forbidden(self) -> bool:
        """True when borrowing while preempting is not allowed (Kueue
        ``IsBorrowingWithinCohortForbidden``)."""
        return self.policy == BorrowWithinCohortPolicy.NEVER


class FungibilityPolicy(StrEnum):
    """Kueue ``FlavorFungibilityPolicy``."""

    MAY_STOP_SEARCH = "MayStopSearch"
    TRY_NEXT_FLAVOR = "TryNextFlavor"


class FlavorPreference(StrEnum):
    """Kueue ``FlavorFungibilityPreference``."""

    BORROWING_OVER_PREEMPTION = "BorrowingOverPreemption"
    PREEMPTION_OVER_BORROWING = "PreemptionOverBorrowing"


@dataclass(frozen=True, slots=True)
class FlavorFungibility:
    """Kueue ``flavorFungibility`` of a queue (how the next flavor is tried, per pod set).

    Attributes:
        when_can_borrow: ``MayStopSearch`` stops at the first flavor that fits by borrowing;
            ``TryNextFlavor`` keeps looking for one that fits without borrowing.
        when_can_preempt: ``TryNextFlavor`` keeps looking when a flavor needs preemption;
            ``MayStopSearch`` preempts on the first flavor where preemption can help.
        preference: the tie-break between the flavors tried; only with both policies
            ``TryNextFlavor`` (None = ``BorrowingOverPreemption``).
    """

    when_can_borrow: FungibilityPolicy = FungibilityPolicy.MAY_STOP_SEARCH
    when_can_preempt: FungibilityPolicy = FungibilityPolicy.TRY_NEXT_FLAVOR
    preference: FlavorPreference | None = None


class FairSharingStrategy(StrEnum):
    """Kueue fair-sharing preemption strategies (KEP-1714 S2-a and S2-b)."""

    LESS_THAN_OR_EQUAL_TO_FINAL_SHARE = "LessThanOrEqualToFinalShare"
    LESS_THAN_INITIAL_SHARE = "LessThanInitialShare"


DEFAULT_STRATEGIES = (
    FairSharingStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,
    FairSharingStrategy.LESS_THAN_INITIAL_SHARE,
)
"""Kueue's default when fair sharing is on (``parseStrategies``)."""

ALLOWED_STRATEGY_LISTS = frozenset(
    {
        (FairSharingStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,),
        (FairSharingStrategy.LESS_THAN_INITIAL_SHARE,),
        DEFAULT_STRATEGIES,
    }
)
"""The strategy lists Kueue's configuration validation accepts."""


def policy_problem(
    within: PreemptionPolicy,
    reclaim: PreemptionPolicy,
    borrow: BorrowWithinCohort,
    fungibility: FlavorFungibility,
) -> str | None:
    """What is wrong with a queue's policy combination, or None (Kueue's API validation).

    Returns:
        A message naming the field, e.g. ``"borrow_within_cohort: needs reclaim_within_cohort
        other than Never"``.
    """
    if within not in WITHIN_CLUSTER_QUEUE_POLICIES:
        return f"within_cluster_queue: {within!s} is not allowed"
    if reclaim not in RECLAIM_WITHIN_COHORT_POLICIES:
        return f"reclaim_within_cohort: {reclaim!s} is not allowed"
    if reclaim == PreemptionPolicy.NEVER and not borrow.forbidden:
        return "borrow_within_cohort: needs reclaim_within_cohort other than Never"
    both_try = (
        fungibility.when_can_borrow == FungibilityPolicy.TRY_NEXT_FLAVOR
        and fungibility.when_can_preempt == FungibilityPolicy.TRY_NEXT_FLAVOR
    )
    if fungibility.preference is not None and not both_try:
        return (
            "flavor_fungibility: preference can only be set when both when_can_borrow and "
            "when_can_preempt are TryNextFlavor"
        )
    return None


def policy_verdict(
    policy: PreemptionPolicy,
    preemptor_priority: int,
    preemptor_created: datetime,
    candidate_priority: int,
    candidate_created: datetime,
) -> str | None:
    """Kueue ``SatisfiesPreemptionPolicy``: None when the candidate passes, else why not.

    * ``LowerPriority``: preemptor priority > candidate priority.
    * ``LowerOrNewerEqualPriority``: the same, or equal priorities and the preemptor was
      created strictly earlier (Kueue compares the queue-order timestamp, the creation time).
    * ``Any``: always; ``Never``: never.

    Returns:
        None, or a reason such as ``"LowerPriority: priority 5 >= 5"``.
    """
    if policy == PreemptionPolicy.ANY:
        return None
    if policy == PreemptionPolicy.NEVER:
        return "Never"
    if preemptor_priority > candidate_priority:
        return None
    if (
        policy == PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY
        and preemptor_priority == candidate_priority
        and preemptor_created < candidate_created
    ):
        return None
    if (
        policy == PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY
        and preemptor_priority == candidate_priority
    ):
        return (
            f"{policy}: priority {candidate_priority} = {preemptor_priority} and not "
            f"created after the preemptor"
        )
    return f"{policy}: priority {candidate_priority} >= {preemptor_priority}"


def above_borrowing_threshold(
    candidate_priority: int, preemptor_priority: int, threshold: int | None
) -> bool:
    """Kueue ``isAboveBorrowingThreshold``: the candidate may only be preempted when the
    preemptor does not borrow afterwards."""
    if candidate_priority >= preemptor_priority:
        return True
    return threshold is not None and candidate_priority > threshold
