"""ORM → admission-core types: flavors, quota tree, pending and running workloads, and the
:class:`DbPlacer` that wires the placement core into the admission core's ``Placer`` port.

Flavor rule (documented here because quota rows name flavors as plain strings): every device
model of a resource group belongs to exactly one flavor, the most specific name used by the
group's quota rows or caps: the model name, else the model's family, else ``"*"``; a model that
no row names is its own flavor (so a job landing there gets "no quota for this flavor").
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from scheduling.admission import (
    AdmissionSnapshot,
    AggregateCap,
    Dimension,
    Flavor,
    GroupKind,
    PendingWorkload,
    PlacementOutcome,
    Queue,
    QueueingStrategy,
    Quota,
    QuotaTree,
    ResourceGroup,
    RunningWorkload,
    Tenant,
    Undo,
    Usage,
    charges_for,
    device_milli,
)
from scheduling.choices import BOOKED_PLACEMENT_STATES, JobState
from scheduling.devices.overlay import Catalogue
from scheduling.models import DeviceModel, Job, Placement, PlacementDevice
from scheduling.models import Queue as QueueModel
from scheduling.placement import place, reserve, unreserve
from scheduling.placement.profile import Framework, Profile
from scheduling.placement.types import ClusterSnapshot, Decision, PlacementRequest
from scheduling.placement.types import Device as CoreDevice
from scheduling.selectors.device_models import get_catalogue
from scheduling.selectors.snapshot import (
    SnapshotIndex,
    build_cluster_snapshot,
    build_placement_request,
    group_devices,
)
from tenants import models as tm

ANY_FLAVOR = tm.ANY_FLAVOR


def queue_key(queue) -> str:
    """Name of a queue in the admission core: ``"<tenant>/<queue>"`` (unique per group)."""
    return f"{queue.tenant.name}/{queue.name}"


# -- flavors ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupFlavors:
    """How a resource group's device models map to quota flavors.

    Attributes:
        flavor_of_model: ``{DeviceModel.name: flavor name}``.
        models: the group's device models by name.
        group: the admission core's :class:`ResourceGroup`.
    """

    flavor_of_model: dict[str, str]
    models: dict[str, DeviceModel]
    group: ResourceGroup

    def allowed_names(self) -> set[str]:
        """Names a quota row or cap of the group may use: ``"*"``, model names, families."""
        names = {ANY_FLAVOR, *self.models}
        names.update(m.family for m in self.models.values() if m.family)
        return names

    def flavors_for(self, names: list[str]) -> tuple[str, ...]:
        """Flavors covering the models named by ``names`` (model, family or ``"*"``)."""
        out = set()
        for model in self.models.values():
            family = model.family and model.family in names
            if ANY_FLAVOR in names or model.name in names or family:
                out.add(self.flavor_of_model[model.name])
        return tuple(sorted(out))


def group_models(group: tm.ResourceGroup) -> dict[str, DeviceModel]:
    """Device models of a group: its ``device_models`` list, else every model present on
    the group's devices."""
    if group.device_models:
        models = DeviceModel.objects.filter(name__in=group.device_models)
    else:
        models = DeviceModel.objects.filter(
            pk__in=group_devices(group).values("model_id")
        )
    return {m.name: m for m in models.order_by("name")}


def resolve_flavors(group: tm.ResourceGroup, *, extra_names: set[str] | None = None
                    ) -> GroupFlavors:
    """Map the group's device models to flavors (module docstring rule).

    Args:
        group: the resource group.
        extra_names: flavor names to treat as used besides the stored rows (a quota change
            being simulated).
    """
    used = set(
        tm.Quota.objects.filter(resource_group=group).values_list("flavor", flat=True)
    )
    for flavors in tm.AggregateCap.objects.filter(resource_group=group).values_list(
        "flavors", flat=True
    ):
        used.update(flavors or ())
    return _map_flavors(group, used | (extra_names or set()))


