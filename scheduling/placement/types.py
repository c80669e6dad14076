"""Shared data types of the placement core (the team contract; fields may be added, never renamed).

Units are explicit in names: ``memory_mib`` (MiB), ``cores_percent`` (percent of one device,
100 = whole device), ``cpu_milli`` (millicores). Types follow HAMi's usage model
(``pkg/device/devices.go`` ``DeviceUsage``; see shared/docs/hami.md §4.1).

Mutable: :class:`DeviceUsage`, :class:`NodeInfo`, :class:`ClusterSnapshot` (usage changes on
reserve).
Frozen: requests and results.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "MigPlacement",
    "MigProfile",
    "MigInstance",
    "DeviceUsage",
    "NodeInfo",
    "ClusterSnapshot",
    "DeviceRequest",
    "ContainerRequest",
    "PodRequest",
    "TopologyRequest",
    "PodSetTopology",
    "PlacementRequest",
    "DeviceGrant",
    "ContainerAssignment",
    "PodAssignment",
    "Decision",
]


# --------------------------------------------------------------------------------------------
# Inventory
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MigPlacement:
    """A MIG placement: first memory slice ``start`` and ``size`` slices (NVML placement)."""

    start: int
    size: int


@dataclass(frozen=True, slots=True)
class MigProfile:
    """A MIG profile a GPU can create (HAMi ``migProfiles[]`` of the register annotation).

    Attributes:
        name: profile name, e.g. ``"1g.10gb"``.
        memory_mib: memory of one instance in MiB (HAMi ``memoryMB``).
        cores_percent: booked cores of one instance, percent of the GPU (HAMi ``core``).
        slice_count: compute slices (HAMi ``sliceCount``).
        placements: allowed placements on the GPU.
    """

    name: str
    memory_mib: int
    cores_percent: int
    slice_count: int
    placements: tuple[MigPlacement, ...] = ()


@dataclass(frozen=True, slots=True)
class MigInstance:
    """A MIG instance booked on a GPU (profile name and its placement)."""

    profile: str
    start: int
    size: int


@dataclass(slots=True)
class DeviceUsage:
    """One physical accelerator with its capacity and current usage (HAMi ``DeviceUsage``).

    Attributes:
        uuid: device id as registered (unique cluster-wide).
        node: name of the node holding the device.
        index: device index on the node.
        type: model string as registered (``"NVIDIA-A100-SXM4-80GB"``, ``"Ascend910B4"``).
        vendor: vendor word (``"NVIDIA"``, ``"MLU"``, ``"DCU"``, ``"Ascend"``, ``"Metax"``,
            ``"MetaxSGPU"``, ``"Iluvatar"``, ``"Enflame"``, ``"Mthreads"``, ``"Kunlun"``,
            ``"KunlunVXPU"``, ``"AMD"``); Ascend/Iluvatar chips are told apart by ``type``.
        memory_mib: registered memory in MiB (after HAMi memory scaling).
        cores_percent: registered cores, 100 = one whole device (x core scaling; AMD: CU count).
        split_count: max concurrent tasks on the device (HAMi ``count``).
        numa: NUMA node id.
        healthy: HAMi ``health``.
        cordoned: listed in ``hami.io/device-cordon``.
        mode: ``"hami-core"`` | ``"mig"`` | ``"mps"`` | vendor mode string ("" = none).
        used_slots: booked tasks (HAMi ``Used``).
        used_memory_mib: booked memory (HAMi ``Usedmem``).
        used_cores_percent: booked cores (HAMi ``Usedcores``).
        mig_profiles: MIG profiles (mode ``"mig"`` only).
        mig_instances: booked MIG instances (mode ``"mig"`` only).
        network_id: Ascend ``custominfo.NetworkID`` (None when not reported).
        qos_policy: Metax sGPU QoS policy of the tasks on the device ("" = none yet).
        error: why the device is kept out of placement although it is present (its model's
            configuration does not resolve, ...); reason ``DeviceModelInvalid``.
        counters: DRA shared counters of the card ``{name: capacity}`` that template
            partitions consume (empty = none enforced).
        used_counters: booked counters ``{name: used}``.
        custom: vendor information HAMi keeps in ``custominfo`` (read-only): Vastai
            ``AIC``/``DeviceStrategy``, Enflame DRS ``profiles``/``maxSlice``, AWS Neuron
            ``AWSNodeType``.
        missing: its node no longer registers it; it is kept (unhealthy) only because
            bookings still hold it. While it holds any, the node's capacity is uncertain
            (:meth:`NodeInfo.unmatched_bookings`).
    """

    uuid: str
    node: str
    index: int
    type: str
    vendor: str
    memory_mib: int
    cores_percent: int = 100
    split_count: int = 1
    numa: int = 0
    healthy: bool = True
    cordoned: bool = False
    mode: str = "hami-core"
    used_slots: int = 0
    used_memory_mib: int = 0
    used_cores_percent: int = 0
    mig_profiles: tuple[MigProfile, ...] = ()
    mig_instances: list[MigInstance] = field(default_factory=list)
    network_id: int | None = None
    qos_policy: str = ""
    error: str = ""
    counters: dict[str, int] = field(default_factory=dict)
    used_counters: dict[str, int] = field(default_factory=dict)
    custom: dict[str, Any] = field(default_factory=dict)
    missing: bool = False

    def booked(self) -> bool:
        """True when anything is booked on the device (slots, memory, cores, MIG)."""
        return bool(
            self.used_slots or self.used_memory_mib or self.used_cores_percent or self.mig_instances
        )

    def clone(self) -> DeviceUsage:
        """Copy with its own mutable usage (profiles, counters' capacity and custom info are
        shared, they are not edited)."""
        return DeviceUsage(
            self.uuid,
            self.node,
            self.index,
            self.type,
            self.vendor,
            self.memory_mib,
            self.cores_percent,
            self.split_count,
            self.numa,
            self.healthy,
            self.cordoned,
            self.mode,
            self.used_slots,
            self.used_memory_mib,
            self.used_cores_percent,
            self.mig_profiles,
            list(self.mig_instances),
            self.network_id,
            self.qos_policy,
            self.error,
            self.counters,
            dict(self.used_counters),
            self.custom,
            self.missing,
        )


@dataclass(slots=True)
class NodeInfo:
    """A node with host resources and accelerators.

    Attributes:
        name: node name.
        devices: accelerators, in registration order.
        cpu_milli / memory_mib: allocatable CPU (millicores) and host memory (MiB).
        used_cpu_milli / used_memory_mib: requested by pods already on the node.
        labels: node labels (matched by ``PodRequest.node_selector``).
        schedulable: False when cordoned (``spec.unschedulable``).
        pair_scores: NVIDIA topology pair scores ``{uuid: {other_uuid: score}}``
            (``hami.io/node-nvidia-score``).
        error: registration/parse error; a node with an error is kept out of placement and
            the error is reported as its reason.
        annotations: node annotations that vendor plugins read (e.g. ``hami-vnpu-core``).
        version: bumped by every reserve/unreserve on the node. The runner caches per-node
            filter/score results keyed on (node object, version); code that edits usage
            fields directly must call :meth:`ClusterSnapshot.touch` (or at least
            :meth:`touch`) afterwards.
    """

    name: str
    devices: list[DeviceUsage] = field(default_factory=list)
    cpu_milli: int = 0
    memory_mib: int = 0
    used_cpu_milli: int = 0
    used_memory_mib: int = 0
    labels: dict[str, str] = field(default_factory=dict)
    schedulable: bool = True
    pair_scores: dict[str, dict[str, int]] = field(default_factory=dict)
    error: str | None = None
    annotations: dict[str, str] = field(default_factory=dict)
    version: int = 0

    def touch(self) -> None:
        """Mark the node changed (invalidates cached placement results for it)."""
        self.version += 1

    def clone(self) -> NodeInfo:
        """Copy with cloned devices (labels/annotations/pair scores are shared read-only)."""
        return NodeInfo(
            self.name,
            [d.clone() for d in self.devices],
            self.cpu_milli,
            self.memory_mib,
            self.used_cpu_milli,
            self.used_memory_mib,
            self.labels,
            self.schedulable,
            self.pair_scores,
            self.error,
            self.annotations,
            self.version,
        )

    def unmatched_bookings(self) -> list[str]:
        """Uuids of the node's devices that it no longer registers while bookings still hold
        them (``DeviceUsage.missing``): the node's capacity is uncertain (the pods may be
        using any of its registered devices), so nothing new is placed on it until those
        bookings end or move to a registered device."""
        return [d.uuid for d in self.devices if d.missing and d.booked()]

    def device(self, uuid: str) -> DeviceUsage | None:
        """Device with this uuid on the node, or None."""
        for d in self.devices:
            if d.uuid == uuid:
                return d
        return None


@dataclass(slots=True)
class ClusterSnapshot:
    """The nodes of a cluster by name, with a change journal.

    Attributes:
        nodes: ``{node name: Node}``.
        errors: cluster-level problems found while building the snapshot (e.g. the same
            device uuid on two nodes), as human-readable strings.
        changed: change journal: the name of a node is appended every time its usage
            changes through the core (``reserve``/``unreserve``, the temporary bookings of
            ``place`` for multi-pod requests, and :meth:`touch`). Plugins that mirror the
            snapshot (the trace policies' fast path) remember how far they have read
            (``len(changed)``) and re-read only the nodes named after that position.
            It only grows; a snapshot lives for one admission cycle or one benchmark run.
            :meth:`clone` starts an empty journal (a clone is a new snapshot identity).
    """

    nodes: dict[str, NodeInfo] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)

    def clone(self) -> ClusterSnapshot:
        """Deep copy of the mutable usage (for what-if evaluation); empty journal."""
        return ClusterSnapshot(
            {n: node.clone() for n, node in self.nodes.items()}, list(self.errors)
        )

    def touch(self, name: str) -> None:
        """Record that node ``name`` changed outside reserve/unreserve (direct edits of
        usage, health, cordon, labels): bumps ``NodeInfo.version`` and journals the name.

        Raises:
            KeyError: no node ``name`` in the snapshot.
        """
        self.nodes[name].touch()
        self.changed.append(name)

    @classmethod
    def from_nodes(cls, nodes: list[NodeInfo]) -> ClusterSnapshot:
        """Build from a node list. Raises ValueError on duplicate node names."""
        out: dict[str, NodeInfo] = {}
        for n in nodes:
            if n.name in out:
                raise ValueError(f"duplicate node name {n.name!r}")
            out[n.name] = n
        return cls(out)


# --------------------------------------------------------------------------------------------
# Requests (frozen)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    """Devices of one vendor for one container (HAMi ``ContainerDeviceRequest``).

    Attributes:
        vendor: HAMi common word of the backend (``"NVIDIA"``, ``"MLU"``, ``"DCU"``,
            ``"Ascend"``, ``"Metax"``, ``"MetaxSGPU"``, ``"Iluvatar"``, ``"Enflame"``,
            ``"Mthreads"``, ``"Kunlun"``, ``"KunlunVXPU"``, ``"AMD"``).
        count: number of distinct physical devices (HAMi ``Nums``; MIG: instances).
        memory_mib: memory per device in MiB, already multiplied by the memory factor;
            0 = not given (then ``memory_percent`` is used).
        memory_percent: memory as percent of each device's registered memory; None = unset
            (HAMi sentinel 101). When both are unset the device's whole memory is booked.
        cores_percent: cores per device, percent (above 100 refused, ``InvalidDeviceRequest``;
            HAMi, and ``hami_parity``, clamp it to 100 in fit; AMD: percent too, converted to
            CUs by the vendor plugin).
        types_include / types_exclude: device models accepted / refused. EXACT,
            case-insensitive match of the whole model string, after dropping a leading
            ``"NVIDIA-"``/``"NVIDIA "`` on both sides (deliberately differs from HAMi's
            substring rule, hami.md §9.10: "H20" must not match "H200").
        uuids_include / uuids_exclude: device uuids accepted / refused (exact).
        numa_bind: all devices of this request on one NUMA node.
        modes: accepted device modes (``nvidia.com/vgpu-mode``); empty = any.
        chip: vendor sub-model the request targets (Ascend common word such as
            ``"Ascend910B4"``, Iluvatar chip, ...); "" = any device of the vendor.
            Matched exactly against the device ``type``.
        soft_split: Ascend ``huawei.com/vnpu-mode: hami-core`` (memory as-is, cores honoured).
        qos_policy: Metax sGPU QoS policy of the pod ("" = not applicable).
        slices: Enflame DRS slice size (0 = not a DRS request).
        drs_memory: Enflame DRS ``enflame.com/gcu-memory`` as the Pod writes it (0 = unset):
            GB when at most twice the node's largest profile GB, else MiB (HAMi
            ``normalizeMemoryRequestToGB``); the console's own requests use ``memory_mib``.
    """

    vendor: str
    count: int = 1
    memory_mib: int = 0
    memory_percent: int | None = None
    cores_percent: int = 0
    types_include: tuple[str, ...] = ()
    types_exclude: tuple[str, ...] = ()
    uuids_include: tuple[str, ...] = ()
    uuids_exclude: tuple[str, ...] = ()
    numa_bind: bool = False
    modes: tuple[str, ...] = ()
    chip: str = ""
    soft_split: bool = False
    qos_policy: str = ""
    slices: int = 0
    drs_memory: int = 0


@dataclass(frozen=True, slots=True)
class ContainerRequest:
    """One container's device requests; ``init`` marks an init container."""

    name: str
    devices: tuple[DeviceRequest, ...] = ()
    init: bool = False


