"""ORM → admission-core types: flavors, quota tree, pending and running workloads, and the
:class:`DbPlacer` that wires the placement core into the admission core's ``Placer`` port.

Flavor rule (documented here because quota rows name flavors as plain strings): every device
model of a resource group belongs to exactly one flavor, the most specific name used by the
group's quota rows or caps: the model name, else the model's family, else ``"*"``; a model that
no row names is its own flavor (so a job landing there gets "no quota for this flavor").
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Case, IntegerField, Q, Value, When

from scheduling.admission import (
    AdmissionSnapshot,
    AggregateCapSpec,
    BorrowWithinCohort,
    BorrowWithinCohortPolicy,
    CohortOptions,
    Dimension,
    FairSharingStrategy,
    Flavor,
    FlavorFungibility,
    FlavorPreference,
    FungibilityPolicy,
    GroupKind,
    GroupSpec,
    HistoryFairShare,
    PendingWorkload,
    PreemptionPolicy,
    PriorityClassSpec,
    QueueingStrategy,
    QueueSpec,
    QuotaSpec,
    QuotaTree,
    TenantSpec,
    Usage,
    UsageInterval,
    decayed_usage,
)
from scheduling.choices import BOOKED_PLACEMENT_STATES, JobState
from scheduling.devices.overlay import Catalogue
from scheduling.models import DeviceModel, Job, PlacementDevice, PriorityClass
from scheduling.models import Queue as QueueModel
from scheduling.placement.profile import Profile
from scheduling.placement.types import ClusterSnapshot, DeviceUsage, PlacementRequest
from scheduling.selectors.db_placer import DbPlacer, RunningBooking
from scheduling.selectors.device_models import get_catalogue
from scheduling.selectors.placement_profile import group_framework
from scheduling.selectors.running import running_workloads
from scheduling.selectors.snapshot import (
    SnapshotIndex,
    build_placement_request,
    group_runnable_models,
)
from scheduling.selectors.snapshot_cache import cluster_snapshot
from scheduling.selectors.topology import TopologySpec
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
        group: the admission core's :class:`GroupSpec`.
    """

    flavor_of_model: dict[str, str]
    models: dict[str, DeviceModel]
    group: GroupSpec

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
    the group's devices; plus the models its jobs still hold devices of (so their usage keeps
    counting after a model leaves the group)."""
    models = group_runnable_models(group)
    held = DeviceModel.objects.filter(
        pk__in=PlacementDevice.objects.filter(
            placement__state__in=BOOKED_PLACEMENT_STATES,
            placement__job__queue__resource_group=group,
        ).values("device__model_id")
    )
    return {m.name: m for m in (models | held).distinct().order_by("name")}


def resolve_flavors(
    group: tm.ResourceGroup, *, extra_names: set[str] | None = None
) -> GroupFlavors:
    """Map the group's device models to flavors (module docstring rule).

    Args:
        group: the resource group.
        extra_names: flavor names to treat as used besides the stored rows (a quota change
            being simulated).
    """
    used = set(tm.Quota.objects.filter(resource_group=group).values_list("flavor", flat=True))
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
    core_group = GroupSpec(
        name=group.name,
        kind=GroupKind(group.kind),
        flavors=tuple(
            Flavor(name, tuple(sorted(types))) for name, types in sorted(by_flavor.items())
        ),
    )
    return GroupFlavors(flavor_of, models, core_group)


# -- quota tree ---------------------------------------------------------------------------------


HISTORY_HORIZON_HALF_LIVES = 10
"""Ledger intervals that ended more than this many half-lives ago weigh < 0.1 %: not read."""


def history_usage(group: tm.ResourceGroup, now: datetime) -> dict[str, float]:
    """Decayed past device usage per tenant of ``group`` (whole devices; Kueue Admission Fair
    Sharing over the usage ledger, :func:`scheduling.admission.decayed_usage`), or {} when
    the group has no ``usage_half_life_s``."""
    half_life = group.usage_half_life_s
    if not half_life:
        return {}
    horizon = now - timedelta(seconds=half_life * HISTORY_HORIZON_HALF_LIVES)
    intervals: dict[str, list[UsageInterval]] = defaultdict(list)
    for tenant, milli, start, end in (
        tm.LedgerInterval.objects.filter(resource_group_id=group.pk)
        .filter(Q(end__isnull=True) | Q(end__gte=horizon))
        .values_list("tenant__name", "devices_milli", "start", "end")
    ):
        intervals[tenant].append(UsageInterval(milli / 1000, start, end))
    return {t: decayed_usage(rows, now, half_life) for t, rows in sorted(intervals.items())}


def build_tenants(history: dict[str, float] | None = None) -> tuple[TenantSpec, ...]:
    """Every tenant as the core's :class:`TenantSpec` (parents by name; ``history`` from
    :func:`history_usage`)."""
    history = history or {}
    return tuple(
        TenantSpec(
            name=t.name,
            parent=t.parent.name if t.parent else None,
            fair_share_weight=t.fair_share_weight,
            history_usage=history.get(t.name, 0.0),
        )
        for t in tm.Tenant.objects.select_related("parent").order_by("name")
    )


def core_quota(row: tm.Quota, flavor: str) -> QuotaSpec:
    """One quota row as the core's :class:`QuotaSpec` under its resolved flavor name."""
    return QuotaSpec(
        tenant=row.tenant.name,
        flavor=flavor,
        dimension=Dimension(row.dimension),
        nominal=row.nominal,
        borrowing_limit=row.borrowing_limit,
        lending_limit=row.lending_limit,
    )


