"""Models of the scheduling app: inventory, queues and jobs, placements."""

from scheduling.models.inventory import Cluster, Device, DeviceModel, Node
from scheduling.models.jobs import (
    Job,
    JobContainer,
    JobEvent,
    Preemption,
    PriorityClass,
    Queue,
)
from scheduling.models.placements import Placement, PlacementDevice

__all__ = [
    "Cluster",
    "Device",
    "DeviceModel",
    "Job",
    "JobContainer",
    "JobEvent",
    "Node",
    "Placement",
    "PlacementDevice",
    "Preemption",
    "PriorityClass",
    "Queue",
]