@dataclass(frozen=True, slots=True)
class PodRequest:
    """One pod: host resources, containers (init containers first is NOT required) and
    node selector labels.

    Attributes:
        name: pod name (``namespace/name`` or a plain name).
        cpu_milli / memory_mib: pod host request (effective: max(init, sum of app)).
        containers: all containers; init containers carry ``init=True``.
        node_selector: labels the node must carry with these exact values.
        node_policy / device_policy: per-pod overrides (``hami.io/node-scheduler-policy``,
            ``hami.io/gpu-scheduler-policy``); "" = profile default. The words as
            :func:`scheduling.devices.policies.policy_word` spells them: every reader that
            builds a pod request (the job snapshot, the kube codec) normalises them.
        device_scoring_weights: (slot, core, memory) weights of the device score;
            None = profile default (1, 1, 1) (``hami.io/device-scoring-weights``).
        namespace: Kubernetes namespace ("" = unknown).
    """

    name: str
    cpu_milli: int = 0
    memory_mib: int = 0
    containers: tuple[ContainerRequest, ...] = ()
    node_selector: Mapping[str, str] = field(default_factory=dict)
    node_policy: str = ""
    device_policy: str = ""
    device_scoring_weights: tuple[int, int, int] | None = None
    namespace: str = ""


@dataclass(frozen=True, slots=True)
class TopologyRequest:
    """Where the pods of one pod set must or should land in a network topology (Kueue
    Topology-Aware Scheduling: ``kueue.x-k8s.io/podset-required-topology``,
    ``podset-preferred-topology``, ``podset-unconstrained-topology``,
    ``podset-slice-required-topology`` + ``podset-slice-size``, ``podset-group-name``).

    Attributes:
        levels: the topology's node-label keys, widest first, the node level last (e.g.
            ``("topology.kubernetes.io/zone", "cloud.provider.com/topology-block",
            "cloud.provider.com/topology-rack", "kubernetes.io/hostname")``). A node missing
            a level's label is outside every domain of that level.
        required: a key of ``levels``: every pod inside one domain of that level, or none
            placed. "" = not required.
        preferred: a key of ``levels``: as few domains as possible, starting at that level
            and widening only when no single domain fits. "" = not preferred.
        unconstrained: any nodes (Kueue's ``podset-unconstrained-topology``): ranks still
            follow domain order. At most one of required / preferred / unconstrained is set.
        slice_size: pods per slice (0 = no slices): every consecutive group of
            ``slice_size`` pods (by rank) inside one domain of ``slice_level``.
        slice_level: a key of ``levels`` (set when ``slice_size`` is).
        group: pod sets with the same non-empty group are placed as one set under the first
            set's request (Kueue ``podset-group-name``).

    Invalid input (a level not in ``levels``, two modes at once, a slice without a level)
    is refused by the caller (API 400); the core reports it as ``TopologyInvalid``.
    """

    levels: tuple[str, ...]
    required: str = ""
    preferred: str = ""
    unconstrained: bool = False
    slice_size: int = 0
    slice_level: str = ""
    group: str = ""


