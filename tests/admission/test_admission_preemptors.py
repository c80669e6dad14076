"""Several preemptors in one cycle, partial admission after preemption, and capacity kept for
a blocked head that reclaim cannot help (issue 29)."""

import pytest

from scheduling.admission import PendingCode, PreemptionPolicy, PreemptionReason, TenantSpec
from scheduling.admission.fake import PodShape
from tests.admission.admission_builders import NO_FAIR, World, a100s, ids, quota

ONE = PodShape(devices=1)
CONFIGS = pytest.mark.parametrize("config", [NO_FAIR, None], ids=["classical", "fair-sharing"])


def victims(result):
    return [(p.victim_id, p.preemptor_id, p.reason) for p in result.preempted]


def waiting(result):
    return {v.workload_id: v.waiting_for for v in result.pending if v.waiting_for}


# -- item 1: two preemptors of one cohort, disjoint victims ------------------------------------


def disjoint_world() -> World:
    """8 GPUs. A (nominal 4) runs a-keep and a-low on n1; B (nominal 2) borrows 2 of C's
    nominal through b1 and b2 on n2; C (nominal 2) runs nothing. a1 can only preempt a-low
    (A would borrow after reclaiming B); c1 may reclaim b1/b2 but not a-low (C's queue
    reclaims only lower priorities)."""
    tenants = (TenantSpec("team-a"), TenantSpec("team-b"), TenantSpec("team-c"))
    w = World(
        a100s(2),
        tenants=tenants,
        quotas=(quota("team-a", 4000), quota("team-b", 2000), quota("team-c", 2000)),
    )
    w.set_queue("team-c", reclaim_within_cohort=PreemptionPolicy.LOWER_PRIORITY)
    w.run("a-keep", "team-a", ONE, pods=2, priority=20)
    w.run("a-low", "team-a", ONE, pods=2, priority=5)
    w.run("b1", "team-b", ONE, pods=2, started=2000)
    w.run("b2", "team-b", ONE, pods=2, started=1000)
    w.submit("a1", "team-a", ONE, pods=2, priority=10, created=60)
    w.submit("c1", "team-c", ONE, pods=2, priority=3, created=50)
    return w


@CONFIGS
def test_two_preemptors_of_one_cohort_preempt_disjoint_victims_in_the_same_cycle(config):
    w = disjoint_world()
    first = w.cycle(config)
    assert ids(first) == []
    assert sorted(victims(first)) == [
        ("a-low", "a1", PreemptionReason.IN_TENANT),
        ("b2", "c1", PreemptionReason.RECLAIM_WITHIN_COHORT),
    ]
    # each waits for its own victim only; the victims stay charged until they are gone
    assert waiting(first) == {"a1": ("a-low",), "c1": ("b2",)}
    assert first.usage["team-a"][("a100", "devices")] == 4000
    assert first.usage["team-b"][("a100", "devices")] == 4000
    assert "team-c" not in first.usage
    assert set(w.placer.held) == {"a-keep", "a-low", "b1", "b2"}
    w.finish("a-low")
    w.finish("b2")
    assert sorted(ids(w.cycle(config))) == ["a1", "c1"]


@CONFIGS
def test_a_fitting_job_does_not_take_the_quota_a_waiting_preemptor_frees_beyond_its_need(config):
    # 8 GPUs, a cohort quota of 4 (A's nominal): a-high needs 1 GPU and preempts a-low (4);
    # only later preemption searches see a-low's quota gone, so b-any (B borrows) does not
    # take the 3 GPUs of quota a-low frees beyond a-high's need while a-low still runs
    w = World(a100s(2), quotas=(quota("team-a", 4000), quota("team-b", 0)))
    w.run("a-low", "team-a", ONE, pods=4, priority=0)
    w.submit("a-high", "team-a", ONE, pods=1, priority=10, created=60)
    w.submit("b-any", "team-b", ONE, pods=1, priority=0, created=50)
    first = w.cycle(config)
    assert ids(first) == []
    assert waiting(first) == {"a-high": ("a-low",)}
    assert {v.workload_id: v.code for v in first.pending}["b-any"] == (
        PendingCode.WAITING_FOR_QUOTA
    )
    w.finish("a-low")
    assert sorted(ids(w.cycle(config))) == ["a-high", "b-any"]
