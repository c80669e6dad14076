"""Plain frozen inputs of the admission core (the outputs are in
:mod:`scheduling.admission.outcomes`).

Everything here is built by the Django side from database rows (one row, one dataclass) and
handed to :func:`scheduling.admission.cycle.run_cycle`. The classes are named ``*Spec`` so
they never clash with the Django models they are built from (``tenants.models.Tenant`` ->
:class:`TenantSpec`, ``scheduling.models.Queue`` -> :class:`QueueSpec`, ...). Names of fields
follow Kueue (kubernetes-sigs/kueue, API ``kueue.x-k8s.io/v1beta2``): nominal quota,
borrowing limit, lending limit, cohort, preemption, flavor fungibility, priority class.

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

from scheduling.admission.policy import (
    DEFAULT_STRATEGIES,
    BorrowWithinCohort,
    FairSharingStrategy,
    FlavorFungibility,
    PreemptionPolicy,
)


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
class GroupSpec:
    """The resource group one admission cycle works on: the root cohort of its tenants.

    Attributes:
        name: group name (also the cohort name in reasons).
        kind: :class:`GroupKind`.
        flavors: the flavors of the group, in the group's order; a device type belongs to at
            most one flavor.
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
class TenantSpec:
    """An organisation unit; tenants nest (department -> team) through ``parent``.

    Attributes:
        name: unique tenant name.
        parent: name of the parent tenant, None for a top-level tenant (its parent is then
            the group's cohort).
        fair_share_weight: Kueue ``fairSharing.weight`` (>= 0); a larger weight lowers the
            tenant's weighted dominant share, so it borrows earlier and is reclaimed later.
            0 means any borrowing gives an infinite share (Kueue).
        history_usage: decayed past usage (:func:`scheduling.admission.history.decayed_usage`
            weighted by :attr:`HistoryFairShare.resource_weights`); only read when the cohort
            has :attr:`CohortOptions.history` set.
    """

    name: str
    parent: str | None = None
    fair_share_weight: float = 1.0
    history_usage: float = 0.0


