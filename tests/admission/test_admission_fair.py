"""Fair sharing as Kueue: dominant share summed over flavors, weight 0, the admission
tournament and the preemption strategies (issue 16, scenarios S8-S10)."""

from fractions import Fraction

import pytest

from scheduling.admission import (
    AdmissionInputError,
    CohortOptions,
    FairSharingStrategy,
    PendingCode,
    PreemptionPolicy,
    PreemptionReason,
    QuotaTree,
    TenantSpec,
    dominant_share,
    run_cycle,
)
from scheduling.admission.fake import PodShape
from tests.admission.admission_builders import DEV, World, a100s, group, ids, quota, verdicts

ONE = PodShape(devices=1)
FAIR = CohortOptions(fair_sharing=True)


def test_s8_dominant_share_sums_borrowing_over_flavors():
    tree = QuotaTree(
        group(),
        (TenantSpec("a"), TenantSpec("b")),
        (
            quota("a", 4000),
            quota("a", 4000, flavor="t4"),
            quota("b", 4000),
            quota("b", 4000, flavor="t4"),
        ),
    )
    tree.add("a", {("a100", DEV): 6000, ("t4", DEV): 5000})
    share = dominant_share(tree, tree.node("a"))
    # borrowed 2 + 1 over lendable 8 + 8: 3 * 1000 / 16
    assert (share.unweighted, share.dominant, share.text()) == (
        Fraction(375, 2),
        "devices",
        "187.5",
    )
    assert share.borrowed == {("a100", DEV), ("t4", DEV)}


def s9_tree():
    tenants = (
        TenantSpec("a", fair_share_weight=0),
        TenantSpec("b"),
        TenantSpec("c", fair_share_weight=0),
        TenantSpec("d"),
    )
    tree = QuotaTree(
        group(), tenants, (quota("a", 4000), quota("b", 4000), quota("c", 4000), quota("d", 6000))
    )
    tree.add("a", {("a100", DEV): 5000})
    tree.add("b", {("a100", DEV): 6000})
    tree.add("c", {("a100", DEV): 6000})
    return tree


def test_s9_weight_zero_is_an_infinite_share_ordered_by_its_unweighted_share():
    tree = s9_tree()
    shares = {n: dominant_share(tree, tree.node(n)) for n in "abcd"}
    assert {n: s.text() for n, s in shares.items()} == {
        "a": "inf (unweighted 55.6)",
        "b": "111.1",
        "c": "inf (unweighted 111.1)",
        "d": "0.0",
    }
    # preemption target order (highest first): c, a, b, then the non-borrowing d
    assert sorted("abcd", key=lambda n: shares[n].key(), reverse=True) == list("cabd")


def s9_world():
    tenants = (
        TenantSpec("team-a", fair_share_weight=0),
        TenantSpec("team-b"),
        TenantSpec("team-c", fair_share_weight=0),
        TenantSpec("team-d"),
    )
    w = World(
        a100s(5),
        tenants=tenants,
        options=FAIR,
        quotas=(
            quota("team-a", 4000),
            quota("team-b", 4000),
            quota("team-c", 4000),
            quota("team-d", 6000),
        ),
    )
    w.run("a0", "team-a", ONE, pods=5)
    w.run("b0", "team-b", ONE, pods=6)
    w.run("c0", "team-c", ONE, pods=3, started=500)
    w.run("c1", "team-c", ONE, pods=3, started=400)
    return w


def test_s9_a_borrower_with_weight_beats_zero_weight_borrowers_for_admission():
    w = s9_world()  # 20 GPUs, 17 used, 1 quota unit left in the cohort (18)
    w.submit("a-next", "team-a", ONE, created=300)
    w.submit("c-next", "team-c", ONE, created=200)
    w.submit("b-next", "team-b", ONE, created=100)
    result = run_cycle(w.snapshot(), w.placer)
    assert ids(result) == ["b-next"]
    assert {v.workload_id for v in result.pending} == {"a-next", "c-next"}


def test_s9_zero_weight_borrowers_are_reclaimed_first_largest_unweighted_share_first():
    w = s9_world()
    w.submit("d1", "team-d", ONE, pods=2)  # within d's nominal: reclaims without share test
    result = run_cycle(w.snapshot(), w.placer)
    assert [(p.victim_id, p.reason) for p in result.preempted] == [
        ("c1", PreemptionReason.RECLAIM_WITHIN_COHORT)
    ]


