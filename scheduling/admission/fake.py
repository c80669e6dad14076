"""An in-memory :class:`~scheduling.admission.placer.Placer` for tests and demos.

It knows a flat list of devices (``placement.types.Device``) and places each pod of a job
on one node with :class:`PodShape` devices, first fit: nodes by name, devices in list
order. Charges come from :func:`scheduling.admission.charges.charges_for`, so the fake
charges exactly as the real wiring does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from scheduling.admission.charges import charges_for
from scheduling.admission.placer import FlavorChoice, PlacementOutcome, Undo
from scheduling.admission.types import AdmissionInputError, GroupSpec, PendingWorkload
from scheduling.placement.types import (
    ContainerAssignment,
    Decision,
    DeviceGrant,
    DeviceUsage,
    PodAssignment,
)


@dataclass(frozen=True, slots=True)
class PodShape:
    """What every pod of a fake job asks for.

    Attributes:
        devices: distinct devices per pod (on one node).
        memory_mib: MiB per device (0 = use ``memory_percent``, or the whole memory when
            ``cores_percent`` is 100).
        memory_percent: percent of the device's memory, resolved on the device it lands on.
        cores_percent: percent of cores per device; 100 with no memory = a whole device.
        flavors: flavors the pod may land on (empty = any flavor of the group).
        one_domain: all pods of the pod set inside one domain of the placer's ``domains``
            (a required topology, Kueue ``podset-required-topology``), domains tried in
            name order.
    """

    devices: int = 1
    memory_mib: int = 0
    memory_percent: int | None = None
    cores_percent: int = 100
    flavors: tuple[str, ...] = ()
    one_domain: bool = False


class PoolPlacer:
    """First-fit placer over a fixed device list.

    Args:
        group: the resource group (maps device models to flavors).
        devices: the devices; their ``used_*`` fields are the starting usage.
        domains: ``{node: domain}`` (e.g. its rack) for pod shapes with ``one_domain``;
            nodes not in it are in no domain.
    """

    def __init__(
        self,
        group: GroupSpec,
        devices: Iterable[DeviceUsage],
        domains: Mapping[str, str] | None = None,
    ) -> None:
        self.group = group
        self.domains = dict(domains or {})
        self.devices = {d.uuid: d.clone() for d in devices}
        self.held: dict[str, Decision] = {}
        self._order = sorted(self.devices.values(), key=lambda d: (d.node, d.index, d.uuid))

    # -- protocol --------------------------------------------------------------------------

    def try_place(
        self, workload: PendingWorkload, pod_count: int, flavors: FlavorChoice = None
    ) -> PlacementOutcome:
        """Place ``pod_count`` pods of ``workload`` in pod-set order (each pod set's request
        must be a :class:`PodShape`), pod set ``i`` restricted to ``flavors[i]``."""
        free = {
            u: [
                d.memory_mib - d.used_memory_mib,
                d.cores_percent - d.used_cores_percent,
                d.used_slots,
            ]
            for u, d in self.devices.items()
        }
        return self._place(workload, pod_count, flavors, free)

    def estimate(
        self, workload: PendingWorkload, pod_count: int, flavors: FlavorChoice = None
    ) -> PlacementOutcome:
        """:meth:`try_place` on the same devices with nothing booked."""
        free = {u: [d.memory_mib, d.cores_percent, 0] for u, d in self.devices.items()}
        return self._place(workload, pod_count, flavors, free)

    def _place(
        self,
        workload: PendingWorkload,
        pod_count: int,
        flavors: FlavorChoice,
        free: dict[str, list[int]],
    ) -> PlacementOutcome:
        pods: list[PodAssignment] = []
        for set_index, pod_set in enumerate(workload.sets()):
            shape = pod_set.request
            if not isinstance(shape, PodShape):
                raise AdmissionInputError(f"workload {workload.id}: request is not a PodShape")
            allowed = flavors[set_index] if flavors and set_index < len(flavors) else None
            count = min(pod_set.count, pod_count - len(pods))
            if shape.one_domain:
                placed = self._place_in_one_domain(
                    workload.id, len(pods), count, shape, allowed, free
                )
                if placed is None:
                    return PlacementOutcome(
                        placed=False,
                        reason=f"{count} pod(s) of {shape.devices} device(s) fit in no one domain",
                    )
                pods += placed
                continue
            for _ in range(count):
                pod = self._place_pod(f"{workload.id}-{len(pods)}", shape, allowed, free)
                if pod is None:
                    return PlacementOutcome(
                        placed=False,
                        reason=f"pod {len(pods) + 1}/{pod_count}: no node has {shape.devices} "
                        f"free device(s) for the shape",
                    )
                pods.append(pod)
        decision = Decision(schedulable=True, pods=tuple(pods))
        return PlacementOutcome(
            placed=True,
            pod_count=pod_count,
            token=decision,
            charges=charges_for(decision, self.devices, self.group),
        )

    def reserve(self, workload: PendingWorkload, outcome: PlacementOutcome) -> Undo:
        """Book the ``Decision`` in ``outcome.token`` for ``workload.id``."""
        if not isinstance(outcome.token, Decision):
            raise AdmissionInputError(f"workload {workload.id}: outcome carries no Decision")
        return self.hold(workload.id, outcome.token)

    def remove(self, workload_id: str) -> Undo:
        """Free the devices of ``workload_id`` (running or reserved) until the returned undo
        is called."""
        decision = self.held.pop(workload_id)
        self._book(decision, -1)

        def undo() -> None:
            self._book(decision, +1)
            self.held[workload_id] = decision

        return undo

    def victim_domains(self, workload: PendingWorkload) -> dict[str, frozenset[str]] | None:
        """For a preemptor with a ``one_domain`` pod set: per held workload, the domains its
        pods occupy (the topology-aware victim choice, ``admission/preemption.py``); None
        otherwise."""
        if not any(
            isinstance(ps.request, PodShape) and ps.request.one_domain for ps in workload.sets()
        ):
            return None
        return {
            wid: frozenset(self.domains[p.node] for p in d.pods if p.node in self.domains)
            for wid, d in self.held.items()
        }

    # -- helpers -------------------------------------------------------------------------------

    def _place_in_one_domain(
        self,
        workload_id: str,
        first: int,
        count: int,
        shape: PodShape,
        allowed: tuple[str, ...] | None,
        free: dict[str, list[int]],
    ) -> list[PodAssignment] | None:
        """``count`` pods inside the first domain (name order) that holds them all; ``free``
        is updated only on success."""
        for domain in sorted(set(self.domains.values())):
            within = {n for n, v in self.domains.items() if v == domain}
            trial = {u: list(v) for u, v in free.items()}
            pods = []
            for k in range(count):
                pod = self._place_pod(f"{workload_id}-{first + k}", shape, allowed, trial, within)
                if pod is None:
                    break
                pods.append(pod)
            if len(pods) == count:
                free.update(trial)
                return pods
        return None

    def hold(self, workload_id: str, decision: Decision) -> Undo:
        """Book ``decision`` as held by ``workload_id`` (also used to load running jobs)."""
        if workload_id in self.held:
            raise AdmissionInputError(f"workload {workload_id} already holds devices")
        self._book(decision, +1)
        self.held[workload_id] = decision

        def undo() -> None:
            self._book(self.held.pop(workload_id), -1)

        return undo

    def _book(self, decision: Decision, sign: int) -> None:
        for pod in decision.pods:
            for container in pod.containers:
                for grant in container.devices:
                    device = self.devices[grant.uuid]
                    device.used_memory_mib += sign * grant.memory_mib
                    device.used_cores_percent += sign * grant.cores_percent
                    device.used_slots += sign

    def _wants(
        self, shape: PodShape, device: DeviceUsage, allowed: tuple[str, ...] | None
    ) -> tuple[int, int] | None:
        if not device.healthy or device.cordoned:
            return None
        flavor = self.group.flavor_of(device.type)
        if flavor is None or (shape.flavors and flavor not in shape.flavors):
            return None
        if allowed is not None and flavor not in allowed:
            return None
        if shape.memory_mib:
            memory = shape.memory_mib
        elif shape.memory_percent is not None:
            memory = device.memory_mib * shape.memory_percent // 100
        elif shape.cores_percent >= 100:
            memory = device.memory_mib
        else:
            memory = 0
        return memory, min(shape.cores_percent, 100)

    def _place_pod(
        self,
        name: str,
        shape: PodShape,
        allowed: tuple[str, ...] | None,
        free: dict[str, list[int]],
        within: set[str] | None = None,
    ) -> PodAssignment | None:
        nodes = sorted({d.node for d in self._order if within is None or d.node in within})
        for node in nodes:
            grants: list[DeviceGrant] = []
            for device in self._order:
                if device.node != node or len(grants) == shape.devices:
                    continue
                want = self._wants(shape, device, allowed)
                if want is None:
                    continue
                memory, cores = want
                mem_free, cores_free, slots = free[device.uuid]
                whole = cores >= 100
                if mem_free < memory or cores_free < cores or (whole and slots > 0):
                    continue
                if slots >= device.split_count:
                    continue
                grants.append(
                    DeviceGrant(
                        uuid=device.uuid,
                        type=device.vendor,
                        memory_mib=memory,
                        cores_percent=cores,
                        model=device.type,
                        index=device.index,
                    )
                )
            if len(grants) == shape.devices:
                for grant in grants:
                    held = free[grant.uuid]
                    held[0] -= grant.memory_mib
                    held[1] -= grant.cores_percent
                    held[2] += 1
                return PodAssignment(
                    pod=name,
                    node=node,
                    containers=(ContainerAssignment(name="main", devices=tuple(grants)),),
                )
        return None
