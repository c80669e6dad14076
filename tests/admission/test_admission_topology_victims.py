"""Topology-aware victim choice (issue 31): a preemptor that needs one rack evicts the jobs of
the rack that frees with the fewest victims instead of spreading evictions."""

from __future__ import annotations

from scheduling.admission import CycleConfig
from scheduling.admission.fake import PodShape, PoolPlacer
from tests.admission.admission_builders import NO_FAIR, WHOLE, World, a100s, quota

QUAD = PodShape(devices=4)
#: 4 pods of 2 GPUs, all in one rack (8 GPUs: a whole rack of 2 nodes x 4 GPUs)
RACK_GANG = PodShape(devices=2, one_domain=True)
RACKS = {"n1": "r1", "n2": "r1", "n3": "r2", "n4": "r2", "n5": "r3", "n6": "r3"}


def rack_world() -> World:
    """Racks r1 (n1, n2) and r3 (n5, n6) each hold 8 one-GPU jobs, r2 (n3, n4) two 4-GPU
    jobs; every job priority 0 of team-a; the one-GPU jobs are the newest (evicted first in
    Kueue's order), alternating between r1 and r3."""
    w = World(a100s(6), quotas=(quota("team-a", 24000),))
    w.placer = PoolPlacer(w.group, a100s(6), domains=RACKS)
    for i in range(8):
        w.run(f"r1-{i}", "team-a", WHOLE, started=100 + 2 * i)
    for i in range(2):
        w.run(f"r2-{i}", "team-a", QUAD, started=5000)
    for i in range(8):
        w.run(f"r3-{i}", "team-a", WHOLE, started=101 + 2 * i)
    w.submit("gang", "team-a", RACK_GANG, pods=4, priority=5)
    return w


def victims(result) -> list[str]:
    return sorted(p.victim_id for p in result.preempted)


def test_the_rack_freed_by_the_fewest_victims_is_chosen():
    w = rack_world()
    assert {w.placer.held[f"r2-{i}"].pods[0].node for i in range(2)} == {"n3", "n4"}
    result = w.cycle(NO_FAIR)
    assert victims(result) == ["r2-0", "r2-1"]
    w.finish("r2-0")
    w.finish("r2-1")
    again = w.cycle(NO_FAIR)
    assert [a.workload_id for a in again.admitted] == ["gang"]
    nodes = {p.node for p in w.placer.held["gang"].pods}
    assert nodes == {"n3", "n4"}


def test_without_domains_the_walk_evicts_across_racks():
    w = rack_world()
    w.placer.victim_domains = lambda _entry: None  # type: ignore[method-assign]
    result = w.cycle(NO_FAIR)
    # Kueue's order evicts the newest one-GPU jobs of r1 and r3 alternately until r1 is free;
    # fill-back keeps the r3 ones: eight victims instead of two
    assert victims(result) == [f"r1-{i}" for i in range(8)]


def test_fair_sharing_search_also_frees_the_cheapest_rack():
    w = rack_world()
    result = w.cycle(CycleConfig(fair_sharing=True))
    assert [a.workload_id for a in result.admitted] == []
    assert victims(result) == ["r2-0", "r2-1"]


def test_a_preemptor_without_one_domain_keeps_kueues_order():
    w = rack_world()
    w.pending = []
    w.submit("plain", "team-a", PodShape(devices=2), pods=4, priority=5)
    result = w.cycle(NO_FAIR)
    # no domain needed: the newest one-GPU jobs (started 100-107 s ago) go first, across
    # racks r1 and r3, two GPUs freed on each of their four nodes
    assert victims(result) == ["r1-0", "r1-1", "r1-2", "r1-3", "r3-0", "r3-1", "r3-2", "r3-3"]
