"""``POST /api/jobs/batch/``: many jobs in one request, all or none, one INSERT per table."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core.models import AuditEntry
from scheduling.models import Job, JobContainer, JobEvent
from tests.api.test_api_directory import as_user

pytestmark = pytest.mark.django_db

URL = "/api/jobs/batch/"


def _item(queue, name, **extra):
    body = {
        "queue": queue.pk,
        "name": name,
        "cpu_milli": 1000,
        "host_memory_mib": 2048,
        "containers": [{"device_count": 1, "memory_percent": 20, "cores_percent": 20}],
    }
    body.update(extra)
    return body


def test_a_batch_creates_every_job_in_order_with_its_rows(api, world, monkeypatch):
    cycles = []
    monkeypatch.setattr(
        "scheduling.services.jobs.enqueue_admission_cycle", lambda group: cycles.append(group)
    )
    client = as_user(api, world["alice"])
    items = [_item(world["queue_a"], f"sweep-{i}") for i in range(3)]
    items[1]["containers"] = [
        {"name": "a", "device_count": 1, "memory_percent": 10, "cores_percent": 10},
        {"name": "b", "device_count": 2, "device_memory_mib": 4096, "cores_percent": 5},
    ]
    items[2]["queue"] = "team-a/default"  # a queue by name, resolved once per spelling
    response = client.post(URL, {"jobs": items}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()["jobs"]
    assert [(j["name"], j["state"], j["queue"], j["tenant"]) for j in body] == [
        (f"sweep-{i}", "queued", "default", "team-a") for i in range(3)
    ]
    jobs = {j.name: j for j in Job.objects.filter(pk__in=[j["id"] for j in body])}
    assert all(
        j.queue_id == world["queue_a"].pk and j.submitted_by == world["alice"]
        for j in jobs.values()
    )
    rows = JobContainer.objects.filter(job=jobs["sweep-1"]).order_by("name")
    assert [(c.name, c.device_count, c.device_memory_mib, c.cores_percent) for c in rows] == [
        ("a", 1, 0, 10),
        ("b", 2, 4096, 5),
    ]
    assert JobEvent.objects.filter(job__in=jobs.values(), kind="queued").count() == 3
    audits = AuditEntry.objects.filter(
        action="job.submit", object_id__in=[str(j["id"]) for j in body]
    )
    assert sorted(a.actor_name for a in audits) == ["alice"] * 3
    assert cycles == [world["group"].pk]  # one cycle request for the group, not one per job


def test_an_invalid_item_refuses_the_batch_with_its_index(api, world):
    client = as_user(api, world["alice"])
    items = [
        _item(world["queue_a"], "ok-0"),
        _item(world["queue_a"], "bad-1", cpu_milli=-5),
        _item(world["queue_b"], "other-2"),  # another tenant's queue: unknown
    ]
    response = client.post(URL, {"jobs": items}, format="json")
    assert response.status_code == 400
    fields = response.json()["error"]["fields"]
    assert set(fields) == {"jobs[1].cpu_milli", "jobs[2].queue"}
    assert "team-b" not in response.content.decode()
    assert not Job.objects.filter(name__in=["ok-0", "bad-1", "other-2"]).exists()
    empty = client.post(URL, {"jobs": []}, format="json")
    assert empty.status_code == 400
    assert list(empty.json()["error"]["fields"]) == ["jobs.non_field_errors"]
    unknown = client.post(URL, {"jobs": [items[0]], "extra": 1}, format="json")
    assert unknown.status_code == 400 and "extra" in unknown.json()["error"]["fields"]
    listed = client.post(URL, [items[0]], format="json")
    assert listed.status_code == 400
    assert not Job.objects.filter(name="ok-0").exists()


def test_a_job_that_never_fits_refuses_the_batch_with_its_reason(api, world):
    client = as_user(api, world["alice"])
    items = [
        _item(world["queue_a"], "fits"),
        _item(world["queue_a"], "never", containers=[{"device_count": 9, "cores_percent": 100}]),
    ]
    response = client.post(URL, {"jobs": items}, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "never_fits"
    assert list(error["fields"]) == ["jobs[1].reason"]
    assert "9" in error["fields"]["jobs[1].reason"][0]
    assert not Job.objects.filter(name__in=["fits", "never"]).exists()


def test_viewers_and_strangers_cannot_batch(api, world):
    assert api.post(URL, {"jobs": [_item(world["queue_a"], "x")]}, format="json").status_code == 401
    viewer = as_user(api, world["victor"]).post(
        URL, {"jobs": [_item(world["queue_a"], "x")]}, format="json"
    )
    assert viewer.status_code == 403
    assert not Job.objects.filter(name="x").exists()


def test_the_queries_of_a_batch_do_not_grow_with_its_size(api, world):
    client = as_user(api, world["alice"])
    warm = client.post(URL, {"jobs": [_item(world["queue_a"], "warm")]}, format="json")
    assert warm.status_code == 201  # the group's empty shape is read once, then remembered
    counts = []
    for size in (2, 20):
        items = [_item(world["queue_a"], f"q{size}-{i}") for i in range(size)]
        with CaptureQueriesContext(connection) as queries:
            response = client.post(URL, {"jobs": items}, format="json")
        assert response.status_code == 201, response.content
        counts.append(len(queries))
    # 13: the per-user max_queued_jobs check reads the limit rows once (issue 33)
    assert counts[0] == counts[1] <= 13, counts


def test_a_batch_may_hold_an_inference_service(api, world):
    client = as_user(api, world["alice"])
    service = _item(world["queue_a"], "svc", kind="inference", replicas=2, port=8000)
    response = client.post(
        URL, {"jobs": [service, _item(world["queue_a"], "plain")]}, format="json"
    )
    assert response.status_code == 201, response.content
    svc = Job.objects.get(pk=response.json()["jobs"][0]["id"])
    assert svc.state == "running"
    assert sorted(svc.replica_jobs.values_list("name", "state")) == [
        ("svc-0", "queued"),
        ("svc-1", "queued"),
    ]


def test_the_single_submit_reply_is_the_job_as_the_list_shows_it(api, world):
    client = as_user(api, world["alice"])
    body = _item(world["queue_a"], "reply", annotations={"team": "nlp"})
    body["containers"].append({"name": "side", "device_count": 0, "image": "busybox"})
    response = client.post("/api/jobs/", body, format="json")
    assert response.status_code == 201, response.content
    listed = client.get("/api/jobs/", {"name": "reply"}).json()["results"]
    # the list (like the detail) fills the waiting job's position and estimate from the queue
    # index; the reply is written before the job has one
    eta = {k for k in listed[0] if k == "queue_position" or k.startswith("estimate")}

    assert [{k: v for k, v in response.json().items() if k not in eta}] == [
        {k: v for k, v in item.items() if k not in eta} for item in listed
    ]
    assert listed[0]["queue_position"] is not None
    assert response.json()["placements"] == []
    assert [c["name"] for c in response.json()["containers"]] == ["main", "side"]


def test_a_batch_is_bounded_and_must_be_a_list(api, world):
    client = as_user(api, world["alice"])
    item = _item(world["queue_a"], "big")
    too_many = client.post(URL, {"jobs": [item] * 501}, format="json")
    assert too_many.status_code == 400
    assert list(too_many.json()["error"]["fields"]) == ["jobs.non_field_errors"]
    for bad in ({"jobs": item}, {"jobs": "x"}, {}, {"jobs": [None]}):
        response = client.post(URL, bad, format="json")
        assert response.status_code == 400, (bad, response.content)
    # another tenant's queue by name answers exactly as a queue that does not exist
    other = client.post(URL, {"jobs": [{**item, "queue": "team-b/default"}]}, format="json")
    ghost = client.post(URL, {"jobs": [{**item, "queue": "team-zz/default"}]}, format="json")
    assert other.status_code == ghost.status_code == 400
    assert other.json()["error"]["fields"]["jobs[0].queue"] == [
        "no queue 'team-b/default' among your queues"
    ]
    assert ghost.json()["error"]["fields"]["jobs[0].queue"] == [
        "no queue 'team-zz/default' among your queues"
    ]
    assert not Job.objects.filter(name="big").exists()


def test_only_the_batch_action_weighs_its_jobs(api, world, monkeypatch):
    from django.core.cache import cache

    from core.api.throttling import WriteRateThrottle

    cache.clear()
    monkeypatch.setattr(WriteRateThrottle, "rate", "3/min", raising=False)  # read at import
    client = as_user(api, world["alice"])
    # a single submission whose body happens to carry a long "jobs" list is one write (and a
    # 400 for the unknown field), not six
    junk = client.post(
        "/api/jobs/", {**_item(world["queue_a"], "w0"), "jobs": [1] * 6}, format="json"
    )
    assert junk.status_code == 400 and "jobs" in junk.json()["error"]["fields"]
    assert (
        client.post("/api/jobs/", _item(world["queue_a"], "w1"), format="json").status_code == 201
    )
    cache.clear()


def test_field_errors_and_never_fits_reasons_come_in_one_answer(api, world):
    client = as_user(api, world["alice"])
    huge = [{"device_count": 9, "cores_percent": 100}]
    items = [
        _item(world["queue_a"], "never-0", containers=huge),
        _item(world["queue_a"], "bad-1", cpu_milli=-5),
        _item(world["queue_a"], "fits-2"),
        _item(world["queue_a"], "never-3", containers=huge),
        _item(world["queue_b"], "other-4"),  # another tenant's queue: unknown
    ]
    response = client.post(URL, {"jobs": items}, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert set(error["fields"]) == {
        "jobs[0].reason",
        "jobs[1].cpu_milli",
        "jobs[3].reason",
        "jobs[4].queue",
    }
    assert "9" in error["fields"]["jobs[0].reason"][0]
    assert error["fields"]["jobs[3].reason"] == error["fields"]["jobs[0].reason"]
    assert "team-b" not in response.content.decode()
    assert not Job.objects.filter(name__in=[item["name"] for item in items]).exists()
