"""One admission cycle for one resource group, shaped like Kueue's scheduler cycle
(kubernetes-sigs/kueue ``pkg/scheduler/scheduler.go``), with numbered phases:

1. **Queue heads.** Each queue is sorted: a job waiting for its preemption victims first
   (Kueue's sticky preemptor head), then priority (higher first), ``created_at``, id. Every
   round takes the current head of every queue that is not blocked. A ``StrictFIFO`` queue
   whose head is not admitted is blocked for the rest of the cycle; a ``BestEffortFIFO``
   queue lets the next job try in the next round. While any queue's head waits for its
   preemption victims, rounds take only such heads: every waiting preemptor (of every queue)
   is tried before any other job, so the capacity its victims freed is not taken by a
   requeued victim or another queue's job (several rounds per cycle mean several preemptors
   of one queue can wait at once, which Kueue's one head per queue never sees). Starvation
   reservations kept from earlier cycles are loaded (:mod:`scheduling.admission.reservation`).
2. **Nominate and order** (:mod:`scheduling.admission.ordering`): classical order by
   borrowing height, priority, FIFO; with fair sharing a tournament by dominant share, re-run
   after every admission.
3. **Assign flavors** (:mod:`scheduling.admission.flavors`): per pod set, by the queue's
   flavor order and flavor fungibility: fit, preempt/reclaim (the preemption oracle:
   :mod:`~scheduling.admission.preemption` or :mod:`~scheduling.admission.fair_preemption`),
   or why not.
4. **Admit or preempt.** A fitting job is admitted (unless it would delay a starvation
   reservation); a job that needs preemption issues it and is **not** admitted in this cycle
   (Kueue ``processEntry``): the victims keep their quota and devices until their pods are
   gone, the preemptor's charges and devices are held for the rest of the cycle on top of
   them (conservative double counting, Kueue ``cq.AddUsage``), so no admission can take that
   capacity; it waits (``WaitingForPreemptedWorkloads``) and is admitted in a later cycle
   once the victims are gone. A later preemption search of the cycle sees the cycle's
   victims removed instead (Kueue ``fits``: ``SimulateWorkloadRemoval`` of every workload
   preempted in the cycle): the preemptor's hold takes their quota, counted once, so another
   preemptor of the cohort can preempt other, disjoint victims in the same cycle; a victim
   of the cycle frees no more quota in that search, only the devices the hold leaves (a
   later job may wait for it too). A terminating victim is never preempted twice. A partial
   gang (``min_pod_count``) shrinks only when its full count neither fits nor can preempt
   (Kueue ``getInitialAssignments``: ``PodSetReducer`` after the full assignment), to the
   largest count that fits without preemption. A job that needs preemption but finds no
   candidates holds its free nominal quota for the rest of the cycle unless its queue's
   ``reclaimWithinCohort`` is Any (Kueue ``reserveCapacityForUnreclaimablePreempt``).
5. **Verdicts.** Every job left pending gets its queue position and a reason naming the
   rule that blocked it, with the preemption candidates rejected and why.

Ties are broken by workload id, so a cycle is deterministic for a given snapshot and placer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta

from scheduling.admission.flavors import FlavorTry, Mode, assign_flavors
from scheduling.admission.history import entry_penalty
from scheduling.admission.limits import UserLimits
from scheduling.admission.ordering import round_order
from scheduling.admission.outcomes import (
    Admission,
    CauseKind,
    CycleResult,
    PendingCause,
    PendingCode,
    PendingVerdict,
    PreemptionTarget,
    RejectedCandidate,
    cause_of_code,
)
from scheduling.admission.placer import FlavorChoice, PlacementOutcome, Placer, Undo
from scheduling.admission.policy import PreemptionPolicy
from scheduling.admission.quota import QuotaTree, merge_charges
from scheduling.admission.reservation import Holder, Reservations, expected_end_s
from scheduling.admission.running_index import RunningIndex
from scheduling.admission.types import (
    AdmissionSnapshot,
    Charges,
    CycleConfig,
    FlavorResource,
    GroupKind,
    PendingWorkload,
    QueueingStrategy,
    QueueSpec,
    RunningWorkload,
)
from scheduling.admission.validation import validate_snapshot

__all__ = ["AdmissionCycle", "run_cycle", "validate_snapshot"]

MAX_DETAIL_LINES = 12


def run_cycle(
    snapshot: AdmissionSnapshot, placer: Placer, config: CycleConfig | None = None
) -> CycleResult:
    """Run one admission cycle (see the module docstring for the phases).

    Args:
        snapshot: frozen quotas, tenants, queues, priority classes, pending and running
            (terminating included) workloads, cohort options and ``now``.
        placer: tentative placement on the caller's working copy of the cluster; it is left
            with the admissions booked (the holds of preemptors waiting for their victims
            last only for the cycle).
        config: cycle knobs (defaults: no preemption delay, 30 s grace, fair sharing on).

    Returns:
        The admitted jobs (with placement token and charges), the preemptions issued, one
        pending verdict per job not admitted, and the starvation reservations.

    Raises:
        AdmissionInputError: the snapshot is inconsistent (nothing is changed).
    """
    return AdmissionCycle(snapshot, placer, config or CycleConfig()).run()


@dataclass(frozen=True, slots=True)
class _Failure:
    """Why a job was not admitted: its code and causes (the verdict's text lines are the
    causes' texts, so the two cannot disagree)."""

    code: PendingCode
    causes: tuple[PendingCause, ...]
    waiting_for: tuple[str, ...] = ()
    rejected: tuple[RejectedCandidate, ...] = ()

    @classmethod
    def of(cls, code: PendingCode, rule: str, waiting_for: tuple[str, ...] = ()) -> _Failure:
        """A failure with one cause, a whole-line rule of the kind ``code`` implies."""
        return cls(code, (cause_of_code(code, rule),), waiting_for)


@dataclass(slots=True)
class _QuotaHold:
    """Quota held for a job that cannot reclaim (:meth:`AdmissionCycle._reserve_unreclaimable`):
    its tenant, its quota-counted requests and what is booked now."""

    tenant: str
    requests: dict[FlavorResource, int]
    booked: dict[FlavorResource, int] = field(default_factory=dict)

    def book(self, tree: QuotaTree) -> None:
        """Book :meth:`~scheduling.admission.quota.QuotaTree.quota_to_reserve` on the
        tenant's current usage (the previous booking must be removed first)."""
        self.booked = tree.quota_to_reserve(self.tenant, self.requests)
        tree.add(self.tenant, self.booked)


def _usage_by_tenant(running: Iterable[RunningWorkload]) -> dict[str, dict[FlavorResource, int]]:
    """The running workloads' charges (validated non-negative) summed per tenant, to book
    once per tenant: booking usage is additive (Kueue ``addUsage``: what a node passes to
    its parent is ``max(0, usage + x - local quota) - max(0, usage - local quota)``, which
    telescopes), so one booking of the sum leaves the quota tree exactly as one booking per
    workload, in 1 call per tenant instead of 1 per running workload (thousands at scale)."""
    parts: dict[str, list[Charges]] = {}
    for workload in running:
        parts.setdefault(workload.tenant, []).append(workload.charges)
    return {tenant: merge_charges(*charges) for tenant, charges in parts.items()}


class AdmissionCycle:
    """State of one cycle; use :func:`run_cycle` unless you need :meth:`rollback`.

    Args:
        snapshot: the cycle input.
        placer: the placement port.
        config: cycle knobs.

    Raises:
        AdmissionInputError: the snapshot is inconsistent.
    """

    def __init__(self, snapshot: AdmissionSnapshot, placer: Placer, config: CycleConfig) -> None:
        validate_snapshot(snapshot)
        self.snapshot = snapshot
        self.placer = placer
        self.config = config
        self.now = snapshot.now
        self.group_kind = snapshot.group.kind
        self.tree = QuotaTree(snapshot.group, snapshot.tenants, snapshot.quotas, snapshot.caps)
        self.running: dict[str, RunningWorkload] = {}
        self.holders: dict[str, Holder] = {}
        for tenant, charges in _usage_by_tenant(snapshot.running).items():
            self.tree.add(tenant, charges)
        for workload in sorted(snapshot.running, key=lambda w: w.id):
            self.running[workload.id] = workload
            self.holders[workload.id] = Holder(
                workload.id,
                workload.tenant,
                workload.charges,
                expected_end_s(
                    workload.started_at,
                    workload.max_runtime_s,
                    self.now,
                    workload.evict_by if workload.terminating else None,
                ),
            )
        self.running_index = RunningIndex(self.running)
        self.queues: dict[str, QueueSpec] = {q.name: q for q in snapshot.queues}
        self.classes = {c.name: c for c in snapshot.priority_classes}
        self.user_limits = UserLimits(snapshot.user_limits, snapshot.budget_gates)
        options = snapshot.options
        self.fair_sharing = (
            config.fair_sharing if options.fair_sharing is None else options.fair_sharing
        )
        self.strategies = tuple(options.preemption_strategies)
        self.admitted: list[Admission] = []
        self.preempted: list[PreemptionTarget] = []
        self.failures: dict[str, _Failure] = {}
        self.blocked_by: dict[str, str] = {}
        self.issued: set[str] = set()
        self.victims: dict[str, RunningWorkload] = {}
        self._victims_out = False
        self.penalties: dict[str, float] = {}
        self.version = 0
        self.reservations = Reservations(self)
        self._undo_log: list[Undo] = []
        self._hold_undo: list[Undo] = []
        self._unreclaimable: dict[str, list[_QuotaHold]] = {}  # by tenant

    # -- inputs ---------------------------------------------------------------------------------

    def class_preemptible(self, name: str | None) -> bool:
        """False when ``name`` is a known non-preemptible priority class."""
        cls = self.classes.get(name or "")
        return cls is None or cls.preemptible

    def effective_preemptible(self, entry: PendingWorkload) -> bool:
        """The job's own flag and its priority class's (our extra: such a job never
        borrows); always True under a spent budget whose hard action is ``preemptible``."""
        if self.user_limits.only_preemptible(entry):
            return True
        return entry.preemptible and self.class_preemptible(entry.priority_class)

    def quota_charges(self, workload: RunningWorkload) -> Charges:
        """What evicting ``workload`` frees in the quota tree now: its charges, or nothing
        for a victim of this cycle inside :meth:`victims_removed` (already out)."""
        return {} if self._victims_out and workload.id in self.victims else workload.charges

    @contextmanager
    def victims_removed(self) -> Iterator[None]:
        """Take the charges of this cycle's preemption victims out of the quota tree while
        the block runs (a preemption search: Kueue ``fits`` simulates their removal, their
        preemptors' holds stay), and put them back after."""
        if self._victims_out:  # nested: already out
            yield
            return
        out = list(self.victims.values())
        for workload in out:
            self.tree.remove(workload.tenant, workload.charges)
        self._victims_out = True
        try:
            yield
        finally:
            self._victims_out = False
            for workload in reversed(out):
                self.tree.add(workload.tenant, workload.charges)

    # -- driver -----------------------------------------------------------------------------------

    def run(self) -> CycleResult:
        """Run phases 1-5 once and return the result."""
        queues = self._phase1_queue_lists()
        self.reservations.start()
        cursor = dict.fromkeys(queues, 0)
        while True:
            heads = [
                queues[name][cursor[name]]
                for name in sorted(queues)
                if name not in self.blocked_by and cursor[name] < len(queues[name])
            ]
            if not heads:
                break
            if any(h.preempting for h in heads):  # waiting preemptors first, every queue
                heads = [h for h in heads if h.preempting]
            for entry in round_order(self, heads):
                with self._own_holds_released(entry.tenant):
                    admitted = self._process(entry)
                if (
                    not admitted
                    and self.queues[entry.queue].strategy == QueueingStrategy.STRICT_FIFO
                ):
                    self.blocked_by[entry.queue] = entry.id
                cursor[entry.queue] += 1
        while self._hold_undo:  # the holds of waiting preemptors end with the cycle,
            self._hold_undo.pop()()  # their victims count again
        for holds in self._unreclaimable.values():
            for hold in holds:
                self.tree.remove(hold.tenant, hold.booked)
        reservations, expired = self.reservations.results()
        return CycleResult(
            admitted=tuple(self.admitted),
            preempted=tuple(self.preempted),
            pending=self._phase5_verdicts(queues),
            usage=self._usage(),
            reservations=reservations,
            expired_reservations=expired,
        )

    def rollback(self) -> None:
        """Undo every booking this cycle made on the placer (dry runs)."""
        while self._undo_log:
            self._undo_log.pop()()

    def _usage(self) -> dict[str, dict]:
        usage = {t: self.tree.own_usage(t) for t in self.tree.tenant_names()}
        return {t: u for t, u in usage.items() if u}

    # -- phase 1: queue heads ---------------------------------------------------------------------

    def _phase1_queue_lists(self) -> dict[str, list[PendingWorkload]]:
        queues: dict[str, list[PendingWorkload]] = {q.name: [] for q in self.snapshot.queues}
        for entry in self.snapshot.pending:
            queues[entry.queue].append(entry)
        for entries in queues.values():
            entries.sort(key=lambda e: (not e.preempting, -e.priority, e.created_at, e.id))
        return queues

    # -- phases 3 and 4: assign, admit or preempt ---------------------------------------------

    def _process(self, entry: PendingWorkload) -> bool:
        queue = self.queues[entry.queue]
        refusal = self._class_refusal(entry, queue)
        if refusal is not None:
            return self._fail(entry, _Failure.of(PendingCode.PRIORITY_CLASS_NOT_ALLOWED, refusal))
        if (limited := self.user_limits.blocked(entry)) is not None:
            return self._fail(entry, _Failure.of(*limited))
        attempt = assign_flavors(self, entry, queue)
        charges = attempt.outcome.charges if attempt.outcome is not None else None
        if attempt.mode >= Mode.PREEMPT and (limited := self.user_limits.blocked(entry, charges)):
            return self._fail(entry, _Failure.of(*limited))  # a per-user devices limit
        if attempt.mode == Mode.FIT:
            return self._try_admit(entry, attempt)
        if attempt.mode in (Mode.PREEMPT, Mode.RECLAIM):
            blocked = self.reservations.blocking(entry, None)
            if blocked is None:
                self._wait(entry, attempt)
                return False
            if self._admit_partially(entry, queue):
                return True
            return self._fail(entry, _Failure.of(PendingCode.BACKFILL_BLOCKED, blocked))
        if self._admit_partially(entry, queue):
            return True
        if attempt.mode == Mode.NO_CANDIDATES:
            self._reserve_unreclaimable(entry, queue, attempt)
        rejected = tuple(attempt.rejected[key] for key in sorted(attempt.rejected))  # id order
        causes = (
            *attempt.causes,
            *(
                PendingCause(CauseKind.PREEMPTION, line)
                for line in _rejection_lines(entry.tenant, rejected)
            ),
        )
        return self._fail(entry, _Failure(attempt.code, causes, (), rejected))

    def _admit_partially(self, entry: PendingWorkload, queue: QueueSpec) -> bool:
        """Admit the largest count from ``pod_count - 1`` down to ``min_pod_count`` that fits
        now (without preemption); False when none does or the job has no minimum.

        Called only once the full count neither fits nor can preempt (Kueue
        ``getInitialAssignments``: the ``PodSetReducer`` search runs only after the full
        assignment is neither ``Fit`` nor ``Preempt`` with targets), or when its preemption
        is blocked by a starvation reservation.
        """
        if entry.min_pod_count is None:
            return False
        for count in range(entry.pod_count - 1, entry.min_pod_count - 1, -1):
            partial = assign_flavors(self, entry, queue, count)
            charges = partial.outcome.charges if partial.outcome is not None else None
            if (
                partial.mode == Mode.FIT
                and self.user_limits.blocked(entry, charges) is None
                and self._try_admit(entry, partial, quiet=True)
            ):
                return True
        return False

    def _reserve_unreclaimable(
        self, entry: PendingWorkload, queue: QueueSpec, attempt: FlavorTry
    ) -> None:
        """Hold the quota of a job that needs preemption but found no candidates, for the
        rest of the cycle, unless its queue can always reclaim (``reclaimWithinCohort:
        Any``): a borrower of the cohort then cannot take the tenant's free nominal quota in
        this cycle, which the tenant could not get back later (Kueue ``processEntry`` ->
        ``reserveCapacityForUnreclaimablePreempt``: ``if !preemption.CanAlwaysReclaim(cq)
        { cq.AddUsage(resourcesToReserve(...)) }``; amounts:
        :meth:`~scheduling.admission.quota.QuotaTree.quota_to_reserve`). Quota only: no
        devices are held.
        """
        if queue.reclaim_within_cohort == PreemptionPolicy.ANY:
            return
        hold = _QuotaHold(entry.tenant, attempt.requests)
        hold.book(self.tree)
        self._unreclaimable.setdefault(entry.tenant, []).append(hold)
        self.version += 1

    @contextmanager
    def _own_holds_released(self, tenant: str) -> Iterator[None]:
        """Lift the holds of :meth:`_reserve_unreclaimable` of ``tenant`` while one of its
        own jobs is processed, then book them again on what the tenant has left: they keep
        the quota from other tenants only (Kueue has one head per ClusterQueue and cycle, so
        its hold never meets a job of its own ClusterQueue; ours would block a smaller job of
        the tenant every cycle while the head stays blocked)."""
        lifted = list(self._unreclaimable.get(tenant, ()))  # not a hold booked meanwhile
        for hold in lifted:
            self.tree.remove(hold.tenant, hold.booked)
        try:
            yield
        finally:
            for hold in lifted:  # each on the usage left: together within the free nominal
                hold.book(self.tree)
            self.version += bool(lifted)

    def _class_refusal(self, entry: PendingWorkload, queue: QueueSpec) -> str | None:
        name = entry.priority_class
        if name is None:
            return None
        if name not in self.classes:
            return f"priority class {name} does not exist"
        allowed = queue.allowed_priority_classes
        if allowed is not None and name not in allowed:
            return (
                f"priority class {name} is not allowed in queue {queue.name} (allowed: "
                f"{', '.join(allowed) or 'none'})"
            )
        return None

    def _try_admit(self, entry: PendingWorkload, attempt: FlavorTry, quiet: bool = False) -> bool:
        assert attempt.outcome is not None
        blocked = self.reservations.blocking(entry, attempt.outcome)
        if blocked is not None:
            return (
                False
                if quiet
                else self._fail(entry, _Failure.of(PendingCode.BACKFILL_BLOCKED, blocked))
            )
        backfill = any(
            a.entry.id != entry.id and entry.priority <= a.entry.priority
            for a in self.reservations.active.values()
        )
        self._admit(entry, attempt.outcome, attempt.flavors, backfill)
        return True

    def _fail(self, entry: PendingWorkload, failure: _Failure) -> bool:
        active = self.reservations.elect(entry, failure.code)
        if active is not None:
            failure = _Failure(
                PendingCode.RESERVED,
                (
                    cause_of_code(PendingCode.RESERVED, self.reservations.verdict(active)),
                    *failure.causes,
                ),
                (),
                failure.rejected,
            )
        self.failures[entry.id] = failure
        return False

    def _admit(
        self,
        entry: PendingWorkload,
        outcome: PlacementOutcome,
        flavors: FlavorChoice,
        backfill: bool,
    ) -> None:
        self._undo_log.append(self.placer.reserve(entry, outcome))
        self.tree.add(entry.tenant, outcome.charges)
        self.version += 1
        self.holders[entry.id] = Holder(
            entry.id,
            entry.tenant,
            outcome.charges,
            expected_end_s(self.now, entry.max_runtime_s, self.now),
        )
        node = self.tree.node(entry.tenant)
        borrowing = any(
            amount > 0 and self.tree.counted(node, fr) and self.tree.borrowing_with(node, fr, 0)
            for fr, amount in merge_charges(outcome.charges).items()
        )
        history = self.snapshot.options.history
        if history is not None:
            self.penalties[entry.tenant] = self.penalties.get(entry.tenant, 0.0) + entry_penalty(
                outcome.charges,
                history.resource_weights,
                history.entry_penalty_interval_s,
                history.half_life_s,
            )
        self.reservations.admitted(entry)
        self.user_limits.admitted(entry, outcome.charges)
        self.admitted.append(
            Admission(
                workload_id=entry.id,
                tenant=entry.tenant,
                queue=entry.queue,
                pod_count=outcome.pod_count,
                charges=dict(outcome.charges),
                placement=outcome.token,
                borrowing=borrowing,
                preemptible=self.effective_preemptible(entry)
                or self.group_kind == GroupKind.ELASTIC,
                order=len(self.admitted),
                flavors=tuple(f[0] if f else None for f in flavors) if flavors else (),
                backfill=backfill,
            )
        )

    def _wait(self, entry: PendingWorkload, attempt: FlavorTry) -> None:
        """Issue the preemptions (victims not terminating and not already issued) and hold
        the preemptor's charges and devices on top of the victims for the rest of the cycle;
        later preemption searches see the victims removed (:meth:`victims_removed`).
        """
        assert attempt.outcome is not None
        grace = self.now + timedelta(seconds=self.config.termination_grace_s)
        evict_by = []
        for target in attempt.targets:
            workload = target.workload
            evict_by.append(workload.evict_by or grace if workload.terminating else grace)
            if workload.terminating or workload.id in self.issued:
                continue
            self.issued.add(workload.id)
            self.preempted.append(
                PreemptionTarget(
                    victim_id=workload.id,
                    victim_tenant=workload.tenant,
                    preemptor_id=entry.id,
                    preemptor_tenant=entry.tenant,
                    reason=target.reason,
                    message=target.message,
                    at=self.now,
                    evict_by=grace,
                )
            )
        self._hold(entry, attempt.outcome, [t.workload for t in attempt.targets])
        waiting = tuple(t.workload.id for t in attempt.targets)
        own = [t.workload.id for t in attempt.targets if t.workload.tenant == entry.tenant]
        others = len(waiting) - len(own)
        named = ", ".join(own + ([f"{others} job(s) of other tenants"] if others else []))
        reason = (
            f"waiting for {len(waiting)} preempted workload(s) to terminate ({named}); "
            f"admitted once their pods are gone (grace until "
            f"{max(evict_by).isoformat()})"
        )
        self.failures[entry.id] = _Failure.of(PendingCode.WAITING_FOR_PREEMPTED, reason, waiting)

    def _hold(
        self, entry: PendingWorkload, outcome: PlacementOutcome, victims: list[RunningWorkload]
    ) -> None:
        """Hold ``outcome`` for the waiting ``entry`` until the cycle ends (devices and
        charges, on top of its still running victims) and record the victims."""
        for workload in victims:
            self.victims.setdefault(workload.id, workload)
        self._hold_undo.append(self.placer.reserve(entry, outcome))
        self.tree.add(entry.tenant, outcome.charges)
        self._hold_undo.append(lambda: self.tree.remove(entry.tenant, outcome.charges))
        self.version += 1

    # -- phase 5: verdicts ------------------------------------------------------------------------

    def _phase5_verdicts(
        self, queues: Mapping[str, list[PendingWorkload]]
    ) -> tuple[PendingVerdict, ...]:
        admitted = {a.workload_id for a in self.admitted}
        verdicts = []
        for name in sorted(queues):
            waiting = [e for e in queues[name] if e.id not in admitted]
            for position, entry in enumerate(waiting, start=1):
                failure = self.failures.get(entry.id) or _Failure.of(
                    PendingCode.BLOCKED_BY_HEAD,
                    f"queue {name} is StrictFIFO and its head {self.blocked_by[name]} is not "
                    f"admitted",
                )
                verdicts.append(
                    PendingVerdict(
                        workload_id=entry.id,
                        tenant=entry.tenant,
                        queue=name,
                        position=position,
                        code=failure.code,
                        reason=failure.causes[0].text,
                        details=tuple(c.text for c in failure.causes[1:]),
                        waiting_for=failure.waiting_for,
                        rejected=failure.rejected,
                        causes=failure.causes,
                    )
                )
        return tuple(verdicts)


def _rejection_lines(tenant: str, rejected: tuple[RejectedCandidate, ...]) -> list[str]:
    """Detail lines: the preemptor's own tenant's candidates by id and rule; other tenants'
    counted per rule kind (never naming them)."""
    mine = [r for r in rejected if r.tenant == tenant]
    own = [f"preemption: {r.workload_id} rejected: {r.rule}" for r in mine[:MAX_DETAIL_LINES]]
    kinds: Counter[str] = Counter()
    for rule, count in Counter(r.rule for r in rejected if r.tenant != tenant).items():
        kinds[rule.split(":", 1)[0]] += count  # RejectedCandidate.kind, once per rule
    lines = own
    if len(mine) > MAX_DETAIL_LINES:
        lines.append(f"preemption: and {len(mine) - MAX_DETAIL_LINES} more of tenant {tenant}")
    if kinds:
        parts = ", ".join(f"{kind} x{count}" for kind, count in sorted(kinds.items()))
        lines.append(f"preemption: {sum(kinds.values())} job(s) of other tenants rejected: {parts}")
    return lines
