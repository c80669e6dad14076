"""The admission core wired to PostgreSQL: borrowing, reclaim, in-tenant preemption, minimum
runtime, preemption policy, fraction-correct stored usage, drift check, ledger, families."""

from datetime import timedelta

import pytest
from django.utils import timezone

from scheduling.choices import JobState, PlacementState, PreemptionScope
from scheduling.models import DeviceModel, Job, Placement, Preemption, Queue
from scheduling.services.cluster_submission import submit_to_cluster
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.eviction import release_due_terminations
from scheduling.services.jobs import cancel_job
from scheduling.services.usage import check_usage, sync_ledger
from tenants.models import AggregateCap, LedgerInterval, Quota, QuotaUsage
from tests.builders import A100, gpu_job, make_cluster, make_group, make_tenant

pytestmark = pytest.mark.django_db

WHOLE = {"count": 1, "memory_percent": 100, "cores": 100}


def _usage(tenant, group, dims=("devices",)):
    """Stored usage (every dimension is stored, managed by a quota row or not)."""
    return {
        (u.flavor, u.dimension): u.amount
        for u in QuotaUsage.objects.filter(tenant=tenant, resource_group=group)
        if u.amount and u.dimension in dims
    }


def _state(job):
    job.refresh_from_db()
    return job.state


def _grace_over(seconds=31):
    """The simulated victims' termination grace period (30 s) ended: their pods are gone."""
    return release_due_terminations(timezone.now() + timedelta(seconds=seconds))


def _placement_states(job):
    return set(Placement.objects.filter(job=job).values_list("state", flat=True))


def test_borrowing_then_reclaim_evicts_the_newest_borrowing_job(cohort):
    group, (a, qa), (b, qb) = cohort
    b_jobs = [gpu_job(qb, f"b{i}", **WHOLE) for i in range(4)]
    report = run_admission_cycle(group.pk)
    assert report.admitted == [j.pk for j in b_jobs]
    assert _usage(b, group) == {(A100, "devices"): 4000}
    # admitted at distinct times so "most recently started" is well defined
    base = timezone.now() - timedelta(minutes=10)
    for i, job in enumerate(b_jobs):
        Job.objects.filter(pk=job.pk).update(admitted_at=base + timedelta(seconds=i))
    mine = gpu_job(qa, "a0", **WHOLE)
    report = run_admission_cycle(group.pk)
    # preempt now, admit once the victim's pods are gone (Kueue WaitingForPreemptedWorkloads)
    assert (report.admitted, report.preempted) == ([], [b_jobs[3].pk])
    assert _state(b_jobs[3]) == JobState.QUEUED  # default policy: requeue
    assert _placement_states(b_jobs[3]) == {PlacementState.TERMINATING}
    mine.refresh_from_db()
    assert mine.state == JobState.QUEUED and mine.preempting_since is not None
    assert mine.pending_reason.startswith(
        "waiting for 1 preempted workload(s) to terminate (1 job(s) of other tenants); "
        "admitted once their pods are gone (grace until "
    )
    # the victim's devices and quota stay charged during its grace period
    assert _usage(b, group) == {(A100, "devices"): 4000}
    assert _usage(a, group) == {}
    assert run_admission_cycle(group.pk).admitted == []
    assert _grace_over() == {group.pk}
    assert _placement_states(b_jobs[3]) == {PlacementState.RELEASED}
    report = run_admission_cycle(group.pk)
    assert report.admitted == [mine.pk]
    row = Preemption.objects.get()
    assert (row.victim_id, row.preemptor_id, row.reason, row.outcome) == (
        b_jobs[3].pk,
        mine.pk,
        "InCohortReclamation",
        "requeued",
    )
    assert row.evict_by - row.time == timedelta(seconds=30)
    assert row.message == (
        f"reclaimed by tenant team-a for {mine.pk}: tenant team-b borrows {A100} devices "
        f"(usage 4000 > nominal 2000)"
    )
    assert list(b_jobs[3].events.values_list("kind", flat=True)) == [
        "queued",
        "admitted",
        "preempted",
    ]
    assert _usage(a, group) == {(A100, "devices"): 1000}
    assert _usage(b, group) == {(A100, "devices"): 3000}
    # the requeued victim now waits: team-b is at 3000 of 2000 nominal, the cohort is full
    b_jobs[3].refresh_from_db()
    assert b_jobs[3].preemption_count == 1
    check = check_usage(group.pk)
    assert (check.drift, check.violations) == ([], [])


