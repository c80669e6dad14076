"""The selector's state-keyed score memo, the node state numbers it keys on, and the reuse of
frozen request/grant objects on the trace fast path."""

import random

from placement_builders import mixed_node as mixed
from placement_builders import trace_node

from scheduling.placement import reserve
from scheduling.placement.fragmentation import TargetWorkload, TaskClass
from scheduling.placement.plugins.frag import FragGuardPolicy
from scheduling.placement.plugins.frag_engine import LazySelector, NodeTable, TaskView
from scheduling.placement.plugins.frag_plugins import TracePolicyPlugin
from scheduling.placement.types import (
    ClusterSnapshot,
    ContainerRequest,
    DeviceRequest,
    PlacementRequest,
    PodRequest,
)
from scheduling.placement.whatif.baselines import BestFitPolicy
from scheduling.placement.whatif.policies import trace_policy_plugin
from scheduling.placement.whatif.trace import PodRecord, pod_request

WL = TargetWorkload(
    (TaskClass(4000, 500, 1), TaskClass(8000, 1000, 1), TaskClass(2000, 0, 0)), (0.5, 0.3, 0.2)
)


def node(name, frees, cpu=16000, cpu_used=0):
    return trace_node(name, frees, cpu=cpu, memory_mib=262144, cpu_used=cpu_used)


