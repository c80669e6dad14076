"""Topology-aware placement in the pure core (issue 31): required / preferred /
unconstrained / slices / groups, rank order, gang minimum, reasons, invalid requests."""

from __future__ import annotations

import pytest
from topology_builders import BLOCK, HOST, LEVELS, RACK, ZONE, cluster, gang, gang_pod

from scheduling.placement import PlacementRequest, place, reserve
from scheduling.placement.node_selection import usage_stamp
from scheduling.placement.topology_index import (
    TopologyInvalid,
    domain_of,
    level_word,
    validate_topology,
)
from scheduling.placement.types import PodSetTopology, TopologyRequest

# block b1: rack r1 has 2 free nodes, r2 has 4; block b2: rack r1 (same value, other block)
# has 3 free nodes, r2 has 1.
LAYOUT = {
    ("b1", "r1"): [0, 0, 8, 8],
    ("b1", "r2"): [0, 0, 0, 0],
    ("b2", "r1"): [0, 0, 0, 8],
    ("b2", "r2"): [8, 8, 8, 0],
}


def racks(decision):
    return [d[:3] for d in decision.domains]


def stamps(snapshot):
    return {n: usage_stamp(node)[1:] for n, node in snapshot.nodes.items()}  # not the version


def test_required_rack_takes_the_best_fitting_rack_and_leaves_the_snapshot_as_it_was():
    s = cluster(LAYOUT)
    before = stamps(s)
    d = place(s, gang(3, required=RACK))
    assert d.schedulable and d.topology_reason == ""
    # racks holding 3: b1/r2 (4 free) and b2/r1 (3 free): the best fit leaves none free
    assert [p.node for p in d.pods] == ["b2-r1-n0", "b2-r1-n1", "b2-r1-n2"]
    assert racks(d) == [("z1", "b2", "r1")] * 3
    assert d.domains[0] == ("z1", "b2", "r1", "b2-r1-n0")
    assert [p.pod for p in d.pods] == ["job-0", "job-1", "job-2"]
    assert stamps(s) == before


def test_required_rack_unplaceable_names_the_level_and_the_best_rack():
    s = cluster(LAYOUT)
    d = place(s, gang(5, required=RACK))
    assert not d.schedulable
    reason = "TopologyPlacementFailed: needs 5 pods in one rack; the best rack has 4 free"
    assert d.topology_reason == reason
    assert d.reasons == {"*": reason}
    assert d.unplaced == tuple(f"job-{i}" for i in range(5))
    assert d.pods == () and d.domains == ()


def test_required_block_spreads_over_its_racks_most_free_first_last_best_fit():
    s = cluster(LAYOUT)
    d = place(s, gang(5, required=BLOCK))
    assert d.schedulable
    # b1 holds 6, b2 holds 4: b1; inside it r2 (4) first, then 1 more in r1 (2 free)
    assert [p.node for p in d.pods] == ["b1-r1-n0", "b1-r2-n0", "b1-r2-n1", "b1-r2-n2", "b1-r2-n3"]


def test_preferred_rack_stays_in_one_rack_when_one_holds_the_gang():
    s = cluster(LAYOUT)
    d = place(s, gang(4, preferred=RACK))
    assert set(racks(d)) == {("z1", "b1", "r2")}


def test_preferred_rack_widens_to_one_block_then_to_several():
    s = cluster(LAYOUT)
    d = place(s, gang(6, preferred=RACK))
    assert d.schedulable
    assert {r[1] for r in racks(d)} == {"b1"}
    assert sorted(set(racks(d))) == [("z1", "b1", "r1"), ("z1", "b1", "r2")]
    d = place(s, gang(9, preferred=RACK))
    assert d.schedulable and len(d.pods) == 9
    assert {r[1] for r in racks(d)} == {"b1", "b2"}
    assert racks(d) == sorted(racks(d))  # ranks follow domain order


