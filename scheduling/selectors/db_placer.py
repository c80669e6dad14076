"""The admission core's ``Placer`` port over the placement core and a cluster snapshot built
from the database (``scheduling.admission.placer.Placer`` protocol)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from scheduling.admission import (
    FlavorChoice,
    GroupSpec,
    PendingWorkload,
    PlacementOutcome,
    Undo,
    charges_for,
)
from scheduling.devices.matching import any_type_matches
from scheduling.devices.schema import DeviceModelConfig
from scheduling.placement import place, reserve, unreserve
from scheduling.placement.booking import apply_device_usage, apply_migs
from scheduling.placement.profile import Framework
from scheduling.placement.types import (
    ClusterSnapshot,
    Decision,
    DeviceUsage,
    MigInstance,
    PlacementRequest,
    PodRequest,
    PodSetTopology,
)


@dataclass
class RunningBooking:
    """What a running (or terminating) job books in the cluster snapshot (from its placement
    rows)."""

    job_id: int
    pods: list[tuple[str, int, int, list[tuple[str, int, int, int]]]] = field(default_factory=list)
    """``[(node name, cpu_milli, memory_mib, [(uuid, memory_mib, cores_percent, slots)])]``"""
    migs: list[tuple[str, MigInstance]] = field(default_factory=list)
    """MIG instances it holds: ``[(GPU uuid, instance)]``."""


def unschedulable_reason(decision: Decision) -> str:
    """Summary of the placement core's per-node reasons (most frequent first, at most 5);
    under a topology request the core's ``topology_reason`` when it gives one (e.g.
    ``TopologyPlacementFailed: needs 16 pods in one rack; the best rack has 12 free``)."""
    if decision.topology_reason:
        return decision.topology_reason
    if not decision.reasons:
        return "no node in the resource group"
    counts: dict[str, int] = {}
    for reason in decision.reasons.values():
        counts[reason] = counts.get(reason, 0) + 1
    parts = [f"{n} node(s): {r}" for r, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    return f"0/{len(decision.reasons)} nodes fit; " + "; ".join(parts[:5])


def _restrict(pod: PodRequest, types: tuple[str, ...]) -> PodRequest | None:
    """``pod`` with every device request limited to the device models ``types`` (a flavor)
    that its own model list names (whole model tokens,
    :func:`~scheduling.devices.matching.type_matches`: ``H20`` names ``NVIDIA-NVIDIA H20``,
    never ``NVIDIA H200``); None when that leaves none."""
    containers = []
    for container in pod.containers:
        devices = []
        for request in container.devices:
            accepted = [
                t
                for t in types
                if not request.types_include or any_type_matches(t, request.types_include)
            ]
            if not accepted or not types:
                return None
            devices.append(replace(request, types_include=tuple(accepted)))
        containers.append(replace(container, devices=tuple(devices)))
    return replace(pod, containers=tuple(containers))


def _first_pods(topology: tuple[PodSetTopology, ...], pod_count: int) -> tuple:
    """The pod set requests of ``topology`` cut to the first ``pod_count`` pods (a partial
    gang places its first pods under the same requests)."""
    return tuple(
        replace(t, count=min(t.count, pod_count - t.first)) for t in topology if t.first < pod_count
    )


class DbPlacer:
    """The admission core's ``Placer`` (see the module docstring).

    * ``try_place``: :func:`scheduling.placement.place` of the first ``pod_count`` pods (gang:
      all or none), each pod limited to the device models of its pod set's flavors, charged
      with :func:`scheduling.admission.charges_for`; the snapshot is left unchanged.
    * ``estimate``: the same on a copy of the snapshot with nothing booked (no usage, MIG
      instance or DRA shared counter; built once).
    * ``reserve``: books the decision (:func:`scheduling.placement.reserve`); undo unbooks it;
      ``remove`` of that workload id unbooks it too (a release in a starvation shadow).
    * ``remove``: unbooks a running job's placements exactly as they were booked from the
      database (``PlacementDevice`` rows, MIG instances, node cpu/memory, and the DRA shared
      counters they consume, through the release's own
      :func:`~scheduling.placement.booking.apply_device_usage`); undo books them again.

    Args:
        cluster: the snapshot (mutated by reserve/remove).
        devices: ``{uuid: Device}`` of the snapshot.
        group: the core's resource group (flavors and their device models).
        held: running jobs' bookings by workload id.
        framework: the placement profile, built once per cycle (HAMi default policies with
            the device models' configs; its per-node cache lives as long as the cycle).
        configs: ``{device uuid: resolved model config}`` of the devices with DRA shared
            counters (``SnapshotIndex.configs``): what a victim's booking consumes there.
    """

    def __init__(
        self,
        cluster: ClusterSnapshot,
        devices: dict[str, DeviceUsage],
        group: GroupSpec,
        held: dict[str, RunningBooking],
        framework: Framework | None = None,
        configs: Mapping[str, DeviceModelConfig] | None = None,
    ) -> None:
        self.cluster = cluster
        self.configs = configs or {}
        self.devices = devices
        self.group = group
        self.held = held
        self.framework = framework
        self.reserved: dict[str, Decision] = {}
        self._empty: ClusterSnapshot | None = None
        self._types = {f.name: f.device_types for f in group.flavors}

    def _request(
        self, workload: PendingWorkload, pod_count: int, flavors: FlavorChoice
    ) -> PlacementRequest | str:
        request = workload.request
        if not isinstance(request, PlacementRequest):
            raise TypeError(f"workload {workload.id}: request is not a PlacementRequest")
        pods = list(request.pods[:pod_count])
        allowed = flavors[0] if flavors else None  # the console's jobs have one pod set
        if allowed is not None:
            types = tuple(t for name in allowed for t in self._types.get(name, ()))
            restricted = [_restrict(pod, types) for pod in pods]
            if any(p is None for p in restricted):
                return f"the job's device types exclude every model of flavor {', '.join(allowed)}"
            pods = [p for p in restricted if p is not None]
        return PlacementRequest(
            name=request.name,
            pods=tuple(pods),
            min_pods=None,
            topology=_first_pods(request.topology, pod_count),
        )

    def _place(
        self,
        cluster: ClusterSnapshot,
        workload: PendingWorkload,
        pod_count: int,
        flavors: FlavorChoice,
    ) -> PlacementOutcome:
        sub = self._request(workload, pod_count, flavors)
        if isinstance(sub, str):
            return PlacementOutcome(placed=False, reason=sub)
        decision = place(cluster, sub, self.framework)
        if not decision.schedulable:
            return PlacementOutcome(placed=False, reason=unschedulable_reason(decision))
        return PlacementOutcome(
            placed=True,
            pod_count=pod_count,
            token=decision,
            charges=charges_for(decision, self.devices, self.group),
        )

    def try_place(
        self, workload: PendingWorkload, pod_count: int, flavors: FlavorChoice = None
    ) -> PlacementOutcome:
        """Place ``pod_count`` pods of ``workload`` (its request is a PlacementRequest)."""
        return self._place(self.cluster, workload, pod_count, flavors)

    def estimate(
        self, workload: PendingWorkload, pod_count: int, flavors: FlavorChoice = None
    ) -> PlacementOutcome:
        """:meth:`try_place` on the snapshot with nothing booked."""
        if self._empty is None:
            empty = self.cluster.clone()
            for node in empty.nodes.values():
                node.used_cpu_milli = node.used_memory_mib = 0
                for device in node.devices:
                    device.used_slots = device.used_memory_mib = device.used_cores_percent = 0
                    device.mig_instances = []
                    device.used_counters = {}
                node.touch()
            self._empty = empty
        return self._place(self._empty, workload, pod_count, flavors)

    def reserve(self, workload: PendingWorkload, outcome: PlacementOutcome) -> Undo:
        """Book ``outcome.token`` (a Decision) in the snapshot."""
        decision = outcome.token
        if not isinstance(decision, Decision):
            raise TypeError(f"workload {workload.id}: outcome carries no Decision")
        reserve(self.cluster, decision)
        self.reserved[workload.id] = decision

        def undo() -> None:
            self.reserved.pop(workload.id, None)
            unreserve(self.cluster, decision)

        return undo

    def remove(self, workload_id: str) -> Undo:
        """Unbook a running job's placements (or a booking reserved in this cycle) until the
        returned undo is called.

        Raises:
            KeyError: unknown workload.
        """
        if workload_id in self.reserved:
            decision = self.reserved[workload_id]
            unreserve(self.cluster, decision)
            return lambda: reserve(self.cluster, decision)
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
                apply_device_usage(device, dev_mem, cores, slots, sign, self.configs.get(uuid))
        apply_migs(self.devices, booking.migs, sign)
