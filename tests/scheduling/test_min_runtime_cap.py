"""Issue 29: a job's ``min_runtime_s`` (seconds after admission during which it cannot be
preempted) is capped by its queue's ``max_min_runtime_s`` (default 300 s), so a member can no
longer make a job unpreemptible by asking 30 days. Over the cap: 400 naming the queue's cap,
nothing saved; platform admins raise a queue's cap with ``PATCH /api/queues/<id>/``."""

import pytest

from core.exceptions import InvalidRequest
from core.models import AuditEntry
from scheduling.models import Job, Queue
from scheduling.services.jobs import ContainerSpec, JobSpec, enqueue_jobs
from tests.builders import make_cluster, make_group, make_tenant, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    make_cluster("c1", nodes=1, gpus=2)
    group = make_group("g1")
    team, queue = make_tenant("team-a", group, devices_milli=10_000)
    return {"queue": queue, "alice": make_user("alice", team, "member")}


def _job(queue, name="j", **extra):
    return {
        "queue": queue.pk,
        "name": name,
        "containers": [{"name": "main", "device_count": 1, "device_memory_mib": 1024}],
        **extra,
    }


def test_new_queue_caps_min_runtime_at_300_s(world):
    assert Queue.objects.get(pk=world["queue"].pk).max_min_runtime_s == 300.0


def test_submit_above_the_queue_cap_is_refused_naming_the_cap(api, world):
    api.force_authenticate(world["alice"])
    body = _job(world["queue"], min_runtime_s=30 * 24 * 3600)
    response = api.post("/api/jobs/", body, format="json")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert list(error["fields"]) == ["min_runtime_s"]
    [message] = error["fields"]["min_runtime_s"]
    assert "2592000 s" in message and "300 s" in message and "team-a/default" in message
    assert Job.objects.count() == 0


def test_submit_at_the_cap_is_accepted(api, world):
    api.force_authenticate(world["alice"])
    response = api.post("/api/jobs/", _job(world["queue"], min_runtime_s=300), format="json")
    assert response.status_code == 201, response.content
    assert Job.objects.get().min_runtime_s == 300.0


def test_batch_item_above_the_cap_refuses_the_batch(api, world):
    api.force_authenticate(world["alice"])
    body = {"jobs": [_job(world["queue"], "a"), _job(world["queue"], "b", min_runtime_s=301)]}
    response = api.post("/api/jobs/batch/", body, format="json")
    assert response.status_code == 400, response.content
    fields = response.json()["error"]["fields"]
    assert list(fields) == ["jobs[1].min_runtime_s"]
    assert "300 s" in fields["jobs[1].min_runtime_s"][0]
    assert Job.objects.count() == 0


def test_platform_admin_raises_the_cap_members_cannot(api, world):
    queue = world["queue"]
    api.force_authenticate(world["alice"])
    forbidden = api.patch(f"/api/queues/{queue.pk}/", {"max_min_runtime_s": 86400}, format="json")
    assert forbidden.status_code == 403
    root = make_user("root", is_superuser=True)
    api.force_authenticate(root)
    bad = api.patch(f"/api/queues/{queue.pk}/", {"max_min_runtime_s": -1}, format="json")
    assert bad.status_code == 400 and list(bad.json()["error"]["fields"]) == ["max_min_runtime_s"]
    response = api.patch(f"/api/queues/{queue.pk}/", {"max_min_runtime_s": 3600}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["max_min_runtime_s"] == 3600.0
    entry = AuditEntry.objects.get(action="queue.update")
    assert (entry.before["max_min_runtime_s"], entry.after["max_min_runtime_s"]) == (300.0, 3600.0)
    api.force_authenticate(world["alice"])
    assert api.get(f"/api/queues/{queue.pk}/").json()["max_min_runtime_s"] == 3600.0
    ok = api.post("/api/jobs/", _job(queue, min_runtime_s=3600), format="json")
    assert ok.status_code == 201, ok.content
    over = api.post("/api/jobs/", _job(queue, "k", min_runtime_s=3601), format="json")
    assert over.status_code == 400
    assert "3600 s" in over.json()["error"]["fields"]["min_runtime_s"][0]


def test_service_refuses_a_spec_above_the_cap_whatever_its_source(world):
    """Every path into ``enqueue_jobs`` (API, form, intake, demo) meets the same rule."""
    spec = JobSpec(name="x", containers=[ContainerSpec(device_count=1)], min_runtime_s=900)
    with pytest.raises(InvalidRequest) as refused:
        enqueue_jobs([(world["queue"], JobSpec(name="ok", containers=[])), (world["queue"], spec)])
    assert refused.value.field == "min_runtime_s"
    assert "900 s" in refused.value.message and "300 s" in refused.value.message
    assert Job.objects.count() == 0