def test_reclaim_never_takes_a_victim_below_its_guarantee(cohort):
    group, (a, qa), (b, qb) = cohort
    make_cluster("c2", nodes=1, gpus=2)  # 6 devices, 4000 milli of quota in the cohort
    b_jobs = [gpu_job(qb, f"b{i}", **WHOLE) for i in range(2)]
    a_jobs = [gpu_job(qa, f"a{i}", **WHOLE) for i in range(2)]
    assert len(run_admission_cycle(group.pk).admitted) == 4
    extra = gpu_job(qa, "a-extra", **WHOLE)
    report = run_admission_cycle(group.pk)
    assert (report.admitted, report.preempted) == ([], [])
    extra.refresh_from_db()
    assert extra.pending_reason.splitlines()[0] == (
        f"tenant team-a, group g1, flavor {A100}, devices: needs 1000, free 0, borrowable 0 "
        "(bounded by cohort g1)"
    )
    assert all(_state(j) == JobState.ADMITTED for j in b_jobs + a_jobs)


def test_in_tenant_priority_preemption_respects_minimum_runtime(cohort):
    group, (a, qa), _ = cohort
    low = [gpu_job(qa, f"low{i}", **WHOLE, priority=1) for i in range(2)]
    Job.objects.filter(pk=low[0].pk).update(min_runtime_s=3600)
    Quota.objects.filter(tenant=a).update(borrowing_limit=0)
    run_admission_cycle(group.pk)
    high = gpu_job(qa, "high", **WHOLE, priority=10)
    report = run_admission_cycle(group.pk)
    # low[0] is protected for an hour, low[1] is not
    assert (report.admitted, report.preempted) == ([], [low[1].pk])
    high.refresh_from_db()
    assert high.pending_reason.startswith(
        f"waiting for 1 preempted workload(s) to terminate ({low[1].pk}); "
    )
    _grace_over()
    assert run_admission_cycle(group.pk).admitted == [high.pk]
    row = Preemption.objects.get()
    assert row.reason == "InTenant"
    assert row.message == f"preempted by {high.pk} (priority 10 > 1) in tenant team-a"
    # a second high job finds only the protected one
    high2 = gpu_job(qa, "high2", **WHOLE, priority=10)
    report = run_admission_cycle(group.pk)
    assert report.admitted == [] and report.preempted == []
    high2.refresh_from_db()
    lines = high2.pending_reason.splitlines()
    assert f"preemption: {low[0].pk} rejected: minimum runtime: until " in "\n".join(lines)
    assert (
        f"preemption: {high.pk} rejected: withinClusterQueue LowerPriority: "
        "priority 10 >= 10" in lines
    )


def test_fail_policy_fails_the_victim_and_non_preemptible_jobs_are_never_victims(cohort):
    group, (a, qa), _ = cohort
    keep = gpu_job(qa, "keep", **WHOLE, priority=1)
    lose = gpu_job(qa, "lose", **WHOLE, priority=1)
    Job.objects.filter(pk=keep.pk).update(preemptible=False)
    Job.objects.filter(pk=lose.pk).update(on_preemption="fail")
    Quota.objects.filter(tenant=a).update(borrowing_limit=0)
    run_admission_cycle(group.pk)
    high = gpu_job(qa, "high", **WHOLE, priority=5)
    report = run_admission_cycle(group.pk)
    assert (report.admitted, report.preempted) == ([], [lose.pk])
    _grace_over()
    assert run_admission_cycle(group.pk).admitted == [high.pk]
    lose.refresh_from_db()
    assert lose.state == JobState.FAILED and lose.finished_at is not None
    assert Preemption.objects.get().outcome == "failed"
    assert _state(keep) == JobState.ADMITTED


