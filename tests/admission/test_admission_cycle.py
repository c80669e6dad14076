"""Phases 1, 3, 4 and 5: queue strategies, preemption, reclaim, fair sharing, gangs."""

from datetime import timedelta

from scheduling.admission import (
    CycleConfig,
    GroupKind,
    PendingCode,
    PreemptionReason,
    QueueingStrategy,
    TenantSpec,
    run_cycle,
)
from scheduling.admission.fake import PodShape
from tests.admission.admission_builders import (
    NO_FAIR,
    NOW,
    World,
    a100s,
    ids,
    quota,
    reclaim_world,
    verdicts,
)

OWN_A0_REJECTED = (
    "preemption: no valid candidates",
    "preemption: a0 rejected: withinClusterQueue LowerPriority: priority 0 >= 0",
)


def victims(result):
    return [(p.victim_id, p.preemptor_id, p.reason) for p in result.preempted]


def waiting(result):
    return {v.workload_id: v.waiting_for for v in result.pending if v.waiting_for}


# -- phase 1: queue heads by strategy and priority --------------------------------------------


def queue_world(strategy):
    w = World(
        a100s(2),
        strategy=strategy,
        quotas=(quota("team-a", 4000, borrowing_limit=0), quota("team-b", 4000)),
    )
    w.run("a0", "team-a", pods=2)
    w.submit("a-big", "team-a", pods=3, created=60)
    w.submit("a-small", "team-a", pods=1, created=30)
    return w


A_BIG_REASON = (
    "tenant team-a, group a100-shared, flavor a100, devices: needs 3000, free 2000, "
    "borrowable 0 (bounded by borrowing limit of tenant team-a)"
)


def test_strict_fifo_blocks_the_queue_behind_its_head():
    w = queue_world(QueueingStrategy.STRICT_FIFO)
    result = run_cycle(w.snapshot(), w.placer)
    assert ids(result) == []
    assert verdicts(result) == {
        "a-big": (PendingCode.WAITING_FOR_QUOTA, A_BIG_REASON, 1, OWN_A0_REJECTED),
        "a-small": (
            PendingCode.BLOCKED_BY_HEAD,
            "queue q-team-a is StrictFIFO and its head a-big is not admitted",
            2,
            (),
        ),
    }


def test_best_effort_fifo_lets_later_jobs_try():
    w = queue_world(QueueingStrategy.BEST_EFFORT_FIFO)
    result = run_cycle(w.snapshot(), w.placer)
    assert ids(result) == ["a-small"]
    assert verdicts(result) == {
        # reasons are as of the job's own evaluation (before a-small was admitted)
        "a-big": (PendingCode.WAITING_FOR_QUOTA, A_BIG_REASON, 1, OWN_A0_REJECTED)
    }
    assert result.usage["team-a"][("a100", "devices")] == 3000


def test_higher_priority_goes_first_even_when_submitted_later():
    w = queue_world(QueueingStrategy.STRICT_FIFO)
    w.submit("a-urgent", "team-a", pods=1, priority=5, created=1)
    result = run_cycle(w.snapshot(), w.placer)
    assert ids(result) == ["a-urgent"]
    assert [(v.workload_id, v.position, v.code) for v in result.pending] == [
        ("a-big", 1, PendingCode.WAITING_FOR_QUOTA),
        ("a-small", 2, PendingCode.BLOCKED_BY_HEAD),
    ]


# -- phase 4c: preemption inside the tenant, minimum runtime -----------------------------------


def priority_world(**lo1):
    w = World(
        a100s(2), kind=GroupKind.EXCLUSIVE, quotas=(quota("team-a", 4000), quota("team-b", 4000))
    )
    w.run("lo1", "team-a", pods=2, priority=1, started=600, **lo1)
    w.run("lo2", "team-a", pods=2, priority=2, started=300)
    w.submit("hi", "team-a", pods=2, priority=5)
    return w