def build_quotas(rows: list[tm.Quota], flavors: GroupFlavors) -> tuple[QuotaSpec, ...]:
    """The group's quota ``rows`` (``tenant`` loaded) whose flavor covers at least one model
    of the group (a row on a name no model resolves to would constrain nothing and is left
    out)."""
    live = {f.name for f in flavors.group.flavors}
    return tuple(core_quota(q, q.flavor) for q in rows if q.flavor in live)


def build_caps(rows: list[tm.AggregateCap], flavors: GroupFlavors) -> tuple[AggregateCapSpec, ...]:
    """The group's aggregate caps ``rows`` (``tenant`` loaded); a cap's names (models,
    families) become the flavors covering those models, an empty list means every flavor."""
    caps = []
    for cap in rows:
        covered = flavors.flavors_for(cap.flavors) if cap.flavors else None
        caps.append(
            AggregateCapSpec(
                name=cap.name,
                tenant=cap.tenant.name,
                dimension=Dimension(cap.dimension),
                limit=cap.limit,
                flavors=covered,
            )
        )
    return tuple(caps)


def stored_usage(group: tm.ResourceGroup) -> tuple[Usage, ...]:
    """Stored ``QuotaUsage`` rows of the group as the core's :class:`Usage`."""
    return tuple(
        Usage(
            tenant=u.tenant.name, flavor=u.flavor, dimension=Dimension(u.dimension), amount=u.amount
        )
        for u in tm.QuotaUsage.objects.filter(resource_group=group).select_related("tenant")
        if u.amount
    )


# -- workloads ----------------------------------------------------------------------------------


def pending_workload(
    job: Job, group: tm.ResourceGroup, request: PlacementRequest | None = None
) -> PendingWorkload:
    """A queued job (``containers``, ``queue__tenant``, ``priority_class`` loaded) as a
    :class:`PendingWorkload`."""
    return PendingWorkload(
        id=str(job.pk),
        tenant=job.tenant.name,
        queue=queue_key(job.queue),
        priority=job.priority,
        created_at=job.created,
        pod_count=job.pod_count,
        min_pod_count=job.min_pods,
        request=request if request is not None else build_placement_request(job, group),
        preemptible=job.preemptible,
        priority_class=job.priority_class.name if job.priority_class_id else None,
        max_runtime_s=job.max_runtime_s,
        preempting=job.preempting_since is not None,
        reserving_since=job.reserving_since,
    )


