"""Scrapes over HTTP (a local server), attribution against placements, failures per target,
device health by serial across node moves, capacity alerts."""

from datetime import UTC, datetime, timedelta

import pytest

from scheduling.models import Cluster, Device, Node
from scheduling.selectors.snapshot import build_cluster_snapshot
from telemetry.models import DeviceHealthEvent, Sample, ScrapeTarget
from telemetry.selectors import device_health_history
from telemetry.services.device_health import apply_health
from telemetry.services.gauges import compute_group_gauges
from telemetry.services.ingestion import ingest_payload
from telemetry.services.scraping import scrape_all, scrape_target
from tests.builders import make_cluster, make_group, make_tenant
from tests.telemetry import payloads as P
from tests.telemetry.dbhelpers import devices, place

pytestmark = pytest.mark.django_db
NOW = datetime(2025, 3, 10, 12, 0, tzinfo=UTC)


@pytest.fixture
def world():
    cluster = Cluster.objects.create(name="prod", backend="kubernetes")
    group = make_group("g1", models=())
    team_a, queue_a = make_tenant("team-a", group, devices_milli=4000)
    team_b, queue_b = make_tenant("team-b", group, devices_milli=4000)
    return {
        "cluster": cluster,
        "group": group,
        "qa": queue_a,
        "qb": queue_b,
        "team_a": team_a,
        "team_b": team_b,
    }


def _target(world, base, path, kind, timeout_s=2.0, name=None):
    return ScrapeTarget.objects.create(
        cluster=world["cluster"], name=name or kind, kind=kind, url=base + path, timeout_s=timeout_s
    )


def _samples(target):
    return sorted(
        (s.metric, s.status, s.reason, s.job_id, round(s.value, 3))
        for s in Sample.objects.filter(target=target)
    )


def test_hami_monitor_scrape_attributes_through_the_console_placement(world, exporter_server):
    base, routes = exporter_server
    devices(world["cluster"], "gpu-node-1", ["GPU-aaaa"])
    job, placement = place(world["qa"], "POD_A", [("GPU-aaaa", 20480, 30)], started=NOW)
    routes["/metrics"] = (200, P.HAMI_MONITOR, 0)
    target = _target(world, base, "/metrics", "hami-monitor")
    assert scrape_target(target.pk, now=NOW) == "ok"
    target.refresh_from_db()
    assert (target.last_samples, target.last_ignored, target.last_attributed) == (6, 2, 4)
    assert (target.last_unattributed, target.last_conflicts) == ({}, 0)
    assert target.last_success_at == NOW and target.consecutive_failures == 0
    assert _samples(target) == [
        ("memory_used_mib", "attributed", "", job.pk, 15360.0),
        ("pod_memory_used_mib", "attributed", "", job.pk, 14336.0),
        ("pod_util_percent", "attributed", "", job.pk, 25.0),
        ("util_percent", "attributed", "", job.pk, 27.0),
    ]
    assert set(Sample.objects.values_list("tenant_id", flat=True)) == {world["team_a"].pk}

    # The exporter's pod label now disagrees with the console's placement: the placement wins
    # and the disagreement is counted on the target.
    type(placement).objects.filter(pk=placement.pk).update(backend_ref="finetune-7b-0")
    routes["/legacy"] = (200, P.HAMI_MONITOR_LEGACY, 0)
    legacy = _target(world, base, "/legacy", "hami-monitor", name="legacy")
    assert scrape_target(legacy.pk, now=NOW) == "ok"
    legacy.refresh_from_db()
    assert (legacy.last_attributed, legacy.last_conflicts) == (4, 2)
    assert {s[3] for s in _samples(legacy)} == {job.pk}


