"""REST API: submit, list, read, cancel, inventory, schema; auth and tenant isolation."""

import pytest
from rest_framework.authtoken.models import Token

from scheduling.models import Job, PriorityClass
from tests.builders import gpu_job, make_cluster, make_group, make_tenant, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    make_cluster("c1", nodes=1, gpus=2)
    group = make_group("g1")
    team_a, queue_a = make_tenant("team-a", group, devices_milli=10_000)
    team_b, queue_b = make_tenant("team-b", group, devices_milli=10_000)
    PriorityClass.objects.create(name="batch-high", value=5)
    return {
        "queue_a": queue_a,
        "queue_b": queue_b,
        "alice": make_user("alice", team_a, "member"),
        "victor": make_user("victor", team_a, "viewer"),
        "bob": make_user("bob", team_b, "member"),
    }


def _payload(queue, **extra):
    body = {
        "queue": queue.pk,
        "name": "finetune-7b",
        "priority_class": "batch-high",
        "cpu_milli": 4000,
        "host_memory_mib": 16384,
        "duration_s": 120,
        "containers": [
            {
                "name": "main",
                "device_count": 1,
                "device_memory_mib": 20480,
                "cores_percent": 30,
                "image": "registry.local/llm/finetune:1.2",
                "command": ["python", "train.py"],
                "env": {"MODEL": "7b"},
            }
        ],
        "min_runtime_s": 300,
        "restart_policy": "OnFailure",
    }
    body.update(extra)
    return body


