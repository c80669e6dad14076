"""One admission cycle for one resource group, shaped like Kueue's scheduler cycle
(kubernetes-sigs/kueue ``pkg/scheduler/scheduler.go``), with numbered phases:

1. **Queue heads.** Each queue is sorted by priority (higher first), then ``created_at``,
   then id. Every round takes the current head of every queue that is not blocked.
   A ``StrictFIFO`` queue whose head is not admitted is blocked for the rest of the cycle;
   a ``BestEffortFIFO`` queue lets the next job try in the next round.
2. **Nominate.** Each head is placed tentatively (injected :class:`Placer`) to learn its
   exact charges, and classified as borrowing or not.
3. **Order (fair sharing).** Heads that fit in their tenant's nominal quota go first, then
   borrowing heads by lowest weighted dominant share after admission (Kueue fair sharing;
   with ``fair_sharing=False`` by priority only), then priority, ``created_at`` and id.
4. **Admit.** In that order, against the shrinking state:
   a. gang fit: all pods placed and every dimension within quota (with borrowing from the
      cohort within borrowing/lending limits and aggregate caps) -> admitted atomically;
   b. partial gang: fewer pods, down to ``min_pod_count``, without preemption;
   c. preemption: victims are taken greedily, first lower-priority jobs of the same tenant,
      then (only when the job then fits within its tenant's nominal quota, and after
      ``preemption_delay_s``) jobs of tenants borrowing in a needed flavor, highest dominant
      share first, never taking a victim's tenant below its nominal quota in a dimension it
      borrows. Jobs inside their minimum runtime, non-preemptible jobs and jobs admitted in
      this cycle are never victims. The set is then minimised (Kueue fill-back: re-add
      victims in reverse order and keep out only the needed ones). Victims are removed from
      the quota state and the placer *before* the next candidate is tried, so two reclaims
      in one cycle cannot count the same freed capacity twice.
5. **Verdicts.** Every job left pending gets its queue position and a reason naming the
   blocking dimension, quota and level.

Ties are broken by workload id, so a cycle is deterministic for a given snapshot and placer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from fractions import Fraction

from scheduling.admission.placer import PlacementOutcome, Placer, Undo
from scheduling.admission.quota import QuotaTree, ShareKey, fr_sort_key
from scheduling.admission.types import (
    Admission,
    AdmissionInputError,
    AdmissionSnapshot,
    CycleConfig,
    CycleResult,
    Dimension,
    FlavorResource,
    GroupKind,
    PendingCode,
    PendingVerdict,
    PendingWorkload,
    Preemption,
    PreemptionReason,
    QueueingStrategy,
    RunningWorkload,
)

_NO_SHARE: ShareKey = (0, Fraction(0))


def run_cycle(
    snapshot: AdmissionSnapshot,
    placer: Placer,
    config: CycleConfig | None = None,
) -> CycleResult:
    """Run one admission cycle (see the module docstring for the phases).

    Args:
        snapshot: frozen quotas, tenants, queues, pending and running workloads, and ``now``.
        placer: tentative placement on the caller's working copy of the cluster; it is left
            with the admissions booked and the victims removed.
        config: cycle knobs (defaults: no preemption delay, 30 s grace, fair sharing on).

    Returns:
        The admitted jobs (with placement token and charges), the preemptions, and one
        pending verdict per job not admitted.

    Raises:
        AdmissionInputError: the snapshot is inconsistent (nothing is changed).
    """
    return AdmissionCycle(snapshot, placer, config or CycleConfig()).run()


@dataclass(slots=True)
class _Victim:
    workload: RunningWorkload
    reason: PreemptionReason
    message: str
    undo: Undo


class AdmissionCycle:
    """State of one cycle; use :func:`run_cycle` unless you need :meth:`rollback`.

    Args:
        snapshot: the cycle input.
        placer: the placement port.
        config: cycle knobs.

    Raises:
        AdmissionInputError: the snapshot is inconsistent.
    """

    def __init__(self, snapshot: AdmissionSnapshot, placer: Placer,
                 config: CycleConfig) -> None:
        validate_snapshot(snapshot)
        self.snapshot = snapshot
        self.placer = placer
        self.config = config
        self.now = snapshot.now
        self.tree = QuotaTree(snapshot.group, snapshot.tenants, snapshot.quotas, snapshot.caps)
        self.running: dict[str, RunningWorkload] = {}
        for workload in sorted(snapshot.running, key=lambda w: w.id):
            self.running[workload.id] = workload
            self.tree.add(workload.tenant, workload.charges)
        self.strategies = {q.name: q.strategy for q in snapshot.queues}
        self.admitted: list[Admission] = []
        self.preempted: list[Preemption] = []
        self.failures: dict[str, tuple[PendingCode, str, tuple[str, ...]]] = {}
        self.blocked_by: dict[str, str] = {}
        self._undo_log: list[Undo] = []

    # -- driver -----------------------------------------------------------------------------------

    def run(self) -> CycleResult:
        """Run phases 1-5 once and return the result."""
        queues = self._phase1_queue_lists()
        cursor = dict.fromkeys(queues, 0)
        while True:
            heads = [
                queues[name][cursor[name]] for name in sorted(queues)
                if name not in self.blocked_by and cursor[name] < len(queues[name])
            ]
            if not heads:
                break
            for entry in self._phase3_order(heads):
                admitted = self._phase4_admit(entry)
                if not admitted and self.strategies[entry.queue] == QueueingStrategy.STRICT_FIFO:
                    self.blocked_by[entry.queue] = entry.id
                cursor[entry.queue] += 1
        return CycleResult(
            admitted=tuple(self.admitted),
            preempted=tuple(self.preempted),
            pending=self._phase5_verdicts(queues),
            usage={t: u for t in self.tree.tenant_names() if (u := self.tree.own_usage(t))},
        )

    def rollback(self) -> None:
        """Undo every booking and removal this cycle made on the placer (dry runs)."""
        while self._undo_log:
            self._undo_log.pop()()

    # -- phase 1: queue heads ---------------------------------------------------------------------

    def _phase1_queue_lists(self) -> dict[str, list[PendingWorkload]]:
        queues: dict[str, list[PendingWorkload]] = {q.name: [] for q in self.snapshot.queues}
        for entry in self.snapshot.pending:
            queues[entry.queue].append(entry)
        for entries in queues.values():
            entries.sort(key=lambda e: (-e.priority, e.created_at, e.id))
        return queues

    # -- phases 2 and 3: nominate and order -------------------------------------------------------

    def _phase2_nominate(self, entry: PendingWorkload) -> tuple[bool, ShareKey]:
        outcome = self.placer.try_place(entry, entry.pod_count)
        if not outcome.placed:
            return False, _NO_SHARE
        if self.tree.within_nominal(entry.tenant, outcome.charges):
            return False, _NO_SHARE
        return True, self.tree.dominant_share(entry.tenant, outcome.charges)

    def _phase3_order(self, heads: list[PendingWorkload]) -> list[PendingWorkload]:
        keyed = []
        for entry in heads:
            borrows, share = self._phase2_nominate(entry)
            if not self.config.fair_sharing:
                share = _NO_SHARE
            keyed.append(((borrows, share, -entry.priority, entry.created_at, entry.id), entry))
        keyed.sort(key=lambda pair: pair[0])
        return [entry for _, entry in keyed]

    # -- phase 4: admit ---------------------------------------------------------------------------

    def _fits(self, entry: PendingWorkload, outcome: PlacementOutcome) -> bool:
        return outcome.placed and not self.tree.check_fit(
            entry.tenant, outcome.charges, allow_borrowing=entry.preemptible)

    def _phase4_admit(self, entry: PendingWorkload) -> bool:
        # 4a. the whole gang, no preemption
        full = self.placer.try_place(entry, entry.pod_count)
        blocks = self.tree.check_fit(entry.tenant, full.charges,
                                     allow_borrowing=entry.preemptible) if full.placed else []
        if full.placed and not blocks:
            self._admit(entry, full, [])
            return True
        # 4b. a partial gang down to min_pod_count, no preemption
        if entry.min_pod_count is not None:
            for count in range(entry.pod_count - 1, entry.min_pod_count - 1, -1):
                partial = self.placer.try_place(entry, count)
                if self._fits(entry, partial):
                    self._admit(entry, partial, [])
                    return True
        # 4c. preemption for the whole gang
        exceeds = [b for b in blocks if b.exceeds_max]
        details: list[str] = []
        if not exceeds:
            found = self._preempt(entry, full, details)
            if found is not None:
                self._admit(entry, found[0], found[1])
                return True
        if not full.placed:
            code, reason = PendingCode.UNSCHEDULABLE, f"unschedulable: {full.reason}"
        elif exceeds:
            code, reason = PendingCode.EXCEEDS_MAX_QUOTA, exceeds[0].text
        else:
            code, reason = PendingCode.WAITING_FOR_QUOTA, blocks[0].text
        others = tuple(b.text for b in blocks if b.text != reason)
        self.failures[entry.id] = (code, reason, others + tuple(details))
        return False

    def _admit(self, entry: PendingWorkload, outcome: PlacementOutcome,
               victims: list[_Victim]) -> None:
        for victim in victims:
            self._undo_log.append(victim.undo)
            del self.running[victim.workload.id]
            self.preempted.append(Preemption(
                victim_id=victim.workload.id, victim_tenant=victim.workload.tenant,
                preemptor_id=entry.id, preemptor_tenant=entry.tenant,
                reason=victim.reason, message=victim.message, at=self.now,
                evict_by=self.now + timedelta(seconds=self.config.termination_grace_s),
            ))
        self._undo_log.append(self.placer.reserve(entry, outcome))
        self.tree.add(entry.tenant, outcome.charges)
        borrowing = any(
            self.tree.usage(entry.tenant, fr) > self.tree.nominal(entry.tenant, fr)
            for fr in _managed_keys(outcome.charges, self.tree, entry.tenant)
        )
        self.admitted.append(Admission(
            workload_id=entry.id, tenant=entry.tenant, queue=entry.queue,
            pod_count=outcome.pod_count, charges=dict(outcome.charges),
            placement=outcome.token, borrowing=borrowing,
            preemptible=entry.preemptible or self.snapshot.group.kind == GroupKind.ELASTIC,
            waits_for=tuple(v.workload.id for v in victims), order=len(self.admitted),
        ))

    # -- phase 4c: preemption ---------------------------------------------------------------------

    def _preemptible(self, workload: RunningWorkload) -> bool:
        return workload.preemptible or self.snapshot.group.kind == GroupKind.ELASTIC

    def _protected_until(self, workload: RunningWorkload) -> str | None:
        until = workload.started_at + timedelta(seconds=workload.min_runtime_s)
        return until.isoformat() if self.now < until else None

    def _preempt(self, entry: PendingWorkload, nominated: PlacementOutcome,
                 details: list[str]) -> tuple[PlacementOutcome, list[_Victim]] | None:
        needed = {fr[0] for fr, a in nominated.charges.items() if a > 0} \
            if nominated.placed else None
        may_reclaim = not nominated.placed or self.tree.within_nominal(
            entry.tenant, nominated.charges)
        same, reclaim = self._candidates(entry, needed, may_reclaim, details)
        chosen: list[_Victim] = []

        def done(outcome: PlacementOutcome, victims: list[_Victim]) -> bool:
            if not self._fits(entry, outcome):
                return False
            uses_reclaim = any(v.reason == PreemptionReason.RECLAIM_WITHIN_COHORT for v in victims)
            return not uses_reclaim or self.tree.within_nominal(entry.tenant, outcome.charges)

        success = False
        for workload, kind in [(w, PreemptionReason.IN_TENANT) for w in same] + [
            (w, PreemptionReason.RECLAIM_WITHIN_COHORT) for w in reclaim
        ]:
            if kind == PreemptionReason.IN_TENANT:
                message = (f"preempted by {entry.id} (priority {entry.priority} > "
                           f"{workload.priority}) in tenant {entry.tenant}")
            else:
                found = self._reclaim_message(entry, workload, needed)
                if found is None:
                    continue
                message = found
            chosen.append(self._remove(workload, kind, message))
            if done(self.placer.try_place(entry, entry.pod_count), chosen):
                success = True
                break
        if not success:
            for victim in reversed(chosen):
                self._restore(victim)
            if chosen:
                details.append(f"preemption: evicting all {len(chosen)} eligible victim(s) "
                               f"would not make it fit")
            elif not any(d.startswith("preemption:") for d in details):
                details.append("preemption: no eligible victims")
            return None
        # Minimise (Kueue fill-back): try to keep every victim but the last one added.
        for index in range(len(chosen) - 2, -1, -1):
            victim = chosen.pop(index)
            self._restore(victim)
            if done(self.placer.try_place(entry, entry.pod_count), chosen):
                continue
            chosen.insert(index, self._remove(victim.workload, victim.reason, victim.message))
        return self.placer.try_place(entry, entry.pod_count), chosen

    def _candidates(self, entry: PendingWorkload, needed: set[str] | None, may_reclaim: bool,
                    details: list[str]) -> tuple[list[RunningWorkload], list[RunningWorkload]]:
        same: list[RunningWorkload] = []
        reclaim: list[RunningWorkload] = []
        waited = (self.now - entry.created_at).total_seconds()
        delay = self.config.preemption_delay_s
        reclaim_open = waited >= delay and may_reclaim
        for workload in self.running.values():
            if not self._preemptible(workload):
                continue
            if needed is not None and not any(
                    fr[0] in needed and a > 0 for fr, a in workload.charges.items()):
                continue
            is_same = workload.tenant == entry.tenant
            if is_same and workload.priority >= entry.priority:
                continue
            if not is_same and not reclaim_open:
                continue
            until = self._protected_until(workload)
            if until is not None:
                # another tenant's job is never named to this job's tenant
                who = (f"{workload.id} (tenant {workload.tenant})" if is_same
                       else "a job of another tenant")
                details.append(f"preemption: {who} is protected by its minimum runtime "
                               f"until {until}")
                continue
            (same if is_same else reclaim).append(workload)
        if not may_reclaim:
            details.append(f"preemption: reclaim from other tenants needs the job to fit in "
                           f"tenant {entry.tenant}'s nominal quota")
        elif not reclaim_open:
            details.append(f"preemption: reclaim from other tenants waits for the preemption "
                           f"delay ({waited:g}s of {delay:g}s)")
        same.sort(key=lambda w: (w.priority, -w.started_at.timestamp(), w.id))
        if self.config.fair_sharing:
            shares = {t: self.tree.dominant_share(t) for t in {w.tenant for w in reclaim}}
            reclaim.sort(key=lambda w: (_negate(shares[w.tenant]), w.priority,
                                        -w.started_at.timestamp(), w.id))
        else:
            reclaim.sort(key=lambda w: (w.priority, -w.started_at.timestamp(), w.id))
        return same, reclaim

    def _reclaim_message(self, entry: PendingWorkload, workload: RunningWorkload,
                         needed: set[str] | None) -> str | None:
        """Message when ``workload`` may be reclaimed now, else None.

        Its tenant must borrow in a needed flavor where the victim holds charges, and must
        stay at or above nominal in every dimension it borrows (YuniKorn preemption law:
        a victim's queue never drops below its guarantee).
        """
        tenant = workload.tenant
        borrowed = [
            fr for fr in self.tree.borrowing_resources(tenant)
            if workload.charges.get(fr, 0) > 0 and (needed is None or fr[0] in needed)
        ]
        if not borrowed:
            return None
        for fr in borrowed:
            if self.tree.usage(tenant, fr) - workload.charges.get(fr, 0) < \
                    self.tree.nominal(tenant, fr):
                return None
        fr = borrowed[0]
        return (f"reclaimed by tenant {entry.tenant} for {entry.id}: tenant {tenant} borrows "
                f"{fr[0]} {fr[1].value} (usage {self.tree.usage(tenant, fr)} > nominal "
                f"{self.tree.nominal(tenant, fr)})")

    def _remove(self, workload: RunningWorkload, reason: PreemptionReason,
                message: str) -> _Victim:
        undo = self.placer.remove(workload.id)
        self.tree.remove(workload.tenant, workload.charges)
        return _Victim(workload, reason, message, undo)

    def _restore(self, victim: _Victim) -> None:
        victim.undo()
        self.tree.add(victim.workload.tenant, victim.workload.charges)

    # -- phase 5: verdicts ------------------------------------------------------------------------

    def _phase5_verdicts(self, queues: Mapping[str, list[PendingWorkload]]
                         ) -> tuple[PendingVerdict, ...]:
        admitted = {a.workload_id for a in self.admitted}
        verdicts = []
        for name in sorted(queues):
            waiting = [e for e in queues[name] if e.id not in admitted]
            for position, entry in enumerate(waiting, start=1):
                if entry.id in self.failures:
                    code, reason, details = self.failures[entry.id]
                else:
                    code = PendingCode.BLOCKED_BY_HEAD
                    reason = (f"queue {name} is StrictFIFO and its head "
                              f"{self.blocked_by[name]} is not admitted")
                    details = ()
                verdicts.append(PendingVerdict(
                    workload_id=entry.id, tenant=entry.tenant, queue=name, position=position,
                    code=code, reason=reason, details=details,
                ))
        return tuple(verdicts)


def _negate(share: ShareKey) -> tuple[int, Fraction]:
    return (-share[0], -share[1])


def _managed_keys(charges: Mapping[FlavorResource, int], tree: QuotaTree, tenant: str
                  ) -> list[FlavorResource]:
    managed = tree.managed_for(tenant)
    keys = [(fr[0], Dimension(fr[1])) for fr, a in charges.items() if a > 0]
    return sorted((k for k in keys if k in managed), key=fr_sort_key)


def validate_snapshot(snapshot: AdmissionSnapshot) -> None:
    """Check cross-references and values of ``snapshot``.

    Raises:
        AdmissionInputError: naive ``now``/``created_at``/``started_at``; unknown or
            duplicate queue, tenant or workload ids; a pending job whose tenant differs from
            its queue's; bad pod counts; negative charges, runtimes or unknown flavors.
    """
    if snapshot.now.tzinfo is None:
        raise AdmissionInputError("snapshot.now must be timezone-aware")
    tenants = {t.name for t in snapshot.tenants}
    flavors = {f.name for f in snapshot.group.flavors}
    queue_tenant: dict[str, str] = {}
    for queue in snapshot.queues:
        if queue.name in queue_tenant:
            raise AdmissionInputError(f"duplicate queue {queue.name!r}")
        if queue.tenant not in tenants:
            raise AdmissionInputError(f"queue {queue.name!r}: unknown tenant {queue.tenant!r}")
        if queue.strategy not in QueueingStrategy.__members__.values():
            raise AdmissionInputError(f"queue {queue.name!r}: unknown strategy {queue.strategy!r}")
        queue_tenant[queue.name] = queue.tenant
    ids: set[str] = set()
    for entry in snapshot.pending:
        where = f"pending workload {entry.id!r}"
        if entry.id in ids:
            raise AdmissionInputError(f"{where}: duplicate id")
        ids.add(entry.id)
        if entry.queue not in queue_tenant:
            raise AdmissionInputError(f"{where}: unknown queue {entry.queue!r}")
        if queue_tenant[entry.queue] != entry.tenant:
            raise AdmissionInputError(
                f"{where}: tenant {entry.tenant!r} differs from queue tenant "
                f"{queue_tenant[entry.queue]!r}")
        if entry.created_at.tzinfo is None:
            raise AdmissionInputError(f"{where}: created_at must be timezone-aware")
        if entry.pod_count < 1:
            raise AdmissionInputError(f"{where}: pod_count must be >= 1")
        if entry.min_pod_count is not None and not 1 <= entry.min_pod_count <= entry.pod_count:
            raise AdmissionInputError(f"{where}: min_pod_count must be in [1, pod_count]")
    for workload in snapshot.running:
        where = f"running workload {workload.id!r}"
        if workload.id in ids:
            raise AdmissionInputError(f"{where}: duplicate id")
        ids.add(workload.id)
        if workload.tenant not in tenants:
            raise AdmissionInputError(f"{where}: unknown tenant {workload.tenant!r}")
        if workload.started_at.tzinfo is None:
            raise AdmissionInputError(f"{where}: started_at must be timezone-aware")
        if workload.min_runtime_s < 0:
            raise AdmissionInputError(f"{where}: min_runtime_s must be >= 0")
        for (flavor, dim), amount in workload.charges.items():
            if flavor not in flavors:
                raise AdmissionInputError(f"{where}: charge on unknown flavor {flavor!r}")
            if dim not in Dimension.__members__.values():
                raise AdmissionInputError(f"{where}: unknown dimension {dim!r}")
            if amount < 0:
                raise AdmissionInputError(f"{where}: negative charge on {flavor}/{dim}")

