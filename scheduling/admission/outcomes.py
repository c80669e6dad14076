"""Outputs of the admission core: admissions, preemption targets, pending verdicts,
reservations (the inputs are in :mod:`scheduling.admission.types`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from scheduling.admission.types import Charges, Dimension, FlavorResource


class PendingCode(StrEnum):
    """Why a job is still pending: the rule that blocked it (Kueue ``QuotaReserved``
    condition reasons, extended).

    * ``WaitingForQuota``: not enough unused quota now (and preemption cannot help).
    * ``ExceedsMaxQuota``: more than the tenant could ever get (nominal + borrowing limit, an
      aggregate cap, no quota for the flavor).
    * ``Unschedulable``: quota fits but no node/device placement exists.
    * ``BlockedByHead``: behind a StrictFIFO head that is not admitted.
    * ``WaitingForPreemptedWorkloads``: its preemption targets are terminating; it is
      admitted once their pods are gone (Kueue: "preempt now, admit after").
    * ``NoMatchingFlavor``: none of its queue's flavors can hold a pod set.
    * ``PriorityClassNotAllowed``: its priority class is unknown or not allowed in the queue.
    * ``Reserved``: it holds the group's starvation reservation (expected start given).
    * ``BackfillBlocked``: it would delay a starvation reservation.
    * ``UserLimitExceeded``: its submitter is at a per-user limit of its tenant (running jobs
      or devices; :mod:`scheduling.admission.limits`).
    * ``BudgetExhausted``: a spent budget with hard action ``stop`` covers it.
    """

    WAITING_FOR_QUOTA = "WaitingForQuota"
    EXCEEDS_MAX_QUOTA = "ExceedsMaxQuota"
    UNSCHEDULABLE = "Unschedulable"
    BLOCKED_BY_HEAD = "BlockedByHead"
    WAITING_FOR_PREEMPTED = "WaitingForPreemptedWorkloads"
    NO_MATCHING_FLAVOR = "NoMatchingFlavor"
    PRIORITY_CLASS_NOT_ALLOWED = "PriorityClassNotAllowed"
    RESERVED = "Reserved"
    BACKFILL_BLOCKED = "BackfillBlocked"
    USER_LIMIT_EXCEEDED = "UserLimitExceeded"
    BUDGET_EXHAUSTED = "BudgetExhausted"


class PreemptionReason(StrEnum):
    """Why a victim was chosen (Kueue ``Preempted`` condition reasons; our ClusterQueue is
    the tenant, hence ``InTenant`` for Kueue's ``InClusterQueue``)."""

    IN_TENANT = "InTenant"
    RECLAIM_WITHIN_COHORT = "InCohortReclamation"
    RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"
    FAIR_SHARING = "InCohortFairSharing"


@dataclass(frozen=True, slots=True)
class Admission:
    """A job admitted by the cycle (quota reserved and devices chosen).

    Attributes:
        workload_id / tenant / queue: identity.
        pod_count: pods admitted (< the job's ``pod_count`` only for partial gangs).
        charges: exact charges per ``(flavor, dimension)``.
        placement: the opaque placement token returned by the placer (a placement
            ``Decision`` on the Django side).
        borrowing: True when the tenant is above nominal after this admission.
        preemptible: effective preemptibility (always True in an elastic group).
        order: 0-based admission order within the cycle.
        flavors: the flavor chosen per pod set (None = the placer's choice).
        backfill: True when admitted past a starvation reservation because it ends first.
    """

    workload_id: str
    tenant: str
    queue: str
    pod_count: int
    charges: Charges
    placement: object
    borrowing: bool
    preemptible: bool
    order: int = 0
    flavors: tuple[str | None, ...] = ()
    backfill: bool = False


@dataclass(frozen=True, slots=True)
class PreemptionTarget:
    """A running job to evict (Kueue ``preemption.Target``). It keeps its quota and devices
    until its pods are gone; the preemptor waits for it (``PendingVerdict.waiting_for``).

    Attributes:
        victim_id / victim_tenant: the evicted workload.
        preemptor_id / preemptor_tenant: the pending job it makes room for.
        reason: :class:`PreemptionReason`.
        message: human-readable explanation (names the preemptor; the Django side hides it
            from other tenants).
        at: cycle time.
        evict_by: ``at + termination_grace_s``.
    """

    victim_id: str
    victim_tenant: str
    preemptor_id: str
    preemptor_tenant: str
    reason: PreemptionReason
    message: str
    at: datetime
    evict_by: datetime


@dataclass(frozen=True, slots=True)
class RejectedCandidate:
    """A running job preemption could not use, and the rule that protected it.

    Attributes:
        workload_id / tenant: the candidate.
        rule: ``"KIND: details"``, e.g. ``"withinClusterQueue LowerPriority: priority 5 >=
            5"``, ``"borrower within nominal: tenant team-b"``, ``"minimum runtime: until
            ..."``, ``"fair sharing LessThanOrEqualToFinalShare: 166.7 > 0.0"``,
            ``"non-preemptible"``.
    """

    workload_id: str
    tenant: str
    rule: str

    @property
    def kind(self) -> str:
        """The rule without its details (no tenant or job names), e.g.
        ``"withinClusterQueue LowerPriority"``, ``"borrower within nominal"``."""
        return self.rule.split(":", 1)[0]


class CauseKind(StrEnum):
    """What kind of rule blocks a pending job (one :class:`PendingCause`)."""

    QUOTA = "quota"
    CAPACITY = "capacity"
    TOPOLOGY = "topology"
    POLICY = "policy"
    PREEMPTION = "preemption"


_UNITS = {
    Dimension.DEVICES: ("devices", 1000),  # the core counts milli-devices
    Dimension.MEMORY_MIB: ("MiB", 1),
    Dimension.CORES_PERCENT: ("percent", 1),
}


@dataclass(frozen=True, slots=True)
class PendingCause:
    """One reason a job is pending, as structure (issue 30); the text line of a verdict is
    rendered from it (:attr:`text`), so the text and the structure cannot disagree.

    Attributes:
        kind: :class:`CauseKind`.
        rule: the rule's words, e.g. ``"bounded by cohort g1"``, ``"max 4000 (nominal 4000;
            bounded by cohort g1)"``, a preemption rejection line, the placer's reason.
        scope: who and where, e.g. ``"tenant team-a, group g1, flavor *, devices"`` (empty
            for a rule that is a whole line); text only, not in :meth:`as_dict`.
        dimension: the blocked quota dimension (None when no single resource is concerned).
        flavor: the flavor of ``dimension`` (None for an aggregate cap or no resource).
        needed / free / borrowable: amounts in the core's unit (milli-devices, MiB, percent);
            None when the rule gives none (``free``/``borrowable`` only for a quota short
            of unused and borrowable quota).
    """

    kind: CauseKind
    rule: str
    scope: str = ""
    dimension: Dimension | None = None
    flavor: str | None = None
    needed: int | None = None
    free: int | None = None
    borrowable: int | None = None

    @property
    def text(self) -> str:
        """The verdict's text line (``pending_reason``), rendered from the fields::

        RULE                                          (no scope)
        SCOPE: RULE                                   (no amount)
        SCOPE: needs N, RULE                          (no free amount)
        SCOPE: needs N, free X, borrowable Y (RULE)
        """
        if not self.scope:
            return self.rule
        if self.needed is None:
            return f"{self.scope}: {self.rule}"
        if self.free is None:
            return f"{self.scope}: needs {self.needed}, {self.rule}"
        return (
            f"{self.scope}: needs {self.needed}, free {self.free}, borrowable "
            f"{self.borrowable} ({self.rule})"
        )

    def as_dict(self) -> dict[str, object]:
        """The API shape: ``{kind, resource, needed, free, borrowable, unit, rule}`` with the
        amounts in display units (devices = milli-devices / 1000, MiB, percent) and
        ``resource`` = ``"FLAVOR/DIMENSION"`` (``"DIMENSION"`` without a flavor, None without
        a dimension). JSON-serialisable."""
        unit, scale = _UNITS[self.dimension] if self.dimension is not None else (None, 1)

        def shown(amount: int | None) -> float | int | None:
            if amount is None:
                return None
            return amount // scale if amount % scale == 0 else amount / scale

        resource = None
        if self.dimension is not None:
            resource = self.dimension.value
            if self.flavor is not None:
                resource = f"{self.flavor}/{resource}"
        return {
            "kind": self.kind.value,
            "resource": resource,
            "needed": shown(self.needed),
            "free": shown(self.free),
            "borrowable": shown(self.borrowable),
            "unit": unit,
            "rule": self.rule,
        }


_CODE_KINDS = {
    PendingCode.WAITING_FOR_QUOTA: CauseKind.QUOTA,
    PendingCode.EXCEEDS_MAX_QUOTA: CauseKind.QUOTA,
    PendingCode.UNSCHEDULABLE: CauseKind.CAPACITY,
    PendingCode.NO_MATCHING_FLAVOR: CauseKind.CAPACITY,
    PendingCode.WAITING_FOR_PREEMPTED: CauseKind.PREEMPTION,
}


def cause_of_code(code: PendingCode, rule: str) -> PendingCause:
    """A cause for a verdict whose rule has no amounts: the kind its code implies (quota,
    capacity, preemption; ``policy`` for class refusals, StrictFIFO, reservations)."""
    return PendingCause(_CODE_KINDS.get(code, CauseKind.POLICY), rule)


def reason_fields(kind: CauseKind, text: str) -> dict[str, object]:
    """The job fields for a reason written outside the admission cycle (an eviction, a
    requeue, a stop): ``{"pending_reason": text, "pending_causes": [...]}`` with one whole-line
    cause of ``kind`` per line of ``text`` (none for an empty text), so both are always
    written together (``Job.objects.filter(...).update(**reason_fields(...))``)."""
    return {
        "pending_reason": text,
        "pending_causes": [
            PendingCause(kind, line).as_dict() for line in text.splitlines() if line
        ],
    }


@dataclass(frozen=True, slots=True)
class PendingVerdict:
    """Why a job is still pending, and where it stands.

    Attributes:
        workload_id / tenant / queue: identity.
        position: 1-based position among the still-pending jobs of its queue (1 = next).
        code: :class:`PendingCode` (the rule that blocked it).
        reason: the blocking dimension, quota and level, e.g. ``"tenant team-a, group
            a100-shared, flavor a100, memory_mib: needs 40960, free 8192, borrowable 0
            (bounded by cohort a100-shared)"``.
        details: extra lines (why preemption did not help, the rejected candidates, ...).
        waiting_for: ids of the terminating victims it waits for
            (``WaitingForPreemptedWorkloads`` only).
        rejected: the preemption candidates rejected, with the rule (when preemption was
            tried and failed).
        causes: the same reasons as structure, one per line of ``reason`` + ``details``
            (:class:`PendingCause`).
    """

    workload_id: str
    tenant: str
    queue: str
    position: int
    code: PendingCode
    reason: str
    details: tuple[str, ...] = ()
    waiting_for: tuple[str, ...] = ()
    rejected: tuple[RejectedCandidate, ...] = ()
    causes: tuple[PendingCause, ...] = ()


@dataclass(frozen=True, slots=True)
class Reservation:
    """A starvation reservation held by a queue head.

    Attributes:
        workload_id / tenant: the reserving job.
        since: when the reservation started (kept across cycles).
        expected_start: when it can start as running jobs end by their max runtime (None =
            only after jobs without a runtime bound end).
        releases: running jobs that must end first.
    """

    workload_id: str
    tenant: str
    since: datetime
    expected_start: datetime | None
    releases: int


@dataclass(frozen=True, slots=True)
class CycleResult:
    """Output of one admission cycle.

    Attributes:
        admitted: admissions in admission order.
        preempted: preemptions issued in this cycle, in the order they were decided (the
            victims stay charged until their pods are gone).
        pending: one verdict per job not admitted, sorted by queue then position.
        usage: tenant usage after the cycle, ``{tenant: {(flavor, dimension): amount}}``
            (own workloads only, terminating victims included, admissions added).
        reservations: starvation reservations held after the cycle.
        expired_reservations: ids of jobs whose reservation ran out this cycle.
    """

    admitted: tuple[Admission, ...]
    preempted: tuple[PreemptionTarget, ...]
    pending: tuple[PendingVerdict, ...]
    usage: Mapping[str, Mapping[FlavorResource, int]] = field(default_factory=dict)
    reservations: tuple[Reservation, ...] = ()
    expired_reservations: tuple[str, ...] = ()