def test_submit_with_token_creates_a_queued_job(api, world):
    token = Token.objects.create(user=world["alice"])
    api.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    response = api.post("/api/jobs/", _payload(world["queue_a"]), format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["state"] == "queued"
    assert body["tenant"] == "team-a"
    assert body["resource_group"] == "g1"
    assert body["containers"] == [
        {
            "name": "main",
            "init": False,
            "vendor": "NVIDIA",
            "device_count": 1,
            "device_memory_mib": 20480,
            "memory_percent": None,
            "cores_percent": 30,
            "device_types": [],
            "device_types_exclude": [],
            "image": "registry.local/llm/finetune:1.2",
            "command": ["python", "train.py"],
            "args": [],
            "env": {"MODEL": "7b"},
            "role": "",
        }
    ]
    job = Job.objects.get(pk=body["id"])
    assert (job.priority, job.cpu_milli, job.submitted_by) == (5, 4000, world["alice"])
    assert (job.min_runtime_s, job.restart_policy, job.preemptible, job.on_preemption) == (
        300.0,
        "OnFailure",
        True,
        "requeue",
    )


def test_submit_reports_field_errors(api, world):
    api.force_authenticate(world["alice"])
    bad = _payload(
        world["queue_a"],
        name="",
        containers=[
            {
                "device_count": -1,
                "device_memory_mib": 10,
                "memory_percent": 50,
                "cores_percent": 150,
            }
        ],
    )
    response = api.post("/api/jobs/", bad, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert set(error["fields"]) == {
        "name",
        "containers[0].device_count",
        "containers[0].cores_percent",
    }
    assert Job.objects.count() == 0


def test_submit_rejects_bad_env_and_policies(api, world):
    api.force_authenticate(world["alice"])
    bad = _payload(
        world["queue_a"],
        restart_policy="Always",
        on_preemption="explode",
        containers=[{"device_count": 1, "env": {"1BAD": "x"}}],
    )
    response = api.post("/api/jobs/", bad, format="json")
    assert response.status_code == 400
    assert set(response.json()["error"]["fields"]) == {
        "restart_policy",
        "on_preemption",
        "containers[0].env",
    }
    assert Job.objects.count() == 0


def test_submit_rejects_memory_in_both_units(api, world):
    api.force_authenticate(world["alice"])
    bad = _payload(
        world["queue_a"],
        containers=[{"device_count": 1, "device_memory_mib": 1024, "memory_percent": 50}],
    )
    response = api.post("/api/jobs/", bad, format="json")
    assert response.status_code == 400
    assert "containers[0].memory_percent" in response.json()["error"]["fields"]


def test_submit_to_another_tenants_queue_is_a_field_error_not_a_leak(api, world):
    api.force_authenticate(world["alice"])
    response = api.post("/api/jobs/", _payload(world["queue_b"]), format="json")
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == ["queue"]
    assert "team-b" not in response.content.decode()


def test_anonymous_gets_401(api, world):
    assert api.get("/api/jobs/").status_code == 401
    assert api.post("/api/jobs/", _payload(world["queue_a"]), format="json").status_code == 401


def test_viewer_cannot_submit_or_cancel(api, world):
    job = gpu_job(world["queue_a"], count=1, cores=10, memory_mib=1024)
    api.force_authenticate(world["victor"])
    assert api.post("/api/jobs/", _payload(world["queue_a"]), format="json").status_code == 403
    assert api.post(f"/api/jobs/{job.pk}/cancel/").status_code == 403
    assert api.get(f"/api/jobs/{job.pk}/").status_code == 200


def test_other_tenants_job_is_404_everywhere(api, world):
    job = gpu_job(world["queue_a"], count=1, cores=10, memory_mib=1024)
    api.force_authenticate(world["bob"])
    assert api.get(f"/api/jobs/{job.pk}/").status_code == 404
    assert api.post(f"/api/jobs/{job.pk}/cancel/").status_code == 404
    assert api.get(f"/api/jobs/{job.pk}/events/").status_code == 404
    listing = api.get("/api/jobs/").json()
    assert listing["count"] == 0


def test_list_filters_and_pending_reason(api, world):
    gpu_job(world["queue_a"], "a1", count=1, cores=10, memory_mib=1024)
    j2 = gpu_job(world["queue_a"], "a2", count=1, cores=10, memory_mib=1024)
    Job.objects.filter(pk=j2.pk).update(pending_reason="tenant team-a ... needs 1000")
    gpu_job(world["queue_b"], "b1", count=1, cores=10, memory_mib=1024)
    api.force_authenticate(world["alice"])
    body = api.get("/api/jobs/", {"state": "queued"}).json()
    assert body["count"] == 2
    assert {j["name"]: j["pending_reason"] for j in body["results"]} == {
        "a1": "",
        "a2": "tenant team-a ... needs 1000",
    }
    assert api.get("/api/jobs/", {"name": "a2"}).json()["count"] == 1


def test_cancel_and_events(api, world):
    job = gpu_job(world["queue_a"], count=1, cores=10, memory_mib=1024)
    api.force_authenticate(world["alice"])
    response = api.post(f"/api/jobs/{job.pk}/cancel/")
    assert response.status_code == 200
    assert response.json()["state"] == "cancelled"
    again = api.post(f"/api/jobs/{job.pk}/cancel/")
    assert again.status_code == 409
    assert again.json()["error"]["fields"] == {"state": [f"job {job.pk} is already cancelled"]}
    kinds = [e["kind"] for e in api.get(f"/api/jobs/{job.pk}/events/").json()]
    assert kinds == ["queued", "cancelled"]


def test_nodes_and_devices(api, world):
    api.force_authenticate(world["bob"])
    nodes = api.get("/api/nodes/").json()
    assert [(n["name"], n["device_count"]) for n in nodes["results"]] == [("c1-n0", 2)]
    devices = api.get("/api/devices/", {"node": "c1-n0"}).json()
    assert [d["uuid"] for d in devices["results"]] == ["GPU-c1-0-0", "GPU-c1-0-1"]
    assert devices["results"][0]["model"] == "NVIDIA-A100-SXM4-80GB"


def test_openapi_schema_is_served(api, world):
    api.force_authenticate(world["alice"])
    response = api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema = response.json()
    assert "/api/jobs/" in schema["paths"]
    assert "/api/jobs/{id}/cancel/" in schema["paths"]


def test_queues_are_tenant_scoped(api, world):
    api.force_authenticate(world["alice"])
    body = api.get("/api/queues/").json()
    assert [(q["tenant"], q["name"], q["resource_group"]) for q in body["results"]] == [
        ("team-a", "default", "g1")
    ]


def test_preemption_by_another_tenant_is_anonymous_to_the_victim(api, world):
    from django.utils import timezone

    from scheduling.models import Preemption

    victim = gpu_job(world["queue_a"], "victim", count=1, cores=10, memory_mib=1024)
    preemptor = gpu_job(world["queue_b"], "secret-b-job", count=1, cores=10, memory_mib=1024)
    now = timezone.now()
    Preemption.objects.create(
        victim=victim,
        preemptor=preemptor,
        victim_tenant="team-a",
        preemptor_tenant="team-b",
        reason="InCohortReclamation",
        message=f"reclaimed by tenant team-b for {preemptor.pk}",
        time=now,
        evict_by=now,
        outcome="requeued",
    )
    api.force_authenticate(world["alice"])
    body = api.get(f"/api/jobs/{victim.pk}/preemptions/").json()
    assert body == [
        {
            "victim": victim.pk,
            "preemptor": None,
            "victim_tenant": "team-a",
            "preemptor_tenant": "another tenant",
            "reason": "InCohortReclamation",
            "message": "capacity this job borrowed from the cohort was reclaimed for its owner",
            "time": body[0]["time"],
            "evict_by": body[0]["evict_by"],
            "outcome": "requeued",
        }
    ]
    assert "team-b" not in str(body) and "secret" not in str(body)


def test_api_docs_page_uses_no_cdn(api, world):
    from django.test import Client

    client = Client()
    client.force_login(world["alice"])
    html = client.get("/api/docs/").content.decode()
    assert "swagger-ui" in html
    assert "cdn.jsdelivr.net" not in html and "unpkg.com" not in html
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/" in html
