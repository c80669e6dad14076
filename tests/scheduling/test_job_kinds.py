"""Workload kinds through the REST API and admission cycles on a simulated cluster: inference
services scaled under quota and preempted only when preemptible, notebooks culled when idle,
stopped and resumed, lifetimes, training time limits, and the per-kind input rules."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from core.models import AuditEntry
from scheduling.choices import JobState, PlacementState
from scheduling.models import Job, JobEvent, Placement, PlacementDevice, Preemption
from scheduling.services.cluster_submission import reconcile_simulated, submit_to_cluster
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.eviction import enforce_max_runtime, release_due_terminations
from scheduling.services.job_kinds import enforce_time_limits, reconcile_services
from scheduling.services.usage import sync_ledger
from telemetry.exporters import POD_UTIL
from telemetry.models import Rollup
from telemetry.services.culling import cull_idle_notebooks, idle_cull_eta
from telemetry.services.rollups import MINUTE, floor_time
from tenants.models import LedgerInterval, Quota, QuotaUsage
from tests.builders import gpu_job, make_cluster, make_group, make_tenant, make_user

pytestmark = pytest.mark.django_db

GPU = {
    "name": "main",
    "device_count": 1,
    "memory_percent": 100,
    "cores_percent": 100,
    "image": "vllm/vllm-openai:v0.6.3",
}


@pytest.fixture
def world():
    """4 whole A100s (2 nodes x 2); team-a may use 3 (no borrowing), team-b 1."""
    make_cluster("c1", nodes=2, gpus=2)
    group = make_group("g1")
    team_a, queue_a = make_tenant("team-a", group, devices_milli=3000)
    Quota.objects.filter(tenant=team_a).update(borrowing_limit=0)
    team_b, queue_b = make_tenant("team-b", group, devices_milli=1000)
    client = APIClient()
    client.force_authenticate(make_user("alice", team_a))
    return group, (team_a, queue_a), (team_b, queue_b), client


def _cycle_and_submit(group) -> list[int]:
    admitted = run_admission_cycle(group.pk).admitted
    for job_id in admitted:
        submit_to_cluster(job_id)
    return admitted


def _devices_used(tenant, group) -> int:
    row = QuotaUsage.objects.filter(
        tenant=tenant, resource_group=group, dimension="devices"
    ).first()
    return row.amount if row else 0


def _service(client, queue, **extra) -> dict:
    body = {
        "queue": queue.pk,
        "name": "llama-serve",
        "kind": "inference",
        "port": 8000,
        "replicas": 1,
        "max_replicas": 4,
        "cpu_milli": 2000,
        "host_memory_mib": 8192,
        "containers": [GPU],
        **extra,
    }
    resp = client.post("/api/jobs/", body, format="json")
    assert resp.status_code == 201, resp.json()
    return resp.json()


def test_inference_scaled_1_to_3_gets_two_more_placements_under_quota(world):
    group, (team_a, queue_a), _b, client = world
    service = _service(client, queue_a)
    assert (service["kind"], service["state"], service["placements"]) == (
        "inference",
        "running",
        [],
    )
    assert service["service"]["desired"] == 1 and len(service["service"]["replica_jobs"]) == 1
    assert len(_cycle_and_submit(group)) == 1
    assert _devices_used(team_a, group) == 1000
    resp = client.post(f"/api/jobs/{service['id']}/scale/", {"replicas": 3}, format="json")
    assert resp.status_code == 200, resp.json()
    assert resp.json()["service"]["live"] == 3
    new = _cycle_and_submit(group)
    assert len(new) == 2  # two more placements, each admitted like any job
    assert _devices_used(team_a, group) == 3000
    replicas = Job.objects.filter(parent_id=service["id"])
    assert sorted(replicas.values_list("state", flat=True)) == ["running"] * 3
    assert (
        Placement.objects.filter(
            job__parent_id=service["id"], state=PlacementState.RUNNING, ready=True
        ).count()
        == 3
    )
    detail = client.get(f"/api/jobs/{service['id']}/").json()
    assert detail["service"] == {
        "desired": 3,
        "live": 3,
        "running": 3,
        "ready": 3,
        "phase": "ready",
        "replica_jobs": sorted(replicas.values_list("pk", flat=True)),
    }
    listed = client.get("/api/jobs/?kind=inference&replicas=false").json()["results"]
    assert [j["id"] for j in listed] == [service["id"]]
    listed = client.get(f"/api/jobs/?parent={service['id']}").json()["results"]
    assert len(listed) == 3 and {j["parent"] for j in listed} == {service["id"]}
    # a fourth replica is over the tenant's quota: queued with the quota reason
    client.post(f"/api/jobs/{service['id']}/scale/", {"replicas": 4}, format="json")
    assert _cycle_and_submit(group) == []
    pending = replicas.get(state=JobState.QUEUED)
    assert "devices: needs 1000" in pending.pending_reason
    # outside min/max: 400 with the field
    resp = client.post(f"/api/jobs/{service['id']}/scale/", {"replicas": 5}, format="json")
    assert resp.status_code == 400 and "replicas" in str(resp.json())
    # services never finish by duration in the simulator
    reconcile_simulated(timezone.now() + timedelta(days=2))
    assert replicas.filter(state=JobState.RUNNING).count() == 3


def test_replicas_carry_the_service_s_containers_and_per_job_settings_field_for_field(world):
    """A replica is its service's pod: device type filters, image, command and env of each
    container, and the per-job HAMi policy annotations and consolidation opt-in."""
    group, (_team_a, queue_a), _b, client = world
    container = {
        **GPU,
        "device_types": ["A100"],
        "device_types_exclude": ["A100-PCIE"],
        "command": ["vllm", "serve"],
        "env": {"HF_HOME": "/cache"},
    }
    annotations = {"hami.io/gpu-scheduler-policy": "binpack"}
    group.pod_policy_override = True
    group.save(update_fields=["pod_policy_override"])
    service = _service(
        client,
        queue_a,
        containers=[container],
        annotations=annotations,
        allow_consolidation=True,
        replicas=2,
    )
    replicas = list(Job.objects.filter(parent_id=service["id"]).order_by("pk"))
    assert len(replicas) == 2
    for replica in replicas:
        assert replica.annotations == annotations and replica.allow_consolidation is True
        (c,) = replica.containers.all()
        assert (c.device_types, c.device_types_exclude, c.command, c.env, c.image) == (
            ["A100"],
            ["A100-PCIE"],
            ["vllm", "serve"],
            {"HF_HOME": "/cache"},
            "vllm/vllm-openai:v0.6.3",
        )


@pytest.mark.parametrize("preemptible", [True, False])
def test_replica_lost_to_higher_priority_job_only_if_preemptible(world, preemptible):
    group, (team_a, queue_a), _b, client = world
    service = _service(client, queue_a, replicas=3, preemptible=preemptible)
    assert len(_cycle_and_submit(group)) == 3
    high = gpu_job(queue_a, "urgent-eval", count=1, memory_percent=100, cores=100, priority=100)
    report = run_admission_cycle(group.pk)
    replicas = Job.objects.filter(parent_id=service["id"])
    if preemptible:
        # preempt now, admit once the victim's pods are gone (issue 16)
        assert report.admitted == []
        (victim,) = report.preempted
        assert replicas.get(pk=victim).state == JobState.QUEUED  # requeued: replaced later
        assert Preemption.objects.get().victim_id == victim
        assert replicas.filter(state=JobState.RUNNING).count() == 2
        release_due_terminations(timezone.now() + timedelta(seconds=31))
        assert run_admission_cycle(group.pk).admitted == [high.pk]
        assert _devices_used(team_a, group) == 3000
        # capacity back: the lost replica is placed again
        client.post(f"/api/jobs/{high.pk}/cancel/")
        assert _cycle_and_submit(group) == [victim]
    else:
        assert report.admitted == [] and report.preempted == []
        assert replicas.filter(state=JobState.RUNNING).count() == 3
        high.refresh_from_db()
        assert high.state == JobState.QUEUED


def test_non_preemptible_service_is_admitted_only_within_nominal_quota(world):
    group, (team_a, queue_a), (_team_b, _qb), client = world
    Quota.objects.filter(tenant=team_a).update(borrowing_limit=None)  # may borrow team-b's
    service = _service(client, queue_a, replicas=3, preemptible=False)
    assert len(_cycle_and_submit(group)) == 3
    client.post(f"/api/jobs/{service['id']}/scale/", {"replicas": 4}, format="json")
    assert _cycle_and_submit(group) == []  # the 4th would borrow: not for non-preemptible
    preemptible = gpu_job(queue_a, "batch", count=1, memory_percent=100, cores=100)
    assert _cycle_and_submit(group) == [preemptible.pk]  # a preemptible job may borrow


def test_replica_that_ended_is_replaced_and_service_cancel_stops_all(world):
    group, _a, _b, client = world
    queue_a = _a[1]
    service = _service(client, queue_a, replicas=2)
    _cycle_and_submit(group)
    (gone, _other) = Job.objects.filter(parent_id=service["id"]).order_by("pk")
    Job.objects.filter(pk=gone.pk).update(state=JobState.FAILED)  # e.g. node lost, Never
    Placement.objects.filter(job=gone).update(state=PlacementState.FAILED)
    assert reconcile_services() == 1
    assert Job.objects.filter(parent_id=service["id"], state=JobState.QUEUED).count() == 1
    resp = client.post(f"/api/jobs/{service['id']}/cancel/")
    assert resp.json()["state"] == "cancelled"
    assert not Job.objects.filter(
        parent_id=service["id"], state__in=[JobState.QUEUED, JobState.ADMITTED, JobState.RUNNING]
    ).exists()
    assert not Placement.objects.filter(
        job__parent_id=service["id"],
        state__in=[PlacementState.RESERVED, PlacementState.SUBMITTED, PlacementState.RUNNING],
    ).exists()
    assert list(
        JobEvent.objects.filter(job_id=service["id"], kind="cancelled").values_list(
            "message", flat=True
        )
    ) == ["service stopped"]
    entries = AuditEntry.objects.filter(action="job.cancel", object_id=str(service["id"]))
    assert [(e.before, e.after) for e in entries] == [
        ({"state": "running"}, {"state": "cancelled"})
    ]
    # a cancel of a cancelled service moves nothing and writes nothing more
    assert client.post(f"/api/jobs/{service['id']}/cancel/").status_code == 409
    assert JobEvent.objects.filter(job_id=service["id"], kind="cancelled").count() == 1
    assert entries.count() == 1


def test_a_stopped_notebook_is_cancelled_at_once_with_its_event(world):
    from scheduling.services.job_kinds import stop_notebook

    group, (_team_a, queue_a), _b, client = world
    nb = client.post(
        "/api/jobs/",
        {"queue": queue_a.pk, "name": "nb", "kind": "notebook", "containers": [GPU]},
        format="json",
    ).json()
    _cycle_and_submit(group)
    stop_notebook(Job.objects.get(pk=nb["id"]))
    resp = client.post(f"/api/jobs/{nb['id']}/cancel/")
    assert resp.json()["state"] == "cancelled"
    assert list(
        JobEvent.objects.filter(job_id=nb["id"], kind="cancelled").values_list("message", flat=True)
    ) == ["stopped notebook deleted"]


def _idle_minutes(job, device, end, minutes: int, used: float) -> None:
    for i in range(1, minutes + 1):
        Rollup.objects.create(
            resolution_s=MINUTE,
            bucket=end - timedelta(minutes=i),
            metric=POD_UTIL,
            device=device,
            job=job,
            tenant=job.tenant,
            count=4,
            total=4 * used,
            minimum=used,
            maximum=used,
        )


def test_idle_notebook_is_culled_and_its_devices_freed(world):
    group, (team_a, queue_a), _b, client = world
    resp = client.post(
        "/api/jobs/",
        {
            "queue": queue_a.pk,
            "name": "alice-nb",
            "kind": "notebook",
            "idle_cull_s": 600,
            "max_runtime_s": 8 * 3600,
            "containers": [{**GPU, "image": "quay.io/jupyter/pytorch-notebook:2024-12-02"}],
        },
        format="json",
    )
    assert resp.status_code == 201, resp.json()
    nb = resp.json()
    assert (nb["port"], nb["restart_policy"], nb["pod_count"]) == (8888, "Always", 1)
    _cycle_and_submit(group)
    job = Job.objects.get(pk=nb["id"])
    assert job.state == JobState.RUNNING
    assert client.get(f"/api/jobs/{job.pk}/").json()["lifetime_left_s"] > 8 * 3600 - 60
    sync_ledger()
    assert LedgerInterval.objects.filter(job_id=job.pk, end__isnull=True).count() == 1
    device = PlacementDevice.objects.get(placement__job=job).device
    now = timezone.now()
    end = floor_time(now, MINUTE)
    _idle_minutes(job, device, end, 6, used=1.0)  # idle 6 of 10 minutes: not yet
    assert cull_idle_notebooks(now=now) == []
    since, left = idle_cull_eta(job, now=now)
    assert since == end - timedelta(minutes=6) and left == pytest.approx(240.0)
    Rollup.objects.all().delete()
    _idle_minutes(job, device, end, 12, used=1.0)
    (culled,) = cull_idle_notebooks(now=now)
    assert culled.job_id == job.pk
    job.refresh_from_db()
    assert job.state == JobState.STOPPED and job.pending_reason.startswith("culled: devices idle")
    placement = Placement.objects.get(job=job)
    assert placement.state == PlacementState.RELEASED
    assert not PlacementDevice.objects.filter(
        device=device,
        placement__state__in=[
            PlacementState.RESERVED,
            PlacementState.SUBMITTED,
            PlacementState.RUNNING,
        ],
    ).exists()
    run_admission_cycle(group.pk)  # settles the released usage
    assert _devices_used(team_a, group) == 0
    sync_ledger()
    assert not LedgerInterval.objects.filter(job_id=job.pk, end__isnull=True).exists()
    # resume asks for devices again; stop through the API frees them
    assert client.post(f"/api/jobs/{job.pk}/resume/").json()["state"] == "queued"
    assert _cycle_and_submit(group) == [job.pk]
    assert client.post(f"/api/jobs/{job.pk}/stop/").json()["state"] == "stopped"
    assert client.post(f"/api/jobs/{job.pk}/stop/").status_code == 409


def test_busy_notebook_is_kept_and_lifetime_stops_it(world):
    group, (_team_a, queue_a), _b, client = world
    nb = client.post(
        "/api/jobs/",
        {
            "queue": queue_a.pk,
            "name": "nb",
            "kind": "notebook",
            "idle_cull_s": 600,
            "max_runtime_s": 3600,
            "containers": [GPU],
        },
        format="json",
    ).json()
    _cycle_and_submit(group)
    job = Job.objects.get(pk=nb["id"])
    device = PlacementDevice.objects.get(placement__job=job).device
    now = timezone.now()
    _idle_minutes(job, device, floor_time(now, MINUTE), 12, used=40.0)
    assert cull_idle_notebooks(now=now) == []
    assert enforce_time_limits(now + timedelta(seconds=1800)) == []
    assert enforce_time_limits(now + timedelta(seconds=3700)) == [job.pk]
    job.refresh_from_db()
    assert job.state == JobState.STOPPED and "maximum lifetime" in job.pending_reason


def test_training_past_max_runtime_fails(world):
    group, (_a, queue_a), _b, client = world
    job = client.post(
        "/api/jobs/",
        {
            "queue": queue_a.pk,
            "name": "ft",
            "kind": "training",
            "workers": 2,
            "max_runtime_s": 600,
            "duration_s": 7200,
            "containers": [GPU],
        },
        format="json",
    ).json()
    assert job["pod_count"] == 2
    _cycle_and_submit(group)
    assert enforce_time_limits(timezone.now() + timedelta(seconds=900)) == []  # notebooks only
    assert enforce_max_runtime(timezone.now() + timedelta(seconds=900)) == {group.pk}
    row = Job.objects.get(pk=job["id"])
    assert row.state == JobState.FAILED
    assert row.pending_reason == "exceeded its maximum runtime of 600s"
    assert not Placement.objects.filter(job=row, state=PlacementState.RUNNING).exists()


def test_kind_rules_are_field_errors(world):
    _g, (_a, queue_a), _b, client = world
    base = {"queue": queue_a.pk, "name": "x", "containers": [GPU]}
    cases = [
        ({"kind": "training"}, {"workers"}),
        ({"kind": "training", "workers": 2, "min_workers": 3}, {"min_workers"}),
        ({"kind": "training", "workers": 2, "pod_count": 2}, {"pod_count"}),
        ({"kind": "inference"}, {"port"}),
        ({"kind": "inference", "port": 80, "replicas": 5, "max_replicas": 2}, {"replicas"}),
        ({"kind": "inference", "port": 80, "restart_policy": "Never"}, {"restart_policy"}),
        ({"kind": "notebook", "workers": 2}, {"workers"}),
        ({"kind": "batch", "containers": [{**GPU, "role": "launcher"}]}, {"containers"}),
        ({"volumes": [{"claim": "Data!", "mount_path": "data"}]}, {"volumes"}),
        ({"tolerations": [{"key": "gpu", "operator": "Exists", "value": "x"}]}, {"tolerations"}),
        ({"node_selector": {"bad key!": "x"}}, {"node_selector"}),
    ]
    for extra, fields in cases:
        resp = client.post("/api/jobs/", {**base, **extra}, format="json")
        assert resp.status_code == 400, (extra, resp.json())
        got = set(resp.json()["error"]["fields"])
        assert all(any(k == f or k.startswith(f + "[") for k in got) for f in fields), (extra, got)
    assert not Job.objects.exists()


def test_service_cost_per_replica_hour_and_stopped_notebook_costs_nothing(world):
    from telemetry.selectors import usage_intervals

    group, (team_a, queue_a), _b, client = world
    service = _service(client, queue_a, replicas=2)
    nb = client.post(
        "/api/jobs/",
        {"queue": queue_a.pk, "name": "nb", "kind": "notebook", "containers": [GPU]},
        format="json",
    ).json()
    _cycle_and_submit(group)
    t0 = timezone.now().replace(microsecond=0) - timedelta(hours=3)
    Placement.objects.filter(job__tenant=team_a).update(started_at=t0)
    notebook = Job.objects.get(pk=nb["id"])
    from scheduling.services.job_kinds import stop_notebook

    stop_notebook(notebook, now=t0 + timedelta(minutes=30))
    now = t0 + timedelta(hours=2)

    def hours(job_ids):
        rows = usage_intervals(t0, t0 + timedelta(days=1), [team_a.pk], now=now)
        return sum(
            (r.end - r.start).total_seconds() / 3600 * r.fraction_milli / 1000
            for r in rows
            if r.job_id in job_ids
        )

    replicas = list(Job.objects.filter(parent_id=service["id"]).values_list("pk", flat=True))
    assert hours(replicas) == pytest.approx(4.0)  # 2 replicas x 2 h, one device each
    assert hours([notebook.pk]) == pytest.approx(0.5)  # nothing after the stop
    now = t0 + timedelta(hours=3)  # an hour later the stopped notebook still cost 0.5 h
    assert hours([notebook.pk]) == pytest.approx(0.5)
    assert hours(replicas) == pytest.approx(6.0)


def test_job_page_shows_readiness_and_time_left_and_acts(world):
    from django.test import Client

    group, (team_a, queue_a), _b, api = world
    service = _service(api, queue_a, replicas=2)
    nb = api.post(
        "/api/jobs/",
        {
            "queue": queue_a.pk,
            "name": "lab",
            "kind": "notebook",
            "max_runtime_s": 7200,
            "containers": [GPU],
        },
        format="json",
    ).json()
    _cycle_and_submit(group)
    page = Client()
    page.force_login(make_user("bob", team_a))
    html = page.get(f"/jobs/{service['id']}/").content.decode()
    assert "2 ready / 2 running / 2 live of 2 desired" in html
    assert 'id="scale-service"' in html
    resp = page.post(f"/jobs/{service['id']}/scale/", {"replicas": "3"})
    assert resp.status_code == 302
    assert Job.objects.get(pk=service["id"]).replicas == 3
    html = page.get(f"/jobs/{nb['id']}/").content.decode()
    assert "Lifetime left" in html and ("1 h 59 min" in html or "2 h 00 min" in html)
    assert 'id="stop-notebook"' in html
    page.post(f"/jobs/{nb['id']}/stop/")
    assert Job.objects.get(pk=nb["id"]).state == JobState.STOPPED
    assert 'id="resume-notebook"' in page.get(f"/jobs/{nb['id']}/").content.decode()
    # the submit form takes every kind
    resp = page.post(
        "/jobs/new/",
        {
            "queue": queue_a.pk,
            "name": "svc2",
            "kind": "inference",
            "priority": 0,
            "pod_count": 1,
            "max_replicas": 2,
            "port": 9000,
            "cpu_milli": 1000,
            "host_memory_mib": 1024,
            "duration_s": 60,
            "vendor": "NVIDIA",
            "device_count": 1,
            "cores_percent": 10,
            "device_memory_mib": 1000,
            "image": "nginx:1.27",
            "non_preemptible": "on",
        },
    )
    assert resp.status_code == 302, resp.content.decode()[:2000]
    made = Job.objects.get(name="svc2")
    assert (
        made.kind,
        made.port,
        made.replicas_max,
        made.replica_jobs.count(),
        made.preemptible,
    ) == ("inference", 9000, 2, 1, False)
    resp = page.post(
        "/jobs/new/",
        {
            "queue": queue_a.pk,
            "name": "tr",
            "kind": "training",
            "priority": 0,
            "pod_count": 2,
            "min_count": 3,
            "cpu_milli": 1000,
            "host_memory_mib": 1024,
            "duration_s": 60,
            "vendor": "NVIDIA",
            "device_count": 1,
            "cores_percent": 10,
        },
    )
    assert resp.status_code == 200 and "Must not exceed workers." in resp.content.decode()


def test_demo_seed_runs_one_of_each_kind_per_tenant():
    from scheduling.services.demo import seed_demo, seed_demo_workloads

    seed_demo("demo-password-1")
    kinds = {}
    for tenant, kind in (
        Job.objects.filter(source="demo", parent__isnull=True)
        .exclude(kind="batch")
        .values_list("tenant__name", "kind")
    ):
        kinds.setdefault(tenant, []).append(kind)
    assert {t: sorted(k) for t, k in kinds.items()} == {
        t: ["inference", "notebook", "training"]
        for t in ("platform", "research", "team-nlp", "team-vision")
    }
    assert Job.objects.filter(source="demo", parent__isnull=False).count() == 8  # 2 each
    assert seed_demo_workloads() == 0  # idempotent
    for group_id in set(Job.objects.values_list("queue__resource_group_id", flat=True)):
        run_admission_cycle(group_id)
    assert Job.objects.filter(kind="notebook", state=JobState.ADMITTED).count() == 4


def test_dry_run_of_a_training_job_places_the_launcher_and_the_workers(world):
    _g, (_a, queue_a), _b, client = world
    body = client.post(
        "/api/dry-run/",
        {
            "queue": queue_a.pk,
            "name": "mpi",
            "kind": "training",
            "workers": 2,
            "launcher_cpu_milli": 500,
            "launcher_memory_mib": 512,
            "node_selector": {"pool": "c1"},
            "containers": [
                {"name": "launcher", "role": "launcher", "image": "mpi:1"},
                {**GPU, "role": "worker"},
            ],
        },
        format="json",
    ).json()
    assert body["admitted"] is True, body
    assert len(body["placement"]) == 3
    assert sum(len(p["devices"]) for p in body["placement"]) == 2  # the launcher has none
    body = client.post(
        "/api/dry-run/",
        {
            "queue": queue_a.pk,
            "name": "nowhere",
            "kind": "training",
            "workers": 1,
            "node_selector": {"pool": "elsewhere"},
            "containers": [GPU],
        },
        format="json",
    ).json()
    assert body["admitted"] is False
