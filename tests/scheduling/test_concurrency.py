"""Concurrency on real PostgreSQL: 4 worker processes run admission cycles, submissions,
completions and random cancellations over 2,000 jobs of 5 tenants in 2 resource groups that
share the A100 devices; afterwards every invariant of issue #5 must hold.

The workers are forked processes connected to this test's database (the settings they
inherit already name it); Celery enqueues (``scheduling.dispatch``) are no-ops in the workers, which
do the submission and completion work themselves.
"""

from __future__ import annotations

import multiprocessing
import random
import time
from collections import Counter, defaultdict

import pytest
from django.db import OperationalError, connection, connections
from django.db.models import Sum
from django.utils import timezone

from core.exceptions import Conflict
from scheduling.choices import BOOKED_PLACEMENT_STATES, JobState
from scheduling.models import (
    Device,
    Job,
    JobContainer,
    JobEvent,
    Node,
    Placement,
    PlacementDevice,
    Preemption,
    Queue,
)
from scheduling.services.usage import check_usage
from tenants.models import Quota, QuotaUsage, Tenant
from tests.builders import A100, make_cluster, make_group

JOBS = 2000
WORKERS = 4
WORKER_BUDGET_S = 45.0
T4 = "T4"


def _world(rng: random.Random):
    make_cluster("c1", nodes=8, gpus=4)  # 32 A100 80 GB
    make_cluster("c2", nodes=4, gpus=4, model=T4, memory_mib=15360)  # 16 T4
    g_a100 = make_group("a100-shared", models=(A100,))
    g_mixed = make_group("mixed-elastic", models=(), kind="elastic")
    tenants = [Tenant.objects.create(name=f"team-{i}", fair_share_weight=1.0 + i % 2)
               for i in range(5)]
    # a100-shared: 32,000 milli-devices of nominal quota in all, with limits
    limits = [(8000, None, None), (8000, None, 4000), (8000, None, None), (4000, 2000, None),
              (4000, 0, None)]
    queues = []
    for tenant, (nominal, borrow, lend) in zip(tenants, limits, strict=True):
        Quota.objects.create(tenant=tenant, resource_group=g_a100, flavor=A100,
                             dimension="devices", nominal=nominal, borrowing_limit=borrow,
                             lending_limit=lend)
        Quota.objects.create(tenant=tenant, resource_group=g_a100, flavor=A100,
                             dimension="memory_mib", nominal=nominal * 80, borrowing_limit=None)
        Quota.objects.create(tenant=tenant, resource_group=g_mixed, flavor="*",
                             dimension="devices", nominal=2000, borrowing_limit=6000)
        Quota.objects.create(tenant=tenant, resource_group=g_mixed, flavor="*",
                             dimension="cores_percent", nominal=300, borrowing_limit=600)
        queues.append(Queue.objects.create(tenant=tenant, resource_group=g_a100, name="a100"))
        queues.append(Queue.objects.create(
            tenant=tenant, resource_group=g_mixed, name="mixed",
            strategy="StrictFIFO" if tenant.name == "team-4" else "BestEffortFIFO"))
    jobs, shapes = [], []
    for i in range(JOBS):
        queue = queues[rng.randrange(len(queues))]
        pods = rng.choice([1, 1, 1, 1, 2, 3])
        jobs.append(Job(
            tenant_id=queue.tenant_id, queue=queue, name=f"j{i}", priority=rng.randint(0, 3),
            pod_count=pods, min_pods=rng.choice([None, None, 1]) if pods > 1 else None,
            cpu_milli=rng.choice([500, 1000, 4000]), memory_mib=1024,
            duration_s=rng.uniform(0.0, 1.5), min_runtime_s=rng.choice([0.0, 0.0, 0.5]),
            preemptible=rng.random() > 0.1,
            on_preemption=rng.choice(["requeue", "requeue", "fail"]),
        ))
        kind = rng.random()
        if kind < 0.3:  # whole devices
            shapes.append((rng.choice([1, 1, 2]), 0, 100, 100))
        elif kind < 0.6:  # memory percentage, resolved on the device it lands on
            shapes.append((rng.choice([1, 2]), 0, rng.choice([25, 50]), rng.choice([20, 30])))
        else:  # MiB fractions
            shapes.append((1, rng.choice([4096, 8192, 12288]), None, rng.choice([10, 25, 40])))
    Job.objects.bulk_create(jobs)
    JobContainer.objects.bulk_create(
        JobContainer(job=job, name="main", vendor="NVIDIA", device_count=count,
                     memory_mib=mem, memory_percent=pct, cores_percent=cores)
        for job, (count, mem, pct, cores) in zip(jobs, shapes, strict=True)
    )
    JobEvent.objects.bulk_create(JobEvent(job=job, kind="queued") for job in jobs)
    return [g_a100.pk, g_mixed.pk], [j.pk for j in jobs]