def _map_flavors(group: tm.ResourceGroup, used: set[str]) -> GroupFlavors:
    """The module docstring rule over the flavor names ``used`` by quota rows and caps."""
    models = group_models(group)
    flavor_of: dict[str, str] = {}
    for model in models.values():
        if model.name in used:
            flavor_of[model.name] = model.name
        elif model.family and model.family in used:
            flavor_of[model.name] = model.family
        elif ANY_FLAVOR in used:
            flavor_of[model.name] = ANY_FLAVOR
        else:
            flavor_of[model.name] = model.name
    by_flavor: dict[str, list[str]] = defaultdict(list)
    for model_name, flavor in flavor_of.items():
        by_flavor[flavor].append(model_name)
    core_group = ResourceGroup(
        name=group.name,
        kind=GroupKind(group.kind),
        flavors=tuple(Flavor(name, tuple(sorted(types))) for name, types in
                      sorted(by_flavor.items())),
    )
    return GroupFlavors(flavor_of, models, core_group)


# -- quota tree ---------------------------------------------------------------------------------


def build_tenants() -> tuple[Tenant, ...]:
    """Every tenant as the core's :class:`Tenant` (parents by name)."""
    return tuple(
        Tenant(name=t.name, parent=t.parent.name if t.parent else None,
               fair_share_weight=t.fair_share_weight)
        for t in tm.Tenant.objects.select_related("parent").order_by("name")
    )


def core_quota(row: tm.Quota, flavor: str) -> Quota:
    """One quota row as the core's :class:`Quota` under its resolved flavor name."""
    return Quota(tenant=row.tenant.name, flavor=flavor, dimension=Dimension(row.dimension),
                 nominal=row.nominal, borrowing_limit=row.borrowing_limit,
                 lending_limit=row.lending_limit)


def build_quotas(rows: list[tm.Quota], flavors: GroupFlavors) -> tuple[Quota, ...]:
    """The group's quota ``rows`` (``tenant`` loaded) whose flavor covers at least one model
    of the group (a row on a name no model resolves to would constrain nothing and is left
    out)."""
    live = {f.name for f in flavors.group.flavors}
    return tuple(core_quota(q, q.flavor) for q in rows if q.flavor in live)


def build_caps(rows: list[tm.AggregateCap], flavors: GroupFlavors
               ) -> tuple[AggregateCap, ...]:
    """The group's aggregate caps ``rows`` (``tenant`` loaded); a cap's names (models,
    families) become the flavors covering those models, an empty list means every flavor."""
    caps = []
    for cap in rows:
        covered = flavors.flavors_for(cap.flavors) if cap.flavors else None
        caps.append(AggregateCap(name=cap.name, tenant=cap.tenant.name,
                                 dimension=Dimension(cap.dimension), limit=cap.limit,
                                 flavors=covered))
    return tuple(caps)


def stored_usage(group: tm.ResourceGroup) -> tuple[Usage, ...]:
    """Stored ``QuotaUsage`` rows of the group as the core's :class:`Usage`."""
    return tuple(
        Usage(tenant=u.tenant.name, flavor=u.flavor, dimension=Dimension(u.dimension),
              amount=u.amount)
        for u in tm.QuotaUsage.objects.filter(resource_group=group).select_related("tenant")
        if u.amount
    )


# -- workloads ----------------------------------------------------------------------------------


@dataclass
class RunningBooking:
    """What a running job books in the cluster snapshot (from its placement rows)."""

    job_id: int
    pods: list[tuple[str, int, int, list[tuple[str, int, int, int]]]] = field(default_factory=list)
    """``[(node name, cpu_milli, memory_mib, [(uuid, memory_mib, cores_percent, slots)])]``"""


