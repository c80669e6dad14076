"""The runner's fast path (``select``) and the snapshot change journal."""

from scheduling.placement import PlacementRequest, Profile, place, reserve, unreserve
from scheduling.placement.fragmentation import TargetWorkload, TaskClass
from scheduling.placement.registry import Registry
from scheduling.placement.runner import SUPPORTS_SELECT
from scheduling.placement.types import (
    ClusterSnapshot,
    ContainerRequest,
    DeviceRequest,
    DeviceUsage,
    NodeInfo,
    PodRequest,
)
from scheduling.placement.whatif.policies import register_trace_policies

WL = TargetWorkload((TaskClass(1000, 500, 1),), (1.0,))


def t4_node(name, frees, cpu=16000):
    devs = []
    for j, free in enumerate(frees):
        used = 100 - free // 10
        devs.append(
            DeviceUsage(
                f"{name}-{j}",
                name,
                j,
                "T4",
                "NVIDIA",
                16000,
                100,
                100,
                used_slots=1 if used else 0,
                used_cores_percent=used,
                used_memory_mib=16000 * used // 100,
            )
        )
    return NodeInfo(name, devs, cpu_milli=cpu, memory_mib=262144)


def pod(name, milli=300, gpus=1, cpu=1000, selector=None):
    devs = (
        (DeviceRequest("NVIDIA", gpus, memory_percent=milli // 10, cores_percent=milli // 10),)
        if gpus
        else ()
    )
    return PodRequest(
        name, cpu, 1024, (ContainerRequest("main", devs),), node_selector=selector or {}
    )


def framework(policy="BestFit"):
    reg = Registry()
    register_trace_policies(reg)
    return Profile(
        name="t",
        scores=((policy, 1.0),),
        registry=reg,
        select="max",
        plugin_args={policy: {"workload": WL}},
    ).build()


def test_fast_path_decides_through_place_and_follows_the_journal():
    assert SUPPORTS_SELECT
    snap = ClusterSnapshot.from_nodes(
        [t4_node("a", (1000, 400)), t4_node("b", (1000,) * 4, cpu=32000)]
    )
    fw = framework()
    assert fw.select_plugin is fw.scores[0][0]
    d1 = place(snap, PlacementRequest("p1", (pod("p1"),)), fw)
    # BestFit: a scores 87 (see test_frag_policies), best-fit GPU 1 (400 free)
    assert d1.schedulable and d1.pods[0].node == "a"
    assert [g.index for g in d1.pods[0].containers[0].devices] == [1]
    assert dict(d1.node_scores) == {"a": 87.0}
    assert snap.changed == []  # place() leaves nothing behind
    reserve(snap, d1)
    assert snap.changed == ["a"] and snap.nodes["a"].version == 1
    # a now: GPU1 100 free, GPU0 1000: a 700-milli pod fits only GPU0 of a or any GPU of b;
    # a: 1 - (0.5*14000/128000 + 0.5*400/8000) = 92.03 -> 92 (mirror refreshed from journal)
    d2 = place(snap, PlacementRequest("p2", (pod("p2", milli=700),)), fw)
    assert (d2.pods[0].node, d2.pods[0].score) == ("a", 92.0)
    unreserve(snap, d1)
    assert snap.changed == ["a", "a"]
    # after unreserve the mirror sees GPU1 at 400 again: a 300-milli pod goes back to GPU1
    d3 = place(snap, PlacementRequest("p3", (pod("p3"),)), fw)
    assert [g.index for g in d3.pods[0].containers[0].devices] == [1]


def test_declined_pods_run_the_filter_loop():
    snap = ClusterSnapshot.from_nodes([t4_node("a", (1000,)), t4_node("b", (1000,))])
    snap.nodes["b"].labels["zone"] = "z1"
    fw = framework()
    # a node selector is not trace-shaped: select() declines, the filters apply
    d = place(snap, PlacementRequest("p", (pod("p", selector={"zone": "z1"}),)), fw)
    assert d.schedulable and d.pods[0].node == "b"
    d = place(snap, PlacementRequest("p", (pod("p", selector={"zone": "z9"}),)), fw)
    assert not d.schedulable
    assert d.reasons["a"] == "node(s) didn't match Pod's node affinity/selector"


def test_no_fit_reason_and_multi_pod_requests():
    snap = ClusterSnapshot.from_nodes([t4_node("a", (1000, 1000))])
    fw = framework()
    d = place(snap, PlacementRequest("g", (pod("x", milli=1000, gpus=3),)), fw)
    assert not d.schedulable and d.reasons["*"].startswith("0/1 nodes fit")
    # two whole-GPU pods: the second sees the first booked (GPU 0 then GPU 1)
    d = place(snap, PlacementRequest("g", (pod("x", 1000), pod("y", 1000))), fw)
    assert [p.containers[0].devices[0].index for p in d.pods] == [0, 1]
    assert snap.nodes["a"].devices[0].used_cores_percent == 0  # restored
    # a third would not fit: all-or-nothing
    d = place(snap, PlacementRequest("g", (pod("x", 1000), pod("y", 1000), pod("z", 1000))), fw)
    assert not d.schedulable and d.unplaced == ("z",)


def test_touch_journals_direct_edits():
    snap = ClusterSnapshot.from_nodes([t4_node("a", (1000,)), t4_node("b", (1000,))])
    fw = framework()
    assert place(snap, PlacementRequest("p", (pod("p"),)), fw).pods[0].node == "a"
    snap.nodes["a"].schedulable = False
    snap.touch("a")
    assert snap.changed == ["a"]
    assert place(snap, PlacementRequest("p", (pod("p"),)), fw).pods[0].node == "b"
    assert snap.clone().changed == []


def test_cached_default_profile_decides_as_uncached_even_after_direct_edits():
    import random

    from scheduling.placement.runner import _framework  # noqa: F401 - module import check

    rnd = random.Random(7)

    def cluster():
        return ClusterSnapshot.from_nodes(
            [
                NodeInfo(
                    f"n{i}",
                    [
                        DeviceUsage(f"n{i}-{j}", f"n{i}", j, "A100", "NVIDIA", 81920, 100, 4)
                        for j in range(rnd.choice((1, 2, 4)))
                    ],
                    cpu_milli=32000,
                    memory_mib=262144,
                )
                for i in range(12)
            ]
        )

    state = rnd.getstate()
    a = cluster()
    rnd.setstate(state)
    b = cluster()
    # the node cache alone (incremental node selection relies on touch():
    # test_node_selection_parity)
    cached, plain = Profile().build(cache=True, incremental=False), Profile().build(cache=False)
    assert cached.cache and not plain.cache and cached.selector is None
    shapes = [(1, 20000, 30), (1, 0, 100), (2, 40000, 0), (1, 8000, 10)]
    held = []
    for k in range(120):
        c, m, co = shapes[k % len(shapes)]
        req = PlacementRequest(
            f"p{k}",
            (
                PodRequest(
                    f"p{k}",
                    2000,
                    4096,
                    (
                        ContainerRequest(
                            "c", (DeviceRequest("NVIDIA", c, memory_mib=m, cores_percent=co),)
                        ),
                    ),
                ),
            ),
        )
        da, db = place(a, req, cached), place(b, req, plain)
        assert da == db
        if da.schedulable:
            reserve(a, da)
            reserve(b, db)
            held.append(da)
        if k % 10 == 9 and held:  # direct edits without touch(), as admission what-ifs do
            victim = held.pop(0)
            for snap in (a, b):
                pa = victim.pods[0]
                node = snap.nodes[pa.node]
                node.used_cpu_milli -= pa.cpu_milli
                node.used_memory_mib -= pa.memory_mib
                for g in pa.containers[0].devices:
                    dev = node.device(g.uuid)
                    dev.used_slots -= 1
                    dev.used_memory_mib -= g.memory_mib
                    dev.used_cores_percent -= g.cores_percent
                node.labels["edited"] = str(k)
    assert len(held) > 5
