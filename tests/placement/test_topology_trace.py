"""Topology-aware placement through a trace policy's fast path (FragGuard): capacity from the
policy's mirror, node and device choice inside the domain by the policy (issue 31)."""

from __future__ import annotations

import random

from topology_builders import RACK, cluster, gang, gang_pod

from scheduling.placement import PlacementRequest, place, reserve
from scheduling.placement.fragmentation import TargetWorkload, TaskClass
from scheduling.placement.plugins.frag_engine import task_view
from scheduling.placement.plugins.frag_within import fit_count, select_among
from scheduling.placement.whatif.replay import profile_for

WORKLOAD = TargetWorkload(
    (TaskClass(8000, 1000, 1), TaskClass(16000, 1000, 2), TaskClass(4000, 500, 1)), (0.5, 0.3, 0.2)
)
LAYOUT = {("b1", "r1"): [0, 0, 8, 8], ("b1", "r2"): [0, 0, 0, 0], ("b2", "r1"): [0, 0, 0, 8]}


def test_fragguard_places_the_gang_in_the_best_fitting_rack_and_counts_from_its_mirror():
    s = cluster(LAYOUT)
    fw, plugin = profile_for("FragGuard", WORKLOAD, 42, 42)
    d = place(s, gang(3, required=RACK), fw)
    assert d.schedulable
    assert {x[:3] for x in d.domains} == {("z1", "b2", "r1")}
    reserve(s, d)
    shapes = next(iter(fw.topology._states.values()))[3]
    (levels, _shape, watch), counts = next(iter(shapes.items()))
    assert watch is False  # the fast path's counter, not the copy-and-filter one
    assert counts.sums[2][("z1", "b2", "r1")] == 3
    d2 = place(s, gang(3, required=RACK, name="b"), fw)
    reserve(s, d2)
    assert {x[:3] for x in d2.domains} == {("z1", "b1", "r2")}
    assert counts.sums[2][("z1", "b2", "r1")] == 0  # read from the journal at d2's place
    d3 = place(s, gang(2, required=RACK, name="c"), fw)
    assert {x[:3] for x in d3.domains} == {("z1", "b1", "r1")}
    assert counts.sums[2][("z1", "b1", "r2")] == 1
    # every GPU of the two gangs is a distinct, fully booked device
    uuids = [g.uuid for p in d.pods + d2.pods for c in p.containers for g in c.devices]
    assert len(uuids) == len(set(uuids)) == 48


def test_select_among_all_nodes_is_the_selectors_answer():
    rnd = random.Random(7)
    layout = {("b1", f"r{i}"): [rnd.choice((0, 2, 4, 7, 8)) for _ in range(4)] for i in range(6)}
    s = cluster(layout)
    fw, plugin = profile_for("FragGuard", WORKLOAD, 3, 3)
    for k in range(30):
        pod = gang_pod(f"p{k}", gpus=rnd.choice((1, 2, 4)), cpu=rnd.choice((1000, 8000)))
        task = task_view(pod)
        table, selector = plugin._mirror(s)
        want = selector.select(task)
        assert select_among(selector, task, range(len(table.names))) == want
        if want is None:
            break
        counts = [fit_count(table, i, task) for i in range(len(table.names))]
        assert counts[want[0]] >= 1
        d = place(s, PlacementRequest(pod.name, (pod,)), fw)
        reserve(s, d)


def test_fit_count_of_whole_gpus_cpu_and_memory():
    s = cluster({("b1", "r1"): [0, 5]})
    fw, plugin = profile_for("FragGuard", WORKLOAD, 1, 1)
    table = plugin._bind(s)
    two = task_view(gang_pod("x", gpus=2, cpu=1000))
    assert [fit_count(table, i, two) for i in range(2)] == [4, 1]
    hungry = task_view(gang_pod("y", gpus=1, cpu=50000))
    assert [fit_count(table, i, hungry) for i in range(2)] == [2, 2]
