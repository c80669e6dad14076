"""The what-if replay with gang jobs under a topology request (issue 31)."""

from __future__ import annotations

from scheduling.placement.types import TopologyRequest
from scheduling.placement.whatif.run import SimPod, replay_policy
from scheduling.placement.whatif.trace import NodeRecord, PodRecord

RACK = "cloud.provider.com/topology-rack"
HOST = "kubernetes.io/hostname"
NODES = [NodeRecord(f"n{i}", 96000, 786432, 8, "G2") for i in range(4)]
LABELS = {f"n{i}": {RACK: f"r{i // 2}", HOST: f"n{i}"} for i in range(4)}
EIGHT = PodRecord("eight", 8000, 16384, 8, 1000)
ONE_RACK = TopologyRequest((RACK, HOST), required=RACK)


def test_gangs_start_whole_inside_one_rack_or_wait():
    pods = [
        SimPod("a", 0, 100, EIGHT, gang=2, topology=ONE_RACK),
        SimPod("b", 10, 100, EIGHT, gang=2, topology=ONE_RACK),
        SimPod("a", 20, 50, EIGHT, gang=2, topology=ONE_RACK),
    ]
    res = replay_policy("FragGuard", NODES, pods, node_labels=LABELS)
    assert res.never_ran == 0
    # the third waits for the first to leave at t=100: waits 0, 0, 80
    assert (res.mean_wait_s, res.p95_wait_s) == (80 / 3, 80.0)
    assert res.tenants["a"].gpu_hours == (16 * 100 + 16 * 50) / 3600
    assert res.tenants["b"].asked_gpu_hours == 16 * 100 / 3600


def test_a_gang_no_rack_can_hold_never_runs():
    pods = [SimPod("a", 0, 10, EIGHT, gang=3, topology=ONE_RACK)]
    res = replay_policy("FragGuard", NODES, pods, node_labels=LABELS)
    assert res.never_ran == 1
    # without the topology the same gang runs on three nodes of two racks
    res = replay_policy("FragGuard", NODES, [SimPod("a", 0, 10, EIGHT, gang=3)], node_labels=LABELS)
    assert res.never_ran == 0