@dataclass(frozen=True, slots=True)
class PodSetTopology:
    """A topology request for ``count`` consecutive pods of a request from ``first``."""

    first: int
    count: int
    request: TopologyRequest


@dataclass(frozen=True, slots=True)
class PlacementRequest:
    """A set of pods placed together. ``min_pods``: gang minimum (None = all pods).

    ``topology``: per pod set, its topology request (empty = no topology: today's placement,
    node by node). Pods of a request under a topology get assignments in rank order:
    ``Decision.pods[i]`` is for ``pods[i]`` and neighbouring ranks share a domain.
    """

    name: str
    pods: tuple[PodRequest, ...] = ()
    min_pods: int | None = None
    topology: tuple[PodSetTopology, ...] = ()


# --------------------------------------------------------------------------------------------
# Results (frozen)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DeviceGrant:
    """One device slice granted to a container.

    Attributes:
        uuid: device uuid.
        type: the value written in HAMi's annotation TYPE field (backend common word, e.g.
            ``"NVIDIA"``, ``"MLU"``, ``"Ascend910B3"``).
        memory_mib / cores_percent: booked memory (MiB after factor) and cores (percent).
        vendor: backend vendor word of the device.
        index: device index on the node.
        mig_profile / mig_start / mig_size: MIG instance (NVIDIA MIG only).
        template: Ascend vNPU template name (hard split only), Enflame DRS profile name.
        model: device model string as registered (``DeviceUsage.type``).
        counters: shared counters the grant consumes on its card, ``((name, n), ...)``.
        slices: partition size booked in the device's slots (Enflame DRS slices, AWS
            Neuron cores); 0 = one slot.
    """

    uuid: str
    type: str
    memory_mib: int
    cores_percent: int
    vendor: str = ""
    index: int = 0
    mig_profile: str = ""
    mig_start: int = -1
    mig_size: int = 0
    template: str = ""
    model: str = ""
    counters: tuple[tuple[str, int], ...] = ()
    slices: int = 0