def queued_jobs(
    group: tm.ResourceGroup, limit: int | None = None, exclude: set[int] | None = None
) -> list[Job]:
    """Queued jobs of the group in admission order, up to ``limit``: jobs waiting for their
    preemption victims first, then reserving jobs, then priority, age, id. A requeued victim
    whose old pods still terminate is left out until they are gone, and so are the ids in
    ``exclude`` (the inadmissible set, :mod:`.inadmissible`)."""
    jobs = (
        Job.objects.filter(queue__resource_group=group, state=JobState.QUEUED)
        .exclude(placements__state__in=BOOKED_PLACEMENT_STATES)
        .exclude(pk__in=sorted(exclude or ()))
        .select_related("queue__tenant", "tenant", "priority_class")
        .prefetch_related("containers", "pod_sets")
        .annotate(
            _first=Case(
                When(preempting_since__isnull=False, then=Value(0)),
                When(reserving_since__isnull=False, then=Value(1)),
                default=Value(2),
                output_field=IntegerField(),
            )
        )
        .order_by("_first", "-priority", "created", "id")
    )
    return list(jobs[:limit] if limit else jobs)


def queue_spec(queue: QueueModel, flavors: GroupFlavors) -> QueueSpec:
    """A queue (``allowed_priority_classes`` prefetched) as the core's :class:`QueueSpec`;
    its flavor names (models, families, ``"*"``) become the group's flavors in order."""
    names: list[str] = []
    for name in queue.flavors or []:
        for flavor in flavors.flavors_for([name]):
            if flavor not in names:
                names.append(flavor)
    allowed = [c.name for c in queue.allowed_priority_classes.all()]
    threshold = queue.borrow_max_priority_threshold
    return QueueSpec(
        name=queue_key(queue),
        tenant=queue.tenant.name,
        strategy=QueueingStrategy(queue.strategy),
        within_cluster_queue=PreemptionPolicy(queue.within_cluster_queue),
        reclaim_within_cohort=PreemptionPolicy(queue.reclaim_within_cohort),
        borrow_within_cohort=BorrowWithinCohort(
            BorrowWithinCohortPolicy(queue.borrow_within_cohort), threshold
        ),
        flavors=tuple(names),
        fungibility=FlavorFungibility(
            FungibilityPolicy(queue.when_can_borrow),
            FungibilityPolicy(queue.when_can_preempt),
            FlavorPreference(queue.flavor_preference) if queue.flavor_preference else None,
        ),
        allowed_priority_classes=tuple(sorted(allowed)) or None,
    )


def cohort_options(group: tm.ResourceGroup) -> CohortOptions:
    """The group's cohort options as the core's :class:`CohortOptions`."""
    history = (
        HistoryFairShare(half_life_s=group.usage_half_life_s) if group.usage_half_life_s else None
    )
    return CohortOptions(
        fair_sharing=group.fair_sharing,
        preemption_strategies=tuple(
            FairSharingStrategy(s) for s in group.preemption_strategies or ()
        ),
        reservation_after_s=group.reservation_after_s,
        max_reservations=group.max_reservations,
        max_reservation_hold_s=group.max_reservation_hold_s,
        history=history,
    )


def priority_classes() -> tuple[PriorityClassSpec, ...]:
    """Every priority class as the core's :class:`PriorityClassSpec`."""
    return tuple(
        PriorityClassSpec(c.name, c.value, c.preemptible)
        for c in PriorityClass.objects.order_by("name")
    )


# -- the snapshot -------------------------------------------------------------------------------


