"""The README's inference example on the demo (issue 30): alice submits ``qwen-chat``
(non-preemptible, 1 replica) to team-nlp's ``nvidia-shared`` queue while the demo's stream
of sample jobs keeps the cohort busy, scales it to 3, and after admission cycles the three
replicas are placed and ready; while they are not, the service says so (``starting`` /
``degraded`` with ready/desired counts), never plainly ``running``."""

from __future__ import annotations

import random
import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from rest_framework.test import APIClient

from scheduling.services.cluster_submission import submit_to_cluster
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.demo import seed_demo, submit_demo_job
from scheduling.services.eviction import release_due_terminations
from tenants.models import ResourceGroup

pytestmark = pytest.mark.django_db

# The README's body, field for field ("Inference service").
README_SERVICE = {
    "name": "qwen-chat",
    "kind": "inference",
    "port": 8000,
    "replicas": 1,
    "max_replicas": 4,
    "preemptible": False,
    "cpu_milli": 4000,
    "host_memory_mib": 16384,
    "containers": [
        {
            "name": "vllm",
            "image": "vllm/vllm-openai:v0.6.3",
            "args": ["--model", "Qwen/Qwen2.5-7B-Instruct"],
            "device_count": 1,
            "device_memory_mib": 24576,
            "cores_percent": 50,
        }
    ],
}


def _cycles(rounds: int = 3, *, after_grace: bool = False) -> None:
    """Admission cycles of every demo group, their admitted jobs submitted to the simulated
    cluster; with ``after_grace`` the pods of preempted jobs first end (their grace passed)."""
    for _ in range(rounds):
        if after_grace:
            release_due_terminations(timezone.now() + timedelta(seconds=31))
        for group_id in ResourceGroup.objects.values_list("pk", flat=True):
            for job_id in run_admission_cycle(group_id).admitted:
                submit_to_cluster(job_id)


@pytest.fixture
def busy_demo():
    """The demo after its stream submitted 60 sample jobs, each followed by cycles (none
    finishes: no time passes), so the demo cluster's cohort is as busy as the stream makes it."""
    seed_demo("demo-password-1")
    rng = random.Random(30)  # noqa: S311 - reproducible sample jobs
    for _ in range(60):
        submit_demo_job(rng)
        _cycles(1)
    api = APIClient()
    api.force_authenticate(get_user_model().objects.get(username="alice"))
    queue = [q for q in api.get("/api/queues/").json()["results"] if q["name"] == "nvidia-shared"]
    assert len(queue) == 1
    return api, queue[0]["id"]


def test_readme_inference_example_gets_three_ready_replicas_on_the_busy_demo(busy_demo):
    api, queue = busy_demo
    made = api.post("/api/jobs/", {"queue": queue, **README_SERVICE}, format="json")
    assert made.status_code == 201, made.json()
    service = made.json()["id"]
    _cycles(after_grace=True)
    scaled = api.post(f"/api/jobs/{service}/scale/", {"replicas": 3}, format="json")
    assert scaled.status_code == 200, scaled.json()
    _cycles(after_grace=True)
    detail = api.get(f"/api/jobs/{service}/").json()
    replicas = detail["service"]["replica_jobs"]
    shown = [api.get(f"/api/jobs/{r}/").json() for r in replicas]
    assert [r["state"] for r in shown] == ["running"] * 3, [r["pending_reason"] for r in shown]
    assert {k: detail["service"][k] for k in ("desired", "live", "running", "ready")} == {
        "desired": 3,
        "live": 3,
        "running": 3,
        "ready": 3,
    }
    assert detail["service"]["phase"] == "ready"
    for replica in shown:
        placements = replica["placements"]
        assert [p["state"] for p in placements] == ["running"] and placements[0]["node"]


def _badges(client, service_id: int) -> tuple[str, str]:
    """The service's state badge on its job page and on its row of the job list."""
    page = client.get(f"/jobs/{service_id}/").content.decode()
    detail = re.search(r'id="job-state"[^>]*>([^<]*)<', page).group(1)
    listed = client.get("/jobs/", {"kind": "inference"}).content.decode()
    row = re.search(
        rf'href="/jobs/{service_id}/">qwen-chat</a>.*?class="badge job-state"[^>]*>([^<]*)<',
        listed,
        re.S,
    )
    return detail, row.group(1)


def test_service_says_starting_then_degraded_until_its_replicas_are_ready(busy_demo, client):
    api, queue = busy_demo
    client.force_login(get_user_model().objects.get(username="alice"))
    service = api.post("/api/jobs/", {"queue": queue, **README_SERVICE}, format="json").json()
    assert service["state"] == "running"  # the service object is up; its replicas are not
    assert service["service"]["phase"] == "starting"
    assert service["service"]["ready"] == 0 and service["service"]["desired"] == 1
    assert _badges(client, service["id"]) == ("starting (0/1 ready)",) * 2
    _cycles(after_grace=True)
    assert _badges(client, service["id"]) == ("ready (1/1 ready)",) * 2
    api.post(f"/api/jobs/{service['id']}/scale/", {"replicas": 3}, format="json")
    detail = api.get(f"/api/jobs/{service['id']}/").json()["service"]
    assert (detail["phase"], detail["ready"], detail["desired"]) == ("degraded", 1, 3)
    assert _badges(client, service["id"]) == ("degraded (1/3 ready)",) * 2
    api.post(f"/api/jobs/{service['id']}/cancel/", format="json")
    assert api.get(f"/api/jobs/{service['id']}/").json()["service"]["phase"] == "stopped"
    assert _badges(client, service["id"]) == ("cancelled",) * 2