def test_preferred_more_than_the_cluster_holds_names_the_free_room():
    s = cluster(LAYOUT)
    d = place(s, gang(11, preferred=RACK))
    assert not d.schedulable
    assert d.topology_reason == (
        "TopologyPlacementFailed: needs 11 pods; the topology's nodes have room for 10"
    )


def test_unconstrained_places_anywhere_with_ranks_in_domain_order():
    s = cluster(LAYOUT)
    d = place(s, gang(10, unconstrained=True))
    assert d.schedulable
    assert [p.pod for p in d.pods] == [f"job-{i}" for i in range(10)]
    assert d.domains == tuple(sorted(d.domains))
    assert len({p.node for p in d.pods}) == 10


def test_ranks_follow_domain_order_and_neighbours_share_a_node():
    s = cluster({("b1", "r1"): [0, 0], ("b1", "r2"): [0, 0]})
    d = place(s, gang(8, gpus=2, required=BLOCK))
    nodes = [p.node for p in d.pods]
    assert nodes == sorted(nodes)
    # 4 pods of 2 GPUs per 8-GPU node: ranks 0-3 share a node, 4-7 the next
    assert nodes[:4] == [nodes[0]] * 4 and nodes[4:] == [nodes[4]] * 4
    names = [c.name for p in d.pods for c in p.containers]
    assert names == ["worker"] * 8


def test_slices_put_every_consecutive_pair_in_one_rack():
    # block b1: r1 has 1 free node, r2 has 1, r3 has 2; a slice of 2 fits only r3 ... and
    # block b2 r1 has 2 free: 4 pods in slices of 2 per rack, required zone
    s = cluster(
        {("b1", "r1"): [0, 8], ("b1", "r2"): [8, 0], ("b1", "r3"): [0, 0], ("b2", "r1"): [0, 0]}
    )
    d = place(s, gang(4, required=ZONE, slice_size=2, slice_level=RACK))
    assert d.schedulable
    rk = racks(d)
    assert rk[0] == rk[1] and rk[2] == rk[3]
    assert set(rk) == {("z1", "b1", "r3"), ("z1", "b2", "r1")}
    d = place(s, gang(6, required=ZONE, slice_size=2, slice_level=RACK))
    assert not d.schedulable
    assert d.topology_reason == (
        "TopologyPlacementFailed: needs 6 pods in slices of 2 per rack in one zone; "
        "the best zone has 4 free"
    )


def test_pod_sets_of_one_group_are_placed_as_one_set():
    s = cluster(LAYOUT)
    req = TopologyRequest(LEVELS, required=RACK, group="trainer")
    pods = tuple(gang_pod(f"p{i}") for i in range(4))
    request = PlacementRequest(
        "grouped",
        pods,
        topology=(
            PodSetTopology(0, 1, req),
            PodSetTopology(1, 3, TopologyRequest(LEVELS, group="trainer")),
        ),
    )
    d = place(s, request)
    assert d.schedulable
    assert set(racks(d)) == {("z1", "b1", "r2")}  # the only rack with 4 free
    assert [p.pod for p in d.pods] == ["p0", "p1", "p2", "p3"]


def test_gang_minimum_takes_the_rack_that_holds_the_most():
    s = cluster(LAYOUT)
    d = place(s, gang(6, required=RACK, min_pods=4))
    assert d.schedulable
    assert len(d.pods) == 4 and set(racks(d)) == {("z1", "b1", "r2")}
    assert d.unplaced == ("job-4", "job-5")
    d = place(s, gang(6, required=RACK, min_pods=5))
    assert not d.schedulable
    assert d.topology_reason == (
        "TopologyPlacementFailed: needs 5 of 6 pods in one rack; the best rack has 4 free"
    )


def test_reserved_gangs_fill_racks_and_the_counts_follow_the_journal():
    s = cluster(LAYOUT)
    first = place(s, gang(4, required=RACK, name="a"))
    reserve(s, first)
    assert set(racks(first)) == {("z1", "b1", "r2")}
    second = place(s, gang(3, required=RACK, name="b"))
    reserve(s, second)
    assert set(racks(second)) == {("z1", "b2", "r1")}
    third = place(s, gang(3, required=RACK, name="c"))
    assert third.topology_reason == (
        "TopologyPlacementFailed: needs 3 pods in one rack; the best rack has 2 free"
    )


