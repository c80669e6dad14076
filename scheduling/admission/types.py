"""Plain frozen inputs and outputs of the admission core.

Everything here is built by the Django side from database rows (one row, one dataclass) and
handed to :func:`scheduling.admission.cycle.run_cycle`. Names follow Kueue
(kubernetes-sigs/kueue, API ``kueue.x-k8s.io/v1beta2``): nominal quota, borrowing limit,
lending limit, cohort, preemption.

Units:
    * ``devices``: milli-devices (1000 = one whole physical device; fractions allowed).
    * ``memory_mib``: device memory in MiB.
    * ``cores_percent``: device compute in percent (100 = one whole device's cores).
    * times: timezone-aware :class:`datetime.datetime`; durations in seconds (``*_s``).

A *flavor* is a device model (e.g. ``"NVIDIA-A100-SXM4-80GB"``) or a model family
(e.g. ``"A100"``) that quota is defined on; :class:`Flavor` lists the device models
(``Device.type`` strings) it covers. A *flavor resource* is the pair ``(flavor, dimension)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum


class AdmissionInputError(ValueError):
    """A snapshot, quota or workload given to the admission core is inconsistent.

    The message names the offending object; nothing is changed when it is raised.
    """


class GroupKind(StrEnum):
    """Kind of a resource group (DESIGN.md §2, tenancy.md §5).

    * ``exclusive``: guaranteed capacity, never lent and never borrowed (the effective
      lending limit and borrowing limit are 0 whatever the quota rows say).
    * ``shared``: unused nominal quota is lent to the cohort (Kueue default semantics).
    * ``elastic``: runs on borrowed capacity; every workload admitted in it is preemptible.
    """

    EXCLUSIVE = "exclusive"
    SHARED = "shared"
    ELASTIC = "elastic"


class QueueingStrategy(StrEnum):
    """Kueue ``queueingStrategy``.

    * ``StrictFIFO``: an inadmissible head blocks every job behind it in its queue.
    * ``BestEffortFIFO``: later jobs of the queue may be admitted past an inadmissible head.
    """

    STRICT_FIFO = "StrictFIFO"
    BEST_EFFORT_FIFO = "BestEffortFIFO"


class Dimension(StrEnum):
    """Quota dimensions. ``devices`` is in milli-devices."""

    DEVICES = "devices"
    MEMORY_MIB = "memory_mib"
    CORES_PERCENT = "cores_percent"


FlavorResource = tuple[str, Dimension]
"""``(flavor name, dimension)``, Kueue's ``FlavorResource``."""

Charges = Mapping[FlavorResource, int]
"""Amount charged per flavor resource, in the dimension's unit (milli-devices, MiB, %)."""


@dataclass(frozen=True, slots=True)
class Flavor:
    """A device model or model family that quota is defined on.

    Attributes:
        name: flavor name used in quota rows and charges (e.g. ``"a100"``).
        device_types: the ``Device.type`` model strings this flavor covers, matched exactly
            (e.g. ``("NVIDIA-A100-SXM4-80GB", "NVIDIA-A100-PCIE-40GB")``).
    """

    name: str
    device_types: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ResourceGroup:
    """The pool one admission cycle works on; its tenants form the cohort.

    Attributes:
        name: group name (also the cohort name in reasons).
        kind: :class:`GroupKind`.
        flavors: the flavors of the group; a device type belongs to at most one flavor.
    """

    name: str
    kind: GroupKind
    flavors: tuple[Flavor, ...]

    def flavor_of(self, device_type: str) -> str | None:
        """Flavor name covering ``device_type`` (exact match), or None."""
        for flavor in self.flavors:
            if device_type in flavor.device_types:
                return flavor.name
        return None


@dataclass(frozen=True, slots=True)
class Tenant:
    """An organisation unit; tenants nest (department -> team) through ``parent``.

    Attributes:
        name: unique tenant name.
        parent: name of the parent tenant, None for a top-level tenant (its parent is then
            the group's cohort).
        fair_share_weight: Kueue ``fairSharing.weight`` (>= 0); a larger weight lowers the
            tenant's weighted dominant share, so it borrows earlier and is reclaimed later.
            0 means any borrowing gives an infinite share.
    """

    name: str
    parent: str | None = None
    fair_share_weight: float = 1.0


