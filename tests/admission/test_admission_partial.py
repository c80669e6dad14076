"""Partial admission (Kueue ``minCount``, issue 29): the full count is tried first,
preemption included; the job shrinks only when neither a fit nor preemption gives it the full
count (Kueue ``getInitialAssignments``: ``PodSetReducer`` runs only after the full
assignment is neither ``Fit`` nor ``Preempt`` with targets)."""

from scheduling.admission import PendingCode, PreemptionReason
from tests.admission.admission_builders import World, a100s, ids, quota, verdicts


def victims(result):
    return [(p.victim_id, p.preemptor_id, p.reason) for p in result.preempted]


def borrowed_world():
    """8 A100s; team-a nominal 4, team-b nominal 4 runs 6 single-GPU jobs (borrows 2)."""
    w = World(a100s(2), quotas=(quota("team-a", 4000), quota("team-b", 4000)))
    for i in range(1, 7):
        w.run(f"b{i}", "team-b", started=1000 - i * 100)  # b6 newest
    return w


def test_partial_job_reclaims_for_its_full_count_before_shrinking():
    w = borrowed_world()
    w.submit("g", "team-a", pods=4, min_pod_count=1)
    result = w.cycle()
    # 2 devices are free, so 2 pods would fit now; reclaiming team-b's 2 borrowed devices
    # gives all 4 pods: the full count with preemption wins over shrinking
    assert ids(result) == []
    assert victims(result) == [
        ("b6", "g", PreemptionReason.RECLAIM_WITHIN_COHORT),
        ("b5", "g", PreemptionReason.RECLAIM_WITHIN_COHORT),
    ]
    assert verdicts(result)["g"][0] == PendingCode.WAITING_FOR_PREEMPTED
    w.finish("b6")
    w.finish("b5")
    after = w.cycle()
    assert [(a.workload_id, a.pod_count) for a in after.admitted] == [("g", 4)]


def test_partial_job_shrinks_when_preemption_cannot_make_room():
    w = World(a100s(2), quotas=(quota("team-a", 4000), quota("team-b", 4000)))
    for i in range(1, 7):
        w.run(f"b{i}", "team-b", preemptible=False)  # borrowed, but cannot be reclaimed
    w.submit("g", "team-a", pods=4, min_pod_count=1)
    result = w.cycle()
    assert victims(result) == []
    assert [(a.workload_id, a.pod_count) for a in result.admitted] == [("g", 2)]
