"""Consolidation core (scheduling.placement.consolidation): pure, no database."""

from __future__ import annotations

from placement_builders import gpu, node, nv, one, snap

from scheduling.placement import place, reserve
from scheduling.placement.consolidation import (
    MovableJob,
    apply_plan,
    fragmented,
    plan_consolidation,
)

A100 = "NVIDIA-A100-SXM4-80GB"
H100 = "NVIDIA-H100-80GB-HBM3"


def _run(cluster, name, uuid, pct, *, priority=0, running_s=100.0, cpu=1000):
    """Book a ``pct`` % job on device ``uuid``; its MovableJob (request without the pin)."""
    pinned = one(
        nv(cores_percent=pct, memory_percent=pct, uuids_include=(uuid,)), name=name, cpu=cpu
    )
    decision = place(cluster, pinned)
    assert decision.schedulable, decision.reasons
    reserve(cluster, decision)
    free = one(nv(cores_percent=pct, memory_percent=pct), name=name, cpu=cpu)
    return MovableJob(name, free, decision, priority, running_s)


def _usage(cluster):
    return {
        d.uuid: (d.used_slots, d.used_memory_mib, d.used_cores_percent)
        for n in cluster.nodes.values()
        for d in n.devices
    } | {n.name: (n.used_cpu_milli, n.used_memory_mib) for n in cluster.nodes.values()}


def _whole(name="big", cpu=1000):
    return one(nv(cores_percent=100), name=name, cpu=cpu)


def _devices_of(decision):
    return {g.uuid for p in decision.pods for c in p.containers for g in c.devices}


def _two_halves(pa=0, pb=0):
    cluster = snap(node("n1", [gpu("g1")]), node("n2", [gpu("g2")]))
    return (
        cluster,
        _run(cluster, "a", "g1", 50, priority=pa),
        _run(cluster, "b", "g2", 50, priority=pb),
    )


def test_fragmented_two_node_case_is_solved_with_one_move():
    cluster, a, b = _two_halves()
    request = _whole()
    assert not place(cluster, request).schedulable
    assert fragmented(cluster, request)
    before = _usage(cluster)

    result = plan_consolidation(cluster, request, [a, b], max_moves=3)

    assert result.plan is not None, result.reason
    assert len(result.plan.moves) == 1
    move = result.plan.moves[0]
    freed = _devices_of(move.source)
    assert _devices_of(result.plan.placement) == freed  # the request takes the freed GPU
    assert _devices_of(move.target).isdisjoint(freed)  # the moved job restarts elsewhere
    assert _usage(cluster) == before  # planning leaves the snapshot unchanged


def test_the_lower_priority_job_moves_first():
    cluster, a, b = _two_halves(pa=5, pb=1)
    result = plan_consolidation(cluster, _whole(), [a, b], max_moves=3)
    assert [m.job_id for m in result.plan.moves] == ["b"]
    cluster, a, b = _two_halves(pa=1, pb=5)
    result = plan_consolidation(cluster, _whole(), [a, b], max_moves=3)
    assert [m.job_id for m in result.plan.moves] == ["a"]


def test_the_youngest_job_moves_at_equal_priority():
    cluster = snap(node("n1", [gpu("g1")]), node("n2", [gpu("g2")]))
    old = _run(cluster, "old", "g1", 50, running_s=5000)
    young = _run(cluster, "young", "g2", 50, running_s=30)
    result = plan_consolidation(cluster, _whole(), [old, young], max_moves=1)
    assert [m.job_id for m in result.plan.moves] == ["young"]


