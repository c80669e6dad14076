"""Pure-Python placement core: where does a pod go (node and physical devices).

Public API:
    place(snapshot, request, profile=None) -> Decision
    reserve(snapshot, decision) / unreserve(snapshot, decision)
    Profile / Framework (profile.build()) for plugin sets and policies.

Stdlib only: no Django, Kubernetes client or other service imports (shared/docs/STYLE.md §3).
"""

from scheduling.placement.profile import Framework, Profile
from scheduling.placement.runner import place, reserve, unreserve
from scheduling.placement.types import (
    ClusterSnapshot,
    ContainerAssignment,
    ContainerRequest,
    Decision,
    DeviceGrant,
    DeviceRequest,
    DeviceUsage,
    NodeInfo,
    PlacementRequest,
    PodAssignment,
    PodRequest,
)

__all__ = [
    "ClusterSnapshot",
    "ContainerAssignment",
    "ContainerRequest",
    "Decision",
    "DeviceUsage",
    "DeviceGrant",
    "DeviceRequest",
    "Framework",
    "NodeInfo",
    "PlacementRequest",
    "PodAssignment",
    "PodRequest",
    "Profile",
    "place",
    "reserve",
    "unreserve",
]