def test_fraction_correct_usage_two_devices_at_20_percent():
    make_cluster("c1", nodes=1, gpus=2)
    group = make_group("g1")
    tenant, queue = make_tenant(
        "team-a", group, devices_milli=10_000, memory_mib=10**6, cores_percent=1000
    )
    job = gpu_job(queue, count=2, memory_mib=10240, cores=20)
    assert run_admission_cycle(group.pk).admitted == [job.pk]
    # 2 x 20 % = 40 cores; 2 x 10 GiB; milli-devices per device = max(200, 125) = 200
    assert _usage(tenant, group, ("devices", "memory_mib", "cores_percent")) == {
        ("*", "devices"): 400,
        ("*", "memory_mib"): 20480,
        ("*", "cores_percent"): 40,
    }
    placement = Placement.objects.get(job=job)
    assert placement.charged
    assert placement.charges == {"*|cores_percent": 40, "*|devices": 400, "*|memory_mib": 20480}


def test_usage_follows_cancellation_and_drift_is_reported_and_repaired(cohort):
    group, (a, qa), _ = cohort
    jobs = [gpu_job(qa, f"j{i}", count=1, memory_mib=8192, cores=30) for i in range(3)]
    run_admission_cycle(group.pk)
    assert _usage(a, group) == {(A100, "devices"): 900}
    cancel_job(jobs[0])
    # cancellation only releases the placement; the next cycle (or check) settles usage
    assert _usage(a, group) == {(A100, "devices"): 900}
    check = check_usage(group.pk)
    assert (check.settled, check.drift) == (1, [])
    assert _usage(a, group) == {(A100, "devices"): 600}
    QuotaUsage.objects.filter(tenant=a, flavor=A100, dimension="devices").update(amount=50)
    check = check_usage(group.pk)
    assert check.drift == [f"tenant team-a, flavor {A100}, devices: stored 50, recomputed 600"]
    assert any(
        v.startswith("tenant team-a, flavor") and "stored usage 50" in v for v in check.violations
    )
    check = check_usage(group.pk, repair=True)
    assert check.repaired == 1
    assert check_usage(group.pk).drift == []


def test_ledger_opens_when_running_and_closes_when_released(cohort):
    group, (a, qa), _ = cohort
    job = gpu_job(qa, count=2, memory_mib=8192, cores=25)
    run_admission_cycle(group.pk)
    assert sync_ledger() == (0, 0)  # reserved, not running yet
    submit_to_cluster(job.pk)
    opened, closed = sync_ledger()
    assert (opened, closed) == (2, 0)
    rows = list(LedgerInterval.objects.order_by("device_uuid"))
    assert [
        (r.tenant_id, r.job_id, r.flavor, r.devices_milli, r.memory_mib, r.cores_percent)
        for r in rows
    ] == [(a.pk, job.pk, A100, 250, 8192, 25)] * 2
    assert all(r.end is None for r in rows)
    assert sync_ledger() == (0, 0)  # idempotent
    cancel_job(job)
    assert sync_ledger()[1] == 2
    ended = Placement.objects.filter(job=job).values_list("ended_at", flat=True)[0]
    assert set(LedgerInterval.objects.values_list("end", flat=True)) == {ended}
    with pytest.raises(Exception, match="immutable"):
        rows[0].save()