def request(name, cpu=1000, gpus=1, milli=300, mem=1024):
    devs = (
        (DeviceRequest("NVIDIA", gpus, memory_percent=milli // 10, cores_percent=milli // 10),)
        if gpus
        else ()
    )
    return PlacementRequest(name, (PodRequest(name, cpu, mem, (ContainerRequest("main", devs),)),))


def test_state_numbers_ignore_device_order_only_on_single_model_nodes():
    snap = ClusterSnapshot.from_nodes(
        [
            node("a", (1000, 400)),
            node("b", (400, 1000)),  # same model, CPU and free multiset as a
            node("c", (1000, 400), cpu=8000),  # less free CPU
            mixed("m1", (1000, 400), ("T4", "A10")),
            mixed("m2", (400, 1000), ("T4", "A10")),  # not interchangeable: T4 has 400 here
        ]
    )
    t = NodeTable(snap)
    a, b, c, m1, m2 = (t.index[n] for n in ("a", "b", "c", "m1", "m2"))
    assert t.state[a] == t.state[b]
    assert len({t.state[a], t.state[c], t.state[m1], t.state[m2]}) == 4
    assert (t.vendor[a], t.vendor[m1]) == ("NVIDIA", None)
    # type_ok reads the per-node single-vendor flag
    share = TaskView(1000, 1024, 1, 300)
    assert t.type_ok(a, share) and not t.type_ok(m1, share)
    assert not t.type_ok(a, TaskView(1000, 1024, 1, 300, vendor="MLU"))
    assert not t.type_ok(a, TaskView(1000, 1024, 1, 300, gpu_types=("A10",)))


def test_state_numbering_restarts_past_the_limit():
    # three distinct states with room for two: the third restarts the numbering
    snap = ClusterSnapshot.from_nodes(
        [node("a", (1000, 400)), node("c", (1000, 400), cpu=8000), node("d", (1000, 1000))]
    )
    t = NodeTable(snap, state_limit=2)
    assert t.state_epoch == 1
    assert sorted(t.state) == [0, 1, 2]
    snap.nodes["a"].used_cpu_milli = 8000  # a now in c's state
    t.refresh(snap, "a")
    assert t.state[t.index["a"]] == t.state[t.index["c"]]


def _oracle(table, policy, task):
    """Full scan: best score, ties to the lowest rank, over nodes with enough memory."""
    best = None
    for i in range(len(table.names)):
        s = policy.score(table, i, task)
        if s is None or table.mem[i] < task.memory_mib:
            continue
        if best is None or (-s, table.rank[i]) < (-best[1], table.rank[best[0]]):
            best = (i, s)
    return best


def test_memoised_answers_equal_a_full_scan_through_restarts_and_clears():
    rng = random.Random(7)
    nodes = [
        node(f"n{k:02d}", (1000,) * rng.choice((1, 2, 4)), cpu=rng.choice((8000, 16000)))
        for k in range(12)
    ]
    snap = ClusterSnapshot.from_nodes(nodes)
    plugin = TracePolicyPlugin("FragGuard", workload=WL, tie_seed=3)
    oracle_policy = FragGuardPolicy(WL)
    shapes = [(1000, 1, 300), (4000, 1, 500), (2000, 0, 0), (8000, 1, 1000), (1000, 2, 1000)]
    placed = 0
    for step in range(150):
        cpu, gpus, milli = rng.choice(shapes)
        req = request(f"p{step}", cpu, gpus, milli, mem=rng.choice((1024, 200000)))
        table = plugin._bind(snap)
        if step == 1:  # small limits: exercise memo clears and state renumbering
            table.state_limit = 6
            plugin.selector.memo_limit = 10
        task = TaskView(cpu, req.pods[0].memory_mib, gpus, milli)
        want = _oracle(table, oracle_policy, task)
        dec = plugin.decide(snap, req)
        if want is None:
            assert not dec.schedulable
            continue
        assert (dec.pods[0].node, dec.pods[0].score) == (table.names[want[0]], want[1])
        reserve(snap, dec)
        placed += 1
    assert placed > 40 and table.state_epoch > 0
    assert plugin.selector.evaluations > 0


def test_selector_does_not_score_nodes_short_of_cpu_or_free_gpus():
    calls = []

    class Spy(BestFitPolicy):
        def score(self, table, i, task):
            calls.append(table.names[i])
            return super().score(table, i, task)

    snap = ClusterSnapshot.from_nodes(
        [
            node("a", (1000,), cpu=500),  # too little CPU
            node("b", (200, 200)),  # no GPU with 300 free
            node("c", (1000, 400)),
        ]
    )
    t = NodeTable(snap)
    sel = LazySelector(t, Spy())
    # BestFit on c: 1 - (0.5 * 15000/128000 + 0.5 * 1100/8000) = 0.8726 -> 87
    assert sel.select(TaskView(1000, 1024, 1, 300)) == (t.index["c"], 87)
    assert calls == ["c"]


def test_gpuclustering_is_not_memoised_on_state():
    # a and b are in the same state; only b hosts a sharing task (tag): GpuClustering must see
    # the tag, so b wins (fullness 25 * 6000/8000 = 18, + 75) over a (18 + 25) despite a's
    # lower name. A memo keyed on the node state would give b a's score and a would win.
    snap = ClusterSnapshot.from_nodes([node("a", (1000, 1000)), node("b", (1000, 1000))])
    plugin = trace_policy_plugin("GpuClustering", workload=WL)
    plugin.decide(snap, request("warm"))  # binds the mirror
    plugin.sync(snap, [("b", "share", 1)])
    dec = plugin.decide(snap, request("p"))
    assert (dec.pods[0].node, dec.pods[0].score) == ("b", 93.0)


def test_equal_grants_and_containers_are_shared_frozen_objects():
    snap = ClusterSnapshot.from_nodes([node("a", (1000,))])
    plugin = trace_policy_plugin("BestFit", workload=WL)
    g1 = plugin.decide(snap, request("p1")).pods[0].containers[0].devices[0]
    g2 = plugin.decide(snap, request("p2")).pods[0].containers[0].devices[0]
    assert g1 is g2
    assert (g1.uuid, g1.memory_mib, g1.cores_percent, g1.index, g1.model) == (
        "a-0",
        4800,
        30,
        0,
        "T4",
    )
    r1 = pod_request(PodRecord("x", 1000, 1024, 1, 300, ("T4",)))
    r2 = pod_request(PodRecord("y", 2000, 512, 1, 300, ("T4",)))
    assert r1.containers is r2.containers and (r1.name, r2.cpu_milli) == ("x", 2000)
    d = r1.containers[0].devices[0]
    assert (d.count, d.cores_percent, d.memory_percent, d.types_include) == (1, 30, 30, ("T4",))