def test_lower_priority_job_of_the_same_tenant_is_preempted_first_lowest_priority():
    w = priority_world()
    result = w.cycle()
    # preempt now, admit after the victim is gone (Kueue processEntry)
    assert ids(result) == []
    (p,) = result.preempted
    assert (p.victim_id, p.victim_tenant, p.preemptor_id, p.reason) == (
        "lo1",
        "team-a",
        "hi",
        PreemptionReason.IN_TENANT,
    )
    assert p.message == "preempted by hi (priority 5 > 1) in tenant team-a"
    assert (p.at, p.evict_by) == (NOW, NOW + timedelta(seconds=30))
    assert verdicts(result)["hi"] == (
        PendingCode.WAITING_FOR_PREEMPTED,
        "waiting for 1 preempted workload(s) to terminate (lo1); admitted once their pods are "
        "gone (grace until 2025-01-01T12:00:30+00:00)",
        1,
        (),
    )
    assert waiting(result) == {"hi": ("lo1",)}
    # the victim keeps its devices; the preemptor's hold ended with the cycle
    assert set(w.placer.held) == {"lo1", "lo2"}
    # while lo1 terminates, nothing new is issued and hi keeps waiting
    again = w.cycle()
    assert (ids(again), again.preempted, waiting(again)) == ([], (), {"hi": ("lo1",)})
    w.finish("lo1")
    assert ids(w.cycle()) == ["hi"]
    assert set(w.placer.held) == {"lo2", "hi"}


def test_minimum_runtime_protects_a_victim():
    w = priority_world(min_runtime_s=900)
    result = run_cycle(w.snapshot(), w.placer)
    assert victims(result) == [("lo2", "hi", PreemptionReason.IN_TENANT)]
    assert waiting(result) == {"hi": ("lo2",)}


def test_non_preemptible_victim_is_skipped():
    w = priority_world(preemptible=False)
    result = run_cycle(w.snapshot(), w.placer)
    assert victims(result) == [("lo2", "hi", PreemptionReason.IN_TENANT)]


def test_all_victims_protected_leaves_the_job_pending_with_the_reason():
    w = World(
        a100s(2), kind=GroupKind.EXCLUSIVE, quotas=(quota("team-a", 4000), quota("team-b", 4000))
    )
    w.run("lo1", "team-a", pods=2, priority=1, started=600, min_runtime_s=900)
    w.run("lo2", "team-a", pods=2, priority=2, started=300, min_runtime_s=900)
    w.submit("hi", "team-a", pods=2, priority=5)
    result = run_cycle(w.snapshot(), w.placer)
    assert result.admitted == () and result.preempted == ()
    assert verdicts(result)["hi"] == (
        PendingCode.WAITING_FOR_QUOTA,
        "tenant team-a, group a100-shared, flavor a100, devices: needs 2000, free 0, "
        "borrowable 0 (bounded by exclusive group a100-shared, no borrowing)",
        1,
        (
            "preemption: no valid candidates",
            "preemption: lo1 rejected: minimum runtime: until 2025-01-01T12:05:00+00:00",
            "preemption: lo2 rejected: minimum runtime: until 2025-01-01T12:10:00+00:00",
        ),
    )
    assert [(r.workload_id, r.kind) for r in result.pending[0].rejected] == [
        ("lo1", "minimum runtime"),
        ("lo2", "minimum runtime"),
    ]
    assert set(w.placer.held) == {"lo1", "lo2"}


def test_equal_priority_is_never_preempted_within_the_tenant():
    w = World(a100s(1), kind=GroupKind.EXCLUSIVE, quotas=(quota("team-a", 4000),))
    w.run("same", "team-a", pods=4, priority=3)
    w.submit("new", "team-a", pods=1, priority=3)
    result = run_cycle(w.snapshot(), w.placer)
    assert result.preempted == ()
    assert verdicts(result)["new"][0] == PendingCode.WAITING_FOR_QUOTA
    assert verdicts(result)["new"][3] == (
        "preemption: no valid candidates",
        "preemption: same rejected: withinClusterQueue LowerPriority: priority 3 >= 3",
    )


# -- phase 4c: reclaim of lent capacity ---------------------------------------------------------


def test_lender_reclaims_the_most_recent_job_of_the_borrower():
    w = reclaim_world()
    w.submit("a1", "team-a", pods=2)
    result = w.cycle()
    assert ids(result) == []
    (p,) = result.preempted
    assert (p.victim_id, p.victim_tenant, p.preemptor_tenant, p.reason) == (
        "b3",
        "team-b",
        "team-a",
        PreemptionReason.RECLAIM_WITHIN_COHORT,
    )
    assert p.message == (
        "reclaimed by tenant team-a for a1: tenant team-b borrows a100 devices "
        "(usage 6000 > nominal 4000)"
    )
    # the waiting preemptor names no job of another tenant
    assert verdicts(result)["a1"][1] == (
        "waiting for 1 preempted workload(s) to terminate (1 job(s) of other tenants); "
        "admitted once their pods are gone (grace until 2025-01-01T12:00:30+00:00)"
    )
    assert waiting(result) == {"a1": ("b3",)}
    # the victim is still charged while it terminates
    assert result.usage["team-b"][("a100", "devices")] == 6000
    w.finish("b3")
    after = w.cycle()
    assert ids(after) == ["a1"]
    assert after.admitted[0].borrowing is False
    assert [pod.node for pod in after.admitted[0].placement.pods] == ["n2", "n2"]


