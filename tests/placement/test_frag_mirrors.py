"""A fragmentation policy's mirrors: an admission cycle alternates between its cluster
snapshot and the empty copy it estimates on; each keeps its node table (no rebuild per
switch) and every answer equals that of a plugin that never saw the other snapshot."""

from placement_builders import trace_node

from scheduling.placement import place, reserve
from scheduling.placement.fragmentation import TargetWorkload, TaskClass
from scheduling.placement.group_profile import PlacementPolicy, policy_profile
from scheduling.placement.types import (
    ClusterSnapshot,
    ContainerRequest,
    DeviceRequest,
    PlacementRequest,
    PodRequest,
)

WL = TargetWorkload((TaskClass(1000, 1000, 1), TaskClass(500, 500, 1)), (0.5, 0.5))


def _req(name, pct):
    dev = DeviceRequest("NVIDIA", 1, memory_percent=pct, cores_percent=pct)
    pod = PodRequest(f"{name}-0", 1000, 1024, (ContainerRequest("main", (dev,)),))
    return PlacementRequest(name, (pod,))


def _snap(used):
    return ClusterSnapshot.from_nodes(
        [
            trace_node(f"n{i}", [1000 - u, 1000], cpu=64000, memory_mib=262144)
            for i, u in enumerate(used)
        ]
    )


def _framework():
    return policy_profile(PlacementPolicy(fragmentation="FragGuard"), workload=WL).build()


def _plugin(fw):
    return next(p for p, _w in fw.scores if hasattr(p, "inner")).inner


def test_alternating_snapshots_keep_their_mirrors_and_answers():
    shared = _framework()
    busy, empty = _snap([500, 0, 250, 750]), _snap([0, 0, 0, 0])
    alone_busy, alone_empty = _snap([500, 0, 250, 750]), _snap([0, 0, 0, 0])
    fw_busy, fw_empty = _framework(), _framework()
    plugin = _plugin(shared)
    tables = {}
    for i, pct in enumerate([50, 25, 100, 50, 30, 20, 50]):
        for snap, alone, fw in ((busy, alone_busy, fw_busy), (empty, alone_empty, fw_empty)):
            dec = place(snap, _req(f"j{i}", pct), shared)
            ref = place(alone, _req(f"j{i}", pct), fw)
            assert [p.node for p in dec.pods] == [p.node for p in ref.pods]
            tables.setdefault(id(snap), plugin.table)
            assert plugin.table is tables[id(snap)]  # the same mirror, never rebuilt
            if snap is busy and dec.schedulable:  # the busy snapshot fills up as it goes
                reserve(snap, dec)
                reserve(alone, ref)
    assert len(tables) == 2
