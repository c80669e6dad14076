"""The admission cycle on PostgreSQL: placement, quota, queue strategies, gang, lifecycle."""

from datetime import timedelta

import pytest
from django.utils import timezone

from scheduling.choices import JobState, PlacementState
from scheduling.models import Job, Placement, PlacementDevice
from scheduling.services.cluster_submission import reconcile_simulated, submit_to_cluster
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.jobs import ContainerSpec, JobSpec, cancel_job, enqueue_job
from scheduling.services.usage import recomputed_usage
from tests.builders import A100, gpu_job, make_cluster, make_group, make_tenant

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup():
    make_cluster("c1", nodes=2, gpus=2)
    group = make_group("g1")
    tenant, queue = make_tenant("team-a", group, devices_milli=100_000)
    return group, tenant, queue


def _nodes(job):
    return sorted(Placement.objects.filter(job=job).values_list("node__name", flat=True))


def _devices(job):
    return sorted(
        PlacementDevice.objects.filter(placement__job=job).values_list("device__uuid", flat=True)
    )


def test_binpack_fills_the_first_node_before_the_second(setup):
    group, _, queue = setup
    jobs = [gpu_job(queue, f"j{i}", count=1, memory_percent=100, cores=100) for i in range(3)]
    report = run_admission_cycle(group.pk)
    assert report.admitted == [j.pk for j in jobs]
    # empty nodes tie → smallest name; binpack then prefers the used node
    assert [_nodes(j) for j in jobs] == [["c1-n0"], ["c1-n0"], ["c1-n1"]]
    assert sorted(_devices(jobs[0]) + _devices(jobs[1])) == ["GPU-c1-0-0", "GPU-c1-0-1"]
    for job in jobs:
        job.refresh_from_db()
        assert job.state == JobState.ADMITTED
        assert job.pending_reason == ""


def test_whole_device_booking_takes_full_memory_cores_and_a_slot(setup):
    group, _, queue = setup
    job = gpu_job(queue, count=1, memory_percent=100, cores=100)
    run_admission_cycle(group.pk)
    booking = PlacementDevice.objects.get(placement__job=job)
    assert (booking.memory_mib, booking.cores_percent, booking.slots) == (81920, 100, 1)


def test_quota_blocks_with_a_reason_naming_dimension_and_amounts():
    make_cluster("c1", nodes=2, gpus=2)
    group = make_group("g1")
    tenant, queue = make_tenant("team-a", group, devices_milli=1500)
    first = gpu_job(queue, "first", count=1, memory_percent=100, cores=100)
    second = gpu_job(queue, "second", count=1, memory_percent=100, cores=100)
    small = gpu_job(queue, "small", count=1, memory_mib=8192, cores=20)
    report = run_admission_cycle(group.pk)
    assert report.admitted == [first.pk, small.pk]
    second.refresh_from_db()
    assert second.state == JobState.QUEUED
    # first line: the blocking dimension, quota and level; then why preemption cannot help
    assert second.pending_reason.splitlines() == [
        "tenant team-a, group g1, flavor *, devices: needs 1000, free 500, borrowable 0 "
        "(bounded by cohort g1)",
        # the jobs holding the quota were admitted in this very cycle: not candidates
        "preemption: no valid candidates",
    ]
    # fraction-correct usage: 1000 (whole) + 200 (20 % cores, 8 GiB of 80 GiB)
    usage = recomputed_usage(group)
    flavor = next(f for (t, f, _d) in usage if t == tenant.pk)
    assert usage[(tenant.pk, flavor, "devices")] == 1200
    assert usage[(tenant.pk, flavor, "cores_percent")] == 120
    assert usage[(tenant.pk, flavor, "memory_mib")] == 81920 + 8192


def test_tenant_without_quota_is_not_admitted():
    make_cluster("c1", nodes=1, gpus=1)
    group = make_group("g1")
    _, queue = make_tenant("nobody", group)
    job = gpu_job(queue, count=1, cores=10, memory_mib=1024)
    report = run_admission_cycle(group.pk)
    assert report.admitted == []
    job.refresh_from_db()
    assert job.pending_reason == (
        f"tenant nobody, group g1, flavor {A100}: no quota for this flavor"
    )


def test_strict_fifo_blocks_behind_an_unschedulable_head():
    make_cluster("c1", nodes=2, gpus=2)
    group = make_group("g1")
    _, strict = make_tenant("strict", group, devices_milli=100_000, strategy="StrictFIFO")
    _, best = make_tenant("best", group, devices_milli=100_000)
    huge = gpu_job(strict, "huge", count=4, memory_percent=100, cores=100, priority=10)
    behind = gpu_job(strict, "behind", count=1, cores=10, memory_mib=1024)
    huge_b = gpu_job(best, "huge-b", count=4, memory_percent=100, cores=100, priority=10)
    ok_b = gpu_job(best, "ok-b", count=1, cores=10, memory_mib=1024)
    report = run_admission_cycle(group.pk)
    assert report.admitted == [ok_b.pk]
    behind.refresh_from_db()
    assert behind.pending_reason == (
        f"queue strict/default is StrictFIFO and its head {huge.pk} is not admitted"
    )
    for job in (huge, huge_b):
        job.refresh_from_db()
        assert job.state == JobState.QUEUED
        assert job.pending_reason.startswith("unschedulable: 0/2 nodes fit; 2 node(s): ")


