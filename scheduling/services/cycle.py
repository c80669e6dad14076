"""The admission cycle of one resource group: the only code that joins the two pure cores.

Phases (Kueue's ``Scheduler.schedule`` shape; the decision itself is
:func:`scheduling.admission.run_cycle`):
  1. take the group's advisory lock (single-flight; another worker's cycle → skip);
  2. settle the stored usage of placements released since the last cycle;
  3. take the queue heads (queued jobs by priority, then age; up to ``ADMISSION_BATCH``; less
     the inadmissible set, :mod:`scheduling.selectors.inadmissible`) and build the snapshots
     (cluster with every live booking, quotas, caps, running jobs);
  4. run the pure admission core with a :class:`~scheduling.selectors.admission.DbPlacer`
     (placement core on the cluster snapshot): admissions, preemptions, pending verdicts;
  5. commit, in one transaction: lock the admitted jobs and the victims, the victims'
     booked placements, then every node and device the admissions touch (the lock order of
     :mod:`scheduling.services.locking`, pk order in each table);
     issue the preemptions (:func:`scheduling.services.eviction.evict`: victims' pods
     deleted with the grace period, their placements ``terminating`` so their devices and
     quota stay booked until the pods are gone; victim requeued or failed per its policy; a
     ``Preemption`` row and a ``JobEvent``) - the preemptor is not admitted in this cycle
     but waits (Kueue "preempt now, admit after the victims are gone"); re-check device/node
     capacity against committed bookings (terminating ones included), create the placements
     and move each admitted job queued → admitted with a conditional UPDATE; charge the
     stored usage (``QuotaUsage`` rows locked in a fixed order); store pending reasons,
     who waits for preempted workloads and who holds a starvation reservation;
  6. after commit, enqueue the submission of the admitted jobs;
  7. consolidation (groups with it on): jobs left ``Unschedulable`` only by fragmentation get
     room by moving opted-in jobs (:mod:`scheduling.services.consolidation`, own transaction).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from django.conf import settings
from django.db import OperationalError, transaction
from django.db.models import Case, Sum, Value, When
from django.utils import timezone

from core.locks import ADMISSION_CYCLE, try_xact_lock
from scheduling.accounting import collapse_pod_bookings
from scheduling.admission import (
    Admission,
    CycleConfig,
    CycleResult,
    PreemptionTarget,
    charges_for_pods,
    run_cycle,
)
from scheduling.choices import BOOKED_PLACEMENT_STATES, JobState
from scheduling.dispatch import enqueue_submit_jobs
from scheduling.models import (
    Device,
    Job,
    JobEvent,
    Node,
    Placement,
    PlacementDevice,
    PlacementMigInstance,
)
from scheduling.placement.types import Decision
from scheduling.selectors.admission import AdmissionContext, build_admission_snapshot, queued_jobs
from scheduling.selectors.cycle_gate import clear_blocked, mark_blocked
from scheduling.selectors.inadmissible import inadmissible_ids, set_aside
from scheduling.selectors.snapshot import SnapshotIndex
from scheduling.services.consolidation import consolidate
from scheduling.services.devices import flag_device_models
from scheduling.services.eviction import evict
from scheduling.services.locking import lock_booked_placements, lock_capacity_rows, lock_jobs
from scheduling.services.usage import encode_charges, settle_released_usage, usage_deltas
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


def _assignment_json(pod) -> dict:
    return {
        "pod": pod.pod,
        "node": pod.node,
        "containers": [
            {
                "name": c.name,
                "init": c.init,
                "devices": [
                    {
                        "uuid": g.uuid,
                        "type": g.type,
                        "vendor": g.vendor,
                        "model": g.model,
                        "index": g.index,
                        "memory_mib": g.memory_mib,
                        "cores_percent": g.cores_percent,
                        **(
                            {
                                "mig_profile": g.mig_profile,
                                "mig_start": g.mig_start,
                                "mig_size": g.mig_size,
                            }
                            if g.mig_start >= 0
                            else {}
                        ),
                        **({"template": g.template} if g.template else {}),
                        **({"slices": g.slices} if g.slices else {}),
                    }
                    for g in c.devices
                ],
            }
            for c in pod.containers
        ],
    }


class _Capacity:
    """Committed bookings of the devices and nodes an admission batch touches, kept up to
    date as the batch commits (so two admissions of one commit cannot overbook)."""

    def __init__(self, devices: dict[int, Device], nodes: dict[int, Node]) -> None:
        self.devices = devices
        self.nodes = nodes
        self.dev_used: dict[int, list[int]] = {}
        self.node_used: dict[int, list[int]] = {}

    def refresh(self) -> None:
        """Read the bookings of live placements (after victims were released)."""
        self.dev_used = {
            row["device_id"]: [row["mem"] or 0, row["cores"] or 0, row["slots"] or 0]
            for row in PlacementDevice.objects.filter(
                device_id__in=list(self.devices), placement__state__in=BOOKED_PLACEMENT_STATES
            )
            .values("device_id")
            .annotate(mem=Sum("memory_mib"), cores=Sum("cores_percent"), slots=Sum("slots"))
        }
        self.node_used = {
            row["node_id"]: [row["cpu"] or 0, row["mem"] or 0]
            for row in Placement.objects.filter(
                node_id__in=list(self.nodes), state__in=BOOKED_PLACEMENT_STATES
            )
            .values("node_id")
            .annotate(cpu=Sum("cpu_milli"), mem=Sum("host_memory_mib"))
        }

    def conflict(
        self, extra_dev: dict[int, list[int]], extra_node: dict[int, list[int]]
    ) -> str | None:
        for pk, (mem, cores, slots) in sorted(extra_dev.items()):
            d, used = self.devices[pk], self.dev_used.get(pk, [0, 0, 0])
            if (
                used[0] + mem > d.memory_mib
                or used[1] + cores > d.cores_percent
                or used[2] + slots > d.split_count
                or not d.healthy
                or d.cordoned
                or d.removed_at is not None
            ):
                return f"device {d.uuid} was booked by another cycle; retrying"
        for pk, (cpu, mem) in sorted(extra_node.items()):
            n, used = self.nodes[pk], self.node_used.get(pk, [0, 0])
            if used[0] + cpu > n.cpu_milli or used[1] + mem > n.host_memory_mib:
                return f"node {n.name} was booked by another cycle; retrying"
        return None

    def add(self, extra_dev: dict[int, list[int]], extra_node: dict[int, list[int]]) -> None:
        for pk, values in extra_dev.items():
            used = self.dev_used.setdefault(pk, [0, 0, 0])
            for i, v in enumerate(values):
                used[i] += v
        for pk, values in extra_node.items():
            used = self.node_used.setdefault(pk, [0, 0])
            for i, v in enumerate(values):
                used[i] += v


def _bookings(decision: Decision, index: SnapshotIndex):
    per_pod = {pod.pod: collapse_pod_bookings(pod) for pod in decision.pods}
    extra_dev: dict[int, list[int]] = {}
    extra_node: dict[int, list[int]] = {}
    for pod in decision.pods:
        acc = extra_node.setdefault(index.node_ids[pod.node], [0, 0])
        acc[0] += pod.cpu_milli
        acc[1] += pod.memory_mib
        for uuid, (mem, cores, slots) in per_pod[pod.pod].items():
            acc_d = extra_dev.setdefault(index.device_ids[uuid], [0, 0, 0])
            acc_d[0] += mem
            acc_d[1] += cores
            acc_d[2] += slots
    return per_pod, extra_dev, extra_node


def _lock_capacity(bookings) -> _Capacity:
    """Lock every node, then every device, the admissions book (their :func:`_bookings`),
    each in pk order (the lock order of :mod:`scheduling.services.locking`)."""
    device_ids, node_ids = set(), set()
    for _, extra_dev, extra_node in bookings:
        device_ids |= set(extra_dev)
        node_ids |= set(extra_node)
    nodes, devices = lock_capacity_rows(node_ids, device_ids)
    return _Capacity(devices, nodes)


def _commit_admission(
    admission: Admission,
    job: Job,
    ctx: AdmissionContext,
    bookings,
    capacity: _Capacity,
    now,
    group_id: int,
    deltas: dict,
) -> str | None:
    """Write one admitted job's placements (``bookings``: its :func:`_bookings`); return a
    conflict reason instead when another writer booked the capacity first or the job left
    the queued state."""
    decision: Decision = admission.placement
    per_pod, extra_dev, extra_node = bookings
    conflict = capacity.conflict(extra_dev, extra_node)
    if conflict is not None:
        return conflict
    moved = Job.objects.filter(pk=job.pk, state=JobState.QUEUED).update(
        state=JobState.ADMITTED,
        admitted_at=now,
        pending_reason="",
        preempting_since=None,
        reserving_since=None,
    )
    if not moved:
        return "job left the queue during the cycle"
    capacity.add(extra_dev, extra_node)
    group = ctx.flavors.group
    placements = Placement.objects.bulk_create(
        Placement(
            job=job,
            pod_index=pod_index,
            node_id=ctx.index.node_ids[pod.node],
            cpu_milli=pod.cpu_milli,
            host_memory_mib=pod.memory_mib,
            assignment=_assignment_json(pod),
            charged=True,
            charges=encode_charges(charges_for_pods([pod], ctx.devices, group)),
        )
        for pod_index, pod in enumerate(decision.pods)
    )
    PlacementDevice.objects.bulk_create(
        PlacementDevice(
            placement=placement,
            device_id=ctx.index.device_ids[uuid],
            memory_mib=mem,
            cores_percent=cores,
            slots=slots,
        )
        for placement, pod in zip(placements, decision.pods, strict=True)
        for uuid, (mem, cores, slots) in sorted(per_pod[pod.pod].items())
    )
    PlacementMigInstance.objects.bulk_create(
        PlacementMigInstance(
            placement=placement,
            device_id=ctx.index.device_ids[g.uuid],
            profile=g.mig_profile,
            start=g.mig_start,
            size=g.mig_size,
        )
        for placement, pod in zip(placements, decision.pods, strict=True)
        for c in pod.containers
        for g in c.devices
        if g.mig_profile and g.mig_start >= 0
    )
    for placement in placements:
        for key, amount in usage_deltas([(job.tenant_id, group_id, placement.charges)], +1).items():
            deltas[key] = deltas.get(key, 0) + amount
    nodes_text = ", ".join(sorted({p.node for p in decision.pods}))
    extra = (
        f" (gang {admission.pod_count}/{job.pod_count} pods)"
        if admission.pod_count != job.pod_count
        else ""
    )
    borrowing = "; borrowing from the cohort" if admission.borrowing else ""
    backfill = "; backfilled before a starvation reservation" if admission.backfill else ""
    JobEvent.objects.create(
        job=job, kind="admitted", message=f"placed on {nodes_text}{extra}{borrowing}{backfill}"
    )
    return None


def _preempt(result: CycleResult, ctx: AdmissionContext, now, report: CycleReport) -> None:
    """Issue the preemptions of preemptors still queued (locked until commit). The victims'
    placements become terminating: they keep their devices and quota until their pods are
    gone, and the preemptors stay queued, waiting for them."""
    by_preemptor: dict[str, list[PreemptionTarget]] = {}
    for preemption in result.preempted:
        by_preemptor.setdefault(preemption.preemptor_id, []).append(preemption)
    for preemptor_id, preemptions in by_preemptor.items():
        job = ctx.jobs[preemptor_id]
        if not Job.objects.select_for_update().filter(pk=job.pk, state=JobState.QUEUED).exists():
            report.pending[job.pk] = "job left the queue during the cycle"
            continue
        for preemption in preemptions:
            if evict(preemption, job, now):
                report.preempted.append(int(preemption.victim_id))


def _commit(
    result: CycleResult, ctx: AdmissionContext, group: ResourceGroup, now, report: CycleReport
) -> None:
    admissions = list(result.admitted)
    bookings = {a.workload_id: _bookings(a.placement, ctx.index) for a in admissions}
    # lock order (scheduling.services.locking): jobs, their placements, nodes, devices
    victim_ids = {int(p.victim_id) for p in result.preempted}
    lock_jobs({int(a.workload_id) for a in admissions} | victim_ids)
    lock_booked_placements(victim_ids)
    capacity = _lock_capacity(bookings.values())
    _preempt(result, ctx, now, report)
    capacity.refresh()  # terminating victims still book their devices
    deltas: dict = {}
    for admission in admissions:
        job = ctx.jobs[admission.workload_id]
        conflict = _commit_admission(
            admission, job, ctx, bookings[admission.workload_id], capacity, now, group.pk, deltas
        )
        if conflict is None:
            report.admitted.append(job.pk)
        else:
            report.pending[job.pk] = conflict
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
    for verdict in result.pending:
        reason = verdict.reason
        if verdict.details:
            reason += "\n" + "\n".join(verdict.details)
        report.pending.setdefault(int(verdict.workload_id), reason)
    changed = []
    for job_id, reason in report.pending.items():
        job = ctx.jobs.get(str(job_id))
        if job is not None and job.pending_reason != reason:
            job.pending_reason = reason
            changed.append(job)
    if changed:  # one UPDATE for every changed reason, not one per job
        Job.objects.filter(pk__in=[j.pk for j in changed], state=JobState.QUEUED).update(
            pending_reason=Case(*(When(pk=j.pk, then=Value(j.pending_reason)) for j in changed))
        )


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
    with transaction.atomic():
        # 1. single flight per group
        if not try_xact_lock(ADMISSION_CYCLE, group_id):
            report.locked_out = True
            return report
        group = ResourceGroup.objects.get(pk=group_id)
        now = timezone.now()
        # 2. settle usage of released placements
        settle_released_usage(group_id)
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
        # 4. the pure core
        result = run_cycle(ctx.snapshot, ctx.placer(), cycle_config())
        # 5. commit
        _commit(result, ctx, group, now, report)
        _store_verdicts(result, ctx, report)
        _store_marks(result, ctx, now)
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
