"""Classical preemption as Kueue: candidate order, reclaim down to nominal, the nominal-quota
gate, hierarchical advantage and validity, borrowing height, per-queue policies (issue 16,
scenarios S2-S7 and S11)."""

from dataclasses import replace

import pytest

from scheduling.admission import (
    AdmissionInputError,
    BorrowWithinCohort,
    BorrowWithinCohortPolicy,
    PendingCode,
    PreemptionPolicy,
    PreemptionReason,
    TenantSpec,
    run_cycle,
)
from scheduling.admission.fake import PodShape
from tests.admission.admission_builders import DEV, NO_FAIR, World, a100s, ago, ids, quota, verdicts

ONE = PodShape(devices=1)
LOWER = BorrowWithinCohort(BorrowWithinCohortPolicy.LOWER_PRIORITY)


def victims(result):
    return [(p.victim_id, p.preemptor_id, p.reason) for p in result.preempted]


def rules(result, wid):
    return {
        r.workload_id: r.rule for v in result.pending if v.workload_id == wid for r in v.rejected
    }


@pytest.mark.parametrize("config", [NO_FAIR, None], ids=["classical", "fair-sharing"])
def test_s2_borrower_is_reclaimed_to_nominal_through_a_gang_bigger_than_its_excess(config):
    # 16 GPUs; A nominal 10 uses 6, B nominal 6 runs one 8-GPU gang (borrows 2), 2 free.
    w = World(a100s(4), quotas=(quota("team-a", 10000), quota("team-b", 6000)))
    w.run("a4", "team-a", ONE, pods=4)
    w.run("a2", "team-a", ONE, pods=2)
    w.run("b-big", "team-b", ONE, pods=8)
    w.submit("a-new", "team-a", ONE, pods=4, priority=10)
    result = w.cycle(config)
    assert victims(result) == [("b-big", "a-new", PreemptionReason.RECLAIM_WITHIN_COHORT)]
    assert result.preempted[0].message == (
        "reclaimed by tenant team-a for a-new: tenant team-b borrows a100 devices (usage 8000 > "
        "nominal 6000)"
    )
    w.finish("b-big")
    after = w.cycle(config)
    assert ids(after) == ["a-new"]
    assert after.usage["team-a"][("a100", "devices")] == 10000
    assert "team-b" not in after.usage


def s3_world():
    w = World(a100s(4), quotas=(quota("team-a", 8000), quota("team-b", 8000)))
    w.run("a-L", "team-a", ONE, pods=2, priority=0)
    for i in range(7):
        w.run(f"b-{i}", "team-b", ONE, pods=2, started=3600 - i * 10)
    w.submit("a-new", "team-a", ONE, pods=4, priority=10)
    return w


def test_s3_other_tenants_borrowers_go_before_own_lower_priority_jobs():
    w = s3_world()
    result = run_cycle(w.snapshot(), w.placer, NO_FAIR)
    # newest b jobs first; fill-back keeps both; a-L keeps running
    assert victims(result) == [
        ("b-6", "a-new", PreemptionReason.RECLAIM_WITHIN_COHORT),
        ("b-5", "a-new", PreemptionReason.RECLAIM_WITHIN_COHORT),
    ]


def s4_world(**queue):
    w = World(a100s(4), quotas=(quota("team-a", 4000), quota("team-b", 12000)), **queue)
    w.run("a-L", "team-a", ONE, pods=4)
    w.run("b-8", "team-b", ONE, pods=8)
    w.submit("a-big", "team-a", PodShape(devices=2), pods=3, priority=10)
    return w


def test_s4_no_preemption_for_a_request_above_nominal_even_within_the_tenant():
    w = s4_world()
    result = run_cycle(w.snapshot(), w.placer, NO_FAIR)
    assert result.preempted == ()
    assert verdicts(result)["a-big"] == (
        PendingCode.WAITING_FOR_QUOTA,
        "tenant team-a, group a100-shared, flavor a100, devices: needs 6000, free 0, "
        "borrowable 4000 (bounded by cohort a100-shared)",
        1,
        (
            "preemption: request 6000 exceeds nominal 4000 of tenant team-a in a100 devices; "
            "preemption needs the request to fit the nominal quota (or borrowWithinCohort)",
        ),
    )


def test_s4_borrow_within_cohort_lets_it_preempt_its_own_job_and_borrow():
    w = s4_world(borrow_within_cohort=LOWER)
    result = run_cycle(w.snapshot(), w.placer, NO_FAIR)
    assert victims(result) == [("a-L", "a-big", PreemptionReason.IN_TENANT)]