@dataclass
class AdmissionContext:
    """Everything one cycle or dry run needs besides the frozen snapshot."""

    snapshot: AdmissionSnapshot
    flavors: GroupFlavors
    cluster: ClusterSnapshot
    index: SnapshotIndex
    devices: dict[str, DeviceUsage]
    held: dict[str, RunningBooking]
    jobs: dict[str, Job]
    catalogue: Catalogue
    group_row: tm.ResourceGroup | None = None

    def placer(self) -> DbPlacer:
        """A placer over this context's cluster snapshot (shared: the cycle mutates it), with
        the group's placement profile built here (its node / device / fragmentation policy,
        :func:`~scheduling.selectors.placement_profile.group_profile`, and the device
        catalogue's resolved configs): only runs that place need it, not usage tables or
        quota simulations. A model whose config does not resolve is left out of the
        catalogue (its devices carry ``error`` in the snapshot); it never fails the run."""
        if self.group_row is None:
            incremental = getattr(settings, "PLACEMENT_INCREMENTAL_SELECTOR", True)
            framework = Profile(device_configs=self.catalogue.configs).build(
                incremental=incremental
            )
        else:
            framework = group_framework(self.group_row, self.catalogue)
        return DbPlacer(
            self.cluster,
            self.devices,
            self.flavors.group,
            self.held,
            framework,
            configs=self.index.configs,
        )


def build_admission_snapshot(
    group: tm.ResourceGroup,
    now: datetime,
    *,
    pending: list[Job] | None = None,
    extra_flavor_names: set[str] | None = None,
    with_cluster: bool = True,
) -> AdmissionContext:
    """Build the admission core's input for one resource group.

    Args:
        group: the resource group.
        now: cycle time (timezone-aware).
        pending: queued jobs to consider (default: none; pass :func:`queued_jobs`).
        extra_flavor_names: see :func:`resolve_flavors`.
        with_cluster: False for quota tables that never place: no cluster snapshot (empty
            ``cluster``, ``index`` and ``devices``; running charges from the device rows).

    Returns:
        The context: frozen :class:`AdmissionSnapshot`, flavors, cluster snapshot with every
        live booking applied, device index, and the running jobs' bookings.
    """
    quota_rows = list(tm.Quota.objects.filter(resource_group=group).select_related("tenant"))
    cap_rows = list(tm.AggregateCap.objects.filter(resource_group=group).select_related("tenant"))
    used = {q.flavor for q in quota_rows}.union(*(c.flavors or () for c in cap_rows))
    flavors = _map_flavors(group, used | (extra_flavor_names or set()))
    catalogue = get_catalogue()
    if with_cluster:
        cluster, index = cluster_snapshot(group, catalogue)
    else:
        cluster, index = ClusterSnapshot.from_nodes([]), SnapshotIndex()
    devices = {d.uuid: d for node in cluster.nodes.values() for d in node.devices}
    running, held = running_workloads(group, flavors.flavor_of_model, index, devices)
    pending = pending or []
    snapshot = AdmissionSnapshot(
        group=flavors.group,
        tenants=build_tenants(history_usage(group, now)),
        quotas=build_quotas(quota_rows, flavors),
        caps=build_caps(cap_rows, flavors),
        queues=tuple(queue_spec(q, flavors) for q in group_queues(group)),
        pending=tuple(pending_workload(j, group) for j in pending),
        running=tuple(running),
        now=now,
        usage=stored_usage(group),
        priority_classes=priority_classes(),
        options=cohort_options(group),
    )
    return AdmissionContext(
        snapshot,
        flavors,
        cluster,
        index,
        devices,
        held,
        {str(j.pk): j for j in pending},
        catalogue,
        group,
    )


def group_queues(group: tm.ResourceGroup):
    """Queues of the group (tenant and allowed classes loaded), in a stable order."""
    return (
        QueueModel.objects.filter(resource_group=group)
        .select_related("tenant")
        .prefetch_related("allowed_priority_classes")
        .order_by("tenant__name", "name")
    )


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
        self.host_memory_mib = spec.host_memory_mib
        self.node_selector = getattr(spec, "node_selector", {})
        self.launcher_cpu_milli = getattr(spec, "launcher_cpu_milli", 0)
        self.launcher_memory_mib = getattr(spec, "launcher_memory_mib", 0)
        self.containers = _SpecContainers(list(spec.containers))
        self.annotations = dict(getattr(spec, "annotations", None) or {})
        self.__dict__.update(getattr(spec, "topology", TopologySpec()).columns())


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


