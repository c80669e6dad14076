"""The Kueue-style inadmissible set: a head that did not fit is not examined again until
capacity is freed, the group's quota changes or a preemption happened; StrictFIFO heads are
never set aside; arrivals coalesce into few cycle requests."""

import pytest

from core.dispatch import registered_task
from scheduling import dispatch
from scheduling.models import Job
from scheduling.selectors.inadmissible import inadmissible_ids
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.jobs import cancel_job
from tenants.models import Quota
from tests.builders import gpu_job, make_cluster, make_group, make_tenant

pytestmark = pytest.mark.django_db


def _world(strategy="BestEffortFIFO"):
    make_cluster("c1", nodes=1, gpus=2)
    group = make_group("g1")
    _, queue = make_tenant("team-a", group, devices_milli=100_000, strategy=strategy)
    return group, queue


def test_a_head_that_does_not_fit_is_set_aside_until_capacity_is_freed():
    group, queue = _world()
    running = gpu_job(queue, "run", count=2, memory_percent=100, cores=100)
    assert run_admission_cycle(group.pk).admitted == [running.pk]
    big = gpu_job(queue, "big", count=1, memory_percent=100, cores=100)
    first = run_admission_cycle(group.pk)
    assert (first.considered, first.admitted) == (1, [])
    assert inadmissible_ids(group.pk) == {big.pk}
    # not examined again: the next cycle sees only the new arrival
    small = gpu_job(queue, "small", count=1, memory_percent=100, cores=100)
    second = run_admission_cycle(group.pk)
    assert second.considered == 1 and small.pk in second.pending
    assert inadmissible_ids(group.pk) == {big.pk, small.pk}
    assert run_admission_cycle(group.pk).considered == 0
    # capacity freed: both are examined again; the older one is admitted first
    cancel_job(Job.objects.get(pk=running.pk))
    third = run_admission_cycle(group.pk)
    assert third.considered == 2
    assert third.admitted == [big.pk, small.pk]
    assert inadmissible_ids(group.pk) == set()


def test_a_quota_change_releases_the_set():
    group, queue = _world()
    Quota.objects.filter(resource_group=group).update(nominal=1000)  # one device
    gpu_job(queue, "a", count=1, memory_percent=100, cores=100)
    over = gpu_job(queue, "b", count=1, memory_percent=100, cores=100)
    report = run_admission_cycle(group.pk)
    assert len(report.admitted) == 1 and "devices" in report.pending[over.pk]
    assert inadmissible_ids(group.pk) == {over.pk}
    assert run_admission_cycle(group.pk).considered == 0
    quota = Quota.objects.get(resource_group=group)
    quota.nominal = 2000
    quota.save()
    assert run_admission_cycle(group.pk).admitted == [over.pk]


def test_strict_fifo_heads_are_never_set_aside():
    group, queue = _world(strategy="StrictFIFO")
    gpu_job(queue, "big", count=3, memory_percent=100, cores=100)
    behind = gpu_job(queue, "small", count=1, memory_percent=100, cores=100)
    first = run_admission_cycle(group.pk)
    assert first.admitted == [] and inadmissible_ids(group.pk) == set()
    second = run_admission_cycle(group.pk)
    assert second.considered == 2 and behind.pk not in second.admitted


def test_arrivals_coalesce_into_one_cycle_request(django_capture_on_commit_callbacks, monkeypatch):
    sent = []
    monkeypatch.setattr(
        registered_task(dispatch.ADMISSION_CYCLE_TASK), "delay", lambda *args: sent.append(args)
    )
    dispatch.admission_cycle_started(4242)
    with django_capture_on_commit_callbacks(execute=True):
        for _ in range(5):
            dispatch.enqueue_admission_cycle(4242)
    assert sent == [(4242,)]
    dispatch.admission_cycle_started(4242)  # the cycle began: a new arrival asks again
    with django_capture_on_commit_callbacks(execute=True):
        dispatch.enqueue_admission_cycle(4242)
        dispatch.enqueue_admission_cycle(4242)
    assert sent == [(4242,), (4242,)]
    dispatch.admission_cycle_started(4242)