@dataclass(frozen=True, slots=True)
class Quota:
    """One quota row: tenant x flavor x dimension in the snapshot's resource group.

    Kueue semantics (pkg/cache/scheduler/resource_node.go): a tenant may use its nominal
    quota plus whatever the cohort can supply, capped by ``borrowing_limit``; at most
    ``lending_limit`` of its nominal quota may be used by others (None = unlimited for both).

    Attributes:
        tenant: tenant name.
        flavor: flavor name.
        dimension: :class:`Dimension`.
        nominal: nominal quota in the dimension's unit (>= 0).
        borrowing_limit: max amount above nominal the tenant may borrow; None = unlimited.
        lending_limit: max amount of nominal lent to others (<= nominal); None = all of it.
    """

    tenant: str
    flavor: str
    dimension: Dimension
    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass(frozen=True, slots=True)
class AggregateCap:
    """A hard cap on a tenant's total usage over several flavors (model family or all).

    The cap counts the usage of the tenant and all its descendants (a department cap limits
    the sum of its teams), borrowed or not.

    Attributes:
        name: label used in reasons (e.g. ``"a100-family"``).
        tenant: tenant the cap applies to.
        dimension: :class:`Dimension`.
        limit: cap in the dimension's unit.
        flavors: flavors counted; None = every flavor of the group (a per-tenant cap).
    """

    name: str
    tenant: str
    dimension: Dimension
    limit: int
    flavors: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class Usage:
    """Stored usage of one tenant in one flavor resource (the tenant's own workloads only).

    Used by :func:`scheduling.admission.invariants.check_invariants` to detect drift; the
    cycle itself recomputes usage from ``AdmissionSnapshot.running`` charges.
    """

    tenant: str
    flavor: str
    dimension: Dimension
    amount: int


@dataclass(frozen=True, slots=True)
class Queue:
    """A tenant's queue of pending jobs (Kueue LocalQueue + ClusterQueue strategy)."""

    name: str
    tenant: str
    strategy: QueueingStrategy = QueueingStrategy.BEST_EFFORT_FIFO


@dataclass(frozen=True, slots=True)
class PendingWorkload:
    """A job waiting for admission.

    Attributes:
        id: unique workload id (the job's primary key as a string).
        tenant: owning tenant (must equal the queue's tenant).
        queue: queue name.
        priority: larger runs first and may preempt lower priorities of the same tenant.
        created_at: submission time (FIFO order; also the start of the preemption delay).
        pod_count: number of pods of the gang (>= 1); all are placed or none.
        min_pod_count: smallest acceptable gang (Kueue ``minCount``); None = ``pod_count``.
        request: opaque request the :class:`~scheduling.admission.placer.Placer` understands
            (the Django side passes a ``scheduling.placement.types.PlacementRequest``).
        preemptible: False for jobs that must stay inside nominal quota (Run:ai
            non-preemptible): such a job never borrows.
    """

    id: str
    tenant: str
    queue: str
    priority: int
    created_at: datetime
    pod_count: int = 1
    min_pod_count: int | None = None
    request: object = None
    preemptible: bool = True


@dataclass(frozen=True, slots=True)
class RunningWorkload:
    """A job holding quota (admitted, starting or running).

    Attributes:
        id: unique workload id.
        tenant: owning tenant.
        priority: priority it was admitted with.
        started_at: admission time; minimum runtime counts from here.
        charges: exact charges it holds per ``(flavor, dimension)``.
        min_runtime_s: seconds after ``started_at`` during which it cannot be preempted.
        preemptible: False protects it from every preemption.
        borrowing: True when it was admitted above its tenant's nominal quota.
    """

    id: str
    tenant: str
    priority: int
    started_at: datetime
    charges: Charges
    min_runtime_s: float = 0.0
    preemptible: bool = True
    borrowing: bool = False


