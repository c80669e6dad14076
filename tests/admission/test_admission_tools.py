"""ETA, dry runs (submission preview, quota-change simulation), invariants, input errors."""

from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from scheduling.admission import (
    AdmissionInputError,
    PendingCode,
    PendingWorkload,
    PreemptionReason,
    TenantSpec,
    Usage,
    check_invariants,
    drain_rate_per_s,
    dry_run_quota_change,
    estimate_start,
    preview_submission,
    run_cycle,
)
from tests.admission.admission_builders import (
    CORES,
    DEV,
    MEM,
    NOW,
    WHOLE,
    World,
    a100s,
    ago,
    quota,
    reclaim_world,
)


def device_usage(placer):
    return {
        u: (d.used_memory_mib, d.used_cores_percent, d.used_slots)
        for u, d in placer.devices.items()
    }


# -- ETA ----------------------------------------------------------------------------------------


def test_eta_from_the_observed_drain_rate():
    departures = [ago(4000), ago(3000), ago(2000), ago(1000), ago(400)]
    # window 3600 s keeps 4 events over 3000 s: 4/3000 jobs/s; position 3 -> 2250 s.
    assert drain_rate_per_s(departures, NOW) == pytest.approx(4 / 3000)
    assert estimate_start(3, departures, NOW) == NOW + timedelta(seconds=2250)
    assert estimate_start(1, departures, NOW) == NOW + timedelta(seconds=750)


def test_eta_needs_history_and_a_valid_position():
    assert estimate_start(1, [ago(10)], NOW) is None
    assert estimate_start(1, [], NOW) is None
    assert estimate_start(1, [ago(5000), ago(4000)], NOW) is None
    with pytest.raises(AdmissionInputError, match="position must be >= 1"):
        estimate_start(0, [ago(10), ago(5)], NOW)
    with pytest.raises(AdmissionInputError, match="window_s must be > 0"):
        drain_rate_per_s([], NOW, window_s=0)


# -- dry runs -----------------------------------------------------------------------------------


def test_preview_says_where_and_whom_and_changes_nothing():
    w = reclaim_world()
    before_held, before_usage = set(w.placer.held), device_usage(w.placer)
    job = PendingWorkload(
        id="a1",
        tenant="team-a",
        queue="q-team-a",
        priority=0,
        created_at=ago(60),
        pod_count=2,
        request=WHOLE,
    )
    preview = preview_submission(w.snapshot(), w.placer, job)
    # it would preempt b3 now and be admitted once b3 is gone
    assert preview.admitted is False and preview.admission is None
    assert [(p.victim_id, p.reason) for p in preview.victims] == [
        ("b3", PreemptionReason.RECLAIM_WITHIN_COHORT)
    ]
    assert (preview.verdict.code, preview.verdict.waiting_for) == (
        PendingCode.WAITING_FOR_PREEMPTED,
        ("b3",),
    )
    assert preview.other_admissions == ()
    assert set(w.placer.held) == before_held
    assert device_usage(w.placer) == before_usage
    free = World(a100s(1), quotas=(quota("team-a", 4000), quota("team-b", 0)))
    preview = preview_submission(free.snapshot(), free.placer, job)
    assert preview.admitted is True and preview.victims == ()
    assert [pod.node for pod in preview.admission.placement.pods] == ["n1", "n1"]
    assert free.placer.held == {}


def test_preview_of_a_job_that_would_wait_gives_its_verdict_and_position():
    w = reclaim_world()
    w.submit("a-first", "team-a", pods=2, created=600)
    job = PendingWorkload(
        id="a2",
        tenant="team-a",
        queue="q-team-a",
        priority=0,
        created_at=ago(60),
        pod_count=2,
        request=WHOLE,
    )
    preview = preview_submission(w.snapshot(), w.placer, job)
    assert preview.admitted is False and preview.victims == ()
    assert preview.other_admissions == ()
    # a-first (ahead) reclaims b3 and holds team-a's remaining nominal quota
    assert (preview.verdict.code, preview.verdict.position) == (PendingCode.WAITING_FOR_QUOTA, 2)
    assert set(w.placer.held) == {"a0", "b1", "b2", "b3"}


def test_quota_change_lowering_a_borrowing_limit_preempts_the_newest_borrower_job():
    w = reclaim_world(min_runtime_s=2000)
    impact = dry_run_quota_change(w.snapshot(), [quota("team-b", 4000, borrowing_limit=0)])
    message = (
        "tenant team-b, group a100-shared, flavor a100, devices: usage 6000 exceeds "
        "nominal 4000 + borrowing limit 0"
    )
    assert [v.message for v in impact.violations] == [message]
    assert [
        (v.workload_id, v.tenant, v.violation, v.earliest_eviction) for v in impact.victims
    ] == [("b3", "team-b", message, NOW + timedelta(seconds=1000))]
    assert impact.unresolved == ()


