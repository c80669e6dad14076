"""Concurrency on real PostgreSQL: 4 worker processes run admission cycles, submissions,
completions, random cancellations and random quota edits (nominal moved between tenants, rows
deleted and recreated) over 2,000 jobs of 5 tenants in 2 resource groups that share the A100
devices, while preempted victims sit in a 2 s termination grace period; a monitor process
samples the bookings all along. Every invariant of issues #5 and #16 must hold: at every
sampled instant no device or node is booked beyond its capacity counting the victims still
terminating, nor a capped tenant beyond its nominal plus borrowing limit; afterwards the
usage is exact, jobs and placements are consistent and the quota total is unchanged.

Beside the cycles, each worker turn runs the console's other writers with a probability
each (``concurrency_writers``: tenant edits through the API, membership changes, telemetry
samples/rollups/gauges, the usage check and ledger, device cordons, notification
deliveries, time limits). ``LOCK_ORDER_CHECK`` is on: a row lock out of
``core.locks.LOCK_ORDER`` fails the worker.

The workers are forked processes connected to this test's database (the settings they
inherit already name it); Celery enqueues (``scheduling.dispatch``) are no-ops in the workers, which
do the submission and completion work themselves.
"""

from __future__ import annotations

import multiprocessing
import random
import time
from collections import Counter, defaultdict
from datetime import timedelta

import pytest
from django.db import OperationalError, connection, connections, transaction
from django.db.models import Count, Q, Sum
from django.utils import timezone

from core.exceptions import Conflict
from core.locks import lock_rows
from scheduling.choices import (
    ACTIVE_PLACEMENT_STATES,
    BOOKED_PLACEMENT_STATES,
    JobState,
    PlacementState,
)
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
from scheduling.services.eviction import release_due_terminations
from scheduling.services.usage import check_usage
from tenants.models import Quota, QuotaUsage, Tenant
from tests.builders import A100, make_cluster, make_group
from tests.scheduling.concurrency_writers import WriterContext, make_writer_world, run_some

JOBS = 2000
WORKERS = 4
WORKER_BUDGET_S = 45.0
GRACE_S = 2.0
T4 = "T4"
EDITABLE = ("team-0", "team-1", "team-2")
"""a100-shared tenants whose devices nominal the workers move around (no borrowing limit, so
a shrink can never break a hard limit); team-1 keeps at least its 4000 lending limit, is
never deleted and only ever gives nominal away: nominal moved *into* a tenant with a lending
limit would shrink what the cohort can lend (Kueue's local quota), so the borrowers already
running could exceed the cohort, a state an operator's edit may create but no cycle may; the
final check asserts the cohort is never overcommitted."""
MIN_NOMINAL = {"team-0": 1000, "team-1": 4000, "team-2": 1000}


def _restore_deleted_rows(group_id: int) -> None:
    """Recreate the devices row of an EDITABLE tenant a worker deleted last (1000 taken from
    the tenant with the most spare nominal), so the final checks see every row."""
    from tenants import services as tenant_services

    for name in EDITABLE:
        rows = {
            q.tenant.name: q
            for q in Quota.objects.filter(
                resource_group_id=group_id, dimension="devices", tenant__name__in=EDITABLE
            ).select_related("tenant", "resource_group")
        }
        if name in rows:
            continue
        donor = max(rows, key=lambda n: rows[n].nominal - MIN_NOMINAL[n])
        _set_nominal(rows[donor], rows[donor].nominal - 1000)
        tenant_services.create_quota(
            tenant=Tenant.objects.get(name=name),
            resource_group=rows[donor].resource_group,
            flavor=A100,
            dimension="devices",
            nominal=1000,
        )


