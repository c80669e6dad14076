"""Upkeep of the topology capacity counts and of the booking memo (issue 31, speed): the
vectorised fast-path count, a reserve between two gangs, and the grants memo of
``apply_assignment``."""

from __future__ import annotations

from dataclasses import replace

from topology_builders import RACK, cluster, gang_pod, topo_node

from scheduling.placement import (
    ClusterSnapshot,
    ContainerRequest,
    DeviceRequest,
    PlacementRequest,
    PodRequest,
    booking,
    place,
    reserve,
)
from scheduling.placement.booking import apply_assignment
from scheduling.placement.fragmentation import TargetWorkload, TaskClass
from scheduling.placement.plugins.frag_engine import task_view
from scheduling.placement.plugins.frag_within import fit_count
from scheduling.placement.types import (
    ContainerAssignment,
    DeviceGrant,
    PodAssignment,
    PodSetTopology,
    TopologyRequest,
)
from scheduling.placement.whatif.replay import profile_for

WORKLOAD = TargetWorkload((TaskClass(8000, 1000, 1), TaskClass(16000, 1000, 2)), (0.5, 0.5))
LEVELS = ("topology.kubernetes.io/zone", "cloud.provider.com/topology-block", RACK)
#: host memory of one pod: 3 fit on a node of the builders (1,024,000 MiB)
MEM = 300_000


def _pod(name: str, gpus: int = 1, memory_mib: int = MEM) -> PodRequest:
    dev = DeviceRequest("NVIDIA", gpus, cores_percent=100)
    return PodRequest(name, 1000, memory_mib, (ContainerRequest("worker", (dev,)),))


def _gang(name: str, n: int) -> PlacementRequest:
    pods = tuple(_pod(f"{name}-{i}") for i in range(n))
    topo = (
        PodSetTopology(0, n, TopologyRequest(LEVELS + ("kubernetes.io/hostname",), required=RACK)),
    )
    return PlacementRequest(name, pods, topology=topo)