def test_reclaim_respects_the_victims_minimum_runtime():
    w = reclaim_world(min_runtime_s=2000)
    w.submit("a1", "team-a", pods=2)
    result = run_cycle(w.snapshot(), w.placer)
    assert victims(result) == [("b2", "a1", PreemptionReason.RECLAIM_WITHIN_COHORT)]


def test_reclaim_evicts_a_whole_gang_bigger_than_the_excess():
    # Kueue: a borrower is reclaimed down to (here below) its nominal quota; there is no
    # "never below nominal" law (issue 16, S2).
    w = World(a100s(2), quotas=(quota("team-a", 4000), quota("team-b", 4000)))
    w.run("a0", "team-a", pods=2)
    w.run("b-big", "team-b", pods=6)
    w.submit("a1", "team-a", pods=2)
    result = run_cycle(w.snapshot(), w.placer)
    assert victims(result) == [("b-big", "a1", PreemptionReason.RECLAIM_WITHIN_COHORT)]


def test_reclaim_waits_for_the_preemption_delay():
    w = reclaim_world()
    w.submit("a1", "team-a", pods=2, created=60)
    result = run_cycle(w.snapshot(), w.placer, CycleConfig(preemption_delay_s=120))
    assert result.preempted == ()
    assert verdicts(result)["a1"][3] == (
        "preemption: no valid candidates",
        "preemption: a0 rejected: withinClusterQueue LowerPriority: priority 0 >= 0",
        "preemption: 3 job(s) of other tenants rejected: preemption delay x3",
    )
    assert {r.rule for r in result.pending[0].rejected if r.tenant == "team-b"} == {
        "preemption delay: waited 60s of 120s"
    }
    w2 = reclaim_world()
    w2.submit("a1", "team-a", pods=2, created=180)
    result = run_cycle(w2.snapshot(), w2.placer, CycleConfig(preemption_delay_s=120))
    assert victims(result) == [("b3", "a1", PreemptionReason.RECLAIM_WITHIN_COHORT)]


def test_a_tenant_that_would_borrow_cannot_reclaim():
    w = reclaim_world()
    w.submit("a1", "team-a", pods=3)  # 2000 + 3000 > nominal 4000
    result = run_cycle(w.snapshot(), w.placer, NO_FAIR)
    assert result.preempted == ()
    assert verdicts(result)["a1"][:2] == (
        PendingCode.WAITING_FOR_QUOTA,
        "tenant team-a, group a100-shared, flavor a100, devices: needs 3000, free 0, "
        "borrowable 0 (bounded by cohort a100-shared; 2000 of its nominal quota in use by "
        "other tenants)",
    )
    assert {(r.workload_id, r.rule) for r in result.pending[0].rejected} >= {
        ("b3", "borrowWithinCohort: Never, tenant team-a would borrow after the preemption")
    }


def test_two_reclaims_in_one_cycle_do_not_count_the_same_victim_twice():
    w = reclaim_world()
    w.submit("a1", "team-a", pods=2, created=60)
    w.submit("a2", "team-a", pods=2, created=50)
    result = run_cycle(w.snapshot(), w.placer, NO_FAIR)
    assert ids(result) == []
    assert victims(result) == [("b3", "a1", PreemptionReason.RECLAIM_WITHIN_COHORT)]
    # a1's charges are held on top of the terminating b3: team-a is at nominal, so a2 could
    # only reclaim while borrowing (borrowWithinCohort Never)
    assert verdicts(result)["a2"][:2] == (
        PendingCode.WAITING_FOR_QUOTA,
        "tenant team-a, group a100-shared, flavor a100, devices: needs 2000, free 0, "
        "borrowable 0 (bounded by cohort a100-shared)",
    )
    assert result.usage["team-b"][("a100", "devices")] == 6000
    assert result.usage["team-a"][("a100", "devices")] == 2000


