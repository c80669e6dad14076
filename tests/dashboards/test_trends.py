"""Trend rollups (telemetry.services.trends), their reader, the trend charts of the pages and
capacity planning, on the two-tenant world (tests/console_world.py): 4 A100 devices,
a-train holds 0.4 device (40 % memory, 30 % cores), b-secret 1 device, a-wait (4 devices)
queued."""

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from scheduling.models import Job
from scheduling.selectors.capacity_planning import capacity_what_if, group_demand
from telemetry.models import DeviceHealthEvent, TrendRollup
from telemetry.selectors import trend_series
from telemetry.services.trends import prune_trends, record_trends
from tests.builders import A100

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _row(scope, key, metric, resolution=300):
    return TrendRollup.objects.get(resolution_s=resolution, scope=scope, key=key, metric=metric)


def test_record_folds_gauges_into_buckets(world):
    g, a, b = world["group"].pk, world["team_a"].pk, world["team_b"].pk
    record_trends(now=T0)
    record_trends(now=T0 + timedelta(minutes=1))
    cap = _row("all", "", "capacity")
    assert (cap.count, cap.total, cap.minimum, cap.maximum) == (2, 8.0, 4.0, 4.0)
    assert _row("all", "", "allocated").mean == pytest.approx(1.4)
    assert _row("group", str(g), "allocated").mean == pytest.approx(1.4)
    assert _row("model", A100, "capacity").mean == 4
    assert _row("vendor", "NVIDIA", "allocated").mean == pytest.approx(1.4)
    assert _row("group", str(g), "queued").mean == 1
    assert _row("group", str(g), "pending").mean == pytest.approx(4.0)
    assert _row("tenant", str(a), "usage").mean == pytest.approx(0.4)
    assert _row("quota", f"{b}:{g}", "usage").mean == pytest.approx(1.0)
    assert _row("quota", f"{a}:{g}", "nominal").mean == pytest.approx(2.0)
    assert _row("all", "", "used").mean == 0.0  # no telemetry sample yet
    assert _row("all", "", "capacity", 3600).count == 2


def test_waits_counted_once_per_admitted_job(world):
    admitted = list(Job.objects.filter(admitted_at__isnull=False))
    assert len(admitted) == 2
    now = max(j.admitted_at for j in admitted) + timedelta(seconds=1)
    for _ in range(3):
        record_trends(now=now)
    wait = TrendRollup.objects.filter(resolution_s=300, scope="all", metric="wait_s")
    assert sum(r.count for r in wait) == 2
    expected = sum((j.admitted_at - j.created).total_seconds() for j in admitted)
    assert sum(r.total for r in wait) == pytest.approx(expected)


def test_trend_series_one_query_and_resolution(world):
    g = str(world["group"].pk)
    for minutes in (0, 5, 10, 70):
        record_trends(now=T0 + timedelta(minutes=minutes))
    with CaptureQueriesContext(connection) as queries:
        fine = trend_series("group", [g], ["allocated", "queued"], T0, T0 + timedelta(hours=6))
    assert len(queries) == 1
    assert [p.time for p in fine[(g, "allocated")]] == [
        T0,
        T0 + timedelta(minutes=5),
        T0 + timedelta(minutes=10),
        T0 + timedelta(minutes=70),
    ]
    coarse = trend_series("group", [g], ["allocated"], T0, T0 + timedelta(days=7))
    assert [(p.time, p.mean) for p in coarse[(g, "allocated")]] == [
        (T0, pytest.approx(1.4)),
        (T0 + timedelta(hours=1), pytest.approx(1.4)),
    ]
    assert trend_series("group", ["999"], ["allocated"], T0, T0 + timedelta(hours=6)) == {
        ("999", "allocated"): []
    }


def test_prune_keeps_retention(world):
    record_trends(now=T0)
    record_trends(now=T0 + timedelta(days=3))
    assert TrendRollup.objects.filter(resolution_s=300, bucket=T0).exists() is False
    assert TrendRollup.objects.filter(resolution_s=3600, bucket=T0).exists()
    prune_trends(now=T0 + timedelta(days=40))
    assert not TrendRollup.objects.filter(bucket=T0).exists()


def _spec(response, chart_id):
    html = response.content.decode()
    marker = f'<script id="{chart_id}-data" type="application/json">'
    start = html.index(marker) + len(marker)
    return json.loads(html[start : html.index("</script>", start)])


