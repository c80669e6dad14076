"""The running workloads kept per process between cycles (scheduling/selectors/running.py):
after any change of a placement, its job, tenant, priority class or the inventory, the kept
answer equals a fresh read; unchanged rows cost one query."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from scheduling.choices import PlacementState
from scheduling.models import Device, Job, Placement, PriorityClass
from scheduling.selectors import snapshot_cache
from scheduling.selectors.admission import build_admission_snapshot
from scheduling.selectors.running import _booked_rows, forget_running
from scheduling.services.cycle import run_admission_cycle
from tests.builders import gpu_job, make_cluster, make_group, make_tenant

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_cache():
    snapshot_cache.forget()
    yield
    snapshot_cache.forget()


def _running(group, settings, cache: bool):
    settings.ADMISSION_RUNNING_CACHE = cache
    ctx = build_admission_snapshot(group, timezone.now())
    return sorted(ctx.snapshot.running, key=lambda w: int(w.id)), {
        k: (v.pods, v.migs) for k, v in ctx.held.items()
    }


def _same(group, settings):
    kept = _running(group, settings, cache=True)
    fresh = _running(group, settings, cache=False)
    assert kept == fresh
    settings.ADMISSION_RUNNING_CACHE = True
    return kept


def test_kept_rows_follow_every_change(settings):
    make_cluster("c1", nodes=2, gpus=2)
    group = make_group("g1")
    tenant, queue = make_tenant("team-a", group, devices_milli=100_000)
    jobs = [gpu_job(queue, f"j{i}", count=1, memory_percent=30, cores=30) for i in range(3)]
    run_admission_cycle(group.pk)
    running, _ = _same(group, settings)
    assert [w.id for w in running] == [str(j.pk) for j in jobs]
    assert running[0].charges[("*", "devices")] == 300

    first = Placement.objects.get(job=jobs[0])
    # a placement evicted (terminating with a deadline), in the same transaction as the read
    evict_by = timezone.now() + timedelta(seconds=30)
    Placement.objects.filter(pk=first.pk).update(
        state=PlacementState.TERMINATING, evict_by=evict_by
    )
    running, _ = _same(group, settings)
    assert running[0].terminating and running[0].evict_by == evict_by

    # the job's own columns, its tenant's name and its priority class
    cls = PriorityClass.objects.create(name="gold", value=50, preemptible=False)
    Job.objects.filter(pk=jobs[1].pk).update(priority=7, priority_class=cls, min_runtime_s=120)
    tenant.name = "team-renamed"
    tenant.save()
    running, _ = _same(group, settings)
    assert (running[1].priority, running[1].priority_class, running[1].min_runtime_s) == (
        7,
        "gold",
        120,
    )
    assert {w.tenant for w in running} == {"team-renamed"}
    cls.name = "platinum"
    cls.save()
    assert _same(group, settings)[0][1].priority_class == "platinum"

    # a placement that ends leaves; a new job's placement arrives
    Placement.objects.filter(job=jobs[2]).update(state=PlacementState.SUCCEEDED)
    gpu_job(queue, "late", count=1, memory_percent=50, cores=50)
    run_admission_cycle(group.pk)
    running, _ = _same(group, settings)
    assert [w.id for w in running][:2] == [str(jobs[0].pk), str(jobs[1].pk)]
    assert len(running) == 3 and running[2].charges[("*", "devices")] == 500

    # a device's capacity changes: the inventory version moves and the kept rows are dropped
    Device.objects.filter(node__name="c1-n0").update(memory_mib=40960)
    running, _ = _same(group, settings)


def test_unchanged_rows_cost_one_query(settings):
    make_cluster("c1", nodes=1, gpus=2)
    group = make_group("g1")
    _tenant, queue = make_tenant("team-a", group, devices_milli=100_000)
    for i in range(4):
        gpu_job(queue, f"j{i}", count=1, memory_percent=20, cores=20)
    run_admission_cycle(group.pk)
    forget_running()
    with CaptureQueriesContext(connection) as cold:
        first = _booked_rows(group)
    with CaptureQueriesContext(connection) as warm:
        again = _booked_rows(group)
    assert first == again and len(first) == 4
    assert (len(cold), len(warm)) == (4, 1)