def test_quota_change_shrinking_the_cohort_evicts_until_it_fits():
    w = reclaim_world()
    impact = dry_run_quota_change(w.snapshot(), [quota("team-a", 1000)])
    assert [v.message for v in impact.violations] == [
        "cohort a100-shared, flavor a100, devices: usage 8000 exceeds cohort quota 5000"
    ]
    # b3 first (newest of two borrowers); then team-b is back at nominal and team-a (2000 >
    # 1000) is the only borrower, so a0 goes; fill-back keeps both.
    assert [v.workload_id for v in impact.victims] == ["b3", "a0"]
    # the snapshot is untouched: a real cycle still sees the old quotas
    assert run_cycle(w.snapshot(), w.placer).preempted == ()


def test_quota_change_dry_run_reports_the_jobs_that_would_go_over_and_evicts_nothing():
    w = World(a100s(4), quotas=(quota("team-a", 8000), quota("team-b", 8000)))
    for i in range(4):
        w.run(f"a-{i}", "team-a", pods=2, started=4000 - i)
    w.run("b-0", "team-b", pods=4)
    impact = dry_run_quota_change(w.snapshot(), [quota("team-a", 4000)])
    assert (impact.violations, impact.victims, impact.unresolved) == ((), (), ())
    (over,) = impact.over_nominal
    assert (over.tenant, over.usage, over.nominal, over.jobs) == (
        "team-a",
        8000,
        4000,
        ("a-3", "a-2"),
    )
    assert over.message == (
        "tenant team-a, flavor a100, devices: usage 8000 > nominal 4000 (over by 4000; "
        "reclaimable): jobs a-3, a-2 in reclaim order; nothing is evicted now"
    )
    tenants = (TenantSpec("team-a"), TenantSpec("team-x", "team-a"), TenantSpec("team-b"))
    impact = dry_run_quota_change(w.snapshot(tenants=tenants), [quota("team-x", 9000)])
    assert [e.message for e in impact.child_excess] == [
        "children's nominal 9000 exceeds team-a's 8000 (flavor a100, devices)"
    ]


def test_quota_change_adding_or_removing_rows():
    w = World(a100s(1), quotas=(quota("team-a", 4000), quota("team-b", 0)))
    w.run("a0", "team-a", pods=2)
    impact = dry_run_quota_change(w.snapshot(), [quota("team-b", 0, MEM)])
    assert impact.victims == () and impact.unresolved == ()
    impact = dry_run_quota_change(w.snapshot(), removed=[("team-a", "a100", DEV)])
    # team-a loses its only a100 row: its usage still counts (nominal 0, reclaimable) and the
    # cohort now has no a100 quota at all
    assert [o.message for o in impact.over_nominal] == [
        "tenant team-a, flavor a100, devices: usage 2000 > nominal 0 (over by 2000; "
        "reclaimable): jobs a0 in reclaim order; nothing is evicted now"
    ]
    assert [v.message for v in impact.violations] == [
        "cohort a100-shared, flavor a100, devices: usage 2000 exceeds cohort quota 0"
    ]
    assert [v.workload_id for v in impact.victims] == ["a0"]


# -- invariants -----------------------------------------------------------------------------------


def usage_rows(tenant, devices, memory, cores):
    return (
        Usage(tenant, "a100", DEV, devices),
        Usage(tenant, "a100", MEM, memory),
        Usage(tenant, "a100", CORES, cores),
    )


def test_invariants_hold_for_a_consistent_snapshot():
    w = reclaim_world()
    snap = w.snapshot(
        usage=usage_rows("team-a", 2000, 163840, 200) + usage_rows("team-b", 6000, 491520, 600)
    )
    assert check_invariants(snap, dict(w.placer.held), w.placer.devices) == ()


def test_invariants_report_over_limit_overcommit_and_usage_drift():
    w = reclaim_world()
    snap = w.snapshot(
        quotas=(quota("team-a", 1000), quota("team-b", 4000, borrowing_limit=1000)),
        usage=usage_rows("team-a", 3000, 163840, 200) + usage_rows("team-b", 6000, 491520, 600),
    )
    assert [(v.kind, v.subject, v.message) for v in check_invariants(snap)] == [
        (
            "over_limit",
            "team-b",
            "tenant team-b, group a100-shared, flavor a100, devices: "
            "usage 6000 exceeds nominal 4000 + borrowing limit 1000",
        ),
        (
            "cohort_overcommit",
            None,
            "cohort a100-shared, flavor a100, devices: usage 8000 exceeds cohort quota 5000",
        ),
        (
            "usage_drift",
            "team-a",
            "tenant team-a, flavor a100, devices: stored usage 3000, recomputed 2000",
        ),
    ]


