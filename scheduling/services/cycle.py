"""The admission cycle of one resource group: the only code that joins the two pure cores.

Phases (Kueue's ``Scheduler.schedule`` shape):
  1. take the group's advisory lock (single-flight; another worker's cycle → skip);
  2. take the queue heads (queued jobs by priority, then age; up to ``ADMISSION_BATCH``);
  3. build the snapshots (inventory + usage, quotas + tenant usage);
  4. for each head in order: place it (placement core), charge it (fraction-correct), check
     the tenant's quota; on success reserve it in the snapshot so later heads see it;
     a StrictFIFO queue stops at its first head that cannot be admitted;
  5. commit: lock the touched devices and nodes in pk order, re-check their capacity against
     committed bookings, create placements, move jobs queued → admitted with a conditional
     UPDATE; record pending reasons;
  6. after commit, enqueue the submission of the admitted jobs.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from console.core.locks import ADMISSION_CYCLE, try_xact_lock
from scheduling.accounting import (
    Charges,
    add_charges,
    booking_charges,
    collapse_pod_bookings,
)
from scheduling.choices import BOOKED_PLACEMENT_STATES, JobState, QueueStrategy
from scheduling.models import Device, Job, JobEvent, Node, Placement, PlacementDevice
from scheduling.placement import place, reserve
from scheduling.placement.types import Decision
from scheduling.selectors.snapshot import (
    SnapshotIndex,
    build_cluster_snapshot,
    build_placement_request,
)
from scheduling.selectors.usage import tenant_usage
from tenants.models import ANY_FLAVOR, ResourceGroup
from tenants.selectors import QuotaLimit, get_group_quotas

logger = logging.getLogger(__name__)


@dataclass
class CycleReport:
    """What one cycle did.

    Attributes:
        group_id: the resource group.
        locked_out: True when another cycle of the group held the lock (nothing done).
        considered: number of queue heads examined.
        admitted: ids of jobs admitted (placements reserved).
        pending: ``{job id: reason}`` for heads left queued.
        more: True when the batch was full, so another cycle should follow.
        duration_s: wall time of the cycle in seconds.
    """

    group_id: int
    locked_out: bool = False
    considered: int = 0
    admitted: list[int] = field(default_factory=list)
    pending: dict[int, str] = field(default_factory=dict)
    more: bool = False
    duration_s: float = 0.0


def _quota_block(
    tenant: str,
    group: str,
    limits: dict[tuple[str, str], QuotaLimit] | None,
    usage: Charges,
    charge: Charges,
) -> str | None:
    """Return why ``charge`` does not fit the tenant's quota (None when it fits).

    A flavor-specific quota caps that model; a ``"*"`` quota caps the sum over every model.
    A dimension without a row is not limited, but a tenant needs at least one quota row in
    the group to be admitted at all.
    """
    if not limits:
        return f"tenant {tenant} has no quota in group {group}"
    for (flavor, dimension), amount in sorted(charge.items()):
        for key in ((flavor, dimension), (ANY_FLAVOR, dimension)):
            limit = limits.get(key)
            if limit is None:
                continue
            if key[0] == ANY_FLAVOR:
                used = sum(v for (f, d), v in usage.items() if d == dimension)
            else:
                used = usage.get(key, 0)
            free = max(0, limit.nominal - used)
            if amount > free:
                return (
                    f"tenant {tenant}, group {group}, flavor {key[0]}, {dimension}: "
                    f"needs {amount}, free {free} of nominal {limit.nominal}"
                )
    return None


def _charges(decision: Decision, index: SnapshotIndex) -> Charges:
    total: Charges = {}
    for pod in decision.pods:
        for uuid, (mem, cores, _slots) in collapse_pod_bookings(pod).items():
            add_charges(
                total,
                booking_charges(
                    index.device_models[uuid],
                    index.device_memory_mib[uuid],
                    index.device_cores_percent[uuid],
                    mem,
                    cores,
                ),
            )
    return total


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
                        "memory_mib": g.memory_mib,
                        "cores_percent": g.cores_percent,
                    }
                    for g in c.devices
                ],
            }
            for c in pod.containers
        ],
    }


def _commit_job(job: Job, decision: Decision, index: SnapshotIndex, now) -> str | None:
    """Write one admitted job's placements; return a conflict reason instead when another
    writer booked the capacity first or the job left the queued state."""
    bookings = {pod.pod: collapse_pod_bookings(pod) for pod in decision.pods}
    device_ids = sorted({index.device_ids[u] for b in bookings.values() for u in b})
    node_ids = sorted({index.node_ids[p.node] for p in decision.pods})
    devices = {d.pk: d for d in Device.objects.select_for_update().filter(pk__in=device_ids)}
    nodes = {n.pk: n for n in Node.objects.select_for_update().filter(pk__in=node_ids)}
    booked_devices = {
        row["device_id"]: row
        for row in PlacementDevice.objects.filter(
            device_id__in=device_ids, placement__state__in=BOOKED_PLACEMENT_STATES
        )
        .values("device_id")
        .annotate(mem=Sum("memory_mib"), cores=Sum("cores_percent"), slots=Sum("slots"))
    }
    booked_nodes = {
        row["node_id"]: row
        for row in Placement.objects.filter(node_id__in=node_ids, state__in=BOOKED_PLACEMENT_STATES)
        .values("node_id")
        .annotate(cpu=Sum("cpu_milli"), mem=Sum("memory_mib"))
    }
    extra_dev: dict[int, list[int]] = {}
    extra_node: dict[int, list[int]] = {}
    for pod in decision.pods:
        nid = index.node_ids[pod.node]
        acc = extra_node.setdefault(nid, [0, 0])
        acc[0] += pod.cpu_milli
        acc[1] += pod.memory_mib
        for uuid, (mem, cores, slots) in bookings[pod.pod].items():
            acc_d = extra_dev.setdefault(index.device_ids[uuid], [0, 0, 0])
            acc_d[0] += mem
            acc_d[1] += cores
            acc_d[2] += slots
    for pk, (mem, cores, slots) in extra_dev.items():
        d, b = devices[pk], booked_devices.get(pk, {})
        if (
            (b.get("mem") or 0) + mem > d.memory_mib
            or (b.get("cores") or 0) + cores > d.cores_percent
            or (b.get("slots") or 0) + slots > d.split_count
            or not d.healthy
            or d.removed_at is not None
        ):
            return f"device {d.uuid} was booked by another cycle; retrying"
    for pk, (cpu, mem) in extra_node.items():
        n, b = nodes[pk], booked_nodes.get(pk, {})
        if (b.get("cpu") or 0) + cpu > n.cpu_milli or (b.get("mem") or 0) + mem > n.memory_mib:
            return f"node {n.name} was booked by another cycle; retrying"
    moved = Job.objects.filter(pk=job.pk, state=JobState.QUEUED).update(
        state=JobState.ADMITTED, admitted_at=now, pending_reason=""
    )
    if not moved:
        return "job left the queue during the cycle"
    for pod_index, pod in enumerate(decision.pods):
        placement = Placement.objects.create(
            job=job,
            pod_index=pod_index,
            node_id=index.node_ids[pod.node],
            cpu_milli=pod.cpu_milli,
            memory_mib=pod.memory_mib,
            assignment=_assignment_json(pod),
        )
        PlacementDevice.objects.bulk_create(
            PlacementDevice(
                placement=placement,
                device_id=index.device_ids[uuid],
                memory_mib=mem,
                cores_percent=cores,
                slots=slots,
            )
            for uuid, (mem, cores, slots) in sorted(bookings[pod.pod].items())
        )
    nodes_text = ", ".join(sorted({p.node for p in decision.pods}))
    JobEvent.objects.create(job=job, kind="admitted", message=f"placed on {nodes_text}")
    return None


def _unschedulable_reason(decision: Decision) -> str:
    if not decision.reasons:
        return "no node in the resource group"
    counts: dict[str, int] = {}
    for reason in decision.reasons.values():
        counts[reason] = counts.get(reason, 0) + 1
    parts = [f"{n} node(s): {r}" for r, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    return f"0/{len(decision.reasons)} nodes fit; " + "; ".join(parts[:5])


def run_admission_cycle(group_id: int, *, batch: int | None = None) -> CycleReport:
    """Run one admission cycle for a resource group (see the module docstring for phases).

    Idempotent and single-flight: a concurrent call for the same group returns at once with
    ``locked_out=True``. Submission tasks are enqueued only after commit.

    Raises:
        ResourceGroup.DoesNotExist: unknown ``group_id``.
    """
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
        # 2. heads
        heads = list(
            Job.objects.filter(queue__resource_group=group, state=JobState.QUEUED)
            .select_related("queue", "tenant")
            .prefetch_related("containers")
            .order_by("-priority", "created", "id")[:batch]
        )
        report.considered = len(heads)
        if not heads:
            return report
        # 3. snapshots
        snapshot, index = build_cluster_snapshot(group)
        quotas = get_group_quotas(group.pk)
        usage = tenant_usage(group.pk)
        # 4. place, charge, check quota, reserve
        blocked_queues: set[int] = set()
        chosen: list[tuple[Job, Decision]] = []
        for job in heads:
            if job.queue_id in blocked_queues:
                report.pending[job.pk] = "waiting behind the head of its StrictFIFO queue"
                continue
            decision = place(snapshot, build_placement_request(job, group))
            reason = None
            if not decision.schedulable:
                reason = _unschedulable_reason(decision)
            else:
                charge = _charges(decision, index)
                tenant_used = usage.setdefault(job.tenant_id, {})
                reason = _quota_block(
                    job.tenant.name, group.name, quotas.get(job.tenant_id), tenant_used, charge
                )
                if reason is None:
                    reserve(snapshot, decision)
                    add_charges(tenant_used, charge)
                    chosen.append((job, decision))
            if reason is not None:
                report.pending[job.pk] = reason
                if job.queue.strategy == QueueStrategy.STRICT_FIFO:
                    blocked_queues.add(job.queue_id)
        # 5. commit
        for job, decision in chosen:
            conflict = _commit_job(job, decision, index, now)
            if conflict is None:
                report.admitted.append(job.pk)
            else:
                report.pending[job.pk] = conflict
        changed = [j for j in heads if j.pk in report.pending]
        for job in changed:
            job.pending_reason = report.pending[job.pk]
        Job.objects.bulk_update(changed, ["pending_reason"])
        report.more = len(heads) == batch and bool(report.admitted)
        # 6. submit after commit
        if report.admitted:
            from scheduling.tasks import submit_jobs_task

            admitted = list(report.admitted)
            transaction.on_commit(lambda: submit_jobs_task.delay(admitted))
    report.duration_s = time.monotonic() - started
    logger.info(
        "admission cycle group=%s considered=%d admitted=%d pending=%d in %.3fs",
        group_id, report.considered, len(report.admitted), len(report.pending), report.duration_s,
    )
    return report

