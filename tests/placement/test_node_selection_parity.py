"""The incremental node selection (``scheduling.placement.node_selection``) answers exactly as
the full Filter/Score loop: randomized long sequences of place/reserve/unreserve/touch with mixed
request shapes, profiles and edits, compared decision by decision (node, grants, score, reasons when
nothing fits, every feasible node's score)."""

import random
from dataclasses import replace

import pytest

from scheduling.placement import (
    ClusterSnapshot,
    ContainerRequest,
    DeviceRequest,
    DeviceUsage,
    NodeInfo,
    PlacementRequest,
    PodRequest,
    Profile,
    place,
    reserve,
    unreserve,
)
from scheduling.placement.fragmentation import TargetWorkload, TaskClass
from scheduling.placement.group_profile import PlacementPolicy, policy_profile
from scheduling.placement.registry import Registry
from scheduling.placement.runner import schedule_pod
from scheduling.placement.types import MigPlacement, MigProfile

MIG = (
    MigProfile("1g.10gb", 9856, 14, 1, tuple(MigPlacement(i, 1) for i in range(7))),
    MigProfile("3g.40gb", 40192, 42, 3, (MigPlacement(0, 4), MigPlacement(4, 4))),
)
MODELS = ("NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB", "Tesla-T4")
WL = TargetWorkload(
    (TaskClass(8000, 1000, 1), TaskClass(4000, 500, 1), TaskClass(16000, 1000, 2)), (0.5, 0.3, 0.2)
)


def cluster(seed: int, n: int = 40) -> ClusterSnapshot:
    """``n`` nodes: NVIDIA nodes of three models (some mixed, some MIG GPUs, NVLink pair scores
    on some), a few Ascend nodes, CPU-only nodes; zone labels; seeded."""
    rnd = random.Random(seed)
    nodes = []
    for i in range(n):
        name = f"n{i:03d}"
        kind = rnd.random()
        devs: list[DeviceUsage] = []
        pair: dict[str, dict[str, int]] = {}
        if kind < 0.1:
            pass  # CPU only
        elif kind < 0.2:
            devs = [
                DeviceUsage(f"{name}-a{j}", name, j, "Ascend910B3", "Ascend", 65536, 20, 4)
                for j in range(rnd.choice((2, 4)))
            ]
        else:
            count = rnd.choice((1, 2, 4, 8))
            model = rnd.choice(MODELS)
            for j in range(count):
                m = rnd.choice(MODELS) if rnd.random() < 0.15 else model
                mig = m.startswith("NVIDIA-A100") and rnd.random() < 0.2
                devs.append(
                    DeviceUsage(
                        f"{name}-g{j}",
                        name,
                        j,
                        m,
                        "NVIDIA",
                        16000 if m == "Tesla-T4" else 81920,
                        100,
                        7 if mig else rnd.choice((1, 4, 10)),
                        numa=j * 2 // max(count, 1),
                        mode="mig" if mig else "hami-core",
                        mig_profiles=MIG if mig else (),
                    )
                )
            if count >= 2 and rnd.random() < 0.5:
                pair = {
                    a.uuid: {b.uuid: rnd.choice((10, 20, 40)) for b in devs if b is not a}
                    for a in devs
                }
        nodes.append(
            NodeInfo(
                name,
                devs,
                cpu_milli=rnd.choice((16000, 64000, 128000)),
                memory_mib=rnd.choice((65536, 524288)),
                labels={"zone": rnd.choice(("a", "b", "c"))},
                pair_scores=pair,
            )
        )
    return ClusterSnapshot.from_nodes(nodes)


def device_request(rnd: random.Random) -> DeviceRequest:
    """A random NVIDIA or Ascend request of any shape the core supports."""
    if rnd.random() < 0.1:
        return DeviceRequest("Ascend", rnd.choice((1, 2)), memory_mib=rnd.choice((0, 16000)))
    kw: dict = {"count": rnd.choice((1, 1, 1, 2, 4))}
    form = rnd.random()
    if form < 0.3:
        kw["memory_mib"] = rnd.choice((4000, 10000, 30000))
    elif form < 0.5:
        kw["memory_percent"] = rnd.choice((25, 50))
    kw["cores_percent"] = rnd.choice((0, 10, 30, 50, 100))
    if rnd.random() < 0.15:
        kw["types_include"] = (rnd.choice(MODELS),)
    elif rnd.random() < 0.1:
        kw["types_exclude"] = (rnd.choice(MODELS),)
    if rnd.random() < 0.05:
        kw["uuids_exclude"] = (f"n{rnd.randrange(40):03d}-g0",)
    if rnd.random() < 0.1:
        kw["numa_bind"] = True
    if rnd.random() < 0.05:
        kw["modes"] = ("mig",)
    return DeviceRequest("NVIDIA", **kw)