def org_tenants(*extra):
    return (
        TenantSpec("org1"),
        TenantSpec("org2"),
        TenantSpec("a1", "org1"),
        TenantSpec("a2", "org1"),
        TenantSpec("b1", "org2"),
        *extra,
    )


def s5_world(policy):
    w = World(
        a100s(4),
        tenants=org_tenants(),
        quotas=(quota("a1", 2000), quota("a2", 6000), quota("b1", 8000)),
        reclaim_within_cohort=policy,
    )
    for i in range(3):
        w.run(f"b1-{i}", "b1", ONE, pods=4, priority=10, started=3600 - i)
    w.run("a1-0", "a1", ONE, pods=2)
    w.run("a2-0", "a2", ONE, pods=2)
    w.submit("a1-new", "a1", ONE, pods=4, priority=5)
    return w


def test_s5_hierarchical_advantage_reclaims_whatever_the_priority():
    # a1's request (4) exceeds its nominal (2) but org1's subtree (8) can hold it: a1 may
    # reclaim org1's quota that b1 borrows, regardless of priority (policy Any)
    w = s5_world(PreemptionPolicy.ANY)
    result = run_cycle(w.snapshot(), w.placer, NO_FAIR)
    assert victims(result) == [("b1-2", "a1-new", PreemptionReason.RECLAIM_WITHIN_COHORT)]


def test_s5_hierarchical_reclaim_still_needs_the_reclaim_policy():
    w = s5_world(PreemptionPolicy.LOWER_PRIORITY)
    result = run_cycle(w.snapshot(), w.placer, NO_FAIR)
    assert result.preempted == ()
    # a1-0 (own, lower priority) is valid but evicting it frees no quota from the full cohort
    assert rules(result, "a1-new") == {
        "a2-0": "borrower within nominal: tenant a2",
        "b1-0": "reclaimWithinCohort LowerPriority: priority 10 >= 5",
        "b1-1": "reclaimWithinCohort LowerPriority: priority 10 >= 5",
        "b1-2": "reclaimWithinCohort LowerPriority: priority 10 >= 5",
    }
    assert verdicts(result)["a1-new"][3] == (
        "preemption: evicting every valid candidate would not make it fit",
        "preemption: 4 job(s) of other tenants rejected: borrower within nominal x1, "
        "reclaimWithinCohort LowerPriority x3",
    )


def test_s6_reclaim_only_from_subtrees_over_their_quota():
    w = World(
        a100s(4),
        tenants=org_tenants(TenantSpec("b2", "org2")),
        quotas=(quota("a1", 4000), quota("a2", 4000), quota("b1", 4000), quota("b2", 4000)),
    )
    for i in range(4):
        w.run(f"a2-{i}", "a2", ONE, pods=2, started=3000 - i)
    for i in range(4):
        w.run(f"b1-{i}", "b1", ONE, pods=2, started=2000 - i)  # newer than a2's
    w.submit("a1-new", "a1", ONE, pods=4, priority=5)
    result = run_cycle(w.snapshot(), w.placer, NO_FAIR)
    # org2 is within its quota (8 <= 8): b1 is never a candidate, a2's newest jobs go
    assert victims(result) == [
        ("a2-3", "a1-new", PreemptionReason.RECLAIM_WITHIN_COHORT),
        ("a2-2", "a1-new", PreemptionReason.RECLAIM_WITHIN_COHORT),
    ]


def test_s7_lower_borrowing_height_goes_first_whatever_the_age():
    w = World(
        a100s(5),
        tenants=org_tenants(),
        quotas=(quota("a1", 2000), quota("a2", 6000), quota("b1", 8000)),
    )
    w.run("a1-0", "a1", ONE, pods=2)
    w.run("b1-0", "b1", ONE, pods=8)
    w.submit("y", "b1", ONE, pods=2, created=600)  # borrows from the root: height 2
    w.submit("x", "a1", ONE, pods=2, created=60)  # borrows within org1: height 1
    w.submit("z", "a2", ONE, pods=2, created=30)  # fits its own quota: height 0
    result = run_cycle(w.snapshot(), w.placer, NO_FAIR)
    assert ids(result) == ["z", "x", "y"]


def s11_world(policy):
    w = World(
        a100s(1), quotas=(quota("team-a", 4000), quota("team-b", 0)), within_cluster_queue=policy
    )
    w.run("a1", "team-a", ONE, pods=2, priority=5, created_at=ago(300))
    w.run("a2", "team-a", ONE, pods=2, priority=5, created_at=ago(100))
    w.submit("p", "team-a", ONE, pods=2, priority=5, created=200)
    return w


