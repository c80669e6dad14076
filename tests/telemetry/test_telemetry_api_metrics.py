"""Simulated utilisation feeding charts, efficiency and idle flags, the tenant-scoped API,
and the console's own metrics at /metrics."""

from datetime import UTC, datetime, timedelta

import pytest
from django.test import override_settings

from scheduling.models import Cluster
from telemetry import selectors
from telemetry.attribution import AttributedSample
from telemetry.metrics import reason_category, record_cycle
from telemetry.services.device_health import apply_health
from telemetry.services.gauges import compute_group_gauges
from telemetry.services.idle_jobs import flag_idle_jobs
from telemetry.services.ingestion import store_samples
from telemetry.services.rollups import rollup
from telemetry.services.synthetic import synthetic_tick
from telemetry.synthetic import profile_of
from tests.builders import make_cluster, make_group, make_tenant, make_user
from tests.telemetry.dbhelpers import devices, place

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.telemetry.urls")]
T0 = datetime(2025, 3, 10, 8, 0, tzinfo=UTC)


@pytest.fixture
def world():
    cluster = Cluster.objects.create(name="sim", backend="simulated")
    devices(cluster, "sim-n0", ["GPU-s-0", "GPU-s-1", "GPU-s-2"])
    group = make_group("g-sim", models=())
    team_a, qa = make_tenant("team-a", group, devices_milli=4000)
    team_b, qb = make_tenant("team-b", group, devices_milli=4000)
    busy, _ = place(qa, "busy", [("GPU-s-0", 81920, 100)], started=T0)
    idle, _ = place(qb, "notebook", [("GPU-s-1", 20480, 30)], started=T0)
    return {"team_a": team_a, "team_b": team_b, "busy": busy, "idle": idle}


def _feed(job, device, minutes, util, memory):
    for m in range(minutes):
        now = T0 + timedelta(minutes=m, seconds=10)
        store_samples(
            [
                AttributedSample(
                    "util_percent",
                    util,
                    "attributed",
                    "",
                    device.pk,
                    device.uuid,
                    None,
                    job.pk,
                    job.tenant_id,
                ),
                AttributedSample(
                    "memory_used_mib",
                    memory,
                    "attributed",
                    "",
                    device.pk,
                    device.uuid,
                    None,
                    job.pk,
                    job.tenant_id,
                ),
            ],
            now,
        )


@override_settings(TELEMETRY_IDLE_AFTER_S=1800, TELEMETRY_IDLE_THRESHOLD_PERCENT=5)
def test_efficiency_and_idle_flags_per_job_and_tenant(api, world):
    from scheduling.models import Device

    gpu0, gpu1 = Device.objects.get(uuid="GPU-s-0"), Device.objects.get(uuid="GPU-s-1")
    _feed(world["busy"], gpu0, 40, 80.0, 61440.0)
    _feed(world["idle"], gpu1, 40, 1.0, 4096.0)
    now = T0 + timedelta(minutes=40, seconds=30)
    rollup(now=now)
    assert flag_idle_jobs(now=now) == [world["idle"].pk]
    row = selectors.job_efficiency(world["busy"], T0, now)
    e = row.efficiency
    assert (e.allocated_memory_mib, e.allocated_cores_percent) == (81920, 100)
    assert (e.used_memory_mib, e.used_cores_percent, e.cores_ratio) == (61440.0, 80.0, 0.8)
    assert row.idle_since is None
    alice = make_user("alice", world["team_a"], "member")
    api.force_authenticate(alice)
    mine = api.get(
        f"/api/telemetry/jobs/{world['busy'].pk}/efficiency/"
        f"?start=2025-03-10T08:00:00Z&end=2025-03-10T08:41:00Z"
    ).json()
    assert (mine["used_cores_percent"], mine["memory_ratio"], mine["tenant"]) == (
        80.0,
        0.75,
        "team-a",
    )
    theirs = api.get(f"/api/telemetry/jobs/{world['idle'].pk}/efficiency/")
    assert theirs.status_code == 404  # another tenant's job does not exist for alice
    assert api.get("/api/telemetry/idle-jobs/").json() == []
    bob = make_user("bob", world["team_b"], "viewer")
    api.force_authenticate(bob)
    flagged = api.get("/api/telemetry/idle-jobs/").json()
    assert [
        (f["job_name"], f["allocated_cores_percent"], f["used_cores_percent"]) for f in flagged
    ] == [("notebook", 30, 1.0)]
    per_tenant = api.get(
        "/api/telemetry/efficiency/?start=2025-03-10T08:00:00Z&end=2025-03-10T08:41:00Z"
    ).json()
    assert [
        (t["tenant"], t["jobs"], t["idle_jobs"], t["used_cores_percent"]) for t in per_tenant
    ] == [("team-b", 1, 1, 1.0)]
    assert api.get(f"/api/telemetry/efficiency/?tenant={world['team_a'].pk}").status_code == 404
    # the busy job picks up again: its flag would go, the notebook's stays
    assert flag_idle_jobs(now=now) == [world["idle"].pk]