def test_family_quota_and_aggregate_cap():
    make_cluster("c1", nodes=1, gpus=2)
    make_cluster("c2", nodes=1, gpus=2, model="NVIDIA-A100-PCIE-40GB", memory_mib=40960)
    DeviceModel.objects.update(family="a100")
    group = make_group("g1", models=(A100, "NVIDIA-A100-PCIE-40GB"))
    tenant, queue = make_tenant("team-a", group, devices_milli=4000, flavor="a100")
    AggregateCap.objects.create(
        tenant=tenant,
        resource_group=group,
        name="a100-cap",
        dimension="devices",
        limit=2500,
        flavors=["a100"],
    )
    jobs = [gpu_job(queue, f"j{i}", **WHOLE) for i in range(3)]
    report = run_admission_cycle(group.pk)
    assert report.admitted == [jobs[0].pk, jobs[1].pk]
    assert _usage(tenant, group) == {("a100", "devices"): 2000}
    jobs[2].refresh_from_db()
    assert jobs[2].pending_reason.splitlines()[0] == (
        "tenant team-a, cap a100-cap, devices: needs 1000, used 2000, cap 2500"
    )


def test_gang_with_minimum_admits_the_pods_that_fit():
    make_cluster("c1", nodes=3, gpus=1)
    group = make_group("g1")
    _, queue = make_tenant("team-a", group, devices_milli=10_000)
    job = gpu_job(queue, "gang", pods=4, **WHOLE)
    Job.objects.filter(pk=job.pk).update(min_pods=2)
    report = run_admission_cycle(group.pk)
    assert report.admitted == [job.pk]
    assert Placement.objects.filter(job=job).count() == 3
    assert "gang 3/4 pods" in job.events.get(kind="admitted").message


def test_gang_with_minimum_reclaims_for_all_its_pods_before_shrinking(cohort):
    # issue 29: Kueue tries the full count with preemption before partial admission
    group, (a, qa), (b, qb) = cohort
    b_jobs = [gpu_job(qb, f"b{i}", **WHOLE) for i in range(3)]  # team-b borrows 1000
    assert run_admission_cycle(group.pk).admitted == [j.pk for j in b_jobs]
    base = timezone.now() - timedelta(minutes=10)
    for i, job in enumerate(b_jobs):
        Job.objects.filter(pk=job.pk).update(admitted_at=base + timedelta(seconds=i))
    gang = gpu_job(qa, "gang", pods=2, **WHOLE)
    Job.objects.filter(pk=gang.pk).update(min_pods=1)
    report = run_admission_cycle(group.pk)
    # one free device would take a 1-pod gang; reclaiming team-b's borrowed one takes both
    assert (report.admitted, report.preempted) == ([], [b_jobs[2].pk])
    assert _grace_over() == {group.pk}
    assert run_admission_cycle(group.pk).admitted == [gang.pk]
    assert Placement.objects.filter(job=gang).count() == 2
    assert "gang" not in gang.events.get(kind="admitted").message


def test_head_that_cannot_reclaim_keeps_its_free_nominal_from_borrowers(cohort):
    # issue 29; Kueue reserveCapacityForUnreclaimablePreempt (reclaimWithinCohort not Any)
    group, (a, qa), (b, qb) = cohort
    Queue.objects.filter(pk=qa.pk).update(reclaim_within_cohort=PreemptionScope.LOWER_PRIORITY)
    b_jobs = [gpu_job(qb, f"b{i}", priority=10, **WHOLE) for i in range(3)]  # borrows 1000
    assert run_admission_cycle(group.pk).admitted == [j.pk for j in b_jobs]
    head = gpu_job(qa, "a-head", pods=2, **WHOLE)  # fits team-a's nominal, 1 device free
    borrower = gpu_job(qb, "b-more", priority=10, **WHOLE)
    report = run_admission_cycle(group.pk)
    assert (report.admitted, report.preempted) == ([], [])
    assert (_state(head), _state(borrower)) == (JobState.QUEUED, JobState.QUEUED)
    assert _usage(a, group) == {}
    assert _usage(b, group) == {(A100, "devices"): 3000}