def test_dcgm_mig_series_no_booking_holds_are_unattributed(world, exporter_server):
    base, routes = exporter_server
    devices(world["cluster"], "dgx-1", ["GPU-dddd-0", "GPU-dddd-1"], model="NVIDIA-H100-80GB-HBM3")
    job_d, _ = place(world["qa"], "POD_D0", [("GPU-dddd-0", 81920, 100)], started=NOW)
    job_e, _ = place(world["qb"], "POD_E", [("GPU-dddd-1", 40960, 42)], started=NOW)
    routes["/metrics"] = (200, P.DCGM, 0)
    target = _target(world, base, "/metrics", "dcgm")
    assert scrape_target(target.pk, now=NOW) == "ok"
    target.refresh_from_db()
    # GPU-dddd-1 reports MIG instance 1, but POD_E's booking holds no GPU instance: those
    # two series are charged to nobody (issue 29), the GPU's own series go to POD_E
    assert (target.last_attributed, target.last_unattributed, target.last_conflicts) == (
        9,
        {"mig_unmatched": 2},
        0,
    )
    by_job = {}
    for metric, _status, reason, job_id, value in _samples(target):
        by_job.setdefault(job_id or reason, []).append((metric, value))
    assert sorted(by_job[job_e.pk]) == [
        ("temperature_c", 41.0),
        ("util_percent", 0.0),
        ("xid_last", 79.0),
    ]
    assert sorted(by_job["mig_unmatched"]) == [("memory_used_mib", 10240.0), ("util_percent", 42.0)]
    assert len(by_job[job_d.pk]) == 6
    # XID 79 (fallen off the bus) takes the device out of the pool
    assert Device.objects.get(uuid="GPU-dddd-1").healthy is False
    assert Device.objects.get(uuid="GPU-dddd-0").healthy is True
    event = DeviceHealthEvent.objects.get(serial="GPU-dddd-1")
    assert (event.kind, event.value, event.node_name, event.source) == (
        "xid",
        79.0,
        "dgx-1",
        "prod/dcgm",
    )


def test_failures_are_recorded_per_target_and_never_stop_the_others(world, exporter_server):
    base, routes = exporter_server
    devices(
        world["cluster"],
        "npu-node-1",
        ["VDIE-910B4-0001", "VDIE-910B4-0002"],
        model="Ascend910B4",
        vendor="Ascend",
        memory_mib=32768,
    )
    devices(world["cluster"], "dgx-1", ["GPU-dddd-0", "GPU-dddd-1"])
    job, _ = place(world["qa"], "npu-job", [("VDIE-910B4-0001", 32768, 100)], started=NOW)
    routes["/ascend"] = (200, P.ASCEND, 0)
    routes["/slow"] = (200, P.DCGM, 1.5)
    routes["/broken"] = (500, "internal error", 0)
    routes["/html"] = (200, P.HTML_ERROR_PAGE, 0)
    routes["/partial"] = (200, P.MALFORMED, 0)
    targets = {
        "ascend": _target(world, base, "/ascend", "ascend", name="ascend"),
        "slow": _target(world, base, "/slow", "dcgm", timeout_s=0.3, name="slow"),
        "broken": _target(world, base, "/broken", "dcgm", name="broken"),
        "html": _target(world, base, "/html", "dcgm", name="html"),
        "partial": _target(world, base, "/partial", "dcgm", name="partial"),
        "gone": _target(world, "http://127.0.0.1:9", "/metrics", "dcgm", name="gone"),
    }
    result = scrape_all(now=NOW)
    status = {name: result[t.pk] for name, t in targets.items()}
    assert status == {
        "ascend": "ok",
        "slow": "timeout",
        "broken": "http_error",
        "html": "bad_payload",
        "partial": "partial",
        "gone": "unreachable",
    }
    rows = {t.name: t for t in ScrapeTarget.objects.all()}
    assert rows["broken"].last_error.startswith("HTTP 500")
    assert rows["partial"].last_rejected_lines == 3
    assert rows["partial"].last_error.startswith("line 3:")
    assert rows["partial"].last_samples == 1 and rows["partial"].consecutive_failures == 0
    assert rows["gone"].consecutive_failures == 1 and rows["gone"].last_success_at is None
    scrape_all(now=NOW + timedelta(seconds=30))
    assert ScrapeTarget.objects.get(name="gone").consecutive_failures == 2
    # Ascend: no node label, attribution through vdie_id; the sick chip leaves the pool
    ascend = rows["ascend"]
    assert (ascend.last_attributed, ascend.last_unattributed) == (5, {})
    assert Device.objects.get(uuid="VDIE-910B4-0002").healthy is False
    kinds = sorted(
        DeviceHealthEvent.objects.filter(serial="VDIE-910B4-0002").values_list("kind", "severity")
    )
    assert kinds == [("error_code", "warning"), ("unhealthy_flag", "critical")]
    assert set(
        Sample.objects.filter(target=ascend, status="attributed").values_list("job_id", flat=True)
    ) == {job.pk}