def _worker(index: int, group_ids: list[int], job_ids: list[int], deadline: float,
            out) -> None:
    """One worker process: cycles of random groups, submissions, completions, cancels."""
    from unittest import mock

    from scheduling.services.cycle import run_admission_cycle
    from scheduling.services.jobs import cancel_job
    from scheduling.services.submissions import reconcile_simulated, submit_job

    # Never reuse a socket inherited from the parent: drop (do not close, closing would end
    # the parent's session) every connection object the fork copied.
    for conn in connections.all():
        conn.connection = None
    stats = Counter()
    rng = random.Random(1000 + index)
    noop = mock.MagicMock()
    try:
        with mock.patch("scheduling.dispatch.enqueue_on_commit", noop):
            while time.monotonic() < deadline:
                try:
                    group_id = group_ids[rng.randrange(len(group_ids))]
                    report = run_admission_cycle(group_id, batch=60)
                    stats["locked_out" if report.locked_out else "cycles"] += 1
                    stats["admitted"] += len(report.admitted)
                    stats["preempted"] += len(report.preempted)
                    for job_id in Job.objects.filter(state=JobState.ADMITTED).order_by("?")\
                            .values_list("pk", flat=True)[:20]:
                        submit_job(job_id)
                    reconcile_simulated(timezone.now())
                    if rng.random() < 0.5:
                        job = Job.objects.select_related("queue").get(
                            pk=job_ids[rng.randrange(len(job_ids))])
                        try:
                            cancel_job(job)
                            stats["cancelled"] += 1
                        except Conflict:
                            stats["cancel_conflict"] += 1
                    if not Job.objects.filter(state__in=[JobState.QUEUED, JobState.ADMITTED,
                                                         JobState.RUNNING]).exists():
                        break
                except OperationalError as exc:  # deadlock victim: PostgreSQL rolled it back
                    stats["deadlock_retries" if "deadlock" in str(exc) else "db_errors"] += 1
        out.put((index, dict(stats), None))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        import traceback

        out.put((index, dict(stats), traceback.format_exc() or repr(exc)))
    finally:
        connections.close_all()


def _deadlocks() -> int:
    """Deadlocks PostgreSQL detected in this database so far (``pg_stat_database``)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute("SELECT deadlocks FROM pg_stat_database WHERE datname = "
                       "current_database()")
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_four_workers_2000_jobs_keep_every_invariant():
    rng = random.Random(5)
    group_ids, job_ids = _world(rng)
    db_name = connection.settings_dict["NAME"]
    assert db_name.startswith("test_")
    # the world must be committed before the workers fork (a test that leaked an open
    # transaction on this connection would hide it from them)
    assert not connection.in_atomic_block
    deadlocks_before = _deadlocks()
    connections.close_all()  # never share a socket with the forked workers
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    started = time.monotonic()
    deadline = started + WORKER_BUDGET_S
    procs = [ctx.Process(target=_worker, args=(i, group_ids, job_ids, deadline, out))
             for i in range(WORKERS)]
    for proc in procs:
        proc.start()
    results = [out.get(timeout=WORKER_BUDGET_S + 120) for _ in procs]
    for proc in procs:
        proc.join(timeout=30)
    elapsed = time.monotonic() - started
    errors = [err for _, _, err in results if err]
    assert not errors, errors[0]
    assert connection.settings_dict["NAME"] == db_name
    totals = Counter()
    for _, stats, _ in results:
        totals.update(stats)
    states = Counter(Job.objects.values_list("state", flat=True))
    print(f"\n{WORKERS} workers, {JOBS} jobs, {elapsed:.1f}s: {dict(totals)}; "
          f"final states {dict(states)}; preemption rows {Preemption.objects.count()}")
    assert totals["cycles"] > 0 and totals["admitted"] > 0 and totals["cancelled"] > 0
    # 0. one lock order everywhere (scheduling.services.locking): PostgreSQL saw no deadlock
    assert totals["deadlock_retries"] == 0
    assert _deadlocks() == deadlocks_before

    # 1. no device or node overbooked (sum of live bookings <= capacity)
    booked = PlacementDevice.objects.filter(placement__state__in=BOOKED_PLACEMENT_STATES)
    for row in booked.values("device_id").annotate(
            mem=Sum("memory_mib"), cores=Sum("cores_percent"), slots=Sum("slots")):
        device = Device.objects.get(pk=row["device_id"])
        assert row["mem"] <= device.memory_mib, device.uuid
        assert row["cores"] <= device.cores_percent, device.uuid
        assert row["slots"] <= device.split_count, device.uuid
    for row in Placement.objects.filter(state__in=BOOKED_PLACEMENT_STATES).values(
            "node_id").annotate(cpu=Sum("cpu_milli"), mem=Sum("memory_mib")):
        node = Node.objects.get(pk=row["node_id"])
        assert row["cpu"] <= node.cpu_milli and row["mem"] <= node.memory_mib, node.name

    # 2. every job in exactly one consistent state
    live = defaultdict(int)
    for job_id in Placement.objects.filter(state__in=BOOKED_PLACEMENT_STATES).values_list(
            "job_id", flat=True):
        live[job_id] += 1
    assert sum(states.values()) == JOBS
    assert set(states) <= set(JobState.values)
    for job in Job.objects.only("pk", "state", "pod_count", "min_pods"):
        if job.state in (JobState.ADMITTED, JobState.RUNNING):
            assert (job.min_pods or job.pod_count) <= live[job.pk] <= job.pod_count, job.pk
        else:
            assert live[job.pk] == 0, (job.pk, job.state)

    # 3 and 4. quotas within nominal + borrowing limit, usage recomputed == stored usage
    for group_id in group_ids:
        check = check_usage(group_id)
        assert not check.locked_out
        assert check.drift == [], check.drift
        assert check.violations == [], check.violations
    # the same, independently of the core: per tenant x flavor resource of a100-shared
    stored = {(u.tenant_id, u.flavor, u.dimension): u.amount
              for u in QuotaUsage.objects.filter(resource_group_id=group_ids[0])}
    for quota in Quota.objects.filter(resource_group_id=group_ids[0]):
        if quota.borrowing_limit is not None:
            used = stored.get((quota.tenant_id, quota.flavor, quota.dimension), 0)
            assert used <= quota.nominal + quota.borrowing_limit, quota
