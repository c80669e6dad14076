"""Admission API: usage table, job detail (reason, position, ETA), dry-runs, isolation."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from core.api.filters import StrictPageNumberPagination
from scheduling.models import Job, Preemption
from scheduling.selectors.job_board import store_start_ranges
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.estimates import record_start_estimates
from tests.builders import A100, gpu_job, two_team_world

pytestmark = pytest.mark.django_db

WHOLE = {"count": 1, "memory_percent": 100, "cores": 100}
QUEUED_LIST_QUERIES = 6


@pytest.fixture
def world(cohort):
    return two_team_world(cohort, viewer=True, root=True)


def _job_body(queue, **extra):
    body = {
        "queue": queue.pk,
        "name": "probe",
        "cpu_milli": 1000,
        "host_memory_mib": 1024,
        "containers": [
            {"name": "main", "device_count": 1, "memory_percent": 100, "cores_percent": 100}
        ],
    }
    body.update(extra)
    return body


def test_usage_shows_nominal_used_borrowed_and_lent(api, world):
    for i in range(3):
        gpu_job(world["qb"], f"b{i}", **WHOLE)
    run_admission_cycle(world["group"].pk)
    api.force_authenticate(world["root"])
    rows = {r["tenant"]: r for r in api.get("/api/usage/?resource_group=g1").json()}
    assert {
        k: rows["team-b"][k]
        for k in ("flavor", "dimension", "nominal", "used", "borrowed", "lent", "available")
    } == {
        "flavor": A100,
        "dimension": "devices",
        "nominal": 2000,
        "used": 3000,
        "borrowed": 1000,
        "lent": 0,
        "available": 1000,
    }
    # team-a could reclaim its whole nominal, but only 1000 is free in the cohort now
    assert (rows["team-a"]["used"], rows["team-a"]["lent"], rows["team-a"]["available"]) == (
        0,
        1000,
        1000,
    )
    # a member sees only their own tenant; another tenant by name is 404
    api.force_authenticate(world["alice"])
    assert [r["tenant"] for r in api.get("/api/usage/").json()] == ["team-a"]
    assert api.get("/api/usage/?tenant=team-b").status_code == 404


def test_job_detail_has_reason_position_and_eta(api, world):
    qa = world["qa"]
    now = timezone.now()
    jobs = [gpu_job(qa, f"a{i}", count=2, memory_percent=100, cores=100) for i in range(4)]
    run_admission_cycle(world["group"].pk)
    # a0 and a1 take the 4 devices (a1 borrows team-b's idle quota); a2 and a3 wait
    queued = list(Job.objects.filter(state="queued").order_by("created", "id"))
    assert [j.pk for j in queued] == [j.pk for j in jobs[2:]]
    # a0 and a1 started 400 s ago and declare 1000 s: their 4 devices free up in 600 s,
    # when a2 and a3 (2 devices each) both start
    Job.objects.filter(pk__in=[jobs[0].pk, jobs[1].pk]).update(
        started_at=now - timedelta(seconds=400), duration_s=1000
    )
    api.force_authenticate(world["vera"])
    body = api.get(f"/api/jobs/{jobs[3].pk}/").json()
    assert body["queue_position"] == 2
    # team-a already borrows team-b's whole nominal: the quota rule blocks it
    assert body["pending_reason"].startswith(
        f"tenant team-a, group g1, flavor {A100}, devices: needs 2000, free 0, borrowable 0"
    )
    earliest = timezone.datetime.fromisoformat(body["estimated_start"])
    latest = timezone.datetime.fromisoformat(body["estimated_start_latest"])
    assert timedelta(seconds=595) <= earliest - now <= latest - now <= timedelta(seconds=610)
    api.force_authenticate(world["bob"])
    assert api.get(f"/api/jobs/{jobs[3].pk}/").status_code == 404


def _queued_world(world, now, waiting):
    """a0 and a1 hold the 4 devices (admitted and started 400 s ago, 1000 s declared),
    ``waiting`` jobs of 2 devices wait in team-a's queue; the gauges task has stored the start
    ranges."""
    qa = world["qa"]
    held = [gpu_job(qa, f"a{i}", count=2, memory_percent=100, cores=100) for i in range(2)]
    assert run_admission_cycle(world["group"].pk).admitted == [j.pk for j in held]
    Job.objects.filter(pk__in=[j.pk for j in held]).update(
        admitted_at=now - timedelta(seconds=400),
        started_at=now - timedelta(seconds=400),
        duration_s=1000,
    )
    queued = [
        gpu_job(qa, f"w{i}", count=2, memory_percent=100, cores=100, duration_s=100)
        for i in range(waiting)
    ]
    store_start_ranges(now)
    return queued


def test_job_list_has_position_and_eta_of_queued_jobs(api, world):
    now = timezone.now()
    queued = _queued_world(world, now, waiting=3)
    api.force_authenticate(world["vera"])
    rows = api.get("/api/jobs/?state=queued").json()["results"]
    assert [r["id"] for r in rows] == [j.pk for j in reversed(queued)]  # newest first
    assert [r["queue_position"] for r in rows] == [3, 2, 1]
    # the devices free up in 600 s: w0 and w1 start then (2 devices each), w2 after w0 or
    # w1 ends (100 s later)
    starts = [timezone.datetime.fromisoformat(r["estimated_start"]) - now for r in rows]
    assert [round(s.total_seconds()) for s in starts] == [700, 600, 600]
    # the detail computes the same range now (from the clock of the request)
    detail = api.get(f"/api/jobs/{queued[2].pk}/").json()
    assert detail["queue_position"] == rows[0]["queue_position"]
    gap = timezone.datetime.fromisoformat(detail["estimated_start"]) - now - starts[0]
    assert abs(gap.total_seconds()) < 5
    # a job queued since the gauges task stored the ranges has its position, no range yet
    later = gpu_job(world["qa"], "later", count=2, memory_percent=100, cores=100)
    row = api.get("/api/jobs/?state=queued").json()["results"][0]
    assert (row["id"], row["queue_position"], row["estimated_start"]) == (later.pk, 4, None)
    running = api.get("/api/jobs/?state=admitted").json()["results"]
    assert [(r["queue_position"], r["estimated_start"]) for r in running] == [(None, None)] * 2


@pytest.mark.parametrize("page_size", [2, 8])
def test_job_list_positions_cost_the_same_queries_at_any_page_size(
    api, world, page_size, monkeypatch
):
    now = timezone.now()
    queued = _queued_world(world, now, waiting=8)
    # the gauges task recorded the first windows; two jobs were preempted (widened)
    record_start_estimates(store_start_ranges(now), now)
    Job.objects.filter(pk__in=[j.pk for j in queued[-2:]]).update(preemption_count=1)
    monkeypatch.setattr(StrictPageNumberPagination, "page_size", page_size)
    api.force_authenticate(world["vera"])
    with CaptureQueriesContext(connection) as queries:
        rows = api.get("/api/jobs/?state=queued").json()["results"]
    assert len(rows) == page_size
    assert [r["queue_position"] for r in rows] == list(range(8, 8 - page_size, -1))
    assert all(r["estimated_start"] and r["estimated_start_latest"] for r in rows)
    assert [(r["estimate_state"], r["estimate_confidence"], r["estimate_slips"]) for r in rows] == [
        ("estimated", "medium", 1)
    ] * 2 + [("estimated", "high", 0)] * (page_size - 2)
    # the user's tenants, count, page, containers, placements, positions with each job's
    # first window (the start ranges are one cache read): the same at 2 and at 8 jobs
    assert len(queries) == QUEUED_LIST_QUERIES, [q["sql"] for q in queries.captured_queries]


def test_job_dry_run_says_where_and_whom_it_preempts_without_saving(api, world):
    for i in range(4):
        gpu_job(world["qb"], f"b{i}", **WHOLE)
    run_admission_cycle(world["group"].pk)
    jobs_before = Job.objects.count()
    api.force_authenticate(world["alice"])
    response = api.post("/api/dry-run/", _job_body(world["qa"]), format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    # it would preempt now and be admitted once the victim's pods are gone
    assert body["admitted"] is False and "placement" not in body
    assert body["pending"]["code"] == "WaitingForPreemptedWorkloads"
    assert body["pending"]["reason"].startswith(
        "waiting for 1 preempted workload(s) to terminate (1 job(s) of other tenants)"
    )
    # one team-b job is reclaimed; alice may not see which one
    assert body["preempts"] == [
        {
            "job": None,
            "tenant": "team-b",
            "reason": "InCohortReclamation",
            "message": "a job of tenant team-b",
        }
    ]
    assert Job.objects.count() == jobs_before and not Preemption.objects.exists()
    # a viewer cannot dry-run a submission
    api.force_authenticate(world["vera"])
    assert api.post("/api/dry-run/", _job_body(world["qa"]), format="json").status_code == 403


def test_job_dry_run_pending_answer(api, world):
    api.force_authenticate(world["alice"])
    body = api.post("/api/dry-run/", _job_body(world["qa"], pod_count=5), format="json").json()
    assert body["admitted"] is False
    assert body["pending"]["code"] == "Unschedulable"
    assert body["pending"]["position"] == 1


def test_quota_dry_run_lists_the_victims_of_a_scale_in(api, world):
    b_jobs = [gpu_job(world["qb"], f"b{i}", **WHOLE) for i in range(2)]
    run_admission_cycle(world["group"].pk)
    now = timezone.now()
    for i, job in enumerate(b_jobs):  # b1 started last, so it is evicted first
        Job.objects.filter(pk=job.pk).update(admitted_at=now - timedelta(seconds=60 - i))
    api.force_authenticate(world["root"])
    change = {
        "tenant": "team-b",
        "resource_group": "g1",
        "flavor": A100,
        "dimension": "devices",
        "nominal": 1000,
        "borrowing_limit": 0,
    }
    response = api.post("/api/quotas/dry-run/", {"changes": [change]}, format="json")
    assert response.status_code == 200, response.content
    [group] = response.json()["groups"]
    assert group["violations"] == [
        f"tenant team-b, group g1, flavor {A100}, devices: usage 2000 exceeds nominal 1000 "
        "+ borrowing limit 0"
    ]
    assert [v["job"] for v in group["preempts"]] == [b_jobs[1].pk]
    assert group["unresolved"] == []
    # members cannot run it; other tenants' quotas are 404
    api.force_authenticate(world["bob"])
    assert api.post("/api/quotas/dry-run/", {"changes": [change]}, format="json").status_code == 403
    api.force_authenticate(world["alice"])
    assert api.post("/api/quotas/dry-run/", {"changes": [change]}, format="json").status_code == 404