def test_two_lenders_reclaim_distinct_victims_in_one_cycle():
    w = World(
        a100s(2),
        tenants=(TenantSpec("team-a"), TenantSpec("team-b"), TenantSpec("team-c")),
        quotas=(quota("team-a", 3000), quota("team-b", 2000), quota("team-c", 3000)),
    )
    for i, started in enumerate((4000, 3000, 2000, 1000), start=1):
        w.run(f"b{i}", "team-b", pods=2, started=started)
    w.submit("a1", "team-a", pods=2, created=60)
    w.submit("c1", "team-c", pods=2, created=50)
    result = w.cycle()
    assert ids(result) == []
    assert victims(result) == [
        ("b4", "a1", PreemptionReason.RECLAIM_WITHIN_COHORT),
        ("b3", "c1", PreemptionReason.RECLAIM_WITHIN_COHORT),
    ]
    # a1's charges are held in place of b4's (Kueue fits: the cycle's victims removed), so
    # c1 waits for its own victim only (issue 29; it used to wait for b4 as well)
    assert waiting(result) == {"a1": ("b4",), "c1": ("b3",)}
    assert result.usage["team-b"][("a100", "devices")] == 8000  # still charged
    w.finish("b4")
    w.finish("b3")
    assert ids(w.cycle()) == ["a1", "c1"]


# -- phase 3: fair sharing -------------------------------------------------------------------------


def borrow_world(b_weight=1.0):
    tenants = (
        TenantSpec("team-a"),
        TenantSpec("team-b", fair_share_weight=b_weight),
        TenantSpec("team-c"),
    )
    w = World(
        a100s(2),
        tenants=tenants,
        quotas=(
            quota("team-a", 1000),
            quota("team-b", 1000),
            quota("team-c", 6000, lending_limit=2000),
        ),
    )
    w.run("a0", "team-a", pods=2)
    w.run("b0", "team-b", pods=1)
    w.submit("a1", "team-a", created=120)
    w.submit("b1", "team-b", created=60)
    return w


def test_lowest_dominant_share_borrows_next():
    # cohort lendable 4000; after admission a borrows 2000 (share 500), b 1000 (share 250).
    w = borrow_world()
    result = run_cycle(w.snapshot(), w.placer)
    assert ids(result) == ["b1"]
    # a1 cannot take b0 back: after admission a's share (500) would exceed b's before (250)
    assert verdicts(result)["a1"] == (
        PendingCode.WAITING_FOR_QUOTA,
        "tenant team-a, group a100-shared, flavor a100, devices: needs 1000, free 0, "
        "borrowable 0 (bounded by cohort a100-shared)",
        1,
        (
            *OWN_A0_REJECTED,
            "preemption: 1 job(s) of other tenants rejected: fair sharing LessThanInitialShare x1",
        ),
    )
    assert [r.rule for r in result.pending[0].rejected if r.tenant == "team-b"] == [
        "fair sharing LessThanInitialShare: 500.0 >= 250.0"
    ]


def test_fair_share_weight_changes_who_borrows():
    w = borrow_world(b_weight=0.25)  # b: 250 / 0.25 = 1000 > a: 500
    assert ids(run_cycle(w.snapshot(), w.placer)) == ["a1"]


def test_without_fair_sharing_fifo_decides_who_borrows():
    w = borrow_world()
    assert ids(run_cycle(w.snapshot(), w.placer, NO_FAIR)) == ["a1"]


def reclaim_share_world():
    tenants = (TenantSpec("team-a"), TenantSpec("team-b"), TenantSpec("team-c"))
    w = World(
        a100s(2),
        tenants=tenants,
        quotas=(quota("team-a", 4000), quota("team-b", 2000), quota("team-c", 2000)),
    )
    for i in range(1, 4):
        w.run(f"b{i}", "team-b", started=500 if i == 3 else 6000)
    for i in range(1, 6):
        w.run(f"c{i}", "team-c", started=6000 - i * 1000)
    w.submit("a1", "team-a")
    return w


def test_highest_dominant_share_is_reclaimed_first():
    # b borrows 1000 (share 125), c borrows 3000 (share 375): c's newest job goes.
    w = reclaim_share_world()
    result = run_cycle(w.snapshot(), w.placer)
    assert victims(result) == [("c5", "a1", PreemptionReason.RECLAIM_WITHIN_COHORT)]


def test_without_fair_sharing_the_newest_borrowing_job_is_reclaimed():
    w = reclaim_share_world()
    result = run_cycle(w.snapshot(), w.placer, NO_FAIR)
    assert victims(result) == [("b3", "a1", PreemptionReason.RECLAIM_WITHIN_COHORT)]


# -- gangs ------------------------------------------------------------------------------------