def test_fast_count_is_fit_count_capped_by_host_memory_node_by_node():
    s = cluster({("b1", "r1"): [0, 3, 7, 8], ("b1", "r2"): [0, 6]})
    _fw, plugin = profile_for("FragGuard", WORKLOAD, 1, 1)
    for pod in (_pod("a"), _pod("b", gpus=2, memory_mib=600_000), gang_pod("c", gpus=4)):
        counter = plugin.fit_counter(s, pod)
        table = plugin._bind(s)
        no_mem = replace(task_view(pod), memory_mib=0)
        want = [
            max(min(fit_count(table, i, no_mem), table.mem[i] // pod.memory_mib), 0)
            for i in range(len(table.names))
        ]
        assert counter.many(table.names) == want
        assert [counter(n) for n in table.names] == want


def test_direct_count_matches_fit_count_on_every_kind_of_node():
    """The direct count of a whole-GPU task (``FitCounter._direct``) against the general
    rule node by node: CPU-bound, memory-bound, cordoned, a node of another vendor, a node
    of mixed models (counted through the memo) and one without devices."""
    nodes = [
        topo_node("cpu-bound", "b1", "r1", cpu=3000),
        topo_node("full", "b1", "r1", used=8),
        topo_node("half", "b1", "r1", used=5),
        replace(topo_node("cordoned", "b1", "r1"), schedulable=False),
        topo_node("no-gpu", "b1", "r2", gpus=0),
    ]
    other = topo_node("other-vendor", "b1", "r2")
    other.devices = [replace(d, vendor="Ascend", type="Ascend910B") for d in other.devices]
    mixed = topo_node("mixed", "b1", "r2", used=1)
    mixed.devices = [replace(d, type="NVIDIA-H100") if d.index < 2 else d for d in mixed.devices]
    s = ClusterSnapshot.from_nodes([*nodes, other, mixed])
    _fw, plugin = profile_for("FragGuard", WORKLOAD, 1, 1)
    pods = (
        gang_pod("a", gpus=1, cpu=1000),
        gang_pod("b", gpus=2, cpu=2000),
        _pod("c", gpus=2, memory_mib=400_000),
        gang_pod("d", gpus=3, cpu=500),
    )
    for pod in pods:
        counter = plugin.fit_counter(s, pod)
        assert counter is not None and counter.direct
        counter.memo.clear()  # every state new: counted by _direct
        table = plugin._bind(s)
        no_mem = replace(task_view(pod), memory_mib=0)
        want = [
            max(min(fit_count(table, i, no_mem), table.mem[i] // pod.memory_mib), 0)
            for i in range(len(table.names))
        ]
        assert counter.many(table.names) == want
        assert counter.many(table.names[::-1]) == want[::-1]
    got = dict(zip(table.names, counter.many(table.names), strict=True))  # d: 3 GPUs, 0.5 CPU
    assert got == {
        "cpu-bound": 2,
        "full": 0,
        "half": 1,
        "cordoned": 0,
        "no-gpu": 0,
        "other-vendor": 0,
        "mixed": 2,
    }


def _expected(s: ClusterSnapshot) -> dict[str, int]:
    """Per node: min(fully free GPUs, free host memory // MEM), from the snapshot itself."""
    return {
        n.name: min(
            sum(1 for d in n.devices if d.used_slots == 0),
            (n.memory_mib - n.used_memory_mib) // MEM,
        )
        for n in s.nodes.values()
    }


def test_a_reserve_between_two_gangs_changes_the_count():
    s = cluster({("b1", "r1"): [0, 0], ("b1", "r2"): [0, 6]})
    fw, _plugin = profile_for("FragGuard", WORKLOAD, 1, 1)
    d = place(s, _gang("a", 2), fw)
    shapes = next(iter(fw.topology._states.values()))[3]
    (counts,) = shapes.values()
    assert counts.node == {"b1-r1-n0": 3, "b1-r1-n1": 3, "b1-r2-n0": 3, "b1-r2-n1": 2}
    assert counts.sums[2] == {("z1", "b1", "r1"): 6, ("z1", "b1", "r2"): 5}
    # best fit: r2 (5 free) leaves 3, r1 (6 free) would leave 4
    assert {x[:3] for x in d.domains} == {("z1", "b1", "r2")}
    reserve(s, d)
    dh = place(s, PlacementRequest("hog", (_pod("hog", memory_mib=700_000),)), fw)
    reserve(s, dh)  # between the two gangs: 700,000 MiB of host memory on one node
    hog_node = dh.pods[0].node
    before = _expected(s)
    assert before[hog_node] <= 1
    d2 = place(s, _gang("b", 2), fw)
    assert counts.node == before  # recounted from the journal at d2's place
    assert counts.node[hog_node] < 3
    assert counts.sums[2] == {
        ("z1", "b1", r): sum(c for n, c in before.items() if n.startswith(f"b1-{r}-"))
        for r in ("r1", "r2")
    }
    assert d2.schedulable


def test_booking_memo_books_each_pods_own_grants(monkeypatch):
    monkeypatch.setattr(booking, "_COLLAPSED_LIMIT", 2)
    node = topo_node("n0", "b1", "r1")
    s = ClusterSnapshot.from_nodes([node])
    for k in range(5):  # past the limit: the memo is emptied and refilled
        grant = DeviceGrant(f"n0-g{k % 8}", "NVIDIA", 1000 * (k + 1), 10 * (k + 1), "NVIDIA", k)
        pa = PodAssignment(f"p{k}", "n0", (ContainerAssignment("worker", (grant,)),), 100, 10)
        apply_assignment(s, pa, +1)
        dev = s.nodes["n0"].device(grant.uuid)
        assert (dev.used_memory_mib, dev.used_cores_percent) == (1000 * (k + 1), 10 * (k + 1))
        same = PodAssignment("q", "n0", tuple(c for c in pa.containers), 100, 10)  # a new tuple
        assert same.containers is not pa.containers
        apply_assignment(s, same, -1)
        assert (dev.used_memory_mib, dev.used_cores_percent, dev.used_slots) == (0, 0, 0)
        assert len(booking._COLLAPSED) <= 2
    assert s.nodes["n0"].used_cpu_milli == 0
