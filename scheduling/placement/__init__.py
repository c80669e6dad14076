"""Pure-Python placement core: where does a pod go (node and physical devices).

Public API:
    place(snapshot, request, profile=None) -> Decision
    reserve(snapshot, decision) / unreserve(snapshot, decision)

Stdlib only: no Django, Kubernetes client or other service imports (see docs/STYLE.md §3).
"""

from scheduling.placement.types import (
    ClusterSnapshot,
    ContainerAssignment,
    ContainerRequest,
    Decision,
    Device,
    DeviceGrant,
    DeviceRequest,
    Node,
    PlacementRequest,
    PodAssignment,
    PodRequest,
)


def place(snapshot, request, profile=None):  # replaced by runner.place shortly
    raise NotImplementedError("placement runner not ready yet")


def reserve(snapshot, decision):
    raise NotImplementedError("placement runner not ready yet")


def unreserve(snapshot, decision):
    raise NotImplementedError("placement runner not ready yet")


__all__ = [
    "ClusterSnapshot", "ContainerAssignment", "ContainerRequest", "Decision", "Device",
    "DeviceGrant", "DeviceRequest", "Node", "PlacementRequest", "PodAssignment", "PodRequest",
    "place", "reserve", "unreserve",
]
