"""The admission cycle of one resource group: the only code that joins the two pure cores.

Phases (Kueue's ``Scheduler.schedule`` shape; the decision itself is
:func:`scheduling.admission.run_cycle`):
  1. take the group's advisory lock (single-flight; another worker's cycle → skip);
  2. settle the stored usage of placements released since the last cycle (a transaction of
     its own under the same lock, so the cycle's transaction locks usage rows last);
  3. take the queue heads (queued jobs by priority, then age; up to ``ADMISSION_BATCH``; less
     the inadmissible set, :mod:`scheduling.selectors.inadmissible`) and build the snapshots
     (cluster with every live booking, quotas, caps, running jobs); a job moved by
     consolidation is pinned to the target its plan chose while that target still fits
     (:mod:`scheduling.services.consolidation_pins`; outcome and event written after the
     commit's job-lock round);
  4. run the pure admission core with a :class:`~scheduling.selectors.admission.DbPlacer`
     (placement core on the cluster snapshot): admissions, preemptions, pending verdicts;
  5. commit, in one transaction: lock the admitted jobs and the victims, the victims'
     booked placements, then every node and device the admissions touch (the lock order of
     ``core.locks.LOCK_ORDER``, pk order in each table);
     issue the preemptions (:func:`scheduling.services.eviction.evict`: victims' pods
     deleted with the grace period, their placements ``terminating`` so their devices and
     quota stay booked until the pods are gone; victim requeued or failed per its policy; a
     ``Preemption`` row and a ``JobEvent``) - the preemptor is not admitted in this cycle
     but waits (Kueue "preempt now, admit after the victims are gone"); re-check device/node
     capacity against committed bookings (terminating ones included) in memory, then write
     every accepted admission in bulk - one conditional UPDATE queued → admitted, one INSERT
     each of placements, placement devices, MIG instances and events, a number of queries
     independent of the number of admissions (:mod:`scheduling.services.admission_commit`);
     charge the stored usage (``QuotaUsage`` rows locked in a fixed order); store pending
     reasons, who waits for preempted workloads and who holds a starvation reservation;
  6. after commit, enqueue the submission of the admitted jobs;
  7. consolidation (groups with it on): jobs left ``Unschedulable`` only by fragmentation get
     room by moving opted-in jobs (:mod:`scheduling.services.consolidation`, own transaction).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import OperationalError, transaction
from django.db.models import Case, JSONField, Value, When
from django.utils import timezone

from core.locks import ADMISSION_CYCLE, try_xact_lock
from scheduling.admission import (
    Admission,
    CauseKind,
    CycleConfig,
    CycleResult,
    PendingCause,
    PreemptionTarget,
    run_cycle,
)
from scheduling.choices import JobState
from scheduling.dispatch import enqueue_submit_jobs
from scheduling.models import Job
from scheduling.selectors.admission import AdmissionContext, build_admission_snapshot, queued_jobs
from scheduling.selectors.cycle_gate import clear_blocked, mark_blocked
from scheduling.selectors.inadmissible import inadmissible_ids, set_aside
from scheduling.services.admission_commit import (
    LEFT_QUEUE,
    Bookings,
    Capacity,
    UsageDeltas,
    accept,
    bookings_of,
    decision_of,
    write_admissions,
)
from scheduling.services.consolidation import consolidate
from scheduling.services.consolidation_pins import pin_moved_jobs, record_pins
from scheduling.services.devices import flag_device_models
from scheduling.services.estimates import record_starts
from scheduling.services.eviction import evict
from scheduling.services.locking import lock_booked_placements, lock_jobs
from scheduling.services.usage import settle_released_usage
from scheduling.signals import admission_cycle_finished
from tenants import services as tenant_services
from tenants.models import ResourceGroup

logger = logging.getLogger(__name__)


@dataclass
class CycleReport:
    """What one cycle did.

    Attributes:
        group_id: the resource group.
        locked_out: True when another cycle of the group held the lock (nothing done).
        considered: number of queue heads examined.
        admitted: ids of jobs admitted (placements reserved), in admission order.
        preempted: ids of the victims evicted.
        moved: ids of the jobs moved by consolidation (step 7).
        pending: ``{job id: reason}`` for heads left queued.
        more: True when the batch was full, so another cycle should follow.
        duration_s: wall time of the cycle in seconds.
    """

    group_id: int
    locked_out: bool = False
    considered: int = 0
    admitted: list[int] = field(default_factory=list)
    preempted: list[int] = field(default_factory=list)
    moved: list[int] = field(default_factory=list)
    pending: dict[int, str] = field(default_factory=dict)
    more: bool = False
    duration_s: float = 0.0


def cycle_config() -> CycleConfig:
    """The cycle knobs from settings (``ADMISSION_PREEMPTION_DELAY_S``,
    ``ADMISSION_TERMINATION_GRACE_S``, ``ADMISSION_FAIR_SHARING``)."""
    return CycleConfig(
        preemption_delay_s=settings.ADMISSION_PREEMPTION_DELAY_S,
        termination_grace_s=settings.ADMISSION_TERMINATION_GRACE_S,
        fair_sharing=settings.ADMISSION_FAIR_SHARING,
    )


def _preempt(
    result: CycleResult, ctx: AdmissionContext, now: datetime, report: CycleReport
) -> None:
    """Issue the preemptions of preemptors still queued (locked until commit). The victims'
    placements become terminating: they keep their devices and quota until their pods are
    gone, and the preemptors stay queued, waiting for them."""
    by_preemptor: dict[str, list[PreemptionTarget]] = {}
    for preemption in result.preempted:
        by_preemptor.setdefault(preemption.preemptor_id, []).append(preemption)
    ids = [ctx.jobs[pid].pk for pid in by_preemptor]
    states = dict(Job.objects.filter(pk__in=ids).values_list("pk", "state")) if ids else {}
    for preemptor_id, preemptions in by_preemptor.items():
        job = ctx.jobs[preemptor_id]
        if states.get(job.pk) != JobState.QUEUED:
            report.pending[job.pk] = LEFT_QUEUE
            continue
        for preemption in preemptions:
            if evict(preemption, job, now):
                report.preempted.append(int(preemption.victim_id))


def _commit_admissions(
    admissions: list[Admission],
    ctx: AdmissionContext,
    bookings: dict[str, Bookings],
    capacity: Capacity,
    now: datetime,
    report: CycleReport,
) -> UsageDeltas:
    """Re-check the admissions under the capacity locks and write the accepted ones in bulk
    (:mod:`scheduling.services.admission_commit`); returns the usage deltas to charge."""
    accepted, refused = accept(admissions, ctx, bookings, capacity)
    report.pending.update(refused)
    admitted, deltas = write_admissions(accepted, ctx, now, report.group_id)
    record_starts(admitted, now)  # calibration of the start estimates (issue 30)
    report.admitted.extend(admitted)
    return deltas


def _commit(result: CycleResult, ctx: AdmissionContext, now: datetime, report: CycleReport) -> None:
    admissions = list(result.admitted)
    bookings = {a.workload_id: bookings_of(decision_of(a), ctx.index) for a in admissions}
    # lock order (core.locks.LOCK_ORDER): jobs, their placements, nodes, devices. Every
    # job row this transaction writes is locked in this one ascending round: the heads
    # (admitted, preemptors, and the pending ones whose verdicts and marks are stored after
    # the capacity locks) and the victims; a second round could wait on a lower job while
    # holding a higher one (a deadlock with another round-taker)
    victim_ids = {int(p.victim_id) for p in result.preempted}
    head_ids = {job.pk for job in ctx.jobs.values()}
    lock_jobs(head_ids | {int(a.workload_id) for a in admissions} | victim_ids)
    lock_booked_placements(victim_ids)
    capacity = Capacity.lock(bookings.values())
    _preempt(result, ctx, now, report)
    capacity.refresh()  # terminating victims still book their devices
    deltas = _commit_admissions(admissions, ctx, bookings, capacity, now, report)
    tenant_services.apply_usage_deltas(deltas)


def _wake_at(result: CycleResult, now):
    """When a blocked group should be looked at again without any event: the earliest
    expected start of a starvation reservation (None = only the usual recheck)."""
    starts = [
        r.expected_start
        for r in result.reservations
        if r.expected_start is not None and r.expected_start > now
    ]
    return min(starts, default=None)


def _store_marks(result: CycleResult, ctx: AdmissionContext, now) -> None:
    """Persist who waits for preempted workloads (``preempting_since``: Kueue's sticky
    preemptor head) and who holds a starvation reservation (``reserving_since``)."""
    waiting = {int(v.workload_id) for v in result.pending if v.waiting_for}
    reserving = {int(r.workload_id): r.since for r in result.reservations}
    pending_ids = [int(v.workload_id) for v in result.pending]
    queued = Job.objects.filter(pk__in=pending_ids, state=JobState.QUEUED)
    queued.filter(pk__in=waiting, preempting_since__isnull=True).update(preempting_since=now)
    queued.exclude(pk__in=waiting).exclude(preempting_since=None).update(preempting_since=None)
    for job_id, since in sorted(reserving.items()):
        queued.filter(pk=job_id).exclude(reserving_since=since).update(reserving_since=since)
    queued.exclude(pk__in=list(reserving)).exclude(reserving_since=None).update(
        reserving_since=None
    )


def _store_verdicts(result: CycleResult, ctx: AdmissionContext, report: CycleReport) -> None:
    """Write each pending job's reason and causes (issue 30) together: the text is rendered
    from the verdict's causes; a reason the commit set (a refused admission, a job that left
    the queue) is one ``capacity`` cause with that text."""
    causes: dict[int, list[dict]] = {}
    for verdict in result.pending:
        job_id = int(verdict.workload_id)
        if job_id not in report.pending:
            report.pending[job_id] = "\n".join(c.text for c in verdict.causes)
            causes[job_id] = [c.as_dict() for c in verdict.causes]
    changed = []
    for job_id, reason in report.pending.items():
        job = ctx.jobs.get(str(job_id))
        found = causes.get(job_id) or [PendingCause(CauseKind.CAPACITY, reason).as_dict()]
        if job is not None and (job.pending_reason != reason or job.pending_causes != found):
            job.pending_reason, job.pending_causes = reason, found
            changed.append(job)
    if changed:  # one UPDATE for every changed reason, not one per job
        Job.objects.filter(pk__in=[j.pk for j in changed], state=JobState.QUEUED).update(
            pending_reason=Case(*(When(pk=j.pk, then=Value(j.pending_reason)) for j in changed)),
            pending_causes=Case(
                *(
                    When(pk=j.pk, then=Value(j.pending_causes, output_field=JSONField()))
                    for j in changed
                ),
                output_field=JSONField(),
            ),
        )


def _decide_and_commit(ctx: AdmissionContext, now: datetime, report: CycleReport) -> CycleResult:
    """Steps 4 and 5: the moved jobs among the heads pinned to their planned targets
    (:mod:`scheduling.services.consolidation_pins`), the pure core, the commit, the pins'
    outcomes, the verdicts and the marks."""
    placer = ctx.placer()
    pins = pin_moved_jobs(ctx, placer)
    result = run_cycle(ctx.snapshot, placer, cycle_config())
    _commit(result, ctx, now, report)
    record_pins(pins, report.admitted)
    _store_verdicts(result, ctx, report)
    _store_marks(result, ctx, now)
    return result


def run_admission_cycle(
    group_id: int, *, batch: int | None = None, retries: int = 2
) -> CycleReport:
    """Run one admission cycle for a resource group (see the module docstring for phases).

    Idempotent and single-flight: a concurrent call for the same group returns at once with
    ``locked_out=True``. Submission tasks are enqueued only after commit. A deadlock with
    another writer (PostgreSQL aborts one side) rolls the cycle back and retries it.

    Raises:
        ResourceGroup.DoesNotExist: unknown ``group_id``.
    """
    for attempt in range(retries + 1):
        try:
            return _run(group_id, batch)
        except OperationalError as exc:
            if "deadlock" not in str(exc) or attempt == retries:
                raise
            logger.warning("admission cycle group=%s deadlock, retrying: %s", group_id, exc)
    raise AssertionError("unreachable")  # pragma: no cover


def _run(group_id: int, batch: int | None) -> CycleReport:
    started = time.monotonic()
    batch = batch or settings.ADMISSION_BATCH
    report = CycleReport(group_id=group_id)
    # 1. single flight per group; 2. settle usage of released placements in a transaction of
    # its own: stored usage rows come last in core.locks.LOCK_ORDER, after the commit's job
    # round (each placement is settled once, so a cycle of another worker in between is fine)
    with transaction.atomic():
        if not try_xact_lock(ADMISSION_CYCLE, group_id):
            report.locked_out = True
            return report
        settle_released_usage(group_id)
    with transaction.atomic():
        if not try_xact_lock(ADMISSION_CYCLE, group_id):
            report.locked_out = True
            return report
        group = ResourceGroup.objects.get(pk=group_id)
        now = timezone.now()
        # 3. heads and snapshots
        aside = inadmissible_ids(group_id)
        heads = queued_jobs(group, batch, exclude=aside)
        report.considered = len(heads)
        if not heads:
            if aside:  # every queued job is set aside: blocked until something changes
                mark_blocked(group_id, now)
            return report
        ctx = build_admission_snapshot(group, now, pending=heads)
        flag_device_models(ctx.catalogue.errors)
        result = _decide_and_commit(ctx, now, report)  # 4. the pure core, 5. commit
        newly_aside = set_aside(group_id, result, ctx.jobs, now)
        report.more = len(heads) == batch and (bool(report.admitted) or newly_aside > 0)
        if report.admitted or report.preempted:
            clear_blocked(group_id)
        elif report.pending:
            mark_blocked(group_id, now, _wake_at(result, now))
        # 6. submit after commit
        if report.admitted:
            enqueue_submit_jobs(list(report.admitted))
    report.moved = consolidate(group, ctx, result, now)  # 7. consolidation (own transaction)
    report.duration_s = time.monotonic() - started
    admission_cycle_finished.send(
        sender=run_admission_cycle,
        group_name=group.name,
        duration_s=report.duration_s,
        admitted=len(report.admitted),
        preempted=len(report.preempted),
    )
    # INFO only when the cycle changed something; a cycle that left everything pending is
    # routine (one every ADMISSION_TICK_S per blocked group)
    logger.log(
        logging.INFO if report.admitted or report.preempted else logging.DEBUG,
        "admission cycle group=%s considered=%d admitted=%d preempted=%d pending=%d in %.3fs",
        group_id,
        report.considered,
        len(report.admitted),
        len(report.preempted),
        len(report.pending),
        report.duration_s,
    )
    return report