def test_health_history_follows_the_serial_across_node_moves(world):
    cluster = world["cluster"]
    hot = P.HYGON.replace("} 46\n", "} 96\n")  # first device at 96 °C (limit 90)
    devices(cluster, "dcunode3", ["T8R1380013061601"], model="K100", vendor="DCU", memory_mib=32752)
    devices(cluster, "dcunode4", ["T8R1380019021101"], model="K100", vendor="DCU", memory_mib=32752)
    t0 = NOW
    _, _, result = ingest_payload("hygon", hot, cluster_id=cluster.pk, now=t0)
    assert result.unattributed_total == 0 and result.node_mismatches == 0
    assert Device.objects.get(uuid="T8R1380013061601").healthy is False
    assert Device.objects.get(uuid="T8R1380019021101").healthy is True
    # The card moves to dcunode4's neighbour slot; its serial keeps its history.
    moved = Device.objects.get(uuid="T8R1380013061601")
    moved.node = Node.objects.get(name="dcunode4")
    moved.index = 1
    moved.save()
    cool = P.HYGON.replace('node="dcunode3"', 'node="dcunode4"').replace(
        'minor_number="0",name="",node="dcunode4",pcieBus_number="0000:f6',
        'minor_number="1",name="",node="dcunode4",pcieBus_number="0000:f6',
    )
    _, _, result = ingest_payload("hygon", cool, cluster_id=cluster.pk, now=t0 + timedelta(hours=1))
    assert result.node_mismatches == 0
    assert Device.objects.get(uuid="T8R1380013061601").healthy is True
    history = device_health_history("T8R1380013061601")
    assert [(e.kind, e.node_name, e.value) for e in history.events] == [
        ("recovered", "dcunode4", 0.0),
        ("temperature", "dcunode3", 96.0),
    ]
    assert history.current.healthy is True
    # A stale exporter still naming the old node: the serial wins, the mismatch is counted.
    _, _, result = ingest_payload(
        "hygon", P.HYGON, cluster_id=cluster.pk, now=t0 + timedelta(hours=2)
    )
    assert result.node_mismatches == 5
    assert device_health_history("T8R1380019021101").events == []


def test_unhealthy_devices_leave_the_pool_and_alert_below_guarantees(world):
    make_cluster("c1", nodes=2, gpus=2)
    group = make_group("pool", selector={"pool": "c1"})
    make_tenant("t1", group, devices_milli=2000)
    make_tenant("t2", group, devices_milli=1000)
    now = NOW
    gauges = {g.resource_group.name: g for g in compute_group_gauges(now=now)}
    assert (gauges["pool"].healthy_milli, gauges["pool"].guaranteed_milli) == (4000, 3000)
    ids = list(
        Device.objects.filter(uuid__in=["GPU-c1-0-0", "GPU-c1-1-1"]).values_list("pk", flat=True)
    )
    apply_health({pk: {"health": 0} for pk in ids}, now=now, source="test")
    snapshot, _ = build_cluster_snapshot(group)
    flags = {d.uuid: d.healthy for n in snapshot.nodes.values() for d in n.devices}
    assert flags == {
        "GPU-c1-0-0": False,
        "GPU-c1-0-1": True,
        "GPU-c1-1-0": True,
        "GPU-c1-1-1": False,
    }
    compute_group_gauges(now=now)
    from telemetry.models import CapacityAlert

    alert = CapacityAlert.objects.get(resource_group=group, resolved_at__isnull=True)
    assert (alert.flavor, alert.healthy_milli, alert.guaranteed_milli) == ("*", 2000, 3000)
    compute_group_gauges(now=now)  # still short: one open alert, not two
    assert CapacityAlert.objects.filter(resource_group=group).count() == 1
    apply_health({pk: {"health": 1} for pk in ids}, now=now + timedelta(minutes=1))
    compute_group_gauges(now=now + timedelta(minutes=1))
    alert.refresh_from_db()
    assert alert.resolved_at == now + timedelta(minutes=1)
    assert Device.objects.filter(healthy=False).count() == 0