def quota_usage_table(
    group: tm.ResourceGroup, tenant_names: set[str] | None, now: datetime
) -> list[QuotaUsageRow]:
    """Quota and usage per tenant × flavor × dimension of one group, for the tenants in
    ``tenant_names`` (None = all). Usage is the stored ``QuotaUsage`` the admission cycle
    charges in its commits (and the usage reconcile keeps equal to the live placements), so
    the table costs a fixed number of queries whatever the number of running jobs (issue
    #14); no cluster snapshot and no running workload is read."""
    quota_rows = list(tm.Quota.objects.filter(resource_group=group).select_related("tenant"))
    cap_rows = list(tm.AggregateCap.objects.filter(resource_group=group).select_related("tenant"))
    used_flavors = {q.flavor for q in quota_rows}.union(*(c.flavors or () for c in cap_rows))
    flavors = _map_flavors(group, used_flavors)
    quotas = build_quotas(quota_rows, flavors)
    tree = QuotaTree(flavors.group, build_tenants(), quotas, build_caps(cap_rows, flavors))
    # one addition per tenant (the tree recomputes its totals on every add)
    per_tenant: dict[str, dict] = defaultdict(lambda: defaultdict(int))
    for u in stored_usage(group):
        per_tenant[u.tenant][(u.flavor, u.dimension)] += u.amount
    for tenant, charges in sorted(per_tenant.items()):
        tree.add(tenant, dict(charges))
    rows = []
    for q in sorted(quotas, key=lambda q: (q.tenant, q.flavor, q.dimension)):
        if tenant_names is not None and q.tenant not in tenant_names:
            continue
        fr = (q.flavor, Dimension(q.dimension))
        nominal, used = tree.nominal(q.tenant, fr), tree.usage(q.tenant, fr)
        available, _ = tree.available(q.tenant, fr)
        unused = max(0, nominal - used)
        free = max(0, min(available, unused))
        rows.append(
            QuotaUsageRow(
                tenant=q.tenant,
                resource_group=group.name,
                flavor=q.flavor,
                dimension=fr[1].value,
                nominal=nominal,
                borrowing_limit=q.borrowing_limit,
                lending_limit=q.lending_limit,
                used=used,
                borrowed=max(0, used - nominal),
                lent=unused - free,
                available=max(0, available),
            )
        )
    rows.extend(_unquoted_usage(tree, quotas, group, tenant_names))
    return rows


def _unquoted_usage(
    tree: QuotaTree, quotas, group: tm.ResourceGroup, tenant_names: set[str] | None
) -> list[QuotaUsageRow]:
    """Rows for a tenant's own running usage that no quota row of its covers (a row deleted or a
    tenant without one) on a flavor resource the group manages: it stays counted in the
    cohort, all of it borrowed (nominal 0, nothing available)."""
    managed = {(q.flavor, Dimension(q.dimension)) for q in quotas}
    quoted = {(q.tenant, q.flavor, Dimension(q.dimension)) for q in quotas}
    rows = []
    for tenant in sorted(tree.tenant_names()):
        if tenant_names is not None and tenant not in tenant_names:
            continue
        own = tree.own_usage(tenant)
        for fr in sorted(managed, key=lambda fr: (fr[0], fr[1].value)):
            used = own.get(fr, 0)
            if used and (tenant, *fr) not in quoted:
                rows.append(
                    QuotaUsageRow(
                        tenant=tenant,
                        resource_group=group.name,
                        flavor=fr[0],
                        dimension=fr[1].value,
                        nominal=0,
                        borrowing_limit=None,
                        lending_limit=None,
                        used=used,
                        borrowed=used,
                        lent=0,
                        available=0,
                    )
                )
    return rows
