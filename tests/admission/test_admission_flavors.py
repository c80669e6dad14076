"""Flavor fungibility per pod set (issue 16, S12) and priority classes (S14, core part)."""

from scheduling.admission import (
    FlavorFungibility,
    FlavorPreference,
    FungibilityPolicy,
    PendingCode,
    PendingWorkload,
    PodSetSpec,
    PreemptionReason,
    PriorityClassSpec,
    run_cycle,
)
from scheduling.admission.fake import PodShape
from tests.admission.admission_builders import (
    NO_FAIR,
    World,
    a100s,
    ago,
    h100s,
    ids,
    quota,
    verdicts,
)

ONE = PodShape(devices=1)
ON_A100 = PodShape(devices=1, flavors=("a100",))
FLAVORS = ("a100", "h100")
TRY_NEXT = FungibilityPolicy.TRY_NEXT_FLAVOR


def admitted(result):
    return [
        (a.workload_id, a.flavors, a.borrowing, sorted({p.node for p in a.placement.pods}))
        for a in result.admitted
    ]


def s12a(**queue):
    w = World(
        a100s(2) + h100s(1),
        flavors=FLAVORS,
        quotas=(quota("team-a", 4000), quota("team-a", 4000, flavor="h100"), quota("team-b", 4000)),
        **queue,
    )
    w.run("a-2", "team-a", ON_A100, pods=2)
    w.submit("j", "team-a", ONE, pods=4)
    return w


def test_s12a_may_stop_search_borrows_on_the_first_flavor():
    w = s12a()
    assert admitted(run_cycle(w.snapshot(), w.placer, NO_FAIR)) == [
        ("j", ("a100",), True, ["n1", "n2"])
    ]


def test_s12a_try_next_flavor_when_it_can_borrow_finds_a_flavor_without_borrowing():
    w = s12a(fungibility=FlavorFungibility(when_can_borrow=TRY_NEXT))
    assert admitted(run_cycle(w.snapshot(), w.placer, NO_FAIR)) == [("j", ("h100",), False, ["h1"])]


def s12b(**queue):
    w = World(
        a100s(2) + h100s(1),
        flavors=FLAVORS,
        quotas=(
            quota("team-a", 4000),
            quota("team-a", 0, flavor="h100"),
            quota("team-b", 4000),
            quota("team-b", 4000, flavor="h100"),
        ),
        **queue,
    )
    w.run("a-low", "team-a", ON_A100, pods=4)
    w.run("b-4", "team-b", ON_A100, pods=4)
    w.submit("j", "team-a", ONE, pods=4, priority=10)
    return w


def test_s12b_default_prefers_borrowing_another_flavor_to_preempting():
    w = s12b()
    result = run_cycle(w.snapshot(), w.placer, NO_FAIR)
    assert admitted(result) == [("j", ("h100",), True, ["h1"])]
    assert result.preempted == ()


def test_s12b_may_stop_search_when_it_can_preempt_preempts_on_the_first_flavor():
    w = s12b(fungibility=FlavorFungibility(when_can_preempt=FungibilityPolicy.MAY_STOP_SEARCH))
    result = run_cycle(w.snapshot(), w.placer, NO_FAIR)
    assert [(p.victim_id, p.reason) for p in result.preempted] == [
        ("a-low", PreemptionReason.IN_TENANT)
    ]
    assert verdicts(result)["j"][0] == PendingCode.WAITING_FOR_PREEMPTED


def test_s12b_preemption_over_borrowing_prefers_preempting_without_borrowing():
    w = s12b(
        fungibility=FlavorFungibility(
            TRY_NEXT, TRY_NEXT, FlavorPreference.PREEMPTION_OVER_BORROWING
        )
    )
    result = run_cycle(w.snapshot(), w.placer, NO_FAIR)
    assert [p.victim_id for p in result.preempted] == ["a-low"]


