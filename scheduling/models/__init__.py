"""Models of the scheduling app: inventory, queues and jobs, placements."""

from scheduling.models.consolidation import ConsolidationMove
from scheduling.models.estimates import JobStartEstimate
from scheduling.models.inventory import (
    Cluster,
    Device,
    DeviceModel,
    DeviceSerial,
    Node,
    SerialSource,
)
from scheduling.models.jobs import Job, JobContainer, JobEvent, Preemption, PriorityClass, Queue
from scheduling.models.placements import Placement, PlacementDevice, PlacementMigInstance
from scheduling.models.topology import TopologyMode, TopologyRequestFields
from scheduling.models.whatif import SimulationRun, SimulationState
from scheduling.models.workloads import JobPodSet, KubeWorkload

__all__ = [
    "Cluster",
    "ConsolidationMove",
    "Device",
    "DeviceModel",
    "DeviceSerial",
    "Job",
    "JobContainer",
    "JobEvent",
    "JobPodSet",
    "JobStartEstimate",
    "KubeWorkload",
    "Node",
    "Placement",
    "PlacementDevice",
    "PlacementMigInstance",
    "Preemption",
    "PriorityClass",
    "Queue",
    "SerialSource",
    "SimulationRun",
    "SimulationState",
    "TopologyMode",
    "TopologyRequestFields",
]
