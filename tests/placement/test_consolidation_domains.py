"""Consolidation for a domain (issue 31, consolidation step 5): a gang under a ``required``
topology that fits the free capacity but no single rack gets room made inside the rack
needing the fewest, least disruptive moves; moved jobs restart outside that rack."""

from __future__ import annotations

from dataclasses import replace

from placement_builders import nv, one
from topology_builders import LEVELS, RACK, gang, topo_node

from scheduling.placement import ClusterSnapshot, place, reserve
from scheduling.placement.consolidation import MovableJob, apply_plan, plan_consolidation
from scheduling.placement.consolidation_domains import required_domain_level
from scheduling.placement.types import PodSetTopology, TopologyRequest


def _racks(rack0_used=(0, 0), rack1_used=(0, 0), gpus=2):
    """Two racks (r0: nodes r0-n0, r0-n1; r1: r1-n0, r1-n1) of ``gpus`` A100s a node."""
    nodes = [
        topo_node(f"{rack}-n{i}", "b1", rack, gpus=gpus, used=used[i])
        for rack, used in (("r0", rack0_used), ("r1", rack1_used))
        for i in range(2)
    ]
    return ClusterSnapshot.from_nodes(nodes)


def _run(cluster, name, uuid, pct=100, priority=0, running_s=100.0):
    pinned = one(
        nv(cores_percent=pct, memory_percent=pct, uuids_include=(uuid,)), name=name, cpu=1000
    )
    decision = place(cluster, pinned)
    assert decision.schedulable, decision.reasons
    reserve(cluster, decision)
    free = one(nv(cores_percent=pct, memory_percent=pct), name=name, cpu=1000)
    return MovableJob(name, free, decision, priority, running_s)


def _nodes(decision):
    return [p.node for p in decision.pods]


def _usage(cluster):
    return {
        d.uuid: (d.used_slots, d.used_cores_percent)
        for n in cluster.nodes.values()
        for d in n.devices
    }


def test_the_rack_needing_the_fewest_moves_is_emptied_and_the_moved_job_restarts_outside():
    cluster = _racks()
    j1 = _run(cluster, "j1", "r0-n0-g0")  # r0: 3 of 4 GPUs free
    j2 = _run(cluster, "j2", "r1-n0-g0")
    j3 = _run(cluster, "j3", "r1-n0-g1")  # r1: 2 of 4 free
    request = gang(4, gpus=1, name="g", required=RACK)
    first = place(cluster, request)
    assert first.topology_reason == (
        "TopologyPlacementFailed: needs 4 pods in one rack; the best rack has 3 free"
    )
    before = _usage(cluster)

    result = plan_consolidation(cluster, request, [j1, j2, j3], max_moves=3)

    plan = result.plan
    assert plan is not None, result.reason
    assert (plan.level, plan.domain) == (RACK, "z1/b1/r0")
    assert [m.job_id for m in plan.moves] == ["j1"]
    assert sorted(_nodes(plan.placement)) == ["r0-n0", "r0-n0", "r0-n1", "r0-n1"]
    assert _nodes(plan.moves[0].target)[0] in {"r1-n1"}  # outside r0, where room is
    assert _usage(cluster) == before  # planning leaves the snapshot unchanged
    apply_plan(cluster, plan)
    assert all(d.used_slots == 1 for n in ("r0-n0", "r0-n1") for d in cluster.nodes[n].devices)


def test_at_equal_moves_the_rack_of_the_lower_priority_job_is_emptied():
    cluster = _racks()
    high = _run(cluster, "high", "r0-n0-g0", priority=5)
    low = _run(cluster, "low", "r1-n1-g1", priority=1)
    request = gang(4, gpus=1, name="g", required=RACK)
    plan = plan_consolidation(cluster, request, [high, low], max_moves=2).plan
    assert plan is not None
    assert (plan.domain, [m.job_id for m in plan.moves]) == ("z1/b1/r1", ["low"])
    assert {p.node for p in plan.placement.pods} == {"r1-n0", "r1-n1"}
    assert _nodes(plan.moves[0].target)[0].startswith("r0-")


def test_a_moved_job_never_restarts_inside_the_target_rack():
    # r0: two half-GPU jobs on r0-n0 (2 whole GPUs free on r0-n1); r1: every GPU 60 % booked
    # by jobs that may not move. A 3-GPU gang fits r0 once one half moves, but the half could
    # only go next to the other half - inside r0 - so there is no plan.
    cluster = _racks()
    a = _run(cluster, "a", "r0-n0-g0", pct=50)
    b = _run(cluster, "b", "r0-n0-g1", pct=50)
    for i in range(2):
        for j in range(2):
            _run(cluster, f"fixed-{i}{j}", f"r1-n{i}-g{j}", pct=60)
    request = gang(3, gpus=1, name="g", required=RACK)
    assert not place(cluster, request).schedulable

    result = plan_consolidation(cluster, request, [a, b], max_moves=3)

    assert result.plan is None
    assert result.reason == "no set of at most 3 movable job(s) frees enough room in one rack"
    assert result.tries >= 1


def test_a_gang_short_of_capacity_is_not_consolidated():
    cluster = _racks(rack0_used=(2, 1), rack1_used=(2, 1))
    j = _run(cluster, "j", "r0-n1-g1")
    result = plan_consolidation(cluster, gang(3, gpus=1, required=RACK), [j], max_moves=3)
    assert (result.plan, result.reason) == (
        None,
        "not enough free capacity even if it were contiguous",
    )


def test_only_a_single_required_placement_unit_targets_a_domain():
    assert required_domain_level(gang(2, required=RACK)) == (LEVELS, RACK)
    assert required_domain_level(gang(2, preferred=RACK)) is None
    assert required_domain_level(gang(2)) is None
    two_sets = replace(
        gang(4, required=RACK),
        topology=(
            PodSetTopology(0, 2, TopologyRequest(LEVELS, required=RACK)),
            PodSetTopology(2, 2, TopologyRequest(LEVELS, required=RACK)),
        ),
    )
    assert required_domain_level(two_sets) is None  # each set needs its own rack
    grouped = TopologyRequest(LEVELS, required=RACK, group="g")
    one_group = replace(
        two_sets, topology=(PodSetTopology(0, 2, grouped), PodSetTopology(2, 2, grouped))
    )
    assert required_domain_level(one_group) == (LEVELS, RACK)