@dataclass(frozen=True, slots=True)
class CycleConfig:
    """Knobs of one admission cycle.

    Attributes:
        preemption_delay_s: a pending job may reclaim capacity from other tenants only after
            waiting this long (YuniKorn ``preemption.delay``); same-tenant priority
            preemption is immediate.
        termination_grace_s: grace period given to a victim; ``Preemption.evict_by`` is
            ``now + termination_grace_s``.
        fair_sharing: order borrowing candidates and reclaim victims by weighted dominant
            share (Kueue fair sharing); False keeps classic priority/FIFO order.
    """

    preemption_delay_s: float = 0.0
    termination_grace_s: float = 30.0
    fair_sharing: bool = True


@dataclass(frozen=True, slots=True)
class AdmissionSnapshot:
    """Frozen input of one admission cycle for one resource group.

    Attributes:
        group: the resource group (its tenants form the cohort).
        tenants: every tenant of the tree (ancestors included).
        quotas: quota rows of this group.
        caps: aggregate caps (model family / per tenant) of this group.
        queues: queues of this group.
        pending: pending workloads (any order; the core sorts them).
        running: workloads holding quota in this group.
        usage: stored usage rows (only read by the invariant checker).
        now: cycle time (timezone-aware).
    """

    group: ResourceGroup
    tenants: tuple[Tenant, ...]
    quotas: tuple[Quota, ...]
    queues: tuple[Queue, ...]
    pending: tuple[PendingWorkload, ...]
    running: tuple[RunningWorkload, ...]
    now: datetime
    caps: tuple[AggregateCap, ...] = ()
    usage: tuple[Usage, ...] = ()


# ------------------------------------------------------------------------------------------
# Outputs
# ------------------------------------------------------------------------------------------


class PendingCode(StrEnum):
    """Why a job is still pending (Kueue ``QuotaReserved`` condition reasons, extended)."""

    WAITING_FOR_QUOTA = "WaitingForQuota"
    EXCEEDS_MAX_QUOTA = "ExceedsMaxQuota"
    UNSCHEDULABLE = "Unschedulable"
    BLOCKED_BY_HEAD = "BlockedByHead"


class PreemptionReason(StrEnum):
    """Why a victim was chosen (Kueue ``Preempted`` condition reasons)."""

    IN_TENANT = "InTenant"
    RECLAIM_WITHIN_COHORT = "InCohortReclamation"


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
        waits_for: ids of the victims this job preempted; submit it only after they released
            their devices (Kueue ``WaitingForPreemptedWorkloads``).
        order: 0-based admission order within the cycle.
    """

    workload_id: str
    tenant: str
    queue: str
    pod_count: int
    charges: Charges
    placement: object
    borrowing: bool
    preemptible: bool
    waits_for: tuple[str, ...] = ()
    order: int = 0


@dataclass(frozen=True, slots=True)
class Preemption:
    """A running job evicted to make room.

    Attributes:
        victim_id / victim_tenant: the evicted workload.
        preemptor_id / preemptor_tenant: the job admitted in its place.
        reason: :class:`PreemptionReason`.
        message: human-readable explanation.
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
class PendingVerdict:
    """Why a job is still pending, and where it stands.

    Attributes:
        workload_id / tenant / queue: identity.
        position: 1-based position among the still-pending jobs of its queue (1 = next).
        code: :class:`PendingCode`.
        reason: the blocking dimension, quota and level, e.g. ``"tenant team-a, group
            a100-shared, flavor a100, memory_mib: needs 40960, free 8192, borrowable 0
            (bounded by cohort a100-shared)"``.
        details: extra lines (why preemption did not help, ...).
    """

    workload_id: str
    tenant: str
    queue: str
    position: int
    code: PendingCode
    reason: str
    details: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CycleResult:
    """Output of one admission cycle.

    Attributes:
        admitted: admissions in admission order.
        preempted: preemptions in the order they were decided.
        pending: one verdict per job not admitted, sorted by queue then position.
        usage: tenant usage after the cycle, ``{tenant: {(flavor, dimension): amount}}``
            (own workloads only, victims removed and admissions added).
    """

    admitted: tuple[Admission, ...]
    preempted: tuple[Preemption, ...]
    pending: tuple[PendingVerdict, ...]
    usage: Mapping[str, Mapping[FlavorResource, int]] = field(default_factory=dict)