def running_workloads(group: tm.ResourceGroup, flavors: GroupFlavors, index: SnapshotIndex,
                      devices: dict[str, CoreDevice]
                      ) -> tuple[list[RunningWorkload], dict[str, RunningBooking]]:
    """Jobs of the group holding booked placements, with charges recomputed from bookings.

    Charges per device booking: ``memory_mib``, ``cores_percent`` and the dominant
    milli-device share (:func:`scheduling.admission.device_milli`), under the flavor of the
    device's model.
    """
    node_names = {pk: name for name, pk in index.node_ids.items()}
    placements = list(
        Placement.objects.filter(
            state__in=BOOKED_PLACEMENT_STATES, job__queue__resource_group=group
        ).select_related("job__tenant").order_by("job_id", "pod_index", "pk")
    )
    bookings = defaultdict(list)
    for row in PlacementDevice.objects.filter(
        placement__in=[p.pk for p in placements]
    ).select_related("device__model").order_by("placement_id", "device_id"):
        bookings[row.placement_id].append(row)
    jobs: dict[int, Job] = {}
    charges: dict[int, dict] = defaultdict(lambda: defaultdict(int))
    held: dict[str, RunningBooking] = {}
    for p in placements:
        job = p.job
        jobs[job.pk] = job
        booking = held.setdefault(str(job.pk), RunningBooking(job.pk))
        grants = []
        for b in bookings[p.pk]:
            flavor = flavors.flavor_of_model.get(b.device.model.name, b.device.model.name)
            info = devices.get(b.device.uuid) or _device_info(b.device)
            for dim, amount in (
                (Dimension.DEVICES, device_milli(b.memory_mib, b.cores_percent, info)),
                (Dimension.MEMORY_MIB, b.memory_mib),
                (Dimension.CORES_PERCENT, b.cores_percent),
            ):
                charges[job.pk][(flavor, dim)] += amount
            grants.append((b.device.uuid, b.memory_mib, b.cores_percent, b.slots))
        booking.pods.append((node_names.get(p.node_id, ""), p.cpu_milli, p.memory_mib, grants))
    live_flavors = {f.name for f in flavors.group.flavors}
    workloads = []
    for pk, job in sorted(jobs.items()):
        workloads.append(RunningWorkload(
            id=str(pk), tenant=job.tenant.name, priority=job.priority,
            started_at=job.admitted_at or job.created,
            charges={fr: a for fr, a in charges[pk].items() if fr[0] in live_flavors},
            min_runtime_s=job.min_runtime_s, preemptible=job.preemptible,
        ))
    return workloads, held


def _device_info(device) -> CoreDevice:
    return CoreDevice(uuid=device.uuid, node="", index=device.index, type=device.model.name,
                      vendor=device.model.vendor, memory_mib=device.memory_mib,
                      cores_percent=device.cores_percent)


def pending_workload(job: Job, group: tm.ResourceGroup, request: PlacementRequest | None = None
                     ) -> PendingWorkload:
    """A queued job (``containers``, ``queue__tenant`` loaded) as a :class:`PendingWorkload`."""
    return PendingWorkload(
        id=str(job.pk), tenant=job.tenant.name, queue=queue_key(job.queue),
        priority=job.priority, created_at=job.created, pod_count=job.pod_count,
        min_pod_count=job.min_pods,
        request=request if request is not None else build_placement_request(job, group),
        preemptible=job.preemptible,
    )


def queued_jobs(group: tm.ResourceGroup, limit: int | None = None) -> list[Job]:
    """Queued jobs of the group in admission order (priority, age, id), up to ``limit``."""
    jobs = (
        Job.objects.filter(queue__resource_group=group, state=JobState.QUEUED)
        .select_related("queue__tenant", "tenant")
        .prefetch_related("containers", "pod_sets")
        .order_by("-priority", "created", "id")
    )
    return list(jobs[:limit] if limit else jobs)


# -- the snapshot -------------------------------------------------------------------------------


@dataclass
class AdmissionContext:
    """Everything one cycle or dry run needs besides the frozen snapshot."""

    snapshot: AdmissionSnapshot
    flavors: GroupFlavors
    cluster: ClusterSnapshot
    index: SnapshotIndex
    devices: dict[str, CoreDevice]
    held: dict[str, RunningBooking]
    jobs: dict[str, Job]
    catalogue: Catalogue

    def placer(self) -> DbPlacer:
        """A placer over this context's cluster snapshot (shared: the cycle mutates it), with
        the placement profile built here (HAMi default policies and the device catalogue's
        resolved configs): only runs that place need it, not usage tables or quota
        simulations. A model whose config does not resolve is left out of the catalogue
        (its devices carry ``error`` in the snapshot); it never fails the run."""
        framework = Profile(device_configs=self.catalogue.configs).build()
        return DbPlacer(self.cluster, self.devices, self.flavors.group, self.held, framework)