def pod(rnd: random.Random, name: str) -> PodRequest:
    """A pod with one or two containers (maybe an init container), host resources, maybe a
    node selector and per-pod policies."""
    containers = [ContainerRequest("main", (device_request(rnd),) if rnd.random() < 0.9 else ())]
    if rnd.random() < 0.2:
        containers.append(ContainerRequest("side", (device_request(rnd),)))
    if rnd.random() < 0.1:
        containers.insert(0, ContainerRequest("init", (device_request(rnd),), init=True))
    return PodRequest(
        name,
        rnd.choice((0, 1000, 8000, 32000)),
        rnd.choice((0, 4096, 65536)),
        tuple(containers),
        node_selector={"zone": rnd.choice("abc")} if rnd.random() < 0.15 else {},
        node_policy=rnd.choice(("", "", "", "binpack", "spread")),
        device_policy=rnd.choice(("", "", "", "binpack", "spread", "topology-aware")),
    )


def request(rnd: random.Random, k: int, pool: list[PodRequest]) -> PlacementRequest:
    """One pod, or a gang of 2-4 pods (all or ``min_pods``), drawn from ``pool`` (so request
    shapes repeat, as in a queue) or, one time in ten, new."""

    def one(name: str) -> PodRequest:
        if rnd.random() < 0.1:
            return pod(rnd, name)
        return replace(rnd.choice(pool), name=name)

    if rnd.random() < 0.15:
        pods = tuple(one(f"r{k}-{j}") for j in range(rnd.choice((2, 3, 4))))
        return PlacementRequest(f"r{k}", pods, rnd.choice((None, 1, 2)))
    return PlacementRequest(f"r{k}", (one(f"r{k}"),))


def edit(rnd: random.Random, snaps: list[ClusterSnapshot], k: int) -> None:
    """The same random edit on every snapshot: cordon, error, device health/cordon, labels,
    through the journal (``ClusterSnapshot.touch``) or the version only (``NodeInfo.touch``)."""
    name = f"n{rnd.randrange(len(snaps[0].nodes)):03d}"
    what = rnd.choice(("cordon", "error", "health", "devcordon", "label"))
    journal = rnd.random() < 0.7
    for s in snaps:
        n = s.nodes[name]
        if what == "cordon":
            n.schedulable = not n.schedulable
        elif what == "error":
            n.error = None if n.error else f"broken {k}"
        elif what == "label":
            n.labels = {"zone": "abc"[k % 3]}
        elif n.devices:
            d = n.devices[k % len(n.devices)]
            if what == "health":
                d.healthy = not d.healthy
            else:
                d.cordoned = not d.cordoned
        if journal:
            s.touch(name)
        else:
            n.touch()


def run_parity(make_fw, seed: int, steps: int, nodes: int = 40) -> dict:
    """Drive one snapshot with the selector and one with the full loop; assert equal
    decisions after each step. Returns counts of what happened."""
    rnd = random.Random(seed)
    fast_snap, full_snap = cluster(seed, nodes), cluster(seed, nodes)
    fast, full = make_fw(True), make_fw(False)
    assert full.selector is None
    held: list[tuple] = []
    seen = {"placed": 0, "failed": 0, "released": 0, "edits": 0}
    pool = [pod(rnd, f"pool{j}") for j in range(24)]
    for k in range(steps):
        op = rnd.random()
        if op < 0.12 and held:
            a, b = held.pop(rnd.randrange(len(held)))
            unreserve(fast_snap, a)
            unreserve(full_snap, b)
            seen["released"] += 1
            continue
        if op < 0.2:
            edit(rnd, [fast_snap, full_snap], k)
            seen["edits"] += 1
            continue
        req = request(rnd, k, pool)
        a, b = place(fast_snap, req, fast), place(full_snap, req, full)
        assert a == b, (k, req)
        assert dict(a.node_scores) == dict(b.node_scores)
        assert list(a.reasons.items()) == list(b.reasons.items())
        if a.schedulable:
            reserve(fast_snap, a)
            reserve(full_snap, b)
            held.append((a, b))
            seen["placed"] += 1
        else:
            seen["failed"] += 1
    return seen