def test_simulated_ticks_feed_device_charts_and_health(api, world):
    for s in range(0, 600, 15):
        synthetic_tick(now=T0 + timedelta(seconds=s))
    rollup(now=T0 + timedelta(minutes=11))
    from scheduling.models import Device

    gpu0 = Device.objects.get(uuid="GPU-s-0")
    charts = selectors.device_utilisation(gpu0.pk, T0, T0 + timedelta(minutes=10))
    assert [len(charts[m]) for m in selectors.CHART_METRICS] == [10, 10, 10, 10]
    assert all(0 <= p.mean <= 100 for p in charts["util_percent"])
    gpu2 = Device.objects.get(uuid="GPU-s-2")  # idle card still reports temperature
    assert (
        len(selectors.device_series(gpu2.pk, "temperature_c", T0, T0 + timedelta(minutes=10))) == 10
    )
    latest = selectors.latest_device_values([gpu0.pk, gpu2.pk], now=T0 + timedelta(minutes=11))
    assert latest[gpu2.pk]["util_percent"] == 0.0
    notebook = selectors.job_efficiency(world["idle"], T0, T0 + timedelta(minutes=10))
    used = notebook.efficiency.used_cores_percent
    assert used is not None and used <= 30  # never above what the pod booked
    assert (profile_of(world["idle"].placements.get().pk) == "idle") == (used < 5)
    url = (
        "/api/telemetry/devices/GPU-s-0/utilisation/?start=2025-03-10T08:00:00Z"
        "&end=2025-03-10T08:10:00Z"
    )
    api.force_authenticate(make_user("viewer", world["team_a"], "viewer"))
    assert api.get(url).status_code == 403  # device-level series mix every tenant's work
    api.force_authenticate(make_user("ops", is_superuser=True))
    body = api.get(url).json()
    assert body["resolution_s"] == 60 and len(body["series"]["temperature_c"]) == 10
    health = api.get("/api/telemetry/devices/GPU-s-0/health/").json()
    assert (health["healthy"], health["events"], health["node"]) == (True, [], "sim-n0")
    assert api.get("/api/telemetry/devices/NOPE/health/").status_code == 404
    assert api.get("/api/telemetry/devices/GPU-s-0/utilisation/?start=yesterday").status_code == 400


def test_health_clear_is_for_admins(api, world):
    from scheduling.models import Device

    gpu = Device.objects.get(uuid="GPU-s-2")
    apply_health({gpu.pk: {"ecc_dbe_total": 1}}, now=T0)
    apply_health({gpu.pk: {"ecc_dbe_total": 4}}, now=T0 + timedelta(minutes=1))
    gpu.refresh_from_db()
    assert gpu.healthy is False
    api.force_authenticate(make_user("alice", world["team_a"], "tenant_admin"))
    assert api.post("/api/telemetry/devices/GPU-s-2/health/clear/").status_code == 403
    api.force_authenticate(make_user("root", is_superuser=True, is_staff=True))
    cleared = api.post("/api/telemetry/devices/GPU-s-2/health/clear/").json()
    assert (cleared["healthy"], cleared["reasons"]) == (True, {})
    gpu.refresh_from_db()
    assert gpu.healthy is True
    kinds = [e["kind"] for e in api.get("/api/telemetry/devices/GPU-s-2/health/").json()["events"]]
    assert kinds == ["cleared", "ecc"]


def test_console_metrics_at_metrics(client, world, settings):
    # Prometheus' credentials (console.metrics): without them the page is a 401
    settings.METRICS_TOKEN = "scrape-token-0123456789"
    assert client.get("/metrics").status_code == 401
    make_cluster("m1", nodes=1, gpus=2)
    group = make_group("metrics-g", selector={"pool": "m1"})
    tenant, queue = make_tenant("team-m", group, devices_milli=1000)
    from tests.builders import gpu_job

    job = gpu_job(queue, "waiting", count=1)
    type(job).objects.filter(pk=job.pk).update(
        pending_reason="tenant team-m, group metrics-g, flavor *, devices: needs 1000, free 0 "
        "of nominal 1000"
    )
    record_cycle("metrics-g", 0.03, admitted=2)
    record_cycle("metrics-g", 0.7)
    compute_group_gauges(now=T0)
    text = client.get(
        "/metrics", HTTP_AUTHORIZATION="Bearer scrape-token-0123456789"
    ).content.decode()
    assert 'console_queue_depth{resource_group="metrics-g",tenant="team-m"} 1.0' in text
    assert 'console_pending_jobs{reason="quota",resource_group="metrics-g"} 1.0' in text
    assert (
        'console_admission_cycle_duration_seconds_bucket{le="0.05",resource_group="metrics-g"} 1.0'
    ) in text
    assert 'console_admission_cycle_duration_seconds_count{resource_group="metrics-g"} 2.0' in text
    # g-sim holds every device (3 sim + 2 m1): (100 + 30) / 500 booked cores
    assert 'console_allocation_ratio{resource_group="g-sim"} 0.26' in text
    assert 'console_healthy_capacity_gpus{resource_group="metrics-g"} 2.0' in text
    assert 'console_guaranteed_gpus{resource_group="metrics-g"} 1.0' in text
    assert 'console_fragmentation_rate{resource_group="metrics-g"}' in text


@pytest.mark.parametrize(
    ("reason", "category"),
    [
        ("", "none"),
        ("tenant t has no quota in group g", "no_quota"),
        ("tenant t, group g, flavor *, devices: needs 1000, free 0 of nominal 0", "quota"),
        ("0/3 nodes fit; 3 node(s): insufficient memory", "unschedulable"),
        ("waiting behind the head of its StrictFIFO queue", "strict_fifo"),
        ("something new", "other"),
    ],
)
def test_reason_categories(reason, category):
    assert reason_category(reason) == category