def _world(rng: random.Random):
    make_cluster("c1", nodes=8, gpus=4)  # 32 A100 80 GB
    make_cluster("c2", nodes=4, gpus=4, model=T4, memory_mib=15360)  # 16 T4
    g_a100 = make_group("a100-shared", models=(A100,))
    g_mixed = make_group("mixed-elastic", models=(), kind="elastic")
    tenants = [
        Tenant.objects.create(name=f"team-{i}", fair_share_weight=1.0 + i % 2) for i in range(5)
    ]
    # a100-shared: 32,000 milli-devices of nominal quota in all, with limits
    limits = [
        (8000, None, None),
        (8000, None, 4000),
        (8000, None, None),
        (4000, 2000, None),
        (4000, 0, None),
    ]
    queues = []
    for tenant, (nominal, borrow, lend) in zip(tenants, limits, strict=True):
        Quota.objects.create(
            tenant=tenant,
            resource_group=g_a100,
            flavor=A100,
            dimension="devices",
            nominal=nominal,
            borrowing_limit=borrow,
            lending_limit=lend,
        )
        Quota.objects.create(
            tenant=tenant,
            resource_group=g_a100,
            flavor=A100,
            dimension="memory_mib",
            nominal=nominal * 80,
            borrowing_limit=None,
        )
        Quota.objects.create(
            tenant=tenant,
            resource_group=g_mixed,
            flavor="*",
            dimension="devices",
            nominal=2000,
            borrowing_limit=6000,
        )
        Quota.objects.create(
            tenant=tenant,
            resource_group=g_mixed,
            flavor="*",
            dimension="cores_percent",
            nominal=300,
            borrowing_limit=600,
        )
        queues.append(Queue.objects.create(tenant=tenant, resource_group=g_a100, name="a100"))
        queues.append(
            Queue.objects.create(
                tenant=tenant,
                resource_group=g_mixed,
                name="mixed",
                strategy="StrictFIFO" if tenant.name == "team-4" else "BestEffortFIFO",
            )
        )
    jobs, shapes = [], []
    for i in range(JOBS):
        queue = queues[rng.randrange(len(queues))]
        pods = rng.choice([1, 1, 1, 1, 2, 3])
        jobs.append(
            Job(
                tenant_id=queue.tenant_id,
                queue=queue,
                name=f"j{i}",
                priority=rng.randint(0, 3),
                pod_count=pods,
                min_pods=rng.choice([None, None, 1]) if pods > 1 else None,
                cpu_milli=rng.choice([500, 1000, 4000]),
                host_memory_mib=1024,
                duration_s=rng.uniform(0.0, 1.5),
                min_runtime_s=rng.choice([0.0, 0.0, 0.5]),
                preemptible=rng.random() > 0.1,
                on_preemption=rng.choice(["requeue", "requeue", "fail"]),
            )
        )
        kind = rng.random()
        if kind < 0.3:  # whole devices
            shapes.append((rng.choice([1, 1, 2]), 0, 100, 100))
        elif kind < 0.6:  # memory percentage, resolved on the device it lands on
            shapes.append((rng.choice([1, 2]), 0, rng.choice([25, 50]), rng.choice([20, 30])))
        else:  # MiB fractions
            shapes.append((1, rng.choice([4096, 8192, 12288]), None, rng.choice([10, 25, 40])))
    Job.objects.bulk_create(jobs)
    JobContainer.objects.bulk_create(
        JobContainer(
            job=job,
            name="main",
            vendor="NVIDIA",
            device_count=count,
            device_memory_mib=mem,
            memory_percent=pct,
            cores_percent=cores,
        )
        for job, (count, mem, pct, cores) in zip(jobs, shapes, strict=True)
    )
    JobEvent.objects.bulk_create(JobEvent(job=job, kind="queued") for job in jobs)
    return [g_a100.pk, g_mixed.pk], [j.pk for j in jobs], make_writer_world(tenants)


def _edit_quota(rng: random.Random, group_id: int, stats: Counter) -> None:
    """Move 1000 of devices nominal between two EDITABLE tenants of a100-shared in one
    transaction (the cohort total never changes), sometimes by deleting the donor's row
    (its nominal goes to the other; its running usage must stay counted) or recreating a
    deleted row out of another tenant's nominal."""
    from tenants import services as tenant_services

    with transaction.atomic():
        rows = {
            q.tenant.name: q
            for q in lock_rows(Quota)
            .filter(resource_group_id=group_id, dimension="devices", tenant__name__in=EDITABLE)
            .select_related("tenant", "resource_group")
            .order_by("pk")
        }
        donor, taker = (
            rng.sample([n for n in EDITABLE if n in rows], 2) if len(rows) > 1 else (None, None)
        )
        if taker == "team-1":  # team-1 only gives (EDITABLE)
            donor, taker = taker, donor
        missing = [n for n in EDITABLE if n not in rows]
        if missing and rng.random() < 0.5:
            donor = max(rows, key=lambda n: rows[n].nominal - MIN_NOMINAL[n])
            give = rows[donor].nominal - MIN_NOMINAL[donor]
            if give >= 1000:
                _set_nominal(rows[donor], rows[donor].nominal - 1000)
                tenant_services.create_quota(
                    tenant=Tenant.objects.get(name=missing[0]),
                    resource_group=rows[donor].resource_group,
                    flavor=A100,
                    dimension="devices",
                    nominal=1000,
                )
                stats["quota_recreated"] += 1
            return
        if donor is None:
            return
        if donor != "team-1" and rng.random() < 0.15:
            _set_nominal(rows[taker], rows[taker].nominal + rows[donor].nominal)
            tenant_services.delete_quota(rows[donor])
            stats["quota_deleted"] += 1
        elif rows[donor].nominal - 1000 >= MIN_NOMINAL[donor]:
            _set_nominal(rows[donor], rows[donor].nominal - 1000)
            _set_nominal(rows[taker], rows[taker].nominal + 1000)
            stats["quota_moved"] += 1