@dataclass(frozen=True, slots=True)
class QuotaSpec:
    """One quota row: tenant x flavor x dimension in the snapshot's resource group.

    Kueue semantics (pkg/cache/scheduler/resource_node.go): a tenant may use its nominal
    quota plus whatever the cohort can supply, capped by ``borrowing_limit``; at most
    ``lending_limit`` of its nominal quota may be used by others (None = unlimited for both).
    A parent tenant's row is the nominal quota of its whole subtree: its children's rows are
    carved out of it (see :mod:`scheduling.admission.quota`).

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
class AggregateCapSpec:
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
class PriorityClassSpec:
    """A priority class defined by platform admins (Kueue ``WorkloadPriorityClass`` plus the
    Run:ai/KAI preemptible flag).

    A job copies ``value`` at submission (Kueue: later changes of the class value do not
    affect existing workloads); ``preemptible`` is read live: a class made non-preemptible
    protects its running jobs at once.

    Attributes:
        name: unique class name.
        value: priority (larger runs first and may preempt lower ones).
        preemptible: False protects every job of the class from preemption; such jobs never
            borrow.
    """

    name: str
    value: int
    preemptible: bool = True


@dataclass(frozen=True, slots=True)
class QueueSpec:
    """A tenant's queue: Kueue LocalQueue plus the ClusterQueue settings that are per queue
    here (queueing strategy, preemption policy, flavor fungibility, allowed classes).

    Attributes:
        name: unique queue name.
        tenant: owning tenant.
        strategy: :class:`QueueingStrategy`.
        within_cluster_queue: Kueue ``withinClusterQueue`` for candidates of the own tenant.
        reclaim_within_cohort: Kueue ``reclaimWithinCohort`` for other tenants' candidates.
        borrow_within_cohort: Kueue ``borrowWithinCohort``.
        flavors: flavor names tried in this order for each pod set (Kueue resource group
            flavor list); () = no flavor choice: the placer lands anywhere the job's device
            types allow.
        fungibility: Kueue ``flavorFungibility`` (used with ``flavors``).
        allowed_priority_classes: classes jobs of this queue may use; None = any.
    """

    name: str
    tenant: str
    strategy: QueueingStrategy = QueueingStrategy.BEST_EFFORT_FIFO
    within_cluster_queue: PreemptionPolicy = PreemptionPolicy.LOWER_PRIORITY
    reclaim_within_cohort: PreemptionPolicy = PreemptionPolicy.ANY
    borrow_within_cohort: BorrowWithinCohort = field(default_factory=BorrowWithinCohort)
    flavors: tuple[str, ...] = ()
    fungibility: FlavorFungibility = field(default_factory=FlavorFungibility)
    allowed_priority_classes: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class PodSetSpec:
    """One pod set of a workload: ``count`` identical pods (Kueue ``PodSet``).

    Attributes:
        name: pod set name (e.g. ``"driver"``, ``"workers"``).
        count: pods (>= 1).
        request: opaque request the placer understands for one pod of the set.
    """

    name: str
    count: int
    request: object = None


@dataclass(frozen=True, slots=True)
class PendingWorkload:
    """A job waiting for admission.

    Attributes:
        id: unique workload id (the job's primary key as a string).
        tenant: owning tenant (must equal the queue's tenant).
        queue: queue name.
        priority: larger runs first and may preempt lower priorities (the class value copied
            at submission).
        created_at: submission time (FIFO order; Kueue queue-order timestamp; also the start
            of the preemption delay and of the starvation wait).
        pod_count: number of pods of the gang (>= 1); all are placed or none. With
            ``pod_sets``, the sum of their counts.
        min_pod_count: smallest acceptable gang (Kueue ``minCount``); None = ``pod_count``;
            single pod set only.
        request: opaque request the :class:`~scheduling.admission.placer.Placer` understands
            (the Django side passes a ``scheduling.placement.types.PlacementRequest``).
        preemptible: False for jobs that must stay inside nominal quota (Run:ai
            non-preemptible): such a job never borrows.
        pod_sets: several pod sets (driver + workers, ...); () = one pod set of ``pod_count``
            pods of ``request``. Each pod set chooses its flavor (Kueue flavor fungibility).
        priority_class: the job's priority class name (None = none).
        max_runtime_s: the job's runtime bound (Kueue ``maximumExecutionTimeSeconds``);
            None = unbounded. Backfill needs it.
        preempting: True when the job issued preemptions in an earlier cycle and waits for
            its victims (Kueue's sticky preemptor head): it goes first.
        reserving_since: when its starvation reservation started (None = none).
        user: the submitter's username (None = unknown): the key of its per-user limits
            and budgets (:mod:`scheduling.admission.limits`).
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
    pod_sets: tuple[PodSetSpec, ...] = ()
    priority_class: str | None = None
    max_runtime_s: float | None = None
    preempting: bool = False
    reserving_since: datetime | None = None
    user: str | None = None

    def sets(self) -> tuple[PodSetSpec, ...]:
        """The pod sets: ``pod_sets``, or one set ``"main"`` of ``pod_count`` x ``request``."""
        return self.pod_sets or (PodSetSpec("main", self.pod_count, self.request),)


@dataclass(frozen=True, slots=True)
class RunningWorkload:
    """A job holding quota and devices (admitted, starting, running or terminating).

    Attributes:
        id: unique workload id.
        tenant: owning tenant.
        priority: priority it was admitted with.
        started_at: admission time (Kueue ``QuotaReserved`` transition); minimum runtime
            counts from here; newer admissions are preempted first.
        charges: exact charges it holds per ``(flavor, dimension)``.
        min_runtime_s: seconds after ``started_at`` during which it cannot be preempted.
        preemptible: False protects it from every preemption.
        borrowing: True when it was admitted above its tenant's nominal quota.
        created_at: submission time (Kueue queue-order timestamp, for
            ``LowerOrNewerEqualPriority``); None = ``started_at``.
        priority_class: its priority class name (None = none).
        max_runtime_s: runtime bound; None = unbounded (expected end +inf for backfill).
        terminating: True while it is being evicted (its pods are in their termination grace
            period): it still holds its quota and devices (Kueue keeps ``QuotaReserved`` until
            the pods are gone) and is a preemption candidate first, never evicted twice.
        evict_by: end of its termination grace period (terminating only).
    """

    id: str
    tenant: str
    priority: int
    started_at: datetime
    charges: Charges
    min_runtime_s: float = 0.0
    preemptible: bool = True
    borrowing: bool = False
    created_at: datetime | None = None
    priority_class: str | None = None
    max_runtime_s: float | None = None
    terminating: bool = False
    evict_by: datetime | None = None

    @property
    def queue_order_time(self) -> datetime:
        """Kueue ``GetQueueOrderTimestamp``: the creation time (``started_at`` if unknown)."""
        return self.created_at or self.started_at


@dataclass(frozen=True, slots=True)
class HistoryFairShare:
    """History-aware fair share (Kueue Admission Fair Sharing, per tenant here).

    Attributes:
        half_life_s: usage half-life (Kueue ``usageHalfLifeTime``; > 0).
        resource_weights: weight per dimension when summing usage (Kueue
            ``resourceWeights``); a missing dimension weighs 0. Default: devices only, one
            unit per whole device (0.001 per milli-device).
        entry_penalty_interval_s: Kueue ``usageSamplingInterval``: a job admitted in this
            cycle adds ``weighted charges x alpha(interval, half life)`` to its tenant at once.
    """

    half_life_s: float
    resource_weights: Mapping[Dimension, float] = field(
        default_factory=lambda: {Dimension.DEVICES: 0.001}
    )
    entry_penalty_interval_s: float = 300.0


@dataclass(frozen=True, slots=True)
class CohortOptions:
    """Per-cohort (resource group) options of the admission cycle.

    Attributes:
        fair_sharing: Kueue fair sharing (tournament admission order by dominant share,
            fair-sharing preemption); None = :attr:`CycleConfig.fair_sharing`.
        preemption_strategies: fair-sharing preemption strategies, one of
            :data:`~scheduling.admission.policy.ALLOWED_STRATEGY_LISTS`.
        reservation_after_s: a queue head pending this long gets a starvation reservation
            (smaller jobs then backfill only where they end before it could start); None =
            off.
        max_reservations: reservations held at once in the group.
        max_reservation_hold_s: a reservation not admitted after this long is dropped for
            one cycle (LSF ``MAX_RESERVE_TIME``); None = kept until admitted.
        history: history-aware fair share; None = off.
    """

    fair_sharing: bool | None = None
    preemption_strategies: tuple[FairSharingStrategy, ...] = DEFAULT_STRATEGIES
    reservation_after_s: float | None = None
    max_reservations: int = 1
    max_reservation_hold_s: float | None = None
    history: HistoryFairShare | None = None


@dataclass(frozen=True, slots=True)
class CycleConfig:
    """Knobs of the admission cycles (from settings; per-cohort options are in
    :class:`CohortOptions`).

    Attributes:
        preemption_delay_s: a pending job may reclaim capacity from other tenants only after
            waiting this long (YuniKorn ``preemption.delay``; our extra); same-tenant
            preemption is immediate.
        termination_grace_s: grace period given to a victim; ``evict_by`` is
            ``now + termination_grace_s``.
        fair_sharing: default of :attr:`CohortOptions.fair_sharing`.
    """

    preemption_delay_s: float = 0.0
    termination_grace_s: float = 30.0
    fair_sharing: bool = True


class BudgetAction(StrEnum):
    """What happens once a budget is spent (the tenant admin chooses)."""

    STOP = "stop"
    PREEMPTIBLE = "preemptible"
    NOTIFY = "notify"


@dataclass(frozen=True, slots=True)
class UserLimitSpec:
    """Limits of one user inside one tenant (None = no limit on that resource).

    Attributes:
        tenant: tenant name.
        user: username (as in :attr:`PendingWorkload.user`).
        max_running_jobs: admitted jobs held at once (>= 0).
        max_devices: milli-devices held at once (>= 0).
        flavors: the flavors whose ``devices`` charges count toward ``max_devices`` (a
            per-model limit); None = every flavor (device-equivalents).
        device_model: the model named by a per-model limit (reason text only; "" = none).
        running_jobs: the user's admitted jobs in the tenant before the cycle (every group).
        used_devices: milli-devices the user holds before the cycle (of ``device_model``
            when set, else of every model; every group).
    """

    tenant: str
    user: str
    max_running_jobs: int | None = None
    max_devices: int | None = None
    flavors: tuple[str, ...] | None = None
    device_model: str = ""
    running_jobs: int = 0
    used_devices: int = 0


@dataclass(frozen=True, slots=True)
class BudgetGateSpec:
    """A spent budget that acts on admission.

    Attributes:
        tenant: tenant name.
        user: username, or None for the whole tenant's budget.
        action: :class:`BudgetAction`.
        label: the reason line, e.g. ``"budget team-a monthly: 1012.5 of 1000 GPU-hours
            spent (hard action stop)"``.
    """

    tenant: str
    user: str | None
    action: BudgetAction
    label: str


@dataclass(frozen=True, slots=True)
class AdmissionSnapshot:
    """Frozen input of one admission cycle for one resource group.

    Attributes:
        group: the resource group (its tenants form the cohort).
        tenants: every tenant of the tree (ancestors included).
        quotas: quota rows of this group.
        queues: queues of this group.
        pending: pending workloads (any order; the core sorts them).
        running: workloads holding quota in this group (terminating ones included).
        now: cycle time (timezone-aware).
        caps: aggregate caps (model family / per tenant) of this group.
        usage: stored usage rows (only read by the invariant checker).
        priority_classes: the priority classes (every class a queue or job names).
        options: per-cohort options.
        user_limits: per-user limits of the group's tenants (issue 33;
            :mod:`scheduling.admission.limits`).
        budget_gates: spent budgets that stop admission or admit only as preemptible.
    """

    group: GroupSpec
    tenants: tuple[TenantSpec, ...]
    quotas: tuple[QuotaSpec, ...]
    queues: tuple[QueueSpec, ...]
    pending: tuple[PendingWorkload, ...]
    running: tuple[RunningWorkload, ...]
    now: datetime
    caps: tuple[AggregateCapSpec, ...] = ()
    usage: tuple[Usage, ...] = ()
    priority_classes: tuple[PriorityClassSpec, ...] = ()
    options: CohortOptions = field(default_factory=CohortOptions)
    user_limits: tuple[UserLimitSpec, ...] = ()
    budget_gates: tuple[BudgetGateSpec, ...] = ()
