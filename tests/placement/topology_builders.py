"""Builders for the topology placement tests (no Django): a zone / block / rack / hostname
cluster of whole-GPU nodes and gang requests."""

from __future__ import annotations

from scheduling.placement import (
    ClusterSnapshot,
    ContainerRequest,
    DeviceRequest,
    DeviceUsage,
    NodeInfo,
    PlacementRequest,
    PodRequest,
)
from scheduling.placement.types import PodSetTopology, TopologyRequest

ZONE = "topology.kubernetes.io/zone"
BLOCK = "cloud.provider.com/topology-block"
RACK = "cloud.provider.com/topology-rack"
HOST = "kubernetes.io/hostname"
LEVELS = (ZONE, BLOCK, RACK, HOST)


def topo_node(name, block, rack, gpus=8, used=0, zone="z1", cpu=128000, labels=None):
    """A node of ``gpus`` whole A100s, the first ``used`` of them fully booked."""
    devices = [
        DeviceUsage(
            f"{name}-g{j}",
            name,
            j,
            "NVIDIA-A100-SXM4-80GB",
            "NVIDIA",
            81920,
            100,
            10,
            used_slots=1 if j < used else 0,
            used_memory_mib=81920 if j < used else 0,
            used_cores_percent=100 if j < used else 0,
        )
        for j in range(gpus)
    ]
    lab = {ZONE: zone, BLOCK: block, RACK: rack, HOST: name} if labels is None else labels
    return NodeInfo(name, devices, cpu_milli=cpu, memory_mib=1024000, labels=lab)


def cluster(layout):
    """``layout``: ``{(block, rack): [used GPUs per node, ...]}``; node names ``<rack>-n<i>``
    with the block in the name so racks of two blocks may share a rack value."""
    nodes = []
    for (block, rack), used in layout.items():
        for i, u in enumerate(used):
            nodes.append(topo_node(f"{block}-{rack}-n{i}", block, rack, used=u))
    return ClusterSnapshot.from_nodes(nodes)


def gang_pod(name, gpus=8, cpu=1000):
    dev = DeviceRequest("NVIDIA", gpus, cores_percent=100)
    return PodRequest(name, cpu, 1024, (ContainerRequest("worker", (dev,)),))


def gang(n, gpus=8, name="job", min_pods=None, **topo):
    """``n`` pods of ``gpus`` whole GPUs under one topology request (``topo``: the
    TopologyRequest fields but ``levels``; no topology when empty)."""
    pods = tuple(gang_pod(f"{name}-{i}", gpus) for i in range(n))
    sets = ()
    if topo:
        sets = (PodSetTopology(0, n, TopologyRequest(LEVELS, **topo)),)
    return PlacementRequest(name, pods, min_pods=min_pods, topology=sets)