def test_nodes_without_the_labels_are_outside_every_domain():
    s = cluster({("b1", "r1"): [0, 0]})
    for n in s.nodes.values():
        n.labels = {HOST: n.name}
        s.touch(n.name)
    d = place(s, gang(1, required=RACK))
    assert d.topology_reason == (
        "TopologyPlacementFailed: needs 1 pods in one rack; the best rack has 0 free"
    )


def test_kueue_rule_ignores_the_parent_best_fit_prefers_a_fuller_block():
    # two racks with 4 free each; block b1 has another rack with 2 free, b2 has nothing else
    s = cluster({("b1", "r1"): [0, 0, 0, 0], ("b1", "r2"): [0, 0], ("b2", "r1"): [0, 0, 0, 0]})
    ours = place(s, gang(4, required=RACK))
    kueue = place(s, gang(4, required=RACK), topology_rule="kueue")
    assert set(racks(ours)) == {("z1", "b2", "r1")}
    assert set(racks(kueue)) == {("z1", "b1", "r1")}
    with pytest.raises(ValueError, match="unknown topology rule"):
        place(s, gang(4, required=RACK), topology_rule="first")


def test_a_request_without_topology_is_placed_as_before():
    s = cluster(LAYOUT)
    d = place(s, gang(3))
    assert d.schedulable and d.domains == () and d.topology_reason == ""
    assert [p.node for p in d.pods] == ["b1-r1-n0", "b1-r1-n1", "b1-r2-n0"]


@pytest.mark.parametrize(
    ("fields", "count", "message"),
    [
        ({"required": "rack"}, 4, "required level 'rack' is not one of"),
        ({"required": RACK, "preferred": BLOCK}, 4, "required and preferred are exclusive"),
        ({"required": RACK, "slice_size": 2}, 4, "slice_size and slice_level go together"),
        (
            {"required": RACK, "slice_size": 2, "slice_level": BLOCK},
            4,
            "is wider than 'cloud.provider.com/topology-rack'",
        ),
        ({"required": BLOCK, "slice_size": 3, "slice_level": RACK}, 4, "not a multiple of"),
    ],
)
def test_invalid_requests_are_refused(fields, count, message):
    req = TopologyRequest(LEVELS, **fields)
    with pytest.raises(TopologyInvalid, match=message):
        validate_topology(req, count)
    s = cluster(LAYOUT)
    pods = tuple(gang_pod(f"p{i}") for i in range(count))
    d = place(s, PlacementRequest("bad", pods, topology=(PodSetTopology(0, count, req),)))
    assert not d.schedulable
    assert d.topology_reason.startswith("TopologyInvalid: ")
    assert message in d.topology_reason


def test_overlapping_pod_sets_are_invalid():
    req = TopologyRequest(LEVELS, required=RACK)
    pods = tuple(gang_pod(f"p{i}") for i in range(3))
    request = PlacementRequest(
        "x", pods, topology=(PodSetTopology(0, 2, req), PodSetTopology(1, 2, req))
    )
    d = place(cluster(LAYOUT), request)
    assert d.topology_reason == "TopologyInvalid: pod set from 1 overlaps another pod set"


def test_level_words():
    assert [level_word(k) for k in LEVELS] == ["zone", "block", "rack", "hostname"]
    assert level_word("nvidia.com/gpu.clique") == "gpu.clique"


def test_domain_names_join_the_wider_levels():
    labels = {ZONE: "z1", BLOCK: "b2", RACK: "r1", HOST: "n7"}
    assert domain_of(labels, LEVELS, RACK) == "z1/b2/r1"
    assert domain_of(labels, LEVELS, ZONE) == "z1"
    assert domain_of({ZONE: "z1"}, LEVELS, RACK) is None
    with pytest.raises(ValueError):
        domain_of(labels, LEVELS, "rack")
