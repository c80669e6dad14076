"""Pure-Python admission core: who goes next, within which quota, and whom it preempts.

Shaped like Kueue's scheduler cycle (see :mod:`scheduling.admission.cycle`). Stdlib only
(plus ``scheduling.placement.types``): no Django, Celery or Kubernetes imports; time is
passed in; every decision carries a reason.

Public API:
    run_cycle(snapshot, placer, config=None) -> CycleResult
    charges_for(decision, devices, group) -> {(flavor, dimension): amount}
    preview_submission(snapshot, placer, workload, config=None) -> SubmissionPreview
    simulate_quota_change(snapshot, changed=(), removed=(), caps=None) -> QuotaChangeImpact
    check_invariants(snapshot, placements=None, devices=None) -> tuple[InvariantViolation]
    drain_rate_per_s(departures, now, ...) / estimate_start(position, departures, now, ...)
"""

from scheduling.admission.charges import charges_for, charges_for_pods, device_milli
from scheduling.admission.cycle import AdmissionCycle, run_cycle, validate_snapshot
from scheduling.admission.eta import drain_rate_per_s, estimate_start
from scheduling.admission.invariants import InvariantViolation, check_invariants
from scheduling.admission.placer import PlacementOutcome, Placer, Undo
from scheduling.admission.quota import QuotaBlock, QuotaTree, QuotaViolation
from scheduling.admission.simulate import (
    QuotaChangeImpact,
    QuotaChangeVictim,
    SubmissionPreview,
    preview_submission,
    simulate_quota_change,
)
from scheduling.admission.types import (
    Admission,
    AdmissionInputError,
    AdmissionSnapshot,
    AggregateCap,
    Charges,
    CycleConfig,
    CycleResult,
    Dimension,
    Flavor,
    FlavorResource,
    GroupKind,
    PendingCode,
    PendingVerdict,
    PendingWorkload,
    Preemption,
    PreemptionReason,
    Queue,
    QueueingStrategy,
    Quota,
    ResourceGroup,
    RunningWorkload,
    Tenant,
    Usage,
)

__all__ = [
    "Admission", "AdmissionCycle", "AdmissionInputError", "AdmissionSnapshot", "AggregateCap",
    "Charges", "CycleConfig", "CycleResult", "Dimension", "Flavor", "FlavorResource",
    "GroupKind", "InvariantViolation", "PendingCode", "PendingVerdict", "PendingWorkload",
    "PlacementOutcome", "Placer", "Preemption", "PreemptionReason", "Queue", "QueueingStrategy",
    "Quota", "QuotaBlock", "QuotaChangeImpact", "QuotaChangeVictim", "QuotaTree",
    "QuotaViolation", "ResourceGroup", "RunningWorkload", "SubmissionPreview", "Tenant",
    "Undo", "Usage", "charges_for", "charges_for_pods", "check_invariants", "device_milli",
    "drain_rate_per_s", "estimate_start", "preview_submission", "run_cycle",
    "simulate_quota_change", "validate_snapshot",
]
