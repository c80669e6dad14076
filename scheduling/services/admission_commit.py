"""The bulk commit of one admission cycle's admissions (phase 5 of
:mod:`scheduling.services.cycle`).

A cycle's admissions are written with a number of queries that does not depend on how many
there are: the capacity of every node and device they book is locked once (nodes, then
devices, pk order: :mod:`scheduling.services.locking`), each admission is re-checked in memory
against the committed bookings read under those locks (plus the admissions of this batch
accepted before it), then one ``UPDATE`` moves the accepted jobs queued → admitted and one
``INSERT`` each writes their placements, placement devices, MIG instances and ``admitted``
events. The stored usage is charged once per (tenant, group, flavor, dimension) by the caller
(:func:`tenants.services.apply_usage_deltas`).

A stale cluster snapshot therefore never over-admits: an admission whose devices or node were
booked meanwhile (by another group's cycle, or by capacity the snapshot did not see) is left
queued with a "booked by another cycle; retrying" reason.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Sum

from scheduling.accounting import collapse_pod_bookings
from scheduling.admission import Admission, CauseKind, GroupKind, charges_for_pods, reason_fields
from scheduling.choices import BOOKED_PLACEMENT_STATES, JobState
from scheduling.models import Device, Job, Node, Placement, PlacementDevice, PlacementMigInstance
from scheduling.placement.codec import assignment_to_json
from scheduling.placement.types import Decision, PodAssignment
from scheduling.selectors.admission import AdmissionContext
from scheduling.selectors.snapshot import SnapshotIndex
from scheduling.services import job_life
from scheduling.services.locking import lock_capacity_rows
from scheduling.services.usage import encode_charges, usage_deltas

LEFT_QUEUE = "job left the queue during the cycle"
"""Pending reason of an admitted job that was cancelled (or moved) while the cycle ran."""

#: ``{device pk: [memory_mib, cores_percent, slots]}``
DeviceAmounts = dict[int, list[int]]
#: ``{node pk: [cpu_milli, host_memory_mib]}``
NodeAmounts = dict[int, list[int]]
#: usage deltas ``{(tenant id, group id, flavor, dimension): amount}``
UsageDeltas = dict[tuple[int, int, str, str], int]


@dataclass(frozen=True)
class Bookings:
    """What one admission books, by database id.

    Attributes:
        per_pod: ``{pod name: {device uuid: (memory_mib, cores_percent, slots)}}`` (HAMi's
            collapse rule, :func:`scheduling.accounting.collapse_pod_bookings`).
        devices: the admission's total per device pk.
        nodes: the admission's total per node pk.
    """

    per_pod: dict[str, dict[str, tuple[int, int, int]]]
    devices: DeviceAmounts
    nodes: NodeAmounts


def decision_of(admission: Admission) -> Decision:
    """The placement core's decision an admission carries (the :class:`DbPlacer` puts it
    there).

    Raises:
        TypeError: the admission came from another placer.
    """
    decision = admission.placement
    if not isinstance(decision, Decision):
        raise TypeError(f"admission {admission.workload_id}: placement is not a Decision")
    return decision


def bookings_of(decision: Decision, index: SnapshotIndex) -> Bookings:
    """The :class:`Bookings` of a placement decision (names mapped through ``index``)."""
    per_pod = {pod.pod: collapse_pod_bookings(pod) for pod in decision.pods}
    devices: DeviceAmounts = {}
    nodes: NodeAmounts = {}
    for pod in decision.pods:
        acc = nodes.setdefault(index.node_ids[pod.node], [0, 0])
        acc[0] += pod.cpu_milli
        acc[1] += pod.memory_mib
        for uuid, (mem, cores, slots) in per_pod[pod.pod].items():
            acc_d = devices.setdefault(index.device_ids[uuid], [0, 0, 0])
            acc_d[0] += mem
            acc_d[1] += cores
            acc_d[2] += slots
    return Bookings(per_pod, devices, nodes)


class Capacity:
    """Committed bookings of the devices and nodes an admission batch touches, kept up to
    date as the batch is accepted (so two admissions of one commit cannot overbook).

    Args:
        devices / nodes: the rows, locked (``SELECT … FOR UPDATE``), by pk.
    """

    def __init__(self, devices: dict[int, Device], nodes: dict[int, Node]) -> None:
        self.devices = devices
        self.nodes = nodes
        self.dev_used: DeviceAmounts = {}
        self.node_used: NodeAmounts = {}

    @classmethod
    def lock(cls, bookings: Iterable[Bookings]) -> Capacity:
        """Lock every node, then every device, that ``bookings`` book, each in pk order."""
        device_ids: set[int] = set()
        node_ids: set[int] = set()
        for b in bookings:
            device_ids |= set(b.devices)
            node_ids |= set(b.nodes)
        nodes, devices = lock_capacity_rows(node_ids, device_ids)
        return cls(devices, nodes)

    def refresh(self) -> None:
        """Read the bookings of live placements (after victims were released): two
        aggregate queries."""
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

    def conflict(self, b: Bookings) -> str | None:
        """Why ``b`` no longer fits the committed bookings (None: it fits)."""
        for pk, (mem, cores, slots) in sorted(b.devices.items()):
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
        for pk, (cpu, mem) in sorted(b.nodes.items()):
            n, used = self.nodes[pk], self.node_used.get(pk, [0, 0])
            if used[0] + cpu > n.cpu_milli or used[1] + mem > n.host_memory_mib:
                return f"node {n.name} was booked by another cycle; retrying"
        return None

    def add(self, b: Bookings) -> None:
        """Count ``b`` as booked."""
        for pk, values in b.devices.items():
            used = self.dev_used.setdefault(pk, [0, 0, 0])
            for i, v in enumerate(values):
                used[i] += v
        for pk, values in b.nodes.items():
            n_used = self.node_used.setdefault(pk, [0, 0])
            for i, v in enumerate(values):
                n_used[i] += v


@dataclass(frozen=True)
class Accepted:
    """An admission that passed the re-check, with its job and bookings."""

    admission: Admission
    job: Job
    bookings: Bookings


def accept(
    admissions: list[Admission],
    ctx: AdmissionContext,
    bookings: dict[str, Bookings],
    capacity: Capacity,
) -> tuple[list[Accepted], dict[int, str]]:
    """Re-check the admissions in order against ``capacity`` (refreshed) and the jobs' states
    (read under their row locks, one query).

    Returns:
        ``(accepted, refused)``: the admissions to write, and ``{job id: reason}`` of the
        others (capacity booked by another writer, or the job left the queued state).
    """
    ids = [ctx.jobs[a.workload_id].pk for a in admissions]
    states = dict(Job.objects.filter(pk__in=ids).values_list("pk", "state"))
    accepted: list[Accepted] = []
    refused: dict[int, str] = {}
    for admission in admissions:
        job = ctx.jobs[admission.workload_id]
        b = bookings[admission.workload_id]
        reason = capacity.conflict(b)
        if reason is None and states.get(job.pk) != JobState.QUEUED:
            reason = LEFT_QUEUE
        if reason is not None:
            refused[job.pk] = reason
            continue
        capacity.add(b)
        accepted.append(Accepted(admission, job, b))
    return accepted, refused


def write_admissions(
    accepted: list[Accepted], ctx: AdmissionContext, now: datetime, group_id: int
) -> tuple[list[int], UsageDeltas]:
    """Write the accepted admissions: one ``UPDATE`` of the jobs, one ``INSERT`` each of
    placements, placement devices, MIG instances and events (jobs locked by the caller).

    Returns:
        ``(admitted job ids in admission order, usage deltas to charge)``.
    """
    if not accepted:
        return [], {}
    ids = [a.job.pk for a in accepted]
    job_life.admit_jobs(
        ids,
        now=now,
        **reason_fields(CauseKind.POLICY, ""),
        preempting_since=None,
        reserving_since=None,
    )
    _keep_preemptible(accepted, ctx)
    rows = [
        (a, pod, _placement_row(a.job, pod_index, pod, ctx, domains))
        for a in accepted
        for pod_index, (pod, domains) in enumerate(_pods_with_domains(decision_of(a.admission)))
    ]
    Placement.objects.bulk_create([row for _, _, row in rows])
    PlacementDevice.objects.bulk_create(
        PlacementDevice(
            placement=placement,
            device_id=ctx.index.device_ids[uuid],
            memory_mib=mem,
            cores_percent=cores,
            slots=slots,
        )
        for a, pod, placement in rows
        for uuid, (mem, cores, slots) in sorted(a.bookings.per_pod[pod.pod].items())
    )
    PlacementMigInstance.objects.bulk_create(
        PlacementMigInstance(
            placement=placement,
            device_id=ctx.index.device_ids[g.uuid],
            profile=g.mig_profile,
            start=g.mig_start,
            size=g.mig_size,
        )
        for _, pod, placement in rows
        for c in pod.containers
        for g in c.devices
        if g.mig_profile and g.mig_start >= 0
    )
    job_life.record_events(
        job_life.ADMIT, {a.job.pk: admitted_message(a.admission, a.job) for a in accepted}
    )
    deltas: UsageDeltas = {}
    for a, _, placement in rows:
        charged = [(a.job.tenant_id, group_id, placement.charges)]
        for key, amount in usage_deltas(charged, +1).items():
            deltas[key] = deltas.get(key, 0) + amount
    return ids, deltas


def _keep_preemptible(accepted: list[Accepted], ctx: AdmissionContext) -> None:
    """A non-preemptible job admitted as preemptible outside an elastic group was admitted
    so under a spent budget (hard action ``preemptible``, issue 33): it stays preemptible
    while it runs (one UPDATE, none when there is no such job)."""
    forced = [a.job.pk for a in accepted if a.admission.preemptible and not a.job.preemptible]
    if forced and ctx.flavors.group.kind != GroupKind.ELASTIC:
        Job.objects.filter(pk__in=forced).update(preemptible=True)


def _pods_with_domains(decision: Decision) -> list[tuple[PodAssignment, list[str]]]:
    """Each placed pod (in rank order: ``pod_index`` is its rank) with its topology domains
    (``Decision.domains``, widest level first; [] without a topology request)."""
    domains = list(decision.domains)
    return [
        (pod, list(domains[i]) if i < len(domains) else []) for i, pod in enumerate(decision.pods)
    ]


def _placement_row(
    job: Job, pod_index: int, pod: PodAssignment, ctx: AdmissionContext, domains: list[str]
):
    return Placement(
        job=job,
        pod_index=pod_index,
        node_id=ctx.index.node_ids[pod.node],
        cpu_milli=pod.cpu_milli,
        host_memory_mib=pod.memory_mib,
        assignment=assignment_to_json(pod),
        charged=True,
        charges=encode_charges(charges_for_pods([pod], ctx.devices, ctx.flavors.group)),
        domains=domains,
    )


def admitted_message(admission: Admission, job: Job) -> str:
    """The ``admitted`` event's text: nodes, a partial gang, borrowing, backfill."""
    decision = decision_of(admission)
    nodes_text = ", ".join(sorted({p.node for p in decision.pods}))
    extra = (
        f" (gang {admission.pod_count}/{job.pod_count} pods)"
        if admission.pod_count != job.pod_count
        else ""
    )
    borrowing = "; borrowing from the cohort" if admission.borrowing else ""
    backfill = "; backfilled before a starvation reservation" if admission.backfill else ""
    return f"placed on {nodes_text}{extra}{borrowing}{backfill}"
