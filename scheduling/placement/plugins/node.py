"""Node-level filters: registration errors, cordon, node selector, CPU and host memory."""

from __future__ import annotations

from scheduling.placement import reasons as R
from scheduling.placement.framework import SUCCESS, Code, CycleState, Status
from scheduling.placement.plugins import names
from scheduling.placement.types import ClusterSnapshot, NodeInfo, PodRequest


class NodeRegistration:
    """Rejects nodes whose device registration could not be parsed (``NodeInfo.error``),
    and nodes whose registration lost devices that bookings still hold
    (:meth:`NodeInfo.unmatched_bookings`): their capacity is uncertain until those bookings
    end or move, so nothing new goes there (reason ``NodeBookingsUnmatched``)."""

    name = names.NODE_REGISTRATION
    node_local = True

    def __init__(self, **_: object) -> None:
        pass

    def filter(self, state: CycleState, pod: PodRequest, node: NodeInfo) -> Status:
        if node.error:
            return Status(Code.UNRESOLVABLE, f"NodeRegistrationError: {node.error}", self.name)
        unmatched = node.unmatched_bookings()
        if unmatched:
            return Status(Code.UNRESOLVABLE, unmatched_reason(unmatched), self.name)
        return SUCCESS


def unmatched_reason(uuids: list[str]) -> str:
    """The ``NodeBookingsUnmatched`` reason naming the devices ``uuids``."""
    return (
        f"{R.NODE_BOOKINGS_UNMATCHED}: booked device(s) {', '.join(uuids)} no longer "
        "registered; the node's capacity is uncertain until their pods end or are rebound"
    )


class NodeUnschedulable:
    """Rejects cordoned nodes (``spec.unschedulable``), kube-scheduler wording."""

    name = names.NODE_UNSCHEDULABLE
    node_local = True

    def __init__(self, **_: object) -> None:
        pass

    def filter(self, state: CycleState, pod: PodRequest, node: NodeInfo) -> Status:
        if not node.schedulable:
            return Status(Code.UNRESOLVABLE, "node(s) were unschedulable", self.name)
        return SUCCESS


class NodeSelector:
    """Every ``PodRequest.node_selector`` label must be on the node with the same value."""

    name = names.NODE_SELECTOR
    node_local = True

    def __init__(self, **_: object) -> None:
        pass

    def filter(self, state: CycleState, pod: PodRequest, node: NodeInfo) -> Status:
        labels = node.labels
        for k, v in pod.node_selector.items():
            if labels.get(k) != v:
                return Status(
                    Code.UNRESOLVABLE,
                    "node(s) didn't match Pod's node affinity/selector",
                    self.name,
                )
        return SUCCESS


class NodeResourcesFit:
    """CPU (millicores) and host memory (MiB) fit: ``request <= allocatable - used``.

    Reason wording as kube-scheduler ``noderesources/fit.go``: ``Insufficient cpu``,
    ``Insufficient memory`` (both, comma-joined, when both fail).
    """

    name = names.NODE_RESOURCES_FIT
    node_local = True

    def __init__(self, **_: object) -> None:
        pass

    def pre_filter(self, state: CycleState, pod: PodRequest, snapshot: ClusterSnapshot) -> Status:
        if pod.cpu_milli < 0 or pod.memory_mib < 0:
            return Status(Code.ERROR, f"pod {pod.name}: negative cpu or memory request", self.name)
        if pod.cpu_milli == 0 and pod.memory_mib == 0:
            return Status(Code.SKIP, "", self.name)
        return SUCCESS

    def filter(self, state: CycleState, pod: PodRequest, node: NodeInfo) -> Status:
        cpu = pod.cpu_milli > node.cpu_milli - node.used_cpu_milli
        mem = pod.memory_mib > node.memory_mib - node.used_memory_mib
        if cpu or mem:
            parts = (["Insufficient cpu"] if cpu else []) + (["Insufficient memory"] if mem else [])
            return Status(Code.UNSCHEDULABLE, ", ".join(parts), self.name)
        return SUCCESS