def _submit_urgent(rng: random.Random, group_id: int) -> None:
    """An urgent whole-A100 job (priority 10) in a random tenant's a100 queue: it preempts
    that tenant's lower-priority jobs or reclaims from borrowers, so victims sit in their
    grace period while the other workers run cycles."""
    from scheduling.services.jobs import ContainerSpec, JobSpec, enqueue_job

    queue = Queue.objects.filter(resource_group_id=group_id).order_by("?").first()
    enqueue_job(
        queue,
        JobSpec(
            name="urgent",
            priority=10,
            pod_count=1,
            cpu_milli=1000,
            host_memory_mib=1024,
            duration_s=rng.uniform(0.5, 2.0),
            containers=[
                ContainerSpec(
                    device_count=rng.choice([1, 2]), memory_percent=100, cores_percent=100
                )
            ],
        ),
        enqueue=False,
    )


def _set_nominal(row: Quota, nominal: int) -> None:
    from tenants import services as tenant_services

    tenant_services.update_quota(
        row, nominal=nominal, borrowing_limit=row.borrowing_limit, lending_limit=row.lending_limit
    )


def _monitor(deadline: float, out) -> None:
    """Sample, until ``deadline``, every device and node booking and the capped tenants'
    booked charges (terminating placements included); each check is one SQL statement, so
    it sees one committed instant."""
    for conn in connections.all():
        conn.connection = None
    stats: Counter = Counter()
    broken: list[str] = []
    caps = {
        (q.tenant_id, q.resource_group_id, q.flavor): q.nominal + q.borrowing_limit
        for q in Quota.objects.filter(dimension="devices", borrowing_limit__isnull=False)
    }
    try:
        while time.monotonic() < deadline and len(broken) < 20:
            stats["samples"] += 1
            for row in (
                PlacementDevice.objects.filter(placement__state__in=BOOKED_PLACEMENT_STATES)
                .values(
                    "device__uuid",
                    "device__memory_mib",
                    "device__cores_percent",
                    "device__split_count",
                )
                .annotate(
                    mem=Sum("memory_mib"),
                    cores=Sum("cores_percent"),
                    slots=Sum("slots"),
                    terminating=Count("pk", filter=Q(placement__state=PlacementState.TERMINATING)),
                )
            ):
                stats["max_terminating_bookings"] = max(
                    stats["max_terminating_bookings"], row["terminating"]
                )
                if (
                    row["mem"] > row["device__memory_mib"]
                    or row["cores"] > row["device__cores_percent"]
                    or row["slots"] > row["device__split_count"]
                ):
                    broken.append(f"device {row['device__uuid']} overbooked: {row}")
            for row in (
                Placement.objects.filter(state__in=BOOKED_PLACEMENT_STATES)
                .values("node__name", "node__cpu_milli", "node__host_memory_mib")
                .annotate(cpu=Sum("cpu_milli"), mem=Sum("host_memory_mib"))
            ):
                if row["cpu"] > row["node__cpu_milli"] or row["mem"] > row["node__host_memory_mib"]:
                    broken.append(f"node {row['node__name']} overbooked: {row}")
            # charges of the placements booked at this instant (stored usage lags until
            # the next settle, so it may count placements that already ended)
            used: Counter = Counter()
            for tenant_id, group_id, charges in Placement.objects.filter(
                state__in=BOOKED_PLACEMENT_STATES
            ).values_list("job__tenant_id", "job__queue__resource_group_id", "charges"):
                for key, amount in (charges or {}).items():
                    flavor, _, dim = key.rpartition("|")
                    if dim == "devices":
                        used[(tenant_id, group_id, flavor)] += amount
            for key, amount in sorted(used.items()):
                cap = caps.get(key)
                if cap is not None and amount > cap:
                    broken.append(
                        f"tenant {key[0]} books {amount} > {cap} of group {key[1]} "
                        f"flavor {key[2]} (sample {stats['samples']})"
                    )
            time.sleep(0.05)
        out.put(("monitor", dict(stats), "\n".join(broken) or None))
    except BaseException:  # noqa: BLE001 - reported to the parent
        import traceback

        out.put(("monitor", dict(stats), traceback.format_exc()))
    finally:
        connections.close_all()


