"""ORM → placement-core types, in a bounded number of queries (five, whatever the size)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from django.db.models import Count, Q

from scheduling.choices import BOOKED_PLACEMENT_STATES
from scheduling.devices.overlay import Catalogue, build_catalogue
from scheduling.devices.resources import card_counters, template_share_count
from scheduling.devices.schema import DeviceModelConfig
from scheduling.devices.vendors import vendor_traits
from scheduling.kube.hami.requests import device_pins
from scheduling.models import (
    Device,
    DeviceModel,
    Job,
    Node,
    Placement,
    PlacementDevice,
    PlacementMigInstance,
)
from scheduling.models.topology import has_topology_request, topology_request_of
from scheduling.placement.booking import apply_device_usage, apply_migs
from scheduling.placement.codec import device_profiles_from_json, profile_shape
from scheduling.placement.group_profile import PlacementPolicy
from scheduling.placement.types import (
    ClusterSnapshot,
    ContainerRequest,
    DeviceRequest,
    DeviceUsage,
    MigInstance,
    MigPlacement,
    MigProfile,
    NodeInfo,
    PlacementRequest,
    PodRequest,
    PodSetTopology,
)
from tenants.models import ResourceGroup, Topology


@dataclass
class SnapshotIndex:
    """Maps the snapshot's names back to database ids.

    Attributes:
        node_ids: ``{snapshot node name: Node.pk}``.
        device_ids: ``{device uuid: Device.pk}``.
        device_models: ``{device uuid: DeviceModel.name}`` (the quota flavor).
        device_memory_mib: ``{device uuid: registered memory in MiB}``.
        device_cores_percent: ``{device uuid: registered cores in percent}``.
        configs: ``{device uuid: resolved model config}`` of the devices with DRA shared
            counters (what a stored booking of them consumes,
            :func:`~scheduling.devices.resources.stored_booking_counters`).
    """

    node_ids: dict[str, int] = field(default_factory=dict)
    device_ids: dict[str, int] = field(default_factory=dict)
    device_models: dict[str, str] = field(default_factory=dict)
    device_memory_mib: dict[str, int] = field(default_factory=dict)
    device_cores_percent: dict[str, int] = field(default_factory=dict)
    configs: dict[str, DeviceModelConfig] = field(default_factory=dict)


def group_nodes(group: ResourceGroup):
    """Nodes of a resource group: present, matching every label of its node selector and,
    when the group names device models, holding at least one present device of them."""
    nodes = Node.objects.filter(removed_at__isnull=True)
    if group.node_selector:
        nodes = nodes.filter(labels__contains=group.node_selector)
    if group.device_models:
        nodes = nodes.filter(
            pk__in=Device.objects.filter(
                removed_at__isnull=True, model__name__in=group.device_models
            ).values("node_id")
        )
    return nodes


def group_devices(group: ResourceGroup):
    """Present devices of the group's nodes whose model is one of the group's models."""
    devices = Device.objects.filter(removed_at__isnull=True)
    if group.node_selector:
        devices = devices.filter(node__labels__contains=group.node_selector)
    if group.device_models:
        devices = devices.filter(model__name__in=group.device_models)
    return devices.filter(node__removed_at__isnull=True)


def group_runnable_models(group: ResourceGroup):
    """Device models new work of the group can run on (lazy ``DeviceModel`` queryset): its
    ``device_models`` list, else every model present on its devices (:func:`group_devices`)."""
    if group.device_models:
        return DeviceModel.objects.filter(name__in=group.device_models)
    return DeviceModel.objects.filter(pk__in=group_devices(group).values("model_id"))


_TOPOLOGY_CACHE = "_console_topology"


def group_topology(group: ResourceGroup) -> Topology | None:
    """The topology ``group``'s jobs are placed under: ``group.topology``, else the single
    topology named by the device models (flavors) the group runs, else None (two flavors
    naming different topologies: None too; attach one to the group).

    Read once per group instance (kept on it): a cycle asks it for every job with a request.
    """
    if _TOPOLOGY_CACHE in group.__dict__:
        return group.__dict__[_TOPOLOGY_CACHE]
    topology = None
    if group.topology_id is not None:
        topology = Topology.objects.get(pk=group.topology_id)
    else:
        ids = set(
            group_runnable_models(group)
            .filter(topology__isnull=False)
            .values_list("topology_id", flat=True)
        )
        if len(ids) == 1:
            topology = Topology.objects.get(pk=ids.pop())
    group.__dict__[_TOPOLOGY_CACHE] = topology
    return topology


def pod_set_topologies(job, group: ResourceGroup, pod_sets: list) -> tuple[PodSetTopology, ...]:
    """The placement core's per pod set topology requests of ``job``: each pod set with a
    request (pods from its first index, ``count`` of them, in pod set order), or the job's
    own request over all ``pod_count`` pods when it has no pod sets; () when nothing asks.
    Levels are the group's topology's (:func:`group_topology`; () when it has none now:
    the core refuses the request as ``TopologyInvalid``)."""
    if pod_sets:
        asks, first = [], 0
        for ps in pod_sets:
            if has_topology_request(ps):
                asks.append((first, ps.count, ps, ps.topology_group))
            first += ps.count
    elif has_topology_request(job):
        asks = [(0, job.pod_count, job, "")]
    else:
        return ()
    if not asks:
        return ()
    topology = group_topology(group)
    levels = tuple(topology.levels) if topology is not None else ()
    return tuple(
        PodSetTopology(first=first, count=count, request=topology_request_of(row, levels, name))
        for first, count, row, name in asks
    )


@dataclass
class Booked:
    """What one booked placement holds, by database id.

    Attributes:
        node_id: its node.
        cpu_milli / host_memory_mib: its host request.
        devices: ``[(device pk, memory_mib, cores_percent, slots)]`` (``PlacementDevice``).
        migs: ``[(device pk, MIG instance)]`` (``PlacementMigInstance``).
    """

    node_id: int
    cpu_milli: int
    host_memory_mib: int
    devices: list[tuple[int, int, int, int]] = field(default_factory=list)
    migs: list[tuple[int, MigInstance]] = field(default_factory=list)


@dataclass
class ClusterState:
    """A group's cluster snapshot with the database ids behind it, and the booked placements
    its usage sums (so usage can be changed placement by placement).

    Attributes:
        snapshot / index: what :func:`build_cluster_snapshot` returns.
        nodes / devices: the snapshot's nodes and devices by ``Node.pk`` / ``Device.pk``.
        booked: ``{Placement.pk: Booked}`` of every booked placement on the group's nodes.
    """

    snapshot: ClusterSnapshot
    index: SnapshotIndex
    nodes: dict[int, NodeInfo]
    devices: dict[int, DeviceUsage]
    booked: dict[int, Booked] = field(default_factory=dict)

    def has_mig(self) -> bool:
        """Whether any device of the group is in MIG mode (else no MIG instance to read)."""
        return any(d.mode == "mig" for d in self.devices.values())

    def apply(self, pk: int, booked: Booked, sign: int) -> None:
        """Book (``sign`` +1) or unbook (-1) placement ``pk`` in the snapshot and ``booked``;
        devices and nodes outside the group are skipped. Shared counters: each device
        booking consumes the counters of the template of its memory (else memory and cores;
        :func:`~scheduling.placement.booking.apply_device_usage`).
        """
        if sign > 0:
            self.booked[pk] = booked
        else:
            self.booked.pop(pk, None)
        node = self.nodes.get(booked.node_id)
        if node is not None:
            node.used_cpu_milli += sign * booked.cpu_milli
            node.used_memory_mib += sign * booked.host_memory_mib
            node.touch()
        for device_id, mem, cores, slots in booked.devices:
            dev = self.devices.get(device_id)
            if dev is None:
                continue
            apply_device_usage(dev, mem, cores, slots, sign, self.index.configs.get(dev.uuid))
        apply_migs(self.devices, booked.migs, sign)


def booked_placements(node_ids: Iterable[int]):
    """Placements in a booked state (reserved, submitted, running, terminating) on the nodes
    ``node_ids``, whichever group booked them."""
    return Placement.objects.filter(
        state__in=BOOKED_PLACEMENT_STATES, node_id__in=sorted(set(node_ids))
    )


def read_bookings(placements, *, migs: bool = True) -> dict[int, Booked]:
    """``{Placement.pk: Booked}`` of a placement queryset, in three queries (two without
    ``migs``: MIG instances not read, for a group without MIG-mode devices)."""
    out = {
        pk: Booked(node_id, cpu, mem)
        for pk, node_id, cpu, mem in placements.values_list(
            "pk", "node_id", "cpu_milli", "host_memory_mib"
        )
    }
    if not out:
        return out
    ids = sorted(out)
    for pk, device_id, mem, cores, slots in (
        PlacementDevice.objects.filter(placement_id__in=ids)
        .order_by("placement_id", "device_id")
        .values_list("placement_id", "device_id", "memory_mib", "cores_percent", "slots")
    ):
        out[pk].devices.append((device_id, mem, cores, slots))
    if not migs:
        return out
    for pk, device_id, profile, start, size in (
        PlacementMigInstance.objects.filter(placement_id__in=ids)
        .order_by("pk")
        .values_list("placement_id", "device_id", "profile", "start", "size")
    ):
        out[pk].migs.append((device_id, MigInstance(profile, start, size)))
    return out


def build_cluster_snapshot(
    group: ResourceGroup, catalogue: Catalogue | None = None
) -> tuple[ClusterSnapshot, SnapshotIndex]:
    """Build the placement core's view of a resource group with current usage booked.

    Usage is the sum of the bookings of placements in state reserved/submitted/running/
    terminating on every node and device of the group, whichever group booked them. A device
    its node no longer registers (``Device.missing_since``) is kept with ``missing`` set
    while bookings hold it, which keeps the whole node out of placement
    (``NodeBookingsUnmatched``) until they end or move. Each
    device gets its model's resolved configuration (:func:`apply_model_config`; ``catalogue``
    default: the catalogue of the models the devices were loaded with, no extra query).

    Returns:
        ``(snapshot, index)``; snapshot node names are node names, prefixed with
        ``"<cluster>/"`` when two clusters of the group share a node name.
    """
    state = build_cluster_state(group, catalogue)
    return state.snapshot, state.index


def build_cluster_state(group: ResourceGroup, catalogue: Catalogue | None = None) -> ClusterState:
    """:func:`build_cluster_snapshot` with the ids and bookings behind it (a
    :class:`ClusterState`); four queries whatever the size (five with MIG-mode devices)."""
    nodes = list(group_nodes(group).select_related("cluster").order_by("cluster__name", "name"))
    name_counts: dict[str, int] = defaultdict(int)
    for node in nodes:
        name_counts[node.name] += 1
    index = SnapshotIndex()
    core_nodes: dict[int, NodeInfo] = {}
    for node in nodes:
        key = node.name if name_counts[node.name] == 1 else f"{node.cluster.name}/{node.name}"
        index.node_ids[key] = node.pk
        core_nodes[node.pk] = NodeInfo(
            name=key,
            cpu_milli=node.cpu_milli,
            memory_mib=node.host_memory_mib,
            labels=dict(node.labels),
            schedulable=node.schedulable,
            error=node.error or None,
        )
    state = ClusterState(ClusterSnapshot(), index, core_nodes, {})
    errors = _add_devices(group, state, catalogue)
    state.snapshot = ClusterSnapshot.from_nodes(list(core_nodes.values()))
    state.snapshot.errors.extend(errors)
    booked = read_bookings(booked_placements(core_nodes), migs=state.has_mig())
    for pk, row in booked.items():
        state.apply(pk, row, +1)
    return state


class _DeviceRow(NamedTuple):
    """The columns of a device the snapshot reads (``values_list`` names, in order)."""

    pk: int
    node_id: int
    uuid: str
    index: int
    model_id: int
    model_name: str
    model_vendor: str
    memory_mib: int
    cores_percent: int
    split_count: int
    numa: int
    healthy: bool
    cordoned: bool
    mode: str
    mig_profiles: object
    source: str
    missing_since: object


#: ``values_list`` columns giving a :class:`_DeviceRow`.
_DEVICE_COLUMNS = (
    "pk",
    "node_id",
    "uuid",
    "index",
    "model_id",
    "model__name",
    "model__vendor",
    "memory_mib",
    "cores_percent",
    "split_count",
    "numa",
    "healthy",
    "cordoned",
    "mode",
    "mig_profiles",
    "source",
    "missing_since",
)


def _device_rows(
    group: ResourceGroup, catalogue: Catalogue | None
) -> tuple[list[_DeviceRow], Catalogue]:
    """The group's devices as plain rows (every cycle reads every device of the group), and
    the catalogue (the models' configs ride along when none is given: no extra query)."""
    rows = (
        group_devices(group)
        .order_by("node_id", "index", "uuid")
        .values_list(*_DEVICE_COLUMNS, *(() if catalogue is not None else ("model__config",)))
    )
    devices = [_DeviceRow(*row[: len(_DEVICE_COLUMNS)]) for row in rows]
    if catalogue is None:
        configs = {row[4]: (row[6], row[5], row[-1]) for row in rows}  # model id: vendor, name
        catalogue = build_catalogue(configs.values())
    return devices, catalogue


def _core_device(device: _DeviceRow, node: str) -> DeviceUsage:
    core = DeviceUsage(
        uuid=device.uuid,
        node=node,
        index=device.index,
        type=device.model_name,
        vendor=device.model_vendor,
        memory_mib=device.memory_mib,
        cores_percent=device.cores_percent,
        split_count=device.split_count,
        numa=device.numa,
        healthy=device.healthy,
        cordoned=device.cordoned,
        mode=device.mode,
        missing=device.missing_since is not None,
    )
    stored = device_profiles_from_json(
        device.mig_profiles, profile_shape(device.model_vendor), index=device.index
    )
    core.mig_profiles = stored.mig
    if stored.drs is not None:
        core.custom = stored.drs
    return core


def _add_devices(
    group: ResourceGroup, state: ClusterState, catalogue: Catalogue | None
) -> list[str]:
    """The group's devices (nothing booked yet) onto ``state``'s nodes; returns problems."""
    devices, catalogue = _device_rows(group, catalogue)
    errors: list[str] = []
    index = state.index
    for device in devices:
        node = state.nodes.get(device.node_id)
        if node is None:
            continue
        core = _core_device(device, node.name)
        cfg = apply_model_config(core, catalogue, errors, dra=device.source == "dra")
        if core.counters and cfg is not None:
            index.configs[device.uuid] = cfg
        node.devices.append(core)
        state.devices[device.pk] = core
        index.device_ids[device.uuid] = device.pk
        index.device_models[device.uuid] = device.model_name
        index.device_memory_mib[device.uuid] = device.memory_mib
        index.device_cores_percent[device.uuid] = device.cores_percent
    return errors


def apply_model_config(
    dev: DeviceUsage, catalogue: Catalogue, errors: list[str], *, dra: bool = False
) -> DeviceModelConfig | None:
    """Give a device its model's resolved configuration.

    * a model whose stored config does not resolve: ``dev.error`` says so (the device stays
      out of placement, reason ``DeviceModelInvalid``); returns None;
    * a MIG-mode GPU without registered profiles gets the model's MIG templates (allowlist
      profiles with NVML placements, :func:`scheduling.devices.defaults.mig_templates`);
    * a template-sliced model (Ascend vNPU) whose registered share count contradicts the
      template table is listed in ``errors`` and the table's count wins;
    * a DRA device of a template model gets the card's shared counters.
    """
    message = catalogue.errors.get(dev.type)
    if message is not None:
        dev.error = message
        return None
    cfg = catalogue.for_device(dev.vendor, dev.type)
    if cfg is None:
        return None
    if dev.mode == "mig" and not dev.mig_profiles and cfg.templates:
        dev.mig_profiles = tuple(
            MigProfile(
                t.name,
                t.memory_mib,
                t.cores_percent,
                int(t.name.split("g.", 1)[0]) if "g." in t.name else t.slices,
                tuple(MigPlacement(start, t.slices) for start in t.placements),
            )
            for t in cfg.templates
        )
    shares = template_share_count(cfg, dev.memory_mib) if cfg.slicing == "template" else 0
    if shares and dev.split_count != shares:
        errors.append(
            f"device {dev.uuid}: registered {dev.split_count} shares but the "
            f"{cfg.chip} template table gives {shares}; the table wins"
        )
        dev.split_count = shares
    if dra and cfg.templates and cfg.dra is not None:
        dev.counters = card_counters(cfg, dev.memory_mib, dev.cores_percent)
    return cfg


def _container_requests(
    containers, group: ResourceGroup, annotations: dict | None = None
) -> tuple[ContainerRequest, ...]:
    """The containers' device requests; the job's HAMi pin ``annotations`` (use/nouse uuid,
    numa-bind of each container's vendor: :func:`scheduling.kube.hami.requests.device_pins`)
    narrow them as they narrow HAMi's."""
    out = []
    for c in containers:
        devices: tuple[DeviceRequest, ...] = ()
        if c.device_count:
            types = tuple(c.device_types) or tuple(group.device_models)
            traits = vendor_traits(c.vendor)
            chip = types[0] if traits.per_chip and len(types) == 1 else ""
            # Ascend vNPU templates fix the cores; HAMi accepts a cores request only in
            # hami-core soft-split mode (huawei.com/vnpu-mode), which jobs here do not ask for.
            cores = 0 if traits.vnpu_templates else c.cores_percent
            devices = (
                DeviceRequest(
                    vendor=c.vendor,
                    count=c.device_count,
                    memory_mib=c.device_memory_mib,
                    memory_percent=c.memory_percent,
                    cores_percent=cores,
                    types_include=types,
                    types_exclude=tuple(c.device_types_exclude or ()),
                    chip=chip,
                    **device_pins(annotations or {}, c.vendor),
                ),
            )
        out.append(ContainerRequest(name=c.name, devices=devices, init=c.init))
    return tuple(out)


def _pod_set_pods(
    job, group: ResourceGroup, pod_sets, containers, selector, node_policy, device_policy
) -> list[PodRequest]:
    """Each pod set's ``count`` pods, in pod set order, with that set's containers."""
    pods: list[PodRequest] = []
    for ps in pod_sets:
        mine = _container_requests(
            [c for c in containers if c.pod_set_id == ps.pk],
            group,
            getattr(job, "annotations", None),
        )
        pods.extend(
            PodRequest(
                name=f"{job.pk}-{len(pods) + i}",
                cpu_milli=ps.cpu_milli,
                memory_mib=ps.host_memory_mib,
                containers=mine,
                node_selector=selector,
                node_policy=node_policy,
                device_policy=device_policy,
            )
            for i in range(ps.count)
        )
    return pods


def build_placement_request(job: Job, group: ResourceGroup) -> PlacementRequest:
    """Translate a job (``containers`` and ``pod_sets`` prefetched) into the core's
    PlacementRequest.

    A job with pod sets (taken in from a JobSet or PyTorchJob) gets each pod set's ``count``
    pods, in pod set order, with that set's containers and host request; otherwise
    ``pod_count`` copies of the job's containers. A container without ``device_types``
    accepts the group's device models; ``device_types_exclude`` refuses models (whole-token
    match). Vendors whose requests name one chip (HAMi's per-chip
    resource names: Ascend, Iluvatar) get ``chip`` set when exactly one accepted model
    remains. Ascend requests carry no cores (the vNPU template decides them).

    Training roles: when some containers have ``role`` launcher, pod 0 is the launcher
    (those containers, ``launcher_cpu_milli``/``launcher_memory_mib``) and the other pods
    are workers (the other containers); the gang minimum counts the launcher, which comes
    first so a partial admission always holds it. Every pod carries the job's
    ``node_selector``.
    The job's ``hami.io/node-scheduler-policy`` / ``hami.io/gpu-scheduler-policy``
    annotations become every pod's policies when the group's ``pod_policy_override`` allows it;
    its HAMi device pins (``nvidia.com/use-gpuuuid``, ``nvidia.com/nouse-gpuuuid``,
    ``nvidia.com/numa-bind`` and the other vendors' use/nouse uuid annotations) become every
    device request's ``uuids_include`` / ``uuids_exclude`` / ``numa_bind``. The job's or its
    pod sets' topology requests become ``topology``
    (:func:`pod_set_topologies`).
    """
    node_policy, device_policy = PlacementPolicy(
        pod_override=bool(getattr(group, "pod_policy_override", True))
    ).pod_overrides(getattr(job, "annotations", None))
    containers = list(job.containers.all())
    selector = dict(getattr(job, "node_selector", None) or {})
    pod_sets = list(job.pod_sets.all()) if hasattr(job, "pod_sets") else []
    topology = pod_set_topologies(job, group, pod_sets)
    if pod_sets:
        pods = _pod_set_pods(job, group, pod_sets, containers, selector, node_policy, device_policy)
        return PlacementRequest(
            name=str(job.pk), pods=tuple(pods), min_pods=job.min_pods, topology=topology
        )
    launchers = [c for c in containers if getattr(c, "role", "") == "launcher"]
    annotations = getattr(job, "annotations", None)
    workers = _container_requests(
        [c for c in containers if getattr(c, "role", "") != "launcher"], group, annotations
    )
    launcher = _container_requests(launchers, group, annotations)
    pods = tuple(
        PodRequest(
            name=f"{job.pk}-{i}",
            cpu_milli=getattr(job, "launcher_cpu_milli", 0)
            if launcher and i == 0
            else job.cpu_milli,
            memory_mib=getattr(job, "launcher_memory_mib", 0)
            if launcher and i == 0
            else job.host_memory_mib,
            containers=launcher if launcher and i == 0 else workers,
            node_selector=selector,
            node_policy=node_policy,
            device_policy=device_policy,
        )
        for i in range(job.pod_count)
    )
    return PlacementRequest(name=str(job.pk), pods=pods, min_pods=job.min_pods, topology=topology)


def groups_with_queued_jobs() -> list[int]:
    """Ids of resource groups that have at least one queued job."""
    return list(
        ResourceGroup.objects.annotate(
            queued=Count("queues__jobs", filter=Q(queues__jobs__state="queued"))
        )
        .filter(queued__gt=0)
        .values_list("pk", flat=True)
    )