def s10_world(b_jobs, c_use, a_use=2, **options):
    tenants = (TenantSpec("team-a"), TenantSpec("team-b"), TenantSpec("team-c"))
    w = World(
        a100s(3),
        tenants=tenants,
        options=CohortOptions(fair_sharing=True, **options),
        quotas=(quota("team-a", 2000), quota("team-b", 6000), quota("team-c", 4000)),
        within_cluster_queue=PreemptionPolicy.NEVER,
    )
    if a_use:
        w.run("a0", "team-a", ONE, pods=a_use)
    for i, pods in enumerate(b_jobs):
        w.run(f"b{i}", "team-b", ONE, pods=pods, started=3000 - i)
    if c_use:
        w.run("c0", "team-c", ONE, pods=c_use)
    w.submit("a-new", "team-a", ONE, pods=2)
    return w


def fair_victims(w):
    result = run_cycle(w.snapshot(), w.placer)
    return result, [(p.victim_id, p.reason, p.message) for p in result.preempted]


def test_s10a_no_preemption_when_the_preemptor_would_end_above_the_target():
    result, found = fair_victims(s10_world([2, 2, 2, 2], 2))
    assert found == []
    rejected = {r.workload_id: r.rule for r in result.pending[0].rejected}
    assert rejected == {
        "a0": "withinClusterQueue: Never",
        "c0": "borrower within nominal: tenant team-c",
        "b0": "fair sharing LessThanOrEqualToFinalShare: 166.7 > 0.0",
        "b1": "fair sharing LessThanOrEqualToFinalShare: 166.7 > 0.0",
        "b2": "fair sharing LessThanOrEqualToFinalShare: 166.7 > 0.0",
        # S2-b gives the newest job of each tenant a second chance
        "b3": "fair sharing LessThanInitialShare: 166.7 >= 166.7",
    }


def test_s10b_less_than_or_equal_to_final_share_takes_one_job():
    _, found = fair_victims(s10_world([2, 2, 2, 2, 2], 0))
    assert found == [
        (
            "b4",
            PreemptionReason.FAIR_SHARING,
            "preempted for fair sharing by tenant team-a for a-new: share 166.7 vs "
            "tenant team-b 333.3 -> 166.7 (LessThanOrEqualToFinalShare)",
        )
    ]


def test_s10c_less_than_initial_share_takes_a_big_job_the_first_strategy_refuses():
    _, found = fair_victims(s10_world([10], 0))
    assert found == [
        (
            "b0",
            PreemptionReason.FAIR_SHARING,
            "preempted for fair sharing by tenant team-a for a-new: share 166.7 vs "
            "tenant team-b 333.3 (LessThanInitialShare)",
        )
    ]
    only_first = s10_world(
        [10], 0, preemption_strategies=(FairSharingStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,)
    )
    result, found = fair_victims(only_first)
    assert found == []
    assert verdicts(result)["a-new"][0] == PendingCode.WAITING_FOR_QUOTA


def test_s10d_within_nominal_preempts_without_a_share_test():
    _, found = fair_victims(s10_world([2, 2, 2, 2, 2], 2, a_use=0))
    assert found == [
        (
            "b4",
            PreemptionReason.RECLAIM_WITHIN_COHORT,
            "reclaimed by tenant team-a for a-new: tenant team-b borrows a100 devices "
            "(usage 10000 > nominal 6000)",
        )
    ]


def test_strategy_lists_are_validated():
    w = s10_world(
        [2],
        0,
        preemption_strategies=(
            FairSharingStrategy.LESS_THAN_INITIAL_SHARE,
            FairSharingStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,
        ),
    )
    with pytest.raises(AdmissionInputError, match="preemption_strategies"):
        run_cycle(w.snapshot(), w.placer)


def test_tournament_prefers_the_subtree_that_does_not_borrow_at_each_level():
    # org1 (a1, a2) lends nothing; org2's b1 borrows a lot: an a2 head beats a b1 head even
    # though b1's is older and of higher priority.
    tenants = (
        TenantSpec("org1"),
        TenantSpec("org2"),
        TenantSpec("a1", "org1"),
        TenantSpec("a2", "org1"),
        TenantSpec("b1", "org2"),
    )
    w = World(
        a100s(4),
        tenants=tenants,
        options=FAIR,
        quotas=(quota("a1", 4000), quota("a2", 4000), quota("b1", 8000)),
    )
    w.run("b1-0", "b1", ONE, pods=10)
    w.run("a1-0", "a1", ONE, pods=4)
    w.submit("b1-new", "b1", ONE, pods=2, priority=9, created=600)
    w.submit("a2-new", "a2", ONE, pods=2, priority=0, created=60)
    result = run_cycle(w.snapshot(), w.placer)
    assert ids(result) == ["a2-new"]