def test_s12c_pod_sets_choose_their_flavors_with_the_earlier_sets_counted():
    w = World(
        a100s(2) + h100s(1),
        flavors=FLAVORS,
        quotas=(quota("team-a", 4000), quota("team-a", 4000, flavor="h100"), quota("team-b", 4000)),
    )
    w.run("b-4", "team-b", ON_A100, pods=4)
    w.pending.append(
        PendingWorkload(
            "j",
            "team-a",
            "q-team-a",
            0,
            ago(60),
            pod_count=5,
            pod_sets=(PodSetSpec("driver", 1, ONE), PodSetSpec("workers", 4, ONE)),
        )
    )
    result = run_cycle(w.snapshot(), w.placer, NO_FAIR)
    # driver on a100 (fits); workers on a100 would need 1 + 4 > 4 and nothing to borrow or
    # preempt, so they go to h100
    assert admitted(result) == [("j", ("a100", "h100"), False, ["h1", "n2"])]
    assert result.admitted[0].charges[("a100", "devices")] == 1000
    assert result.admitted[0].charges[("h100", "devices")] == 4000


def test_no_matching_flavor_when_no_listed_flavor_can_hold_the_pods():
    w = World(
        a100s(1) + h100s(1),
        flavors=("h100",),
        quotas=(quota("team-a", 8000), quota("team-a", 8000, flavor="h100")),
    )
    w.submit("j", "team-a", PodShape(devices=1, flavors=("a100",)))
    result = run_cycle(w.snapshot(), w.placer, NO_FAIR)
    assert verdicts(result)["j"][:2] == (
        PendingCode.NO_MATCHING_FLAVOR,
        "unschedulable: pod 1/1: no node has 1 free device(s) for the shape",
    )


# -- priority classes ------------------------------------------------------------------------

CLASSES = (
    PriorityClassSpec("low", 100),
    PriorityClassSpec("normal", 500),
    PriorityClassSpec("critical", 1000, preemptible=False),
)


def test_a_queue_refuses_a_priority_class_it_does_not_allow():
    w = World(
        a100s(1),
        classes=CLASSES,
        quotas=(quota("team-a", 4000),),
        allowed_priority_classes=("low", "normal"),
    )
    w.submit("crit", "team-a", priority=1000, priority_class="critical", created=60)
    w.submit("ghost", "team-a", priority=1, priority_class="nope", created=50)
    w.submit("ok", "team-a", priority=500, priority_class="normal", created=40)
    result = run_cycle(w.snapshot(), w.placer, NO_FAIR)
    assert ids(result) == ["ok"]
    assert verdicts(result) == {
        "crit": (
            PendingCode.PRIORITY_CLASS_NOT_ALLOWED,
            "priority class critical is not allowed in queue q-team-a (allowed: low, normal)",
            1,
            (),
        ),
        "ghost": (
            PendingCode.PRIORITY_CLASS_NOT_ALLOWED,
            "priority class nope does not exist",
            2,
            (),
        ),
    }


def test_a_non_preemptible_class_protects_its_running_jobs():
    w = World(a100s(2), classes=CLASSES, quotas=(quota("team-a", 4000), quota("team-b", 4000)))
    w.run("crit", "team-a", ONE, pods=4, priority=0, priority_class="critical")
    w.run("b0", "team-b", ONE, pods=4)
    w.submit("hi", "team-a", ONE, pods=2, priority=900, priority_class="normal")
    result = run_cycle(w.snapshot(), w.placer, NO_FAIR)
    assert result.preempted == ()
    assert [(r.workload_id, r.rule) for r in result.pending[0].rejected] == [
        ("b0", "borrower within nominal: tenant team-b"),
        ("crit", "non-preemptible"),
    ]


def test_a_job_of_a_non_preemptible_class_never_borrows():
    w = World(a100s(2), classes=CLASSES, quotas=(quota("team-a", 4000), quota("team-b", 4000)))
    w.run("a0", "team-a", ONE, pods=4, priority=2000)
    w.submit("crit-2", "team-a", ONE, priority=1000, priority_class="critical")
    w.submit("norm", "team-a", ONE, priority=500, priority_class="normal", created=30)
    result = run_cycle(w.snapshot(), w.placer, NO_FAIR)
    # team-b's idle quota could be borrowed, but not by a non-preemptible class
    assert ids(result) == ["norm"]
    assert verdicts(result)["crit-2"][:2] == (
        PendingCode.WAITING_FOR_QUOTA,
        "tenant team-a, group a100-shared, flavor a100, devices: needs 1000, free 0, "
        "borrowable 0 (non-preemptible jobs may not borrow)",
    )
    assert result.admitted[0].preemptible is True