def gang_world():
    w = World(a100s(2), quotas=(quota("team-a", 8000), quota("team-b", 0)))
    w.run("x", "team-b", pods=3, preemptible=False)  # n1 gpu0-2, cannot be reclaimed
    return w


def test_gang_is_all_or_nothing():
    w = gang_world()
    w.submit("g1", "team-a", PodShape(devices=2), pods=3, created=60)
    w.submit("g2", "team-a", PodShape(devices=2), pods=1, created=30)
    result = run_cycle(w.snapshot(), w.placer)
    assert ids(result) == ["g2"]
    assert [g.uuid for g in result.admitted[0].placement.pods[0].containers[0].devices] == [
        "n2-gpu0",
        "n2-gpu1",
    ]
    # team-b borrows 3000 of team-a's nominal quota through a job that cannot be preempted
    assert verdicts(result)["g1"] == (
        PendingCode.WAITING_FOR_QUOTA,
        "tenant team-a, group a100-shared, flavor a100, devices: needs 6000, free 5000, "
        "borrowable 0 (bounded by cohort a100-shared; 3000 of its nominal quota in use by other "
        "tenants)",
        1,
        (
            "preemption: no valid candidates",
            "preemption: 1 job(s) of other tenants rejected: non-preemptible x1",
        ),
    )


def test_gang_with_min_count_is_admitted_partially_and_atomically():
    w = gang_world()
    w.submit("g1", "team-a", PodShape(devices=2), pods=3, created=60, min_pod_count=2)
    w.submit("g2", "team-a", PodShape(devices=2), pods=1, created=30)
    result = run_cycle(w.snapshot(), w.placer)
    assert ids(result) == ["g1"]
    assert result.admitted[0].pod_count == 2
    assert result.admitted[0].charges[("a100", "devices")] == 4000
    assert verdicts(result)["g2"][0] == PendingCode.WAITING_FOR_QUOTA


def test_partial_gang_takes_the_largest_count_within_quota():
    w = World(a100s(2), quotas=(quota("team-a", 3000, borrowing_limit=0), quota("team-b", 0)))
    w.submit("g", "team-a", pods=5, min_pod_count=2)
    result = run_cycle(w.snapshot(), w.placer)
    assert [(a.workload_id, a.pod_count) for a in result.admitted] == [("g", 3)]


def test_gang_is_admitted_by_reclaiming_capacity_for_all_its_pods():
    w = World(a100s(2), quotas=(quota("team-a", 8000), quota("team-b", 0)))
    w.run("x1", "team-b", pods=2, started=300)  # n1 gpu0-1
    w.run("x2", "team-b", pods=2, started=200)  # n1 gpu2-3
    w.submit("g1", "team-a", PodShape(devices=2), pods=4)  # needs all 8 devices
    result = w.cycle()
    assert ids(result) == []
    assert victims(result) == [
        ("x2", "g1", PreemptionReason.RECLAIM_WITHIN_COHORT),
        ("x1", "g1", PreemptionReason.RECLAIM_WITHIN_COHORT),
    ]
    assert waiting(result) == {"g1": ("x2", "x1")}
    w.finish("x1")
    assert ids(w.cycle()) == []  # x2 still terminating: no partial start
    w.finish("x2")
    assert ids(w.cycle()) == ["g1"]


def test_victim_set_is_minimised_by_fill_back():
    w = World(a100s(2), quotas=(quota("team-a", 8000), quota("team-b", 0)))
    w.run("x1", "team-b", pods=3, started=300)  # n1 gpu0-2
    w.run("x3", "team-b", pods=1, started=100)  # n1 gpu3, newest: tried first, useless
    w.run("x2", "team-b", pods=1, started=200)  # n2 gpu0
    w.submit("g1", "team-a", PodShape(devices=4))  # a whole node
    result = run_cycle(w.snapshot(), w.placer)
    assert victims(result) == [("x2", "g1", PreemptionReason.RECLAIM_WITHIN_COHORT)]
    assert set(w.placer.held) == {"x1", "x2", "x3"}


def test_elastic_group_admissions_are_preemptible():
    w = World(
        a100s(1),
        kind=GroupKind.ELASTIC,
        quotas=(quota("team-a", 0, borrowing_limit=2000), quota("team-b", 4000)),
    )
    w.submit("e1", "team-a", pods=2, preemptible=True)
    result = run_cycle(w.snapshot(), w.placer)
    assert [(a.workload_id, a.borrowing, a.preemptible) for a in result.admitted] == [
        ("e1", True, True)
    ]