@dataclass(frozen=True, slots=True)
class ContainerAssignment:
    """Devices granted to one container (``init`` mirrors the request)."""

    name: str
    devices: tuple[DeviceGrant, ...] = ()
    init: bool = False


@dataclass(frozen=True, slots=True)
class PodAssignment:
    """Node and devices for one pod; ``cpu_milli``/``memory_mib`` are booked on the node."""

    pod: str
    node: str
    containers: tuple[ContainerAssignment, ...] = ()
    cpu_milli: int = 0
    memory_mib: int = 0
    score: float = 0.0


@dataclass(frozen=True, slots=True)
class Decision:
    """Outcome of one placement.

    Attributes:
        schedulable: True when at least ``min_pods`` (default all) pods were placed.
        pods: assignments of the placed pods (empty when not schedulable).
        reasons: ``{node name: reason}`` for nodes rejected for the first pod that failed
            (HAMi style ``"<n>/<total> <Reason>, ..."``); empty when schedulable.
        node_scores: ``{node name: score}`` of feasible nodes for the last pod placed
            (HAMi node score; the profile's policy says whether higher or lower wins).
        unplaced: names of pods that could not be placed.
        domains: under a topology, per placed pod (same order as ``pods``) its domain
            values from the widest level to the node (e.g. ``("zone-a", "block-1",
            "rack-3", "node-7")``); empty without a topology.
        topology_reason: why a topology request could not be met, e.g.
            ``"TopologyPlacementFailed: needs 16 pods in one rack; the best rack has 12
            free"``; "" when met or without a topology.
    """

    schedulable: bool
    pods: tuple[PodAssignment, ...] = ()
    reasons: Mapping[str, str] = field(default_factory=dict)
    node_scores: Mapping[str, float] = field(default_factory=dict)
    unplaced: tuple[str, ...] = ()
    domains: tuple[tuple[str, ...], ...] = ()
    topology_reason: str = ""
