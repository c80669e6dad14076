"""Each trace policy's choice on small hand-checked clusters (exact node and GPU)."""

import pytest
from placement_builders import trace_node

from scheduling.placement.fragmentation import TargetWorkload, TaskClass
from scheduling.placement.plugins.frag import absorbed_fillers, residual_waste
from scheduling.placement.plugins.frag_plugins import (
    FRAG_POLICY_NAMES,
    TracePolicyPlugin,
    register_frag_policies,
)
from scheduling.placement.registry import Registry
from scheduling.placement.types import (
    ClusterSnapshot,
    ContainerRequest,
    DeviceRequest,
    PlacementRequest,
    PodRequest,
)
from scheduling.placement.whatif.policies import POLICY_NAMES, trace_policy_plugin

WL = TargetWorkload((TaskClass(1000, 500, 1),), (1.0,))


def node(name, frees, cpu=16000):
    return trace_node(name, frees, cpu=cpu, memory_mib=262144)


def request(cpu=1000, gpus=1, milli=300):
    devs = (
        (DeviceRequest("NVIDIA", gpus, memory_percent=milli // 10, cores_percent=milli // 10),)
        if gpus
        else ()
    )
    return PlacementRequest("t", (PodRequest("t", cpu, 1024, (ContainerRequest("main", devs),)),))


def choose(policy, snap, req, **kw):
    dec = trace_policy_plugin(policy, workload=WL, **kw).decide(snap, req)
    assert dec.schedulable
    pa = dec.pods[0]
    return pa.node, [g.index for g in pa.containers[0].devices], pa.score


@pytest.fixture
def snap():
    # a: GPU1 has 400 milli free; b: four free GPUs, more CPU.
    return ClusterSnapshot.from_nodes([node("a", (1000, 400)), node("b", (1000,) * 4, cpu=32000)])


def test_bestfit(snap):
    # a: 1 - (0.5*15000/128000 + 0.5*1100/8000) = 87.27 -> 87; b: 64.77 -> 64; best-fit GPU 1
    assert choose("BestFit", snap, request()) == ("a", [1], 87.0)


def test_dotprod(snap):
    # a: 100*(1 - (0.125*0.0078125 + 0.175*0.0375)/2) = 99.62 -> 99; b: 98.96 -> 98
    assert choose("DotProd", snap, request()) == ("a", [1], 99.0)


def test_gpupacking(snap):
    # a: partly used GPU with 400 free: 100 - 40/10 = 96; b: empty node: max(33-4, 4) = 29
    assert choose("GpuPacking", snap, request()) == ("a", [1], 96.0)


def test_gpuclustering_fullness_then_tags(snap):
    # no tags anywhere: a: 25*6600/8000 = 20 + 25 = 45; b: 12 + 25 = 37
    assert choose("GpuClustering", snap, request()) == ("a", [1], 45.0)
    plugin = trace_policy_plugin("GpuClustering")
    plugin.decide(snap, request())  # binds the mirror
    plugin.sync(snap, [("b", "share", 1)])
    dec = plugin.decide(snap, request())
    # b hosts only "share" tasks: 12 + 75 = 87 beats a's 20 + 25 (tags on b only)
    assert (dec.pods[0].node, dec.pods[0].score) == ("b", 87.0)


def test_fgd_node_and_gpu(snap):
    # a: F_before = 400 (the 400 GPU is below 500). GPU0 -> [700, 400]: F 400, score 50;
    # GPU1 -> [1000, 100]: F 100, sigmoid(0.3) = 0.574 -> 57. b: 0 -> 0, score 50.
    assert choose("FGD", snap, request()) == ("a", [1], 57.0)


def test_whole_gpus_take_lowest_free_indices():
    snap = ClusterSnapshot.from_nodes([node("a", (400, 1000, 1000, 1000))])
    assert choose("BestFit", snap, request(gpus=2, milli=1000))[:2] == ("a", [1, 2])


def test_ties_follow_name_or_seeded_rank():
    snap = ClusterSnapshot.from_nodes([node(n, (1000, 1000)) for n in ("a", "b", "c", "d")])
    assert choose("FGD", snap, request())[0] == "a"
    picks = {choose("FGD", snap, request(), tie_seed=s)[0] for s in range(8)}
    assert len(picks) > 1  # the seeded permutation moves the tie winner


def test_fragguard_puts_cpu_only_tasks_on_gpu_full_nodes():
    snap = ClusterSnapshot.from_nodes([node("a-free", (1000,) * 4), node("b-full", (0, 0))])
    # FGD: both keep F unchanged (score 50) -> tie -> name order
    assert choose("FGD", snap, request(gpus=0))[0] == "a-free"
    # FragGuard: least idle GPU first
    assert choose("FragGuard", snap, request(gpus=0))[0] == "b-full"


def fragguard(workload):
    """FragGuard without the residual-waste term (tests of the other terms)."""
    plugin = trace_policy_plugin("FragGuard", workload=workload)
    plugin.policy.residual_weight = 0.0
    return plugin


def test_residual_waste_by_hand():
    # M: 470-milli tasks and whole GPUs, half each. R(g) = g below 470; R(530) = R(60) = 60;
    # R(940) = R(470) = R(0) = 0; R(950) = R(10) = 10; R(1000) = (R(530) + R(0)) / 2 = 30.
    wl = TargetWorkload((TaskClass(1000, 470, 1), TaskClass(1000, 1000, 1)), (0.5, 0.5))
    res = residual_waste(wl)
    assert len(res) == 1001
    assert (res[0], res[210], res[469], res[530], res[940], res[950], res[1000]) == (
        0.0,
        210.0,
        469.0,
        60.0,
        0.0,
        10.0,
        30.0,
    )


def test_fragguard_fills_a_gap_that_leaves_a_usable_rest():
    # M = WL (500-milli tasks): R(g) = g mod 500. Task: 300 milli, CPU plenty (S stays 0).
    # a (1000 free): F 0 -> 0 (700 >= 500); R 0 -> R(700) = 200: mu = 1.5, 300 -> 42.
    # b (900 free): F 0 -> 0 (600 >= 500); R(900) = 400 -> R(600) = 100: 1.5 * -300 -> 61.
    # FGD sees no difference (50 / 50, name order -> a).
    snap = ClusterSnapshot.from_nodes([node("a", (1000,)), node("b", (900,))])
    assert choose("FGD", snap, request()) == ("a", [0], 50.0)
    assert choose("FragGuard", snap, request()) == ("b", [0], 61.0)


def test_absorbed_fillers_by_hand():
    # 810-milli tasks (40 %) leave 190 slivers; only the 160s (10 %) fit there: absorbed.
    # 650s (10 %) leave 350 slivers, served by the 320s (20 %, and the 230s carried): kept.
    classes = [(810, 0.4), (160, 0.1), (650, 0.1), (320, 0.2), (230, 0.05), (1000, 0.15)]
    assert absorbed_fillers(classes) == {160}
    # 650s at 30 %: 350 slivers take 0.3 of 0.25 (320s + 230s): both absorbed, with the 160s.
    more = [(810, 0.2), (160, 0.1), (650, 0.3), (320, 0.2), (230, 0.05), (1000, 0.15)]
    assert absorbed_fillers(more) == {160, 230, 320}
    # Residual waste leaves absorbed classes out: with M = 810s and 160s only, the 160s are
    # absorbed, so a 190 gap is all waste: R(190) = 190 (not R(30) = 30).
    wl = TargetWorkload((TaskClass(1000, 810, 1), TaskClass(1000, 160, 1)), (0.9, 0.1))
    assert residual_waste(wl)[190] == 190.0


#: half the tasks may use any model, half only T4 (same shape: 1000 CPU, 500 milli).
WL_T4 = TargetWorkload((TaskClass(1000, 500, 1), TaskClass(1000, 500, 1, ("T4",))), (0.5, 0.5))


def t4_and_g2(t4_frees=(1000, 1000), g2_frees=(1000, 1000), g2_cpu=2500):
    return ClusterSnapshot.from_nodes(
        [
            trace_node("a-t4", t4_frees, cpu=16000, memory_mib=262144, model="T4"),
            trace_node("b-g2", g2_frees, cpu=g2_cpu, memory_mib=262144, model="G2"),
        ]
    )


def test_fragguard_keeps_a_pressed_model_for_the_tasks_that_need_it():
    # Task: 300 milli, 1000 CPU. rho = 2 (as above).
    # a-t4 (CPU-rich): F stays 0 (700 >= 500 for both classes), S stays 0.
    # b-g2 (2500 CPU): the T4-only class is blind there: F = 0.5 * 2000 -> 0.5 * 1700, dF = -150;
    # S = 2000 - 2500/2 = 750 -> 1700 - 1500/2 = 950, dS = +200: int(100 * sigmoid(-0.05)) = 48.
    # Without the reserved-model term a-t4 wins with 50.
    snap = t4_and_g2()
    plain = fragguard(WL_T4)
    plain.policy.reserve_weight = 0.0
    dec = plain.decide(snap, request())
    assert (dec.pods[0].node, dec.pods[0].score) == ("a-t4", 50.0)
    # With it: s_T4 = (0.5 * 500) / (0.5 * 500 + 0.5 * 500) = 0.5 of M's GPU volume must land on
    # T4; F = 4000, F_T4 = 2000 -> v_T4 = min(1, 0.5 * 4000 / 2000) = 1: a-t4 pays 1 * 300,
    # int(100 * sigmoid(-0.3)) = 42 < 48 -> b-g2.
    plugin = fragguard(WL_T4)
    dec = plugin.decide(snap, request())
    assert (dec.pods[0].node, dec.pods[0].score) == ("b-g2", 48.0)
    assert plugin.policy.pressure == {"T4": 1.0}


def test_fragguard_model_pressure_follows_the_free_capacity():
    # G2 nearly booked: F = 2000 + 200 = 2200, F_T4 = 2000 -> v_T4 = 0.5 * 2200 / 2000 = 0.55.
    # The task does not fit b-g2 (100 free per GPU); on a-t4 it pays 0.55 * 300 = 165:
    # int(100 * sigmoid(-0.165)) = 45.
    snap = t4_and_g2(g2_frees=(100, 100))
    plugin = fragguard(WL_T4)
    dec = plugin.decide(snap, request())
    assert (dec.pods[0].node, dec.pods[0].score) == ("a-t4", 45.0)
    assert plugin.policy.pressure == {"T4": pytest.approx(0.55)}


def test_fragguard_pressure_moves_in_steps_and_rescores_the_models_nodes():
    from scheduling.placement.plugins.frag_engine import NodeTable

    snap = t4_and_g2()
    policy = trace_policy_plugin("FragGuard", workload=WL_T4).policy
    table = NodeTable(snap)
    policy.prepare(table)
    assert policy.pressure == {"T4": 1.0} and table.journal == []
    assert (table.free_total, table.free_by_model) == (4000, {"T4": 2000, "G2": 2000})
    # Book 1000 milli of G2: v = 0.5 * 3000 / 2000 = 0.75 (moved >= 0.05): a-t4 re-scored.
    snap.nodes["b-g2"].devices[0].used_cores_percent = 100
    snap.nodes["b-g2"].devices[0].used_memory_mib = 16000
    snap.nodes["b-g2"].devices[0].used_slots = 1
    table.refresh(snap, "b-g2")
    assert (table.free_total, table.free_by_model["G2"]) == (3000, 1000)
    policy.prepare(table)
    assert policy.pressure == {"T4": 0.75}
    assert table.journal == [1, 0]  # b-g2 refreshed, then a-t4 touched
    # 20 milli more on T4: v = 0.5 * 2980 / 1980 = 0.7525, within the step: unchanged.
    snap.nodes["a-t4"].devices[1].used_cores_percent = 2
    snap.nodes["a-t4"].devices[1].used_memory_mib = 320
    snap.nodes["a-t4"].devices[1].used_slots = 1
    table.refresh(snap, "a-t4")
    policy.prepare(table)
    assert policy.pressure == {"T4": 0.75} and table.journal == [1, 0, 0]


def test_fragguard_no_pressure_without_constrained_classes():
    policy = trace_policy_plugin("FragGuard", workload=WL).policy
    from scheduling.placement.plugins.frag_engine import NodeTable

    table = NodeTable(t4_and_g2())
    assert policy.reserved_shares(table) == {}
    policy.prepare(table)
    assert policy.pressure == {}


def test_random_only_feasible_nodes():
    snap = ClusterSnapshot.from_nodes([node("a", (400, 1000)), node("b", (1000, 1000))])
    for seed in range(5):
        assert choose("Random", snap, request(gpus=2, milli=1000), seed=seed)[:2] == ("b", [0, 1])


def test_no_fit_gives_reason_and_incremental_matches_rebuild():
    snap = ClusterSnapshot.from_nodes([node("a", (100,))])
    dec = trace_policy_plugin("FGD", workload=WL).decide(snap, request())
    assert not dec.schedulable and dec.unplaced == ("t",)
    assert "0/1 nodes fit" in dec.reasons["*"]


def test_registry_names_and_recommended_first():
    from scheduling.placement.registry import Registry
    from scheduling.placement.whatif.policies import register_trace_policies

    reg = Registry()
    register_trace_policies(reg)
    assert POLICY_NAMES[0] == "FragGuard"
    assert reg.names() == sorted(POLICY_NAMES)
    assert reg.create("FGD", workload=WL, vendors={}).name == "FGD"
    with pytest.raises(ValueError):
        reg.create("FGD")  # needs a workload


def test_fragguard_avoids_stranding_gpus_behind_cpu():
    # One class (cpu 1000, 500 milli, 1 GPU): rho = 1000/500 = 2 CPU milli per GPU milli.
    # a: 2 free GPUs, 2500 CPU; b: 2 free GPUs, 16000 CPU. Task: 300 milli, 1000 CPU.
    # FGD: F stays 0 on both (both GPUs keep >= 500) -> 50 / 50 -> tie -> "a".
    # FragGuard on a: S = max(0, 2000 - 2500/2) = 750 -> after max(0, 1700 - 1500/2) = 950,
    # dS = 200 -> int(100 * sigmoid(-0.2)) = 45; on b: S stays 0 -> 50 -> "b".
    snap = ClusterSnapshot.from_nodes(
        [node("a", (1000, 1000), cpu=2500), node("b", (1000, 1000), cpu=16000)]
    )
    assert choose("FGD", snap, request()) == ("a", [0], 50.0)
    dec = fragguard(WL).decide(snap, request())
    assert (dec.pods[0].node, dec.pods[0].score) == ("b", 50.0)
    plugin = trace_policy_plugin("FragGuard", workload=WL)
    assert plugin.policy.rho == 2.0
    assert plugin.policy.stranded(2500, 2000) == 750.0


def test_the_live_core_registers_only_the_fragmentation_aware_policies():
    reg = Registry()
    register_frag_policies(reg)
    assert reg.names() == ["FGD", "FragGuard"] == sorted(FRAG_POLICY_NAMES)
    assert reg.create("FragGuard", workload=WL).name == "FragGuard"
    with pytest.raises(KeyError, match="BestFit"):
        TracePolicyPlugin("BestFit", workload=WL)  # the baselines live in the lab only
    with pytest.raises(ValueError):
        TracePolicyPlugin("FragGuard")  # needs a workload