def test_overview_trend_charts_read_rollups(client, world):
    now = timezone.now()
    record_trends(now=now - timedelta(minutes=10))
    record_trends(now=now)
    client.force_login(world["alice"])
    response = client.get("/?range=24h")
    assert response.status_code == 200
    alloc = _spec(response, "overview-alloc")
    assert alloc["simulated"] is True and alloc["axes"][0]["unit"] == "devices"
    names = [s["name"] for s in alloc["series"]]
    assert names == ["allocated", "measured utilisation", "capacity"]
    assert [p[1] for p in alloc["series"][0]["data"]] == [1.4, 1.4]
    # ten minutes of history in a 24 h range: the axis starts at the first sample (issue 30)
    first = alloc["series"][0]["data"][0][0]
    assert alloc["x"]["min"] == first and alloc["x"]["max"] - first < 24 * 3600 * 1000
    queue = _spec(response, "overview-queue")
    assert queue["series"][0]["data"][-1][1] == 1.0
    assert 'class="active" aria-current="true">24h' in response.content.decode()
    assert 'id="simulated-note"' in response.content.decode()


def test_group_page_trends_and_scope(client, world):
    from tests.builders import make_group

    other = make_group("hidden")
    record_trends(now=timezone.now())
    client.force_login(world["bob"])
    response = client.get(f"/groups/{world['group'].pk}/")
    assert response.status_code == 200
    tenants = _spec(response, "group-tenants")
    assert [s["name"] for s in tenants["series"]] == ["team-b"]  # bob sees his tenant only
    assert tenants["series"][0]["data"][0][1] == 1.0
    assert client.get(f"/groups/{other.pk}/").status_code == 404
    client.force_login(world["root"])
    assert client.get(f"/groups/{other.pk}/").status_code == 200


def test_tenant_page_usage_vs_quota(client, world):
    record_trends(now=timezone.now())
    client.force_login(world["alice"])
    response = client.get("/tenants/team-a/")
    spec = _spec(response, f"quota-{world['group'].pk}")
    usage, nominal = spec["series"]
    assert (usage["data"][0][1], nominal["data"][0][1], nominal["kind"]) == (0.4, 2.0, "dashed")


def test_device_page_marks_health_events(client, world):
    from scheduling.models import Device

    device = Device.objects.get(uuid="GPU-c1-0-0")
    when = timezone.now() - timedelta(hours=1)
    DeviceHealthEvent.objects.create(
        serial=device.uuid,
        device=device,
        time=when,
        kind="xid_79",
        severity="critical",
        message="fell off",
    )
    DeviceHealthEvent.objects.create(
        serial=device.uuid,
        device=device,
        time=when - timedelta(hours=9),
        kind="old",
        severity="warning",
    )
    client.force_login(world["root"])
    response = client.get(f"/devices/{device.uuid}/")
    spec = _spec(response, "device-util")
    assert spec["marks"] == [
        {"time": int(when.timestamp() * 1000), "label": "xid_79", "severity": "critical"}
    ]
    assert spec["axes"][0]["max"] == 100.0 and spec["simulated"] is True
    assert '<svg class="spark' not in response.content.decode()


def test_capacity_planning_pending_and_what_if(world):
    now = timezone.now()
    Job.objects.filter(pk=world["a_wait"].pk).update(created=now - timedelta(hours=2))
    demand = group_demand(world["group"], now - timedelta(hours=6), now)
    # a-train and b-secret waited for their admission cycle (milliseconds), a-wait 2 h.
    assert demand.waited_jobs == 3
    assert demand.pending_device_hours == pytest.approx(8.0, rel=1e-3)  # 4 devices x 2 h
    assert demand.mean_wait_s < 60
    one = capacity_what_if(demand, A100, 1)
    assert (one.eligible_jobs, one.jobs_fit) == (3, 2)  # 0.4 and 1 device fit, 4 do not
    assert one.absorbed_device_hours == pytest.approx(2.0, rel=1e-3)
    assert one.absorbed_pct(demand.pending_device_hours) == pytest.approx(25.0, rel=1e-3)
    eight = capacity_what_if(demand, A100, 8)
    assert (eight.jobs_fit, eight.absorbed_device_hours) == (3, pytest.approx(8.0, rel=1e-3))
    assert capacity_what_if(demand, "Ascend910B", 8).eligible_jobs == 0
    with pytest.raises(ValueError):
        capacity_what_if(demand, A100, 0)