def _worker(
    index: int, group_ids: list[int], job_ids: list[int], ctx: WriterContext, deadline: float, out
) -> None:
    """One worker process: cycles of random groups, submissions, completions, cancels, and
    the other writers (``concurrency_writers.run_some``)."""
    from unittest import mock

    from scheduling.services.cluster_submission import reconcile_simulated, submit_to_cluster
    from scheduling.services.cycle import run_admission_cycle
    from scheduling.services.eviction import release_due_terminations
    from scheduling.services.jobs import cancel_job

    # Never reuse a socket inherited from the parent: drop (do not close, closing would end
    # the parent's session) every connection object the fork copied.
    for conn in connections.all():
        conn.connection = None
    stats = Counter()
    rng = random.Random(1000 + index)
    noop = mock.MagicMock()
    try:
        with (
            mock.patch("scheduling.dispatch.enqueue_on_commit", noop),
            mock.patch("core.dispatch.registered_task", noop),
        ):
            while time.monotonic() < deadline:
                try:
                    group_id = group_ids[rng.randrange(len(group_ids))]
                    report = run_admission_cycle(group_id, batch=60)
                    stats["locked_out" if report.locked_out else "cycles"] += 1
                    stats["admitted"] += len(report.admitted)
                    stats["preempted"] += len(report.preempted)
                    for job_id in (
                        Job.objects.filter(state=JobState.ADMITTED)
                        .order_by("?")
                        .values_list("pk", flat=True)[:20]
                    ):
                        submit_to_cluster(job_id)
                    reconcile_simulated(timezone.now())
                    stats["released"] += len(release_due_terminations(timezone.now()))
                    if rng.random() < 0.25:
                        _submit_urgent(rng, group_ids[0])
                        stats["urgent"] += 1
                    if rng.random() < 0.3:
                        try:
                            _edit_quota(rng, group_ids[0], stats)
                        except Conflict:  # another worker recreated that row first
                            stats["quota_conflict"] += 1
                    if rng.random() < 0.5:
                        job = Job.objects.select_related("queue").get(
                            pk=job_ids[rng.randrange(len(job_ids))]
                        )
                        try:
                            cancel_job(job)
                            stats["cancelled"] += 1
                        except Conflict:
                            stats["cancel_conflict"] += 1
                    run_some(rng, ctx, stats)
                    if not Job.objects.filter(
                        state__in=[JobState.QUEUED, JobState.ADMITTED, JobState.RUNNING]
                    ).exists():
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
        cursor.execute("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()")
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_four_workers_2000_jobs_keep_every_invariant(settings):
    settings.ADMISSION_TERMINATION_GRACE_S = GRACE_S  # the forked workers inherit it
    settings.LOCK_ORDER_CHECK = True
    rng = random.Random(5)
    group_ids, job_ids, ctx = _world(rng)
    db_name = connection.settings_dict["NAME"]
    assert db_name.startswith("test_")
    # the world must be committed before the workers fork (a test that leaked an open
    # transaction on this connection would hide it from them)
    assert not connection.in_atomic_block
    deadlocks_before = _deadlocks()
    connections.close_all()  # never share a socket with the forked workers
    mp = multiprocessing.get_context("fork")
    out = mp.Queue()
    started = time.monotonic()
    deadline = started + WORKER_BUDGET_S
    procs = [
        mp.Process(target=_worker, args=(i, group_ids, job_ids, ctx, deadline, out))
        for i in range(WORKERS)
    ]
    procs.append(mp.Process(target=_monitor, args=(deadline, out)))
    for proc in procs:
        proc.start()
    results = [out.get(timeout=WORKER_BUDGET_S + 120) for _ in procs]
    for proc in procs:
        proc.join(timeout=30)
    elapsed = time.monotonic() - started
    errors = [err for _, _, err in results if err]
    assert not errors, errors[0]
    monitor = next(stats for who, stats, _ in results if who == "monitor")
    results = [r for r in results if r[0] != "monitor"]
    assert connection.settings_dict["NAME"] == db_name
    totals = Counter()
    for _, stats, _ in results:
        totals.update(stats)
    states = Counter(Job.objects.values_list("state", flat=True))
    print(
        f"\n{WORKERS} workers, {JOBS} jobs, {elapsed:.1f}s: {dict(totals)}; "
        f"final states {dict(states)}; preemption rows {Preemption.objects.count()}; "
        f"monitor {monitor}"
    )
    assert totals["cycles"] > 0 and totals["admitted"] > 0 and totals["cancelled"] > 0
    # 0. one lock order everywhere (scheduling.services.locking): PostgreSQL saw no deadlock
    assert totals["deadlock_retries"] == 0
    assert _deadlocks() == deadlocks_before
    assert totals["quota_moved"] + totals["quota_deleted"] > 0
    for writer in ("tenant_edits", "membership_changes", "telemetry_ticks", "ledger_syncs"):
        assert totals[writer] > 0, writer
    for writer in ("cordons", "deliveries_tried", "workload_ticks"):
        assert totals[writer] > 0, writer
    assert totals["preempted"] > 0 and monitor["max_terminating_bookings"] > 0
    assert monitor["samples"] > 10
    # the quota total of a100-shared never changed (edits move nominal, never create it)
    assert (
        Quota.objects.filter(resource_group_id=group_ids[0], dimension="devices").aggregate(
            total=Sum("nominal")
        )["total"]
        == 32000
    )

    _release_terminating_victims()
    _restore_deleted_rows(group_ids[0])
    _assert_bookings_within_capacity()
    _assert_jobs_consistent(states, JOBS + totals["urgent"])
    _assert_quotas_and_usage(group_ids)


