"""Per-user limits below the tenant (issue 33) through the API, the admission cycle and
submission, on the real database."""

from __future__ import annotations

import pytest

from scheduling.choices import JobState
from scheduling.models import Job
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.jobs import ContainerSpec, JobSpec, enqueue_job
from tenants.models import UserLimit
from tests.api.test_api_directory import as_user
from tests.builders import make_user, two_team_cohort

pytestmark = pytest.mark.django_db


@pytest.fixture
def team(db):
    """4 A100s; team-a (2 nominal, may borrow) with ada (tenant admin), alice and al
    (members); team-b with bert (tenant admin) and bob."""
    group, (a, qa), (b, qb) = two_team_cohort()
    return {
        "group": group,
        "a": a,
        "qa": qa,
        "b": b,
        "qb": qb,
        "ada": make_user("ada", a, "tenant_admin"),
        "alice": make_user("alice", a),
        "al": make_user("al", a),
        "bert": make_user("bert", b, "tenant_admin"),
        "bob": make_user("bob", b),
    }


def _job(queue, user, name, count=1):
    spec = JobSpec(
        name=name,
        cpu_milli=1000,
        host_memory_mib=1024,
        containers=[ContainerSpec(device_count=count, memory_percent=100, cores_percent=100)],
    )
    return enqueue_job(queue, spec, user=user, enqueue=False, check_fit=False)


def _limit(api, admin, **body):
    return as_user(api, admin).post("/api/user-limits/", body, format="json")


def _status(api, admin, tenant, user, **body):
    return _limit(api, admin, tenant=tenant, user=user, **body).status_code


def test_tenant_admin_sets_a_limit_and_the_cycle_leaves_the_next_job_pending(api, team):
    response = _limit(api, team["ada"], tenant="team-a", user="alice", max_running_jobs=1)
    assert response.status_code == 201, response.content
    assert response.json()["warnings"] == []
    first = _job(team["qa"], team["alice"], "a1")
    second = _job(team["qa"], team["alice"], "a2")
    other = _job(team["qa"], team["al"], "al1")
    run_admission_cycle(team["group"].pk)
    states = dict(Job.objects.values_list("name", "state"))
    assert states == {"a1": JobState.ADMITTED, "a2": JobState.QUEUED, "al1": JobState.ADMITTED}
    second.refresh_from_db()
    assert second.pending_reason == "user alice: 1 of 1 running jobs"
    assert first.pk != second.pk and other.pk
    # the dry run applies the submitter's limits too
    body = {
        "queue": team["qa"].pk,
        "name": "what-if",
        "cpu_milli": 1000,
        "host_memory_mib": 1024,
        "containers": [{"device_count": 1, "memory_percent": 100, "cores_percent": 100}],
    }
    answer = as_user(api, team["alice"]).post("/api/dry-run/", body, format="json").json()
    assert answer["pending"]["code"] == "UserLimitExceeded"
    assert answer["pending"]["reason"] == "user alice: 1 of 1 running jobs"


def test_devices_limit_in_device_equivalents(api, team):
    assert (
        _limit(api, team["ada"], tenant="team-a", user="alice", max_devices_milli=1500).status_code
        == 201
    )
    _job(team["qa"], team["alice"], "a1", count=1)
    run_admission_cycle(team["group"].pk)
    late = _job(team["qa"], team["alice"], "a2", count=1)
    run_admission_cycle(team["group"].pk)
    late.refresh_from_db()
    assert (late.state, late.pending_reason) == (
        JobState.QUEUED,
        "user alice: 1 of 1.5 devices, needs 1",
    )


def test_default_row_applies_to_members_without_their_own(api, team):
    assert (
        _limit(api, team["ada"], tenant="team-a", user=None, max_running_jobs=0).status_code == 201
    )
    job = _job(team["qa"], team["al"], "al1")
    run_admission_cycle(team["group"].pk)
    job.refresh_from_db()
    assert job.pending_reason == "user al: 0 of 0 running jobs"


def test_max_queued_jobs_refused_at_submission_with_400(api, team):
    assert (
        _limit(api, team["ada"], tenant="team-a", user="alice", max_queued_jobs=1).status_code
        == 201
    )
    body = {
        "queue": team["qa"].pk,
        "name": "q1",
        "cpu_milli": 1000,
        "host_memory_mib": 1024,
        "containers": [{"device_count": 1, "memory_percent": 100, "cores_percent": 100}],
    }
    client = as_user(api, team["alice"])
    assert client.post("/api/jobs/", body, format="json").status_code == 201
    response = client.post("/api/jobs/", {**body, "name": "q2"}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {
        "queue": ["user alice: 1 of 1 queued jobs in tenant team-a"]
    }
    assert Job.objects.filter(submitted_by=team["alice"]).count() == 1


def test_limit_below_usage_is_accepted_with_a_warning_and_shown_over_limit(api, team):
    _job(team["qa"], team["alice"], "a1")
    _job(team["qa"], team["alice"], "a2")
    run_admission_cycle(team["group"].pk)
    response = _limit(api, team["ada"], tenant="team-a", user="alice", max_running_jobs=1)
    assert response.status_code == 201
    body = response.json()
    assert body["usage"] == {"running_jobs": 2, "queued_jobs": 0, "devices_milli": 2000}
    assert body["over_limit"] == ["user alice: 2 of 1 running jobs"]
    assert body["warnings"] == [
        "user alice: 2 of 1 running jobs: the limit acts on new admissions only"
    ]
    assert Job.objects.filter(state=JobState.ADMITTED).count() == 2  # nothing stopped


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"user": "alice", "max_running_jobs": -1}, "max_running_jobs"),
        ({"user": "alice", "max_devices_milli": -5}, "max_devices_milli"),
        ({"user": "bob", "max_running_jobs": 1}, "user"),  # bob is in team-b
        ({"user": "nobody", "max_running_jobs": 1}, "user"),
        ({"user": "alice", "max_devices_milli": 1000, "device_model": "no-such"}, "device_model"),
        ({"user": "alice", "device_model": "NVIDIA-A100-SXM4-80GB"}, "device_model"),
    ],
)
def test_bad_limits_answer_400_with_the_field(api, team, body, field):
    response = _limit(api, team["ada"], tenant="team-a", **body)
    assert response.status_code == 400, response.content
    assert list(response.json()["error"]["fields"]) == [field]
    assert not UserLimit.objects.exists()


def test_tenant_isolation_of_limits(api, team):
    assert (
        _limit(api, team["ada"], tenant="team-a", user="alice", max_running_jobs=3).status_code
        == 201
    )
    assert (
        _limit(api, team["bert"], tenant="team-b", user="bob", max_running_jobs=2).status_code
        == 201
    )
    seen = as_user(api, team["alice"]).get("/api/user-limits/").json()["results"]
    assert [(r["tenant"], r["user"]) for r in seen] == [("team-a", "alice")]
    # a member may not change limits; another tenant's admin gets 404 for team-a
    assert (
        _limit(api, team["alice"], tenant="team-a", user="al", max_running_jobs=9).status_code
        == 403
    )
    assert (
        _limit(api, team["bert"], tenant="team-a", user="alice", max_running_jobs=9).status_code
        == 404
    )
    row = UserLimit.objects.get(user=team["alice"])
    assert as_user(api, team["bert"]).delete(f"/api/user-limits/{row.pk}/").status_code == 404
    assert UserLimit.objects.get(user=team["alice"]).max_running_jobs == 3
