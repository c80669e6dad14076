"""``pending_causes`` on the jobs API (issue 30): the pending reason as structure, in display
units (devices, not milli-devices), made where the reason is made and written with it."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from scheduling.models import Job
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.eviction import release_due_terminations
from tests.api.test_api_directory import as_user
from tests.builders import A100, gpu_job, make_cluster, two_team_world

pytestmark = pytest.mark.django_db

WHOLE = {"count": 1, "memory_percent": 100, "cores": 100}


@pytest.fixture
def cohort(db):
    """4 A100s (2 nodes x 2); team-a and team-b each 2 whole devices nominal, one member
    each (``tests/scheduling/conftest.py``'s cohort, with users)."""
    return two_team_world()


def _both(client, job):
    """The job as the detail and the list show it (they must agree)."""
    detail = client.get(f"/api/jobs/{job.pk}/")
    assert detail.status_code == 200
    rows = client.get("/api/jobs/", {"page_size": 100}).json()["results"]
    listed = next(r for r in rows if r["id"] == job.pk)
    body = detail.json()
    assert (listed["pending_reason"], listed["pending_causes"]) == (
        body["pending_reason"],
        body["pending_causes"],
    )
    return body


def _lines_match(body):
    """One cause per line of the text, the first being the blocking one."""
    lines = body["pending_reason"].splitlines()
    assert len(body["pending_causes"]) == len(lines)
    return lines


def test_quota_cause_gives_devices_not_milli_devices(api, cohort):
    make_cluster("c2", nodes=1, gpus=2)  # room on nodes, none in quota
    for i in range(2):
        gpu_job(cohort["qa"], f"a{i}", **WHOLE)
        gpu_job(cohort["qb"], f"b{i}", **WHOLE)
    assert len(run_admission_cycle(cohort["group"].pk).admitted) == 4
    extra = gpu_job(cohort["qa"], "a-extra", count=2, memory_percent=100, cores=100)
    run_admission_cycle(cohort["group"].pk)
    body = _both(as_user(api, cohort["alice"]), extra)
    lines = _lines_match(body)
    assert lines[0] == (
        f"tenant team-a, group g1, flavor {A100}, devices: needs 2000, free 0, borrowable 0 "
        "(bounded by cohort g1)"
    )
    assert body["pending_causes"][0] == {
        "kind": "quota",
        "resource": f"{A100}/devices",
        "needed": 2,
        "free": 0,
        "borrowable": 0,
        "unit": "devices",
        "rule": "bounded by cohort g1",
    }
    # the preemption tail: the lines after the first, each a preemption cause
    assert len(lines) > 1
    assert {c["kind"] for c in body["pending_causes"][1:]} == {"preemption"}
    assert [c["rule"] for c in body["pending_causes"][1:]] == lines[1:]


def test_capacity_cause_when_quota_fits_but_no_node_does(api, world):
    body = _both(as_user(api, world["alice"]), world["a_wait"])
    assert body["pending_causes"] == [
        {
            "kind": "capacity",
            "resource": None,
            "needed": None,
            "free": None,
            "borrowable": None,
            "unit": None,
            "rule": "unschedulable: 0/2 nodes fit; 2 node(s): NodeInsufficientDevice: 4 "
            "NVIDIA requested, 2 on node",
        }
    ]
    assert body["pending_reason"] == body["pending_causes"][0]["rule"]


def test_preemption_causes_for_preemptor_and_requeued_victim(api, cohort):
    group = cohort["group"]
    b_jobs = [gpu_job(cohort["qb"], f"b{i}", **WHOLE) for i in range(4)]
    assert len(run_admission_cycle(group.pk).admitted) == 4
    base = timezone.now() - timedelta(minutes=10)
    for i, job in enumerate(b_jobs):
        Job.objects.filter(pk=job.pk).update(admitted_at=base + timedelta(seconds=i))
    mine = gpu_job(cohort["qa"], "a0", **WHOLE)
    assert run_admission_cycle(group.pk).preempted == [b_jobs[3].pk]
    body = _both(as_user(api, cohort["alice"]), mine)
    _lines_match(body)
    (cause,) = body["pending_causes"]
    assert (cause["kind"], cause["resource"], cause["needed"]) == ("preemption", None, None)
    assert cause["rule"] == body["pending_reason"]
    assert cause["rule"].startswith(
        "waiting for 1 preempted workload(s) to terminate (1 job(s) of other tenants); "
    )
    victim = _both(as_user(api, cohort["bob"]), b_jobs[3])
    assert victim["state"] == "queued"
    assert [c["kind"] for c in victim["pending_causes"]] == ["preemption"]
    assert victim["pending_causes"][0]["rule"] == victim["pending_reason"]
    assert victim["pending_reason"] == (  # the preemptor's tenant is not named to team-b
        "preempted: capacity this job borrowed from the cohort was reclaimed for its owner"
    )
    # admitted once the victim's pods are gone: reason and causes are cleared together
    release_due_terminations(timezone.now() + timedelta(seconds=31))
    assert run_admission_cycle(group.pk).admitted == [mine.pk]
    body = _both(as_user(api, cohort["alice"]), mine)
    assert (body["pending_reason"], body["pending_causes"]) == ("", [])


def _list_queries(client):
    with CaptureQueriesContext(connection) as queries:
        response = client.get("/api/jobs/", {"page_size": 100})
    assert response.status_code == 200
    assert all(r["pending_causes"] for r in response.json()["results"] if r["state"] == "queued")
    return len(queries), response.json()["count"]


def test_list_query_count_does_not_grow_with_pending_jobs(api, cohort):
    client = as_user(api, cohort["alice"])
    for i in range(2):
        gpu_job(cohort["qa"], f"big-{i}", count=8)
    run_admission_cycle(cohort["group"].pk)
    few, count_few = _list_queries(client)
    for i in range(2, 12):
        gpu_job(cohort["qa"], f"big-{i}", count=8)
    run_admission_cycle(cohort["group"].pk)
    many, count_many = _list_queries(client)
    assert (count_few, count_many) == (2, 12)
    assert many == few
