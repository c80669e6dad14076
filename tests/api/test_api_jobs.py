"""Jobs API: submit, list, detail, cancel, events -- 201/200, 400, 401, 403, 404; audit."""

import pytest

from core.models import AuditEntry
from scheduling.models import Job
from tests.api.test_api_directory import as_user

pytestmark = pytest.mark.django_db


def _payload(queue, **extra):
    body = {
        "queue": queue.pk,
        "name": "eval-run",
        "cpu_milli": 2000,
        "host_memory_mib": 8192,
        "containers": [{"device_count": 1, "device_memory_mib": 10240, "cores_percent": 20}],
    }
    body.update(extra)
    return body


def test_submit_is_audited_with_the_actor(api, world):
    response = as_user(api, world["alice"]).post(
        "/api/jobs/", _payload(world["queue_a"]), format="json"
    )
    assert response.status_code == 201, response.content
    entry = AuditEntry.objects.get(action="job.submit", object_id=str(response.json()["id"]))
    assert (entry.actor_name, entry.tenant_id) == ("alice", world["team_a"].pk)
    assert entry.after["containers"][0]["device_memory_mib"] == 10240


def test_submit_errors(api, world):
    client = as_user(api, world["alice"])
    bad = client.post(
        "/api/jobs/",
        _payload(
            world["queue_a"],
            name="",
            containers=[{"device_count": 1, "device_memory_mib": 10, "memory_percent": 10}],
        ),
        format="json",
    )
    assert bad.status_code == 400
    assert set(bad.json()["error"]["fields"]) == {"name", "containers[0].memory_percent"}
    other_queue = client.post("/api/jobs/", _payload(world["queue_b"]), format="json")
    assert other_queue.status_code == 400
    assert set(other_queue.json()["error"]["fields"]) == {"queue"}
    assert "team-b" not in other_queue.content.decode()
    assert (
        api.credentials() is None
        and api.post("/api/jobs/", _payload(world["queue_a"]), format="json").status_code == 401
    )
    viewer = as_user(api, world["victor"]).post(
        "/api/jobs/", _payload(world["queue_a"]), format="json"
    )
    assert viewer.status_code == 403
    assert not Job.objects.filter(name="eval-run").exists()


def test_command_and_args_keep_their_whitespace_as_kubernetes_does(api, world):
    """A container's command and args reach the pod as written (Kubernetes keeps them
    verbatim): a blank argument or one of only a no-break space is kept, not trimmed to a
    refusal the schema does not state (found by the schemathesis run: ``"\u00a0"``)."""
    command = ["python", "\u00a0train.py "]
    args = ["--sep", " ", "", "\u00a0"]
    body = _payload(world["queue_a"])
    body["containers"][0].update(command=command, args=args)
    response = as_user(api, world["alice"]).post("/api/jobs/", body, format="json")
    assert response.status_code == 201, response.content
    container = Job.objects.get(pk=response.json()["id"]).containers.get()
    assert (container.command, container.args) == (command, args)


def test_list_detail_events_scoped(api, world):
    client = as_user(api, world["bob"])
    names = [j["name"] for j in client.get("/api/jobs/").json()["results"]]
    assert names == ["b-secret"]
    for path in ("", "events/"):
        response = client.get(f"/api/jobs/{world['a_train'].pk}/{path}")
        assert response.status_code == 404
        assert "a-train" not in response.content.decode()
    events = client.get(f"/api/jobs/{world['b_secret'].pk}/events/").json()
    assert [e["kind"] for e in events][:1] == ["queued"]


def test_cancel_by_role(api, world):
    job = world["a_wait"]
    assert as_user(api, world["victor"]).post(f"/api/jobs/{job.pk}/cancel/").status_code == 403
    assert as_user(api, world["bob"]).post(f"/api/jobs/{job.pk}/cancel/").status_code == 404
    done = as_user(api, world["alice"]).post(f"/api/jobs/{job.pk}/cancel/")
    assert done.status_code == 200 and done.json()["state"] == "cancelled"
    again = as_user(api, world["alice"]).post(f"/api/jobs/{job.pk}/cancel/")
    assert again.status_code == 409
    assert again.json()["error"]["fields"] == {"state": [f"job {job.pk} is already cancelled"]}
    entry = AuditEntry.objects.get(action="job.cancel", object_id=str(job.pk))
    assert (entry.before, entry.after, entry.actor_name) == (
        {"state": "queued"},
        {"state": "cancelled"},
        "alice",
    )


def test_write_endpoints_are_throttled(api, world, settings):
    from django.core.cache import cache

    keys = [f"throttle_writes_{world['root'].pk}"]
    cache.delete_many(keys)
    rates = {"writes": "2/min", "batch_jobs": "10/min"}  # the settings fixture restores them
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": rates}
    client = as_user(api, world["root"])
    codes = [
        client.post("/api/tenants/", {"name": f"t-{i}"}, format="json").status_code
        for i in range(3)
    ]
    assert codes == [201, 201, 429]
    assert client.get("/api/tenants/").status_code == 200  # reads are never throttled
    codes = [
        client.post("/api/members/", {"tenant": "team-a", "user": "bob"}, format="json").status_code
    ]
    assert codes == [429]
    cache.delete_many(keys)
