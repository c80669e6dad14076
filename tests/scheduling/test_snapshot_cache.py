"""The cluster snapshot kept between cycles (scheduling/selectors/snapshot_cache.py) and the
bulk commit (scheduling/services/admission_commit.py): changes between cycles are seen, a
stale snapshot cannot over-admit, and a cycle's queries do not grow with its admissions."""

from unittest import mock

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from scheduling.choices import BOOKED_PLACEMENT_STATES, JobState
from scheduling.models import Device, Job, JobEvent, Placement, PlacementDevice
from scheduling.selectors import snapshot_cache
from scheduling.selectors.snapshot import build_cluster_snapshot
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.jobs import cancel_job
from scheduling.services.usage import check_usage
from tests.builders import gpu_job, make_cluster, make_group, make_tenant

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_cache():
    snapshot_cache.forget()
    yield
    snapshot_cache.forget()


def _world(nodes=1, gpus=2):
    make_cluster("c1", nodes=nodes, gpus=gpus)
    group = make_group("g1")
    _tenant, queue = make_tenant("team-a", group, devices_milli=1_000_000)
    return group, queue


def _whole(queue, name):
    return gpu_job(queue, name, count=1, memory_percent=100, cores=100)


def _usage(snapshot, uuid):
    dev = next(d for n in snapshot.nodes.values() for d in n.devices if d.uuid == uuid)
    return dev.used_memory_mib, dev.used_cores_percent, dev.used_slots


def _state(job):
    return Job.objects.values_list("state", flat=True).get(pk=job.pk)


def test_cached_snapshot_equals_a_fresh_build_after_admissions_and_releases():
    group, queue = _world(nodes=2, gpus=2)
    first, second = _whole(queue, "a"), gpu_job(queue, "b", count=1, memory_mib=8192, cores=20)
    run_admission_cycle(group.pk)
    assert snapshot_cache.last_outcome[group.pk] == "rebuild"
    cancel_job(Job.objects.get(pk=first.pk))
    _whole(queue, "c")
    run_admission_cycle(group.pk)  # sees b booked (new), a released (gone)
    assert snapshot_cache.last_outcome[group.pk] == "delta"
    cached, _ = snapshot_cache.cluster_snapshot(group)
    fresh, _ = build_cluster_snapshot(group)
    for name, node in fresh.nodes.items():
        other = cached.nodes[name]
        assert (other.used_cpu_milli, other.used_memory_mib) == (
            node.used_cpu_milli,
            node.used_memory_mib,
        )
        for dev in node.devices:
            assert _usage(cached, dev.uuid) == _usage(fresh, dev.uuid)
    assert sum(_usage(fresh, d.uuid)[2] for n in fresh.nodes.values() for d in n.devices) == 2
    assert _state(second) == JobState.ADMITTED


def test_a_release_between_cycles_is_seen_by_the_next_cycle():
    group, queue = _world(nodes=1, gpus=1)
    first = _whole(queue, "first")
    run_admission_cycle(group.pk)
    blocked = _whole(queue, "blocked")
    report = run_admission_cycle(group.pk)
    assert blocked.pk in report.pending and _state(blocked) == JobState.QUEUED
    cancel_job(Job.objects.get(pk=first.pk))
    report = run_admission_cycle(group.pk)
    assert report.admitted == [blocked.pk]
    assert snapshot_cache.last_outcome[group.pk] == "delta"


def test_a_cordon_written_without_touching_updated_is_seen():
    group, queue = _world(nodes=1, gpus=1)
    first = _whole(queue, "first")
    run_admission_cycle(group.pk)
    cancel_job(Job.objects.get(pk=first.pk))  # the device is free again...
    device = Device.objects.get()
    Device.objects.filter(pk=device.pk).update(cordoned=True)  # ...but cordoned, `updated` kept
    assert Device.objects.get().updated == device.updated
    job = _whole(queue, "after-cordon")
    report = run_admission_cycle(group.pk)
    assert snapshot_cache.last_outcome[group.pk] == "rebuild"
    assert report.admitted == [] and _state(job) == JobState.QUEUED
    assert "booked by another cycle" not in report.pending[job.pk]  # the snapshot knew


def test_a_new_node_between_cycles_is_seen():
    group, queue = _world(nodes=1, gpus=1)
    _whole(queue, "first")
    run_admission_cycle(group.pk)
    second = _whole(queue, "second")
    run_admission_cycle(group.pk)
    assert _state(second) == JobState.QUEUED
    make_cluster("c2", nodes=1, gpus=1)
    report = run_admission_cycle(group.pk)
    assert snapshot_cache.last_outcome[group.pk] == "rebuild"
    assert report.admitted == [second.pk]


def test_a_stale_snapshot_cannot_over_admit():
    """The cache misses a booking (its delta step disabled): the cycle places on a device
    that is in fact full, and the commit's re-check under row locks refuses it."""
    group, queue = _world(nodes=1, gpus=1)
    snapshot_cache.cluster_snapshot(group)  # cache built: the device is free
    other = make_group("other")
    _t, other_queue = make_tenant("team-b", other, devices_milli=1_000_000)
    squatter = _whole(other_queue, "squatter")
    run_admission_cycle(other.pk)  # books the only device through another group's cycle
    assert _state(squatter) == JobState.ADMITTED
    job = _whole(queue, "late")
    with mock.patch.object(snapshot_cache, "_sync", return_value=False):
        report = run_admission_cycle(group.pk)
    assert snapshot_cache.last_outcome[group.pk] == "hit"  # stale: it still sees a free GPU
    assert report.admitted == []
    assert "was booked by another cycle; retrying" in report.pending[job.pk]
    assert _state(job) == JobState.QUEUED
    booked = PlacementDevice.objects.filter(placement__state__in=BOOKED_PLACEMENT_STATES)
    assert booked.count() == 1 and booked.get().placement.job_id == squatter.pk
    assert check_usage(group.pk).drift == [] and check_usage(other.pk).drift == []
    report = run_admission_cycle(group.pk)  # with deltas on, the booking is seen
    assert report.admitted == [] and _state(job) == JobState.QUEUED


def _cycle_queries(jobs: int) -> tuple[int, list[int]]:
    snapshot_cache.forget()
    make_cluster(f"q{jobs}", nodes=4, gpus=4)
    group = make_group(f"g{jobs}")
    _tenant, queue = make_tenant(f"team-{jobs}", group, devices_milli=1_000_000)
    for i in range(jobs):
        gpu_job(queue, f"j{i}", count=1, memory_mib=8192, cores=10)
    with CaptureQueriesContext(connection) as ctx:
        report = run_admission_cycle(group.pk)
    assert len(report.admitted) == jobs
    return len(ctx.captured_queries), report.admitted


def test_the_commit_runs_the_same_number_of_queries_for_2_and_12_admissions():
    _cycle_queries(1)  # per-process caches warmed
    few, _ = _cycle_queries(2)
    many, admitted = _cycle_queries(12)
    assert many == few
    # the bulk writes kept every row: one placement, one booking and one event per job
    assert Placement.objects.filter(job_id__in=admitted).count() == 12
    assert PlacementDevice.objects.filter(placement__job_id__in=admitted).count() == 12
    events = JobEvent.objects.filter(job_id__in=admitted, kind="admitted")
    assert events.count() == 12
    nodes = dict(Placement.objects.filter(job_id__in=admitted).values_list("job_id", "node__name"))
    assert {e.job_id: e.message for e in events} == {
        pk: f"placed on {nodes[pk]}" for pk in admitted
    }
    assert Job.objects.filter(pk__in=admitted, state=JobState.ADMITTED).count() == 12