def test_temperature_limit_comes_from_the_device_model_config_else_the_default(world):
    from scheduling.models import DeviceModel

    cluster = world["cluster"]
    (strict,) = devices(cluster, "n1", ["GPU-strict"], model="T4", memory_mib=15360)
    (plain,) = devices(cluster, "n1", ["GPU-plain"])
    DeviceModel.objects.filter(name="T4").update(config={"temperature_limit_c": 80})
    apply_health(
        {strict.pk: {"temperature_c": 85.0}, plain.pk: {"temperature_c": 85.0}},
        now=NOW,
        source="test",
    )
    # T4's own limit is 80 °C; the A100 model has no config, so the default 90 °C applies.
    assert Device.objects.get(uuid="GPU-strict").healthy is False
    assert Device.objects.get(uuid="GPU-plain").healthy is True
    assert [(e.kind, e.message) for e in device_health_history("GPU-strict").events] == [
        ("temperature", "temperature 85 °C >= limit 80 °C")
    ]


def _mig_payload(uuid: str, rows) -> str:
    return (
        "".join(
            f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{gpu="0",UUID="{uuid}",Hostname="dgx-2",'
            f'GPU_I_PROFILE="1g.10gb",GPU_I_ID="{gi}"}} {v}\n'
            for gi, v in rows
        )
        + f'DCGM_FI_DEV_FB_USED{{gpu="0",UUID="{uuid}",Hostname="dgx-2"}} 40960\n'
    )


def test_mig_series_join_uuid_and_instance_and_are_counted_when_unmatched(
    world, exporter_server, client, settings
):
    """Issue 29 item 5: a MIG series on a GPU one job holds whole is not that job's tenant's,
    and a MIG series no booking holds is reported: on the target, the device page and
    ``/metrics``."""
    settings.METRICS_TOKEN = "scrape-token-0123456789"  # /metrics needs it
    from django.contrib.auth import get_user_model

    from scheduling.models import PlacementMigInstance

    base, routes = exporter_server
    whole, mig = devices(
        world["cluster"], "dgx-2", ["GPU-wwww-0", "GPU-mmmm-1"], model="NVIDIA-H100-80GB-HBM3"
    )
    job_w, _ = place(world["qa"], "whole", [("GPU-wwww-0", 81920, 100)], started=NOW)
    job_m, placement_m = place(world["qb"], "slice", [("GPU-mmmm-1", 9856, 14)], started=NOW)
    PlacementMigInstance.objects.create(
        placement=placement_m, device=mig, profile="1g.10gb", start=0, size=1, gpu_instance_id=9
    )
    routes["/metrics"] = (200, _mig_payload("GPU-wwww-0", [(3, "0.5")]), 0)
    routes["/mig"] = (200, _mig_payload("GPU-mmmm-1", [(9, "0.25"), (5, "0.75")]), 0)
    first = _target(world, base, "/metrics", "dcgm", name="dcgm-a")
    second = _target(world, base, "/mig", "dcgm", name="dcgm-b")
    assert scrape_target(first.pk, now=NOW) == "ok"
    assert scrape_target(second.pk, now=NOW) == "ok"
    first.refresh_from_db()
    second.refresh_from_db()
    assert _samples(first) == [
        ("memory_used_mib", "attributed", "", job_w.pk, 40960.0),
        ("util_percent", "unattributed", "mig_unmatched", None, 50.0),  # never team-a's
    ]
    assert _samples(second) == [
        ("memory_used_mib", "attributed", "", job_m.pk, 40960.0),
        ("util_percent", "attributed", "", job_m.pk, 25.0),  # (GPU-mmmm-1, GI 9)
        ("util_percent", "unattributed", "mig_unmatched", None, 75.0),  # GI 5: nobody's
    ]
    assert not Sample.objects.filter(tenant=world["team_a"], metric="util_percent").exists()
    assert (first.last_unattributed, second.last_unattributed) == (
        {"mig_unmatched": 1},
        {"mig_unmatched": 1},
    )
    metrics = client.get(
        "/metrics", HTTP_AUTHORIZATION="Bearer scrape-token-0123456789"
    ).content.decode()
    for name in ("dcgm-a", "dcgm-b"):
        assert (
            f'console_unattributed_series{{cluster="prod",reason="mig_unmatched",target="{name}"}}'
            " 1.0"
        ) in metrics
    admin = get_user_model().objects.create_user("root", password="pw", is_superuser=True)
    client.force_login(admin)
    Sample.objects.update(time=datetime.now(tz=UTC))  # the page counts the last hour
    page = client.get(f"/devices/{whole.uuid}/").content.decode()
    assert (
        '<p class="error" id="unmatched-mig">1 MIG series sample in the last hour matched no '
        "booking of this device"
    ) in page