def test_s11_within_cluster_queue_policies():
    newer = s11_world(PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY)
    result = run_cycle(newer.snapshot(), newer.placer, NO_FAIR)
    assert victims(result) == [("a2", "p", PreemptionReason.IN_TENANT)]
    assert result.preempted[0].message == (
        "preempted by p (priority 5 = 5, submitted later) in tenant team-a"
    )
    lower = s11_world(PreemptionPolicy.LOWER_PRIORITY)
    result = run_cycle(lower.snapshot(), lower.placer, NO_FAIR)
    assert result.preempted == ()
    assert rules(result, "p") == {
        "a1": "withinClusterQueue LowerPriority: priority 5 >= 5",
        "a2": "withinClusterQueue LowerPriority: priority 5 >= 5",
    }
    never = s11_world(PreemptionPolicy.NEVER)
    result = run_cycle(never.snapshot(), never.placer, NO_FAIR)
    assert result.preempted == ()
    assert set(rules(result, "p").values()) == {"withinClusterQueue: Never"}


def test_s11_reclaim_within_cohort_lower_priority_spares_equal_priority_borrowers():
    w = World(
        a100s(2),
        quotas=(quota("team-a", 4000), quota("team-b", 4000)),
        reclaim_within_cohort=PreemptionPolicy.LOWER_PRIORITY,
    )
    w.run("b-hi", "team-b", ONE, pods=4, priority=7, started=100)
    w.run("b-lo", "team-b", ONE, pods=4, priority=3, started=200)
    w.submit("a1", "team-a", ONE, pods=2, priority=5)
    result = run_cycle(w.snapshot(), w.placer, NO_FAIR)
    assert victims(result) == [("b-lo", "a1", PreemptionReason.RECLAIM_WITHIN_COHORT)]
    w.set_queue("team-a", reclaim_within_cohort=PreemptionPolicy.NEVER)
    result = run_cycle(w.snapshot(), w.placer, NO_FAIR)
    assert result.preempted == ()
    assert set(rules(result, "a1").values()) == {"reclaimWithinCohort: Never"}


def bwc_world(threshold):
    tenants = (TenantSpec("team-a"), TenantSpec("team-b"), TenantSpec("team-c"))
    w = World(
        a100s(2),
        tenants=tenants,
        quotas=(quota("team-a", 4000), quota("team-b", 2000), quota("team-c", 2000)),
        reclaim_within_cohort=PreemptionPolicy.LOWER_PRIORITY,
        borrow_within_cohort=BorrowWithinCohort(BorrowWithinCohortPolicy.LOWER_PRIORITY, threshold),
    )
    w.run("a-300", "team-a", ONE, pods=2, priority=300)
    w.run("b-50", "team-b", ONE, pods=2, priority=50, started=100)
    w.run("b-150", "team-b", ONE, pods=4, priority=150, started=200)
    w.submit("a-new", "team-a", ONE, pods=4, priority=200)
    return w


def test_s11_borrow_within_cohort_respects_its_priority_threshold():
    w = bwc_world(100)
    result = run_cycle(w.snapshot(), w.placer, NO_FAIR)
    # b-150 is above the threshold: reclaimable only if team-a would not borrow, and it would
    assert result.preempted == ()
    assert verdicts(result)["a-new"][0] == PendingCode.WAITING_FOR_QUOTA
    w = bwc_world(None)
    result = run_cycle(w.snapshot(), w.placer, NO_FAIR)
    # both are reclaimable while borrowing; fill-back puts b-50 back
    assert victims(result) == [("b-150", "a-new", PreemptionReason.RECLAIM_WHILE_BORROWING)]
    assert result.preempted[0].message == (
        "preempted by a-new of tenant team-a (priority 200 > 150) while tenant team-a borrows "
        "(borrowWithinCohort)"
    )


def test_policy_combinations_kueue_refuses_are_input_errors():
    w = World(a100s(1), quotas=(quota("team-a", 4000),))
    queue = replace(
        w.queues[0], reclaim_within_cohort=PreemptionPolicy.NEVER, borrow_within_cohort=LOWER
    )
    with pytest.raises(
        AdmissionInputError,
        match="borrow_within_cohort: needs reclaim_within_cohort other than Never",
    ):
        run_cycle(w.snapshot(queues=(queue, w.queues[1])), w.placer)
    queue = replace(w.queues[0], within_cluster_queue=PreemptionPolicy.ANY)
    with pytest.raises(AdmissionInputError, match="within_cluster_queue: Any is not allowed"):
        run_cycle(w.snapshot(queues=(queue, w.queues[1])), w.placer)