def build_admission_snapshot(group: tm.ResourceGroup, now: datetime, *,
                             pending: list[Job] | None = None,
                             extra_flavor_names: set[str] | None = None) -> AdmissionContext:
    """Build the admission core's input for one resource group.

    Args:
        group: the resource group.
        now: cycle time (timezone-aware).
        pending: queued jobs to consider (default: none; pass :func:`queued_jobs`).
        extra_flavor_names: see :func:`resolve_flavors`.

    Returns:
        The context: frozen :class:`AdmissionSnapshot`, flavors, cluster snapshot with every
        live booking applied, device index, and the running jobs' bookings.
    """
    quota_rows = list(tm.Quota.objects.filter(resource_group=group).select_related("tenant"))
    cap_rows = list(
        tm.AggregateCap.objects.filter(resource_group=group).select_related("tenant"))
    used = {q.flavor for q in quota_rows}.union(*(c.flavors or () for c in cap_rows))
    flavors = _map_flavors(group, used | (extra_flavor_names or set()))
    catalogue = get_catalogue()
    cluster, index = build_cluster_snapshot(group, catalogue)
    devices = {d.uuid: d for node in cluster.nodes.values() for d in node.devices}
    running, held = running_workloads(group, flavors, index, devices)
    pending = pending or []
    snapshot = AdmissionSnapshot(
        group=flavors.group,
        tenants=build_tenants(),
        quotas=build_quotas(quota_rows, flavors),
        caps=build_caps(cap_rows, flavors),
        queues=tuple(
            Queue(name=queue_key(q), tenant=q.tenant.name, strategy=QueueingStrategy(q.strategy))
            for q in group_queues(group)
        ),
        pending=tuple(pending_workload(j, group) for j in pending),
        running=tuple(running),
        now=now,
        usage=stored_usage(group),
    )
    return AdmissionContext(snapshot, flavors, cluster, index, devices, held,
                            {str(j.pk): j for j in pending}, catalogue)


def group_queues(group: tm.ResourceGroup):
    """Queues of the group (tenant loaded), in a stable order."""
    return QueueModel.objects.filter(resource_group=group).select_related("tenant").order_by(
        "tenant__name", "name"
    )


# -- the placer -------------------------------------------------------------------------------