def _release_terminating_victims() -> None:
    """0. Placements still terminating belong to preempted jobs no longer admitted; once
    their pods are gone, nothing of theirs stays booked (the checks below settle charges)."""
    for placement in Placement.objects.filter(state=PlacementState.TERMINATING).select_related(
        "job"
    ):
        assert placement.job.state in (JobState.QUEUED, JobState.FAILED, JobState.CANCELLED)
        assert Preemption.objects.filter(victim=placement.job).exists(), placement.job_id
    release_due_terminations(timezone.now() + timedelta(seconds=GRACE_S + 1))
    assert not Placement.objects.filter(state=PlacementState.TERMINATING).exists()


def _assert_bookings_within_capacity() -> None:
    """1. No device or node overbooked (sum of live bookings <= capacity)."""
    booked = PlacementDevice.objects.filter(placement__state__in=BOOKED_PLACEMENT_STATES)
    for row in booked.values("device_id").annotate(
        mem=Sum("memory_mib"), cores=Sum("cores_percent"), slots=Sum("slots")
    ):
        device = Device.objects.get(pk=row["device_id"])
        assert row["mem"] <= device.memory_mib, device.uuid
        assert row["cores"] <= device.cores_percent, device.uuid
        assert row["slots"] <= device.split_count, device.uuid
    for row in (
        Placement.objects.filter(state__in=BOOKED_PLACEMENT_STATES)
        .values("node_id")
        .annotate(cpu=Sum("cpu_milli"), mem=Sum("host_memory_mib"))
    ):
        node = Node.objects.get(pk=row["node_id"])
        assert row["cpu"] <= node.cpu_milli and row["mem"] <= node.host_memory_mib, node.name


def _assert_jobs_consistent(states: Counter, jobs: int) -> None:
    """2. Every job in exactly one consistent state, none lost."""
    live = defaultdict(int)
    for job_id in Placement.objects.filter(state__in=ACTIVE_PLACEMENT_STATES).values_list(
        "job_id", flat=True
    ):
        live[job_id] += 1
    assert sum(states.values()) == jobs
    assert set(states) <= set(JobState.values)
    for job in Job.objects.only("pk", "state", "pod_count", "min_pods"):
        if job.state in (JobState.ADMITTED, JobState.RUNNING):
            assert (job.min_pods or job.pod_count) <= live[job.pk] <= job.pod_count, job.pk
        else:
            assert live[job.pk] == 0, (job.pk, job.state)


def _assert_quotas_and_usage(group_ids: list[int]) -> None:
    """3 and 4. Quotas within nominal + borrowing limit, usage recomputed == stored usage."""
    for group_id in group_ids:
        check = check_usage(group_id)
        assert not check.locked_out
        assert check.drift == [], check.drift
        assert check.violations == [], check.violations
    # the same, independently of the core: per tenant x flavor resource of a100-shared
    stored = {
        (u.tenant_id, u.flavor, u.dimension): u.amount
        for u in QuotaUsage.objects.filter(resource_group_id=group_ids[0])
    }
    for quota in Quota.objects.filter(resource_group_id=group_ids[0]):
        if quota.borrowing_limit is not None:
            used = stored.get((quota.tenant_id, quota.flavor, quota.dimension), 0)
            assert used <= quota.nominal + quota.borrowing_limit, quota