@pytest.mark.parametrize(
    ("node_policy", "device_policy", "seed"),
    [("binpack", "spread", 1), ("spread", "binpack", 2), ("binpack", "topology-aware", 3)],
)
def test_hami_profiles_decide_as_the_full_loop(node_policy, device_policy, seed):
    def make(incremental):
        return Profile(node_policy=node_policy, device_policy=device_policy).build(
            cache=incremental
        )

    assert make(True).selector is not None
    seen = run_parity(make, seed=seed, steps=700)
    assert seen["placed"] > 150 and seen["failed"] > 20 and seen["released"] > 30
    assert seen["edits"] > 30


@pytest.mark.parametrize("fragmentation", ["FragGuard", "FGD"])
def test_fragguard_group_profiles_decide_as_the_full_loop(fragmentation):
    def make(incremental):
        prof = policy_profile(PlacementPolicy("spread", "binpack", fragmentation), workload=WL)
        return prof.build(cache=incremental)

    assert make(True).selector is not None
    seen = run_parity(make, seed=11, steps=600)
    assert seen["placed"] > 100 and seen["failed"] > 10


def test_a_large_cluster_with_long_sequences():
    seen = run_parity(lambda inc: Profile().build(cache=inc), seed=5, steps=1500, nodes=150)
    assert seen["placed"] > 400 and seen["failed"] > 20


class Pressure:
    """A Score plugin reading a cluster-wide figure (``level``), versioned by ``score_epoch``."""

    name = "Pressure"

    def __init__(self, **_):
        self.level = 1.0
        self.score_epoch = 0

    def set(self, level):
        self.level = level
        self.score_epoch += 1

    def score(self, state, pod, node, fit):
        free = sum(d.split_count - d.used_slots for d in node.devices)
        return (free * self.level) % 7


class Opaque:
    """A Score plugin that says nothing about locality (the selector must not serve it)."""

    name = "Opaque"

    def __init__(self, **_):
        pass

    def score(self, state, pod, node, fit):
        return 1.0


def _profile(name, cls):
    return Profile(scores=((name, 1.0), ("HAMiNodeScore", 0.5)), registry=Registry({name: cls}))


def test_epoch_versioned_scores_are_reevaluated_when_the_figures_move():
    fast, full = _profile("Pressure", Pressure).build(), _profile("Pressure", Pressure).build(False)
    assert fast.selector is not None
    s1, s2 = cluster(3), cluster(3)
    rnd = random.Random(3)
    for k in range(300):
        if k % 25 == 0:
            level = rnd.choice((0.5, 1.0, 2.0, 3.0))
            for fw in (fast, full):
                fw.scores[0][0].set(level)
        req = PlacementRequest(f"p{k}", (pod(rnd, f"p{k}"),))
        a, b = place(s1, req, fast), place(s2, req, full)
        assert a == b
        if a.schedulable:
            reserve(s1, a)
            reserve(s2, b)


def test_a_score_plugin_that_cannot_say_falls_back_to_the_loop():
    fw = _profile("Opaque", Opaque).build()
    assert fw.selector is None
    assert Profile().build(cache=True, incremental=False).selector is None


def test_nan_scores_decline_the_shape_and_keep_the_loops_answer():
    class Nan(Pressure):
        name = "Nan"

        def score(self, state, pod, node, fit):
            return float("nan") if node.name == "n002" else 1.0

    fast, full = _profile("Nan", Nan).build(), _profile("Nan", Nan).build(False)
    s = cluster(4, 8)
    req = PlacementRequest("p", (PodRequest("p", 1000, 1024),))
    a, b = place(s, req, fast), place(s, req, full)
    assert a.pods == b.pods and str(dict(a.node_scores)) == str(dict(b.node_scores))
    view = fast.selector._views[id(s)]
    assert len(view.declined) == 1 and not view.keys