def unreclaimable_world(reclaim: PreemptionPolicy):
    """8 A100s; team-b (nominal 4) borrows 2 through priority-10 jobs; team-a's head a1 (3
    GPUs, priority 0, nominal 4) fits its nominal but may reclaim only lower priorities; a
    1-GPU borrower b7 of team-b waits behind it."""
    w = World(a100s(2), quotas=(quota("team-a", 4000), quota("team-b", 4000)))
    w.set_queue("team-a", reclaim_within_cohort=reclaim)
    for i in range(1, 7):
        w.run(f"b{i}", "team-b", priority=10)
    w.submit("a1", "team-a", ONE, pods=3)
    w.submit("b7", "team-b", ONE, priority=10)
    return w


@pytest.mark.parametrize("config", [NO_FAIR, None], ids=["classical", "fair-sharing"])
@pytest.mark.parametrize("reclaim", [PreemptionPolicy.LOWER_PRIORITY, PreemptionPolicy.NEVER])
def test_head_that_cannot_reclaim_keeps_its_free_nominal_from_borrowers(config, reclaim):
    # issue 29; Kueue reserveCapacityForUnreclaimablePreempt: a1 holds its free nominal
    # (min(3, 4 - 0) = 3 GPUs) for the rest of the cycle, so b7 may not borrow the 2 free
    w = unreclaimable_world(reclaim)
    result = run_cycle(w.snapshot(), w.placer, config)
    assert (ids(result), result.preempted) == ([], ())
    assert verdicts(result)["a1"][0] == PendingCode.WAITING_FOR_QUOTA
    assert verdicts(result)["b7"][0] == PendingCode.WAITING_FOR_QUOTA
    assert "team-a" not in result.usage  # the hold ends with the cycle
    assert result.usage["team-b"][("a100", "devices")] == 6000


@pytest.mark.parametrize("config", [NO_FAIR, None], ids=["classical", "fair-sharing"])
def test_head_that_can_always_reclaim_reserves_nothing(config):
    # reclaimWithinCohort: Any can always get the quota back later (Kueue CanAlwaysReclaim);
    # a1 is blocked by non-preemptible borrowers here, and b7 borrows the free devices
    w = unreclaimable_world(PreemptionPolicy.ANY)
    w.running = [replace(r, preemptible=False) for r in w.running]
    result = run_cycle(w.snapshot(), w.placer, config)
    assert ids(result) == ["b7"]
    assert verdicts(result)["a1"][0] == PendingCode.WAITING_FOR_QUOTA


@pytest.mark.parametrize("config", [NO_FAIR, None], ids=["classical", "fair-sharing"])
def test_unreclaimable_hold_binds_other_tenants_only(config):
    # the hold keeps the free nominal from borrowers of other tenants; a smaller job of the
    # head's own queue still takes its tenant's nominal (in Kueue it would be that queue's
    # head in a later cycle), and the hold shrinks to what is left: b7 still waits
    w = unreclaimable_world(PreemptionPolicy.LOWER_PRIORITY)
    w.submit("a2", "team-a", ONE, pods=2, created=30)
    result = run_cycle(w.snapshot(), w.placer, config)
    assert ids(result) == ["a2"]
    assert verdicts(result)["b7"][0] == PendingCode.WAITING_FOR_QUOTA
    assert result.usage["team-a"][("a100", "devices")] == 2000


def test_two_unreclaimable_heads_of_one_queue_hold_its_free_nominal_once():
    # 12 A100s, nominal 4 each; team-a (no borrowing) runs 2 of priority 10, so a1 and a3
    # (3 each, priority 0) find no candidates: together they hold team-a's 2 free nominal,
    # not 2 each, so team-c's c3 within its nominal (3rd round, after both) is admitted
    tenants = (TenantSpec("team-a"), TenantSpec("team-b"), TenantSpec("team-c"))
    quotas = (quota("team-a", 4000, borrowing_limit=0), quota("team-b", 4000))
    w = World(a100s(3), tenants=tenants, quotas=(*quotas, quota("team-c", 4000)))
    w.set_queue("team-a", reclaim_within_cohort=PreemptionPolicy.LOWER_PRIORITY)
    w.run("r", "team-a", ONE, pods=2, priority=10)
    w.run("b", "team-b", ONE, pods=4)
    w.run("c", "team-c", ONE, pods=2)
    w.submit("a1", "team-a", ONE, pods=3, created=60)
    w.submit("a3", "team-a", ONE, pods=3, created=50)
    for i, created in enumerate((60, 50)):  # above the cohort: never fit, hold nothing
        w.submit(f"c-huge{i}", "team-c", ONE, pods=13, created=created)
    w.submit("c3", "team-c", ONE, created=40)
    result = run_cycle(w.snapshot(), w.placer, NO_FAIR)
    assert ids(result) == ["c3"]
    assert verdicts(result)["a3"][0] == PendingCode.WAITING_FOR_QUOTA
    assert result.usage["team-a"][("a100", DEV)] == 2000  # the holds end with the cycle