def test_applying_the_plan_books_everything_within_capacity():
    cluster, a, b = _two_halves()
    request = _whole()
    plan = plan_consolidation(cluster, request, [a, b], max_moves=3).plan
    apply_plan(cluster, plan)
    for n in cluster.nodes.values():
        assert n.used_cpu_milli <= n.cpu_milli
        for d in n.devices:
            assert d.used_cores_percent <= d.cores_percent
            assert d.used_memory_mib <= d.memory_mib
            assert d.used_slots <= d.split_count
    g1, g2 = cluster.nodes["n1"].devices[0], cluster.nodes["n2"].devices[0]
    assert {g1.used_cores_percent, g2.used_cores_percent} == {100}
    assert sum(n.used_cpu_milli for n in cluster.nodes.values()) == 3000


def test_two_moves_when_one_is_not_enough_and_the_budget_bounds_them():
    cluster = snap(node("n1", [gpu("g1")]), node("n2", [gpu("g2")]), node("n3", [gpu("g3")]))
    a1 = _run(cluster, "a1", "g1", 30)
    a2 = _run(cluster, "a2", "g1", 30)
    _run(cluster, "b", "g2", 70)  # not movable
    _run(cluster, "c", "g3", 70)  # not movable
    request = _whole()

    one_move = plan_consolidation(cluster, request, [a1, a2], max_moves=1)
    assert one_move.plan is None
    assert "at most 1 movable" in one_move.reason

    two = plan_consolidation(cluster, request, [a1, a2], max_moves=2)
    assert sorted(m.job_id for m in two.plan.moves) == ["a1", "a2"]
    assert _devices_of(two.plan.placement) == {"g1"}
    targets = [_devices_of(m.target) for m in two.plan.moves]
    assert sorted(t.pop() for t in targets) == ["g2", "g3"]


def test_nothing_moves_without_movable_jobs_or_budget():
    cluster, a, b = _two_halves()
    assert plan_consolidation(cluster, _whole(), [], max_moves=3).reason == (
        "no running job may be moved"
    )
    assert plan_consolidation(cluster, _whole(), [a, b], max_moves=0).reason == (
        "the move budget is spent"
    )


def test_nothing_moves_when_the_request_already_fits():
    cluster = snap(node("n1", [gpu("g1")]), node("n2", [gpu("g2")]))
    a = _run(cluster, "a", "g1", 50)
    result = plan_consolidation(cluster, _whole(), [a], max_moves=3)
    assert result.plan is None
    assert result.reason == "the request fits without moves"


def test_nothing_moves_when_capacity_is_short_not_fragmented():
    cluster = snap(node("n1", [gpu("g1")]), node("n2", [gpu("g2")]))
    a = _run(cluster, "a", "g1", 60)
    b = _run(cluster, "b", "g2", 60)
    assert not fragmented(cluster, _whole())
    assert fragmented(cluster, one(nv(cores_percent=80, memory_percent=80)))
    result = plan_consolidation(cluster, _whole(), [a, b], max_moves=3)
    assert result.plan is None
    assert "not enough free capacity" in result.reason
    assert result.tries == 0


def test_a_moved_job_keeps_its_device_model_so_its_quota_charges_do_not_change():
    cluster = snap(node("n1", [gpu("g1", model=A100)]), node("n2", [gpu("g2", model=H100)]))
    a = _run(cluster, "a", "g1", 50)  # movable, on the A100
    _run(cluster, "x", "g2", 50)  # not movable, on the H100
    # half of each GPU is free; the only movable job could fit beside x, but on another model
    result = plan_consolidation(cluster, _whole(), [a], max_moves=3)
    assert result.plan is None
    assert result.reason == "no set of at most 3 movable job(s) frees enough room"


def test_host_cpu_is_respected_by_the_moves():
    # the other node has GPU room for the moved job but no CPU for it
    cluster = snap(node("n1", [gpu("g1")], cpu=8000), node("n2", [gpu("g2")], cpu=8000))
    a = _run(cluster, "a", "g1", 50, cpu=4000)
    _run(cluster, "b", "g2", 50, cpu=6000)  # not movable; leaves 2000m on n2
    result = plan_consolidation(cluster, _whole(cpu=1000), [a], max_moves=3)
    assert result.plan is None
