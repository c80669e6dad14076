"""The telemetry rollup beside admission cycles on real PostgreSQL (issue #14).

Two forked workers run admission cycles, submissions, completions and cancellations (the
workers of ``tests/scheduling/test_concurrency.py``) while a third process writes simulated
samples of the running pods (rows referencing their jobs and devices) and rolls them up again
and again, every window re-rolled each time. The rollup used to run as one long transaction
whose inserts held key-share locks on devices and jobs across the cycle's ``FOR UPDATE`` and
PostgreSQL reported ``deadlock detected``; now it writes short batches, and the cycle's row
locks are ``FOR NO KEY UPDATE`` (``core.locks``), which foreign-key checks never wait for, so
PostgreSQL's deadlock counter must not move and every rolled-up value must equal the raw
samples' aggregate.
"""

from __future__ import annotations

import multiprocessing
import random
import time
from collections import Counter
from datetime import timedelta

import pytest
from django.db import OperationalError, connection, connections
from django.db.models import Count, Sum
from django.utils import timezone

from scheduling.choices import JobState
from scheduling.models import Job
from telemetry.models import Rollup, RollupWatermark, Sample
from tests.scheduling.test_concurrency import _deadlocks, _worker, _world

WORKERS = 2
BUDGET_S = 25.0


def _telemetry(deadline: float, out) -> None:
    """Simulated samples of the running pods, then a full re-roll, until the deadline."""
    from telemetry.services.rollups import rollup
    from telemetry.services.synthetic import synthetic_tick

    for conn in connections.all():
        conn.connection = None
    stats = Counter()
    try:
        start = timezone.now() - timedelta(minutes=30)
        tick = 0
        while time.monotonic() < deadline:
            try:
                when = start + timedelta(seconds=15 * tick)
                stats["samples"] += synthetic_tick(now=when)
                RollupWatermark.objects.all().delete()  # re-roll every window each time
                stats["minute_rows"] += rollup(now=when + timedelta(minutes=3))["minute_rows"]
                stats["rollups"] += 1
                tick += 1
            except OperationalError as exc:
                stats["deadlock" if "deadlock" in str(exc) else "db_errors"] += 1
        out.put(("telemetry", dict(stats), None))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        import traceback

        out.put(("telemetry", dict(stats), traceback.format_exc() or repr(exc)))
    finally:
        connections.close_all()


@pytest.mark.django_db(transaction=True)
def test_rollup_beside_cycles_counts_no_deadlock(settings):
    settings.ADMISSION_TERMINATION_GRACE_S = 2.0
    settings.TELEMETRY_RAW_RETENTION_S = 86400  # keep every sample for the final check
    group_ids, job_ids, writers = _world(random.Random(7))
    # long jobs, so pods keep running (and keep being sampled) while cycles go on
    Job.objects.filter(pk__in=job_ids[::2]).update(duration_s=3600.0)
    assert not connection.in_atomic_block
    deadlocks_before = _deadlocks()
    connections.close_all()
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    deadline = time.monotonic() + BUDGET_S
    procs = [
        ctx.Process(target=_worker, args=(i, group_ids, job_ids, writers, deadline, out))
        for i in range(WORKERS)
    ]
    procs.append(ctx.Process(target=_telemetry, args=(deadline, out)))
    for proc in procs:
        proc.start()
    results = {who: (stats, err) for who, stats, err in (out.get(timeout=240) for _ in procs)}
    for proc in procs:
        proc.join(timeout=30)
    errors = [err for _, err in results.values() if err]
    assert not errors, errors[0]
    telemetry = results.pop("telemetry")[0]
    cycles = Counter()
    for stats, _ in results.values():
        cycles.update(stats)
    print(f"\ncycles {dict(cycles)}; telemetry {telemetry}")
    assert cycles["cycles"] > 0 and cycles["admitted"] > 0 and cycles["cancelled"] > 0
    assert telemetry["rollups"] >= 3 and telemetry["samples"] > 0
    assert telemetry["minute_rows"] > 0
    # no deadlock anywhere: neither a victim in a process nor one PostgreSQL counted
    assert telemetry.get("deadlock", 0) == 0 and cycles["deadlock_retries"] == 0
    assert _deadlocks() == deadlocks_before
    assert Job.objects.filter(state=JobState.RUNNING).exists() or cycles["admitted"]
    _assert_rollups_match_samples()


def _assert_rollups_match_samples() -> None:
    """Each minute rollup of a device and metric equals its samples' count and sum (samples
    of jobs deleted meanwhile aside: none are deleted here)."""
    from telemetry.services.rollups import rollup

    RollupWatermark.objects.all().delete()
    newest = Sample.objects.order_by("-time").values_list("time", flat=True).first()
    rollup(now=newest + timedelta(minutes=3))
    raw = {
        (r["device_id"], r["metric"]): (r["n"], r["s"])
        for r in Sample.objects.exclude(device_id__isnull=True)
        .values("device_id", "metric")
        .annotate(n=Count("id"), s=Sum("value"))
    }
    rolled = {
        (r["device_id"], r["metric"]): (r["n"], r["s"])
        for r in Rollup.objects.filter(resolution_s=60)
        .values("device_id", "metric")
        .annotate(n=Sum("count"), s=Sum("total"))
    }
    assert raw and rolled.keys() == raw.keys()
    for key, (n, s) in raw.items():
        assert rolled[key][0] == n
        assert rolled[key][1] == pytest.approx(s)
