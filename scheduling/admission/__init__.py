"""Pure-Python admission core: who goes next, within which quota, and whom it preempts.

Shaped like Kueue's scheduler cycle (see :mod:`scheduling.admission.cycle`). Stdlib only
(plus ``scheduling.placement.types``): no Django, Celery or Kubernetes imports; time is
passed in; every decision carries a reason.

Public API:
    run_cycle(snapshot, placer, config=None) -> CycleResult
    charges_for(decision, devices, group) -> {(flavor, dimension): amount}
    preview_submission(snapshot, placer, workload, config=None) -> SubmissionPreview
    dry_run_quota_change(snapshot, changed=(), removed=(), caps=None) -> QuotaChangeImpact
    children_over_parent(tenants, quotas) -> [ChildExcess]
    check_invariants(snapshot, placements=None, devices=None) -> tuple[InvariantViolation]
    decayed_usage(intervals, now, half_life_s) -> float
    drain_rate_per_s(departures, now, ...) / estimate_start(position, departures, now, ...)
"""

from scheduling.admission.charges import charges_for, charges_for_pods, device_milli
from scheduling.admission.cycle import AdmissionCycle, run_cycle
from scheduling.admission.dry_run import (
    ChildExcess,
    OverNominal,
    QuotaChangeImpact,
    QuotaChangeVictim,
    SubmissionPreview,
    children_over_parent,
    dry_run_quota_change,
    preview_submission,
)
from scheduling.admission.eta import drain_rate_per_s, estimate_start
from scheduling.admission.fair_share import Share, dominant_share
from scheduling.admission.history import UsageInterval, decayed_usage, entry_penalty
from scheduling.admission.invariants import InvariantViolation, check_invariants
from scheduling.admission.outcomes import (
    Admission,
    CauseKind,
    CycleResult,
    PendingCause,
    PendingCode,
    PendingVerdict,
    PreemptionReason,
    PreemptionTarget,
    RejectedCandidate,
    Reservation,
    cause_of_code,
    reason_fields,
)
from scheduling.admission.placer import FlavorChoice, PlacementOutcome, Placer, Undo
from scheduling.admission.policy import (
    BorrowWithinCohort,
    BorrowWithinCohortPolicy,
    FairSharingStrategy,
    FlavorFungibility,
    FlavorPreference,
    FungibilityPolicy,
    PreemptionPolicy,
    policy_problem,
)
from scheduling.admission.quota import QuotaTree
from scheduling.admission.quota_fit import QuotaBlock, QuotaViolation
from scheduling.admission.types import (
    AdmissionInputError,
    AdmissionSnapshot,
    AggregateCapSpec,
    Charges,
    CohortOptions,
    CycleConfig,
    Dimension,
    Flavor,
    FlavorResource,
    GroupKind,
    GroupSpec,
    HistoryFairShare,
    PendingWorkload,
    PodSetSpec,
    PriorityClassSpec,
    QueueingStrategy,
    QueueSpec,
    QuotaSpec,
    RunningWorkload,
    TenantSpec,
    Usage,
)
from scheduling.admission.validation import validate_snapshot

__all__ = [
    "Admission",
    "AdmissionCycle",
    "AdmissionInputError",
    "AdmissionSnapshot",
    "AggregateCapSpec",
    "BorrowWithinCohort",
    "BorrowWithinCohortPolicy",
    "Charges",
    "ChildExcess",
    "CohortOptions",
    "CycleConfig",
    "CycleResult",
    "Dimension",
    "FairSharingStrategy",
    "Flavor",
    "FlavorChoice",
    "FlavorFungibility",
    "FlavorPreference",
    "FlavorResource",
    "FungibilityPolicy",
    "GroupKind",
    "GroupSpec",
    "HistoryFairShare",
    "InvariantViolation",
    "OverNominal",
    "CauseKind",
    "PendingCause",
    "PendingCode",
    "PendingVerdict",
    "cause_of_code",
    "reason_fields",
    "PendingWorkload",
    "PlacementOutcome",
    "Placer",
    "PodSetSpec",
    "PreemptionPolicy",
    "PreemptionReason",
    "PreemptionTarget",
    "PriorityClassSpec",
    "QueueSpec",
    "QueueingStrategy",
    "QuotaBlock",
    "QuotaChangeImpact",
    "QuotaChangeVictim",
    "QuotaSpec",
    "QuotaTree",
    "QuotaViolation",
    "RejectedCandidate",
    "Reservation",
    "RunningWorkload",
    "Share",
    "SubmissionPreview",
    "TenantSpec",
    "Undo",
    "Usage",
    "UsageInterval",
    "charges_for",
    "charges_for_pods",
    "check_invariants",
    "children_over_parent",
    "decayed_usage",
    "device_milli",
    "dominant_share",
    "drain_rate_per_s",
    "entry_penalty",
    "estimate_start",
    "policy_problem",
    "preview_submission",
    "run_cycle",
    "dry_run_quota_change",
    "validate_snapshot",
]
