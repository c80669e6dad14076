"""Who may read and change another tenant's job, by id, in the API and in the pages (issue 29).

The world: tenant ``dept`` is the parent of ``team-a`` and ``team-b`` (siblings). Every job
acted on belongs to team-a. One rule (``tenants.selectors.tenant_access``) answers both
interfaces: a tenant the user may not read is 404, one they may read but not change is 403.
A parent tenant's admin reads the tenants below (the API's quota and usage reads,
``get_visible_tenant_ids``) but submits and changes jobs only where they hold a submitting role
themselves. There is no checkpoint action in the console (neither the API nor the pages).
"""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from scheduling.models import Job
from tenants.models import Tenant
from tests.builders import make_tenant, make_user

pytestmark = pytest.mark.django_db

GPU = {"name": "main", "device_count": 1, "memory_percent": 10, "cores_percent": 10}

# who -> (status of a read, status of every write) on team-a's jobs
ROLES = {
    "member of sibling": (404, 404),
    "viewer of sibling": (404, 404),
    "admin of sibling": (404, 404),
    "member of other root": (404, 404),
    "admin of parent": (200, 403),
    "viewer of own tenant": (200, 403),
}
ACTIONS = {  # action -> (job kind acted on, POST body)
    "cancel": ("batch", {}),
    "scale": ("inference", {"replicas": 2}),
    "stop": ("notebook", {}),
    "resume": ("notebook", {}),
}


@pytest.fixture
def matrix(world):
    dept = Tenant.objects.create(name="dept")
    Tenant.objects.filter(name__in=["team-a", "team-b"]).update(parent=dept)
    other, _queue = make_tenant("other-root", world["group"], devices_milli=1000)
    users = {
        "member of sibling": world["bob"],
        "viewer of sibling": make_user("vera", world["team_b"], "viewer"),
        "admin of sibling": make_user("bert", world["team_b"], "tenant_admin"),
        "member of other root": make_user("olga", other, "member"),
        "admin of parent": make_user("dana", dept, "tenant_admin"),
        "viewer of own tenant": world["victor"],
    }
    alice = APIClient()
    alice.force_authenticate(world["alice"])
    base = {"queue": world["queue_a"].pk, "cpu_milli": 1000, "host_memory_mib": 1024}
    jobs = {"batch": world["a_wait"]}
    for kind, extra in (
        ("inference", {"port": 8000, "replicas": 1, "max_replicas": 4}),
        ("notebook", {"idle_cull_s": 600}),
    ):
        body = {**base, "name": f"a-{kind}", "kind": kind, "containers": [GPU], **extra}
        resp = alice.post("/api/jobs/", body, format="json")
        assert resp.status_code == 201, resp.json()
        jobs[kind] = Job.objects.get(pk=resp.json()["id"])
    return users, jobs


def _fingerprint(job: Job) -> tuple:
    job.refresh_from_db()
    return (job.state, job.replicas, job.replica_jobs.count())


@pytest.mark.parametrize("interface", ["api", "page"])
@pytest.mark.parametrize("role", sorted(ROLES))
@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_another_tenants_job_by_id(client, matrix, interface, role, action):
    users, jobs = matrix
    kind, body = ACTIONS[action]
    job = jobs[kind]
    before = _fingerprint(job)
    read_status, write_status = ROLES[role]
    if interface == "api":
        api = APIClient()
        api.force_authenticate(users[role])
        read = api.get(f"/api/jobs/{job.pk}/").status_code
        write = api.post(f"/api/jobs/{job.pk}/{action}/", body, format="json").status_code
    else:
        client.force_login(users[role])
        read = client.get(f"/jobs/{job.pk}/").status_code
        write = client.post(f"/jobs/{job.pk}/{action}/", body).status_code
    assert (read, write) == (read_status, write_status)
    assert _fingerprint(job) == before


@pytest.mark.parametrize("role", sorted(ROLES))
def test_list_shows_a_job_exactly_where_its_page_opens(client, matrix, role):
    users, jobs = matrix
    api = APIClient()
    api.force_authenticate(users[role])
    listed = {row["id"] for row in api.get("/api/jobs/").json()["results"]}
    client.force_login(users[role])
    page = client.get("/jobs/").content.decode()
    for job in jobs.values():
        readable = ROLES[role][0] == 200
        assert (job.pk in listed) is readable
        assert (f'href="/jobs/{job.pk}/"' in page) is readable