def unschedulable_reason(decision: Decision) -> str:
    """Summary of the placement core's per-node reasons (most frequent first, at most 5)."""
    if not decision.reasons:
        return "no node in the resource group"
    counts: dict[str, int] = {}
    for reason in decision.reasons.values():
        counts[reason] = counts.get(reason, 0) + 1
    parts = [f"{n} node(s): {r}" for r, n in
             sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    return f"0/{len(decision.reasons)} nodes fit; " + "; ".join(parts[:5])


class DbPlacer:
    """The admission core's ``Placer`` over the placement core and a cluster snapshot built
    from the database (``scheduling.admission.placer.Placer`` protocol).

    * ``try_place``: :func:`scheduling.placement.place` of the first ``pod_count`` pods (gang:
      all or none), charged with :func:`scheduling.admission.charges_for`; the snapshot is
      left unchanged.
    * ``reserve``: books the decision (:func:`scheduling.placement.reserve`); undo unbooks it.
    * ``remove``: unbooks a running job's placements exactly as they were booked from the
      database (``PlacementDevice`` rows, node cpu/memory); undo books them again.

    Args:
        cluster: the snapshot (mutated by reserve/remove).
        devices: ``{uuid: Device}`` of the snapshot.
        group: the core's resource group (flavors).
        held: running jobs' bookings by workload id.
        framework: the placement profile, built once per cycle (HAMi default policies with
            the device models' configs; its per-node cache lives as long as the cycle).
    """

    def __init__(self, cluster: ClusterSnapshot, devices: dict[str, CoreDevice],
                 group: ResourceGroup, held: dict[str, RunningBooking],
                 framework: Framework | None = None) -> None:
        self.cluster = cluster
        self.devices = devices
        self.group = group
        self.held = held
        self.framework = framework

    def try_place(self, workload: PendingWorkload, pod_count: int) -> PlacementOutcome:
        """Place ``pod_count`` pods of ``workload`` (its request is a PlacementRequest)."""
        request = workload.request
        if not isinstance(request, PlacementRequest):
            raise TypeError(f"workload {workload.id}: request is not a PlacementRequest")
        sub = PlacementRequest(name=request.name, pods=request.pods[:pod_count], min_pods=None)
        decision = place(self.cluster, sub, self.framework)
        if not decision.schedulable:
            return PlacementOutcome(placed=False, reason=unschedulable_reason(decision))
        return PlacementOutcome(placed=True, pod_count=pod_count, token=decision,
                                charges=charges_for(decision, self.devices, self.group))

    def reserve(self, workload: PendingWorkload, outcome: PlacementOutcome) -> Undo:
        """Book ``outcome.token`` (a Decision) in the snapshot."""
        decision = outcome.token
        if not isinstance(decision, Decision):
            raise TypeError(f"workload {workload.id}: outcome carries no Decision")
        reserve(self.cluster, decision)
        return lambda: unreserve(self.cluster, decision)

    def remove(self, workload_id: str) -> Undo:
        """Unbook a running job's placements until the returned undo is called.

        Raises:
            KeyError: unknown workload.
        """
        booking = self.held[workload_id]
        self._book(booking, -1)
        return lambda: self._book(booking, +1)

    def _book(self, booking: RunningBooking, sign: int) -> None:
        for node_name, cpu, mem, grants in booking.pods:
            node = self.cluster.nodes.get(node_name)
            if node is not None:
                node.used_cpu_milli += sign * cpu
                node.used_memory_mib += sign * mem
                self.cluster.touch(node_name)
            for uuid, dev_mem, cores, slots in grants:
                device = self.devices.get(uuid)
                if device is None:
                    continue
                device.used_memory_mib += sign * dev_mem
                device.used_cores_percent += sign * cores
                device.used_slots += sign * slots


# -- dry runs and usage tables ------------------------------------------------------------------


class _SpecContainers:
    def __init__(self, containers) -> None:
        self._containers = containers

    def all(self):
        return self._containers


class SpecJob:
    """A job submission not saved yet, shaped like a ``Job`` for
    :func:`~scheduling.selectors.snapshot.build_placement_request` (dry runs)."""

    def __init__(self, spec, pk: str = "dry-run") -> None:
        self.pk = pk
        self.pod_count = spec.pod_count
        self.min_pods = spec.min_pods
        self.cpu_milli = spec.cpu_milli
        self.memory_mib = spec.memory_mib
        self.containers = _SpecContainers(list(spec.containers))


@dataclass(frozen=True)
class QuotaUsageRow:
    """One line of a tenant's quota/usage table (amounts in the dimension's unit).

    ``nominal`` is the tenant's subtree quota, ``used`` its Kueue usage (own + children's),
    ``borrowed`` = max(0, used - nominal), ``lent`` = the part of its unused nominal quota
    other tenants use now, ``available`` what it could still be admitted with now.
    """

    tenant: str
    resource_group: str
    flavor: str
    dimension: str
    nominal: int
    borrowing_limit: int | None
    lending_limit: int | None
    used: int
    borrowed: int
    lent: int
    available: int


def quota_usage_table(group: tm.ResourceGroup, tenant_names: set[str] | None, now: datetime
                      ) -> list[QuotaUsageRow]:
    """Quota and usage per tenant × flavor × dimension of one group (usage recomputed from
    live placements), for the tenants in ``tenant_names`` (None = all)."""
    ctx = build_admission_snapshot(group, now)
    snap = ctx.snapshot
    tree = QuotaTree(snap.group, snap.tenants, snap.quotas, snap.caps)
    for workload in snap.running:
        tree.add(workload.tenant, workload.charges)
    rows = []
    for q in sorted(snap.quotas, key=lambda q: (q.tenant, q.flavor, q.dimension)):
        if tenant_names is not None and q.tenant not in tenant_names:
            continue
        fr = (q.flavor, Dimension(q.dimension))
        nominal, used = tree.nominal(q.tenant, fr), tree.usage(q.tenant, fr)
        available, _ = tree.available(q.tenant, fr)
        unused = max(0, nominal - used)
        free = max(0, min(available, unused))
        rows.append(QuotaUsageRow(
            tenant=q.tenant, resource_group=group.name, flavor=q.flavor,
            dimension=fr[1].value, nominal=nominal, borrowing_limit=q.borrowing_limit,
            lending_limit=q.lending_limit, used=used, borrowed=max(0, used - nominal),
            lent=unused - free, available=max(0, available),
        ))
    return rows