def test_direct_edits_are_caught_by_version_and_by_the_chosen_nodes_stamp():
    s = ClusterSnapshot.from_nodes(
        [NodeInfo(n, [], cpu_milli=8000, memory_mib=8192) for n in ("a", "b", "c")]
    )
    fw = Profile(node_policy="spread").build()
    req = PlacementRequest("p", (PodRequest("p", 1000, 1024),))
    assert place(s, req, fw).pods[0].node == "a"  # all score 0: first name
    # version only (NodeInfo.touch, as the database snapshot builders do): a is cordoned
    s.nodes["a"].schedulable = False
    s.nodes["a"].touch()
    assert place(s, req, fw).pods[0].node == "b"
    # no touch at all: the node about to be chosen is re-checked against its usage stamp
    s.nodes["b"].used_cpu_milli = 7500
    assert place(s, req, fw).pods[0].node == "c"
    # every reason when nothing fits, in node order
    s.nodes["c"].error = "bad"
    s.touch("c")
    s.nodes["b"].used_cpu_milli = 0
    s.touch("b")
    s.nodes["b"].labels = {"x": "1"}
    s.touch("b")
    d = place(
        s, PlacementRequest("p", (PodRequest("p", 1000, 1024, node_selector={"x": "2"}),)), fw
    )
    assert list(d.reasons.items()) == [
        ("a", "node(s) were unschedulable"),
        ("b", "node(s) didn't match Pod's node affinity/selector"),
        ("c", "NodeRegistrationError: bad"),
    ]


def test_custom_node_order_breaks_ties_and_empty_clusters():
    s = ClusterSnapshot.from_nodes(
        [NodeInfo(n, [], cpu_milli=8000, memory_mib=8192) for n in ("a", "b", "c")]
    )
    fw = Profile().build()
    pod_ = PodRequest("p", 1000, 1024)
    assert schedule_pod(s, pod_, fw, ["c", "a", "b"]).assignment.node == "c"
    assert schedule_pod(s, pod_, fw).assignment.node == "a"
    # not an order of every node: the loop answers
    assert schedule_pod(s, pod_, fw, ["b"]).assignment.node == "b"
    empty = ClusterSnapshot()
    assert schedule_pod(empty, pod_, fw).reasons == {"*": "no nodes in the cluster"}


def test_memory_is_bounded_per_snapshot_and_across_snapshots():
    fw = Profile().build()
    sel = fw.selector
    sel.max_keys = 5
    s = cluster(9, 20)
    for k in range(30):
        pod_ = PodRequest(f"p{k}", 1000 + k, 1024)  # 30 shapes
        place(s, PlacementRequest("p", (pod_,)), fw)
    assert len(sel._views[id(s)].keys) == 5
    sel.max_outcomes = 40  # 20 nodes: 2 shapes
    place(s, PlacementRequest("p", (PodRequest("q", 1, 1),)), fw)
    assert len(sel._views[id(s)].keys) == 2
    snaps = [cluster(9, 20) for _ in range(5)]
    for other in snaps:
        place(other, PlacementRequest("p", (PodRequest("q", 1, 1),)), fw)
    assert len(sel._views) == 1 + sel.parked
    assert all(v.snapshot in snaps[-3:] for v in sel._views.values())
    # switching back to a parked snapshot keeps its state (no re-evaluation)
    kept = sel._views[id(snaps[-2])].keys
    place(snaps[-2], PlacementRequest("p", (PodRequest("q", 1, 1),)), fw)
    assert sel._views[id(snaps[-2])].keys is kept


def test_scores_handed_out_do_not_change_with_later_placements():
    s = cluster(2, 12)
    fw = Profile().build()
    req = PlacementRequest(
        "p",
        (
            PodRequest(
                "p",
                1000,
                1024,
                (
                    ContainerRequest(
                        "c", (DeviceRequest("NVIDIA", 1, memory_mib=1000, cores_percent=10),)
                    ),
                ),
            ),
        ),
    )
    d1 = place(s, req, fw)
    before = dict(d1.node_scores)
    reserve(s, d1)
    d2 = place(s, req, fw)
    assert dict(d1.node_scores) == before
    assert d2.node_scores[d1.pods[0].node] != before[d1.pods[0].node]


def test_the_change_journal_is_bounded():
    fw = Profile().build()
    s = cluster(6, 3)
    req = PlacementRequest("p", (PodRequest("p", 1000, 1024),))
    other = PlacementRequest("q", (PodRequest("q", 2000, 1024),))
    place(s, other, fw)  # a shape that then falls far behind
    for _ in range(120):  # one journal entry per call (reserve and unreserve: the same node)
        d = place(s, req, fw)
        reserve(s, d)
        unreserve(s, d)
    view = fw.selector._views[id(s)]
    assert len(view.journal) <= 2 * 8 * 3
    assert len(view.keys) == 1  # the old shape was dropped, the busy one kept
    assert place(s, other, fw) == place(s, other, Profile().build(cache=False))