def test_gang_job_places_every_pod_or_none(setup):
    group, _, queue = setup
    gang = gpu_job(queue, "gang", count=2, memory_percent=100, cores=100, pods=2)
    too_big = gpu_job(queue, "too-big", count=2, memory_percent=100, cores=100, pods=2)
    report = run_admission_cycle(group.pk)
    assert report.admitted == [gang.pk]
    assert _nodes(gang) == ["c1-n0", "c1-n1"]
    assert not Placement.objects.filter(job=too_big).exists()


def test_lifecycle_submit_run_succeed_then_capacity_returns(setup):
    group, _, queue = setup
    jobs = [
        gpu_job(queue, f"w{i}", count=2, memory_percent=100, cores=100, duration_s=30)
        for i in range(3)
    ]
    run_admission_cycle(group.pk)
    waiting = jobs[2]
    waiting.refresh_from_db()
    assert waiting.state == JobState.QUEUED
    for job in jobs[:2]:
        assert submit_to_cluster(job.pk) == JobState.RUNNING
    assert set(Placement.objects.filter(job__in=jobs[:2]).values_list("state", flat=True)) == {
        PlacementState.RUNNING
    }
    # not yet finished at +10 s, finished at +31 s
    assert reconcile_simulated(timezone.now() + timedelta(seconds=10)) == set()
    assert reconcile_simulated(timezone.now() + timedelta(seconds=31)) == {group.pk}
    for job in jobs[:2]:
        job.refresh_from_db()
        assert job.state == JobState.SUCCEEDED
        assert list(job.events.values_list("kind", flat=True)) == [
            "queued",
            "admitted",
            "running",
            "succeeded",
        ]
    report = run_admission_cycle(group.pk)
    assert report.admitted == [waiting.pk]


def test_cancel_releases_the_devices(setup):
    group, _, queue = setup
    job = gpu_job(queue, count=2, memory_percent=100, cores=100, pods=2)
    run_admission_cycle(group.pk)
    submit_to_cluster(job.pk)
    cancel_job(job)
    job.refresh_from_db()
    assert job.state == JobState.CANCELLED
    assert set(Placement.objects.filter(job=job).values_list("state", flat=True)) == {
        PlacementState.RELEASED
    }
    nxt = gpu_job(queue, "next", count=2, memory_percent=100, cores=100, pods=2)
    assert run_admission_cycle(group.pk).admitted == [nxt.pk]


def test_cancelled_while_queued_is_never_admitted(setup):
    group, _, queue = setup
    job = gpu_job(queue, count=1, cores=10, memory_mib=1024)
    cancel_job(job)
    assert run_admission_cycle(group.pk).considered == 0
    assert Job.objects.get(pk=job.pk).state == JobState.CANCELLED


def test_ascend_request_is_rounded_up_to_a_vnpu_template():
    make_cluster(
        "npu",
        nodes=1,
        gpus=2,
        memory_mib=65536,
        model="Ascend910B3",
        vendor="Ascend",
        split_count=4,
    )
    group = make_group("npu", models=("Ascend910B3",), kind="exclusive")
    _, queue = make_tenant("team-npu", group, devices_milli=10_000)
    spec = JobSpec(
        name="infer",
        containers=[
            ContainerSpec(
                vendor="Ascend", device_count=1, device_memory_mib=20000, cores_percent=30
            )
        ],
    )
    job = enqueue_job(queue, spec, enqueue=False)
    whole = enqueue_job(
        queue,
        JobSpec(
            name="train",
            containers=[
                ContainerSpec(
                    vendor="Ascend", device_count=1, memory_percent=100, cores_percent=100
                )
            ],
        ),
        enqueue=False,
    )
    report = run_admission_cycle(group.pk)
    assert report.admitted == [job.pk, whole.pk]
    # 20000 MiB rounds up to vir10_3c_32g (32768 MiB); the whole card books all 65536 MiB
    booked = PlacementDevice.objects.get(placement__job=job)
    assert booked.memory_mib == 32768
    assert PlacementDevice.objects.get(placement__job=whole).memory_mib == 65536
    assert (
        Placement.objects.get(job=job).assignment["containers"][0]["devices"][0]["template"]
        == "vir10_3c_32g"
    )


def test_tick_skips_a_blocked_group_until_something_changes(setup):
    from datetime import timedelta

    from scheduling.selectors.cycle_gate import clear_blocked, needs_cycle
    from scheduling.tasks import admission_tick_task

    group, _, queue = setup
    clear_blocked(group.pk)
    gpu_job(queue, "too-big", count=4, memory_percent=100, cores=100)
    assert needs_cycle(group.pk) is True
    report = run_admission_cycle(group.pk)
    assert report.admitted == [] and report.pending
    assert needs_cycle(group.pk) is False  # nothing changed since the blocked cycle
    # a new job in the group wakes it
    gpu_job(queue, "small", count=1, cores=10, memory_mib=1024)
    assert needs_cycle(group.pk) is True
    assert run_admission_cycle(group.pk).admitted != []
    assert needs_cycle(group.pk) is True  # an admitting cycle clears the mark
    run_admission_cycle(group.pk)  # blocked again (only too-big left)
    assert needs_cycle(group.pk) is False
    # capacity freed anywhere wakes it
    Placement.objects.update(ended_at=timezone.now() + timedelta(seconds=1))
    assert needs_cycle(group.pk) is True
    from unittest import mock

    with mock.patch("scheduling.tasks.enqueue_admission_cycle") as delay:
        assert admission_tick_task() == 1
        delay.assert_called_once_with(group.pk)