def test_invariants_report_charge_drift_and_placement_mismatches():
    w = reclaim_world()
    running = list(w.running)
    running[0] = replace(running[0], charges={**running[0].charges, ("a100", DEV): 1500})
    placements = dict(w.placer.held)
    del placements["b1"]
    placements["ghost"] = placements["b2"]
    snap = w.snapshot(
        running=tuple(running),
        usage=usage_rows("team-a", 1500, 163840, 200) + usage_rows("team-b", 6000, 491520, 600),
    )
    assert [
        (v.kind, v.subject, v.message) for v in check_invariants(snap, placements, w.placer.devices)
    ] == [
        (
            "charge_drift",
            "a0",
            "workload a0, flavor a100, devices: recorded charge 1500, placement implies 2000",
        ),
        ("missing_placement", "b1", "running workload b1 has no placement"),
        ("orphan_placement", "ghost", "placement of ghost belongs to no running workload"),
    ]


# -- bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda s: replace(s, now=datetime(2025, 1, 1)),  # noqa: DTZ001 - naive on purpose
            "snapshot.now must be timezone-aware",
        ),
        (
            lambda s: replace(s, pending=(replace(s.pending[0], queue="nope"),)),
            "pending workload 'p1': unknown queue 'nope'",
        ),
        (
            lambda s: replace(s, pending=(replace(s.pending[0], tenant="team-b"),)),
            "pending workload 'p1': tenant 'team-b' differs from queue tenant 'team-a'",
        ),
        (
            lambda s: replace(s, pending=(replace(s.pending[0], min_pod_count=3),)),
            r"pending workload 'p1': min_pod_count must be in \[1, pod_count\]",
        ),
        (
            lambda s: replace(s, pending=(replace(s.pending[0], id="r1"),)),
            "running workload 'r1': duplicate id",
        ),
        (
            lambda s: replace(
                s, tenants=(TenantSpec("team-a", "team-b"), TenantSpec("team-b", "team-a"))
            ),
            "tenant tree has a cycle",
        ),
        (
            lambda s: replace(s, tenants=(TenantSpec("team-a", "dept"), TenantSpec("team-b"))),
            "tenant 'team-a': unknown parent 'dept'",
        ),
        (
            lambda s: replace(s, quotas=(quota("team-a", 1000, lending_limit=2000),)),
            r"quota team-a/a100/devices: lending_limit must be in \[0, nominal\]",
        ),
        (
            lambda s: replace(s, quotas=(quota("team-a", 1000), quota("team-a", 2000))),
            "quota team-a/a100/devices: duplicate row",
        ),
        (
            lambda s: replace(s, quotas=(quota("team-a", 1000, flavor="v100"),)),
            "quota team-a/v100/devices: flavor not in group a100-shared",
        ),
        (
            lambda s: replace(s, running=(replace(s.running[0], charges={("v100", DEV): 1}),)),
            "running workload 'r1': charge on unknown flavor 'v100'",
        ),
    ],
)
def test_bad_input_is_a_clear_error_and_changes_nothing(change, message):
    w = World(a100s(1), quotas=(quota("team-a", 4000), quota("team-b", 0)))
    w.run("r1", "team-a")
    w.submit("p1", "team-a", pods=2)
    held, usage = set(w.placer.held), device_usage(w.placer)
    with pytest.raises(AdmissionInputError, match=message):
        run_cycle(change(w.snapshot()), w.placer)
    assert set(w.placer.held) == held and device_usage(w.placer) == usage


def test_start_range_from_running_ends_and_queue_ahead():
    from scheduling.admission.eta import estimate_queue_starts, estimate_start_range

    def t(seconds):
        return NOW + timedelta(seconds=seconds)

    # 4 devices: 3 held until +100 s, 1 free. Queue: 2 devices for 50 s, then 1 for 10 s.
    running = [(NOW + timedelta(seconds=100), 3.0)]
    first, second = estimate_queue_starts(NOW, 4, running, [(2, 50), (1, 10)])
    assert (first.earliest, first.latest) == (t(100), t(100))
    # passing the 2-device job it starts now on the free device; strictly in order at +100 s
    assert (second.earliest, second.latest) == (NOW, t(100))
    # an overdue job counts as ending now; a job larger than the pool never starts
    assert estimate_start_range(NOW, 4, [(NOW - timedelta(seconds=5), 4.0)], [], 4).latest == NOW
    assert estimate_start_range(NOW, 4, [], [], 5) is None
    big, after = estimate_queue_starts(NOW, 4, [], [(9, 10), (1, 10)])
    assert big is None and after.latest == NOW
    with pytest.raises(AdmissionInputError):
        estimate_queue_starts(NOW, -1, [], [])
