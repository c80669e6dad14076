"""Rollups stay bounded over a simulated week; cost reports equal hand computations (from
placements and from the ledger); the cost API is tenant-scoped and has a CSV form."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.test import override_settings

from scheduling.models import Cluster, Device
from telemetry.attribution import AttributedSample
from telemetry.models import Rollup, Sample
from telemetry.selectors import cost_report, device_series, node_utilisation
from telemetry.services.ingestion import store_samples
from telemetry.services.prices import set_price
from telemetry.services.rollups import rollup
from tenants.models import LedgerInterval
from tests.builders import make_group, make_tenant, make_user
from tests.telemetry.dbhelpers import devices, place

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.telemetry.urls")]
T0 = datetime(2025, 3, 3, tzinfo=UTC)


@override_settings(
    TELEMETRY_RAW_RETENTION_S=1800,
    TELEMETRY_MINUTE_RETENTION_S=6 * 3600,
    TELEMETRY_HOUR_RETENTION_S=2 * 86400,
    TELEMETRY_ROLLUP_GRACE_S=120,
)
def test_rows_stay_bounded_under_a_week_of_scrapes():
    cluster = Cluster.objects.create(name="bench")
    devs = devices(cluster, "n1", ["GPU-w-0", "GPU-w-1"])
    counts = []
    step = timedelta(minutes=15)
    for tick in range(7 * 24 * 4):
        now = T0 + tick * step
        offset = tick % 4  # minute 15 * offset of the hour
        base = 10 + 20 * (now.hour % 2)
        samples = [
            AttributedSample(m, base + offset, "device", "", d.pk, d.uuid)
            for d in devs
            for m in ("util_percent", "temperature_c")
        ]
        store_samples(samples, now)
        if tick % 4 == 3:
            rollup(now=now + timedelta(seconds=1))
            counts.append(
                (
                    Sample.objects.count(),
                    Rollup.objects.filter(resolution_s=60).count(),
                    Rollup.objects.filter(resolution_s=3600).count(),
                )
            )
    # 4 series, a scrape every 15 min, a rollup every hour. Raw: at most (1800 s retention
    # + 120 s grace + 3600 s between rollups) / 900 s + 1 = 7 scrapes each. Minutes: a bucket
    # per scrape for 6 h retention + the open hour + 1 h = 32 + 1 buckets each. Hours: 48 h
    # retention + the current hour = 49 each.
    assert max(c[0] for c in counts) <= 4 * 7
    assert max(c[1] for c in counts) <= 4 * 33
    assert max(c[2] for c in counts) <= 4 * 49
    # steady state: the last two days look like days three to five
    steady = counts[len(counts) * 3 // 7 : len(counts) * 5 // 7]
    last = counts[len(counts) * 5 // 7 :]
    for column in range(3):
        assert max(c[column] for c in last) == max(c[column] for c in steady)
    # one closed hour by hand: 4 samples base + 0..3, base 10 in even hours
    hour = T0 + timedelta(days=6, hours=20)
    points = device_series(
        devs[0].pk, "util_percent", hour, hour + timedelta(hours=1), resolution_s=3600
    )
    assert [(p.mean, p.minimum, p.maximum) for p in points] == [(11.5, 10.0, 13.0)]
    row = Rollup.objects.get(resolution_s=3600, bucket=hour, device=devs[0], metric="util_percent")
    assert row.count == 4


def test_node_utilisation_merges_the_present_devices_of_the_node_per_minute():
    cluster = Cluster.objects.create(name="util")
    d0, d1, gone = devices(cluster, "n1", ["GPU-u-0", "GPU-u-1", "GPU-u-2"])
    (other,) = devices(cluster, "n2", ["GPU-u-3"])
    Device.objects.filter(pk=gone.pk).update(removed_at=T0)
    store_samples(
        [
            AttributedSample("util_percent", v, "device", "", d.pk, d.uuid)
            for d, v in ((d0, 10.0), (d1, 30.0), (gone, 90.0), (other, 70.0))
        ],
        T0,
    )
    store_samples(
        [AttributedSample("util_percent", 20.0, "device", "", d0.pk, d0.uuid)],
        T0 + timedelta(seconds=30),
    )
    rollup(now=T0 + timedelta(minutes=2))
    # n1's present devices in minute T0: 10, 30 and 20 -> mean 20, min 10, max 30.
    points = node_utilisation(d0.node_id, T0, T0 + timedelta(hours=1))
    assert [(p.time, p.mean, p.minimum, p.maximum) for p in points] == [(T0, 20.0, 10.0, 30.0)]


@pytest.fixture
def billing():
    cluster = Cluster.objects.create(name="billing")
    devices(cluster, "n1", ["GPU-b-0", "GPU-b-1", "GPU-b-2"])
    group = make_group("g-bill", models=())
    team_a, qa = make_tenant("team-a", group, devices_milli=8000)
    team_b, qb = make_tenant("team-b", group, devices_milli=8000)
    set_price("NVIDIA-A100-SXM4-80GB", datetime(2025, 1, 1, tzinfo=UTC), "3.00")
    set_price("NVIDIA-A100-SXM4-80GB", datetime(2025, 3, 3, 12, tzinfo=UTC), "4.00")
    # team-a: two whole devices for 24 h across the price change
    whole, _ = place(
        qa,
        "whole",
        [("GPU-b-0", 81920, 100), ("GPU-b-1", 81920, 100)],
        state="succeeded",
        started=T0,
        ended=T0 + timedelta(days=1),
    )
    # team-b: 20 GiB / 30 % of a card (300 milli) for 10 h
    frac, _ = place(
        qb,
        "frac",
        [("GPU-b-2", 20480, 30)],
        state="succeeded",
        started=datetime(2025, 3, 5, 10, tzinfo=UTC),
        ended=datetime(2025, 3, 5, 20, tzinfo=UTC),
    )
    # team-b: a whole card still running since Mar 31 22:00 (2 h in March)
    running, _ = place(
        qb, "running", [("GPU-b-0", 81920, 100)], started=datetime(2025, 3, 31, 22, tzinfo=UTC)
    )
    # team-a: February, outside the report
    place(
        qa,
        "feb",
        [("GPU-b-1", 81920, 100)],
        state="succeeded",
        started=datetime(2025, 2, 10, tzinfo=UTC),
        ended=datetime(2025, 2, 11, tzinfo=UTC),
    )
    return {"team_a": team_a, "team_b": team_b, "jobs": (whole, frac, running)}


MARCH = (datetime(2025, 3, 1, tzinfo=UTC), datetime(2025, 4, 1, tzinfo=UTC))
NOW = datetime(2025, 4, 2, tzinfo=UTC)
# team-a: 2 devices × (12 h × 3.00 + 12 h × 4.00) = 2 × 84 = 168.00 for 48 device-hours
# team-b: 0.3 × 10 h = 3 h and 1 × 2 h = 2 h, all after the change: 5 h × 4.00 = 20.00
EXPECTED = [
    ("team-a", Decimal("48.0000"), Decimal("168.00"), 1),
    ("team-b", Decimal("5.0000"), Decimal("20.00"), 2),
]


def _summary(rows):
    return [(r.tenant_name, r.row.gpu_hours, r.row.cost, r.row.jobs) for r in rows]


def test_cost_report_from_placements_matches_hand_computation(billing):
    assert _summary(cost_report(*MARCH, now=NOW)) == EXPECTED
    only_b = cost_report(*MARCH, tenant_ids=[billing["team_b"].pk], now=NOW)
    assert _summary(only_b) == EXPECTED[1:]


def test_cost_report_from_the_ledger_gives_the_same_figures(billing):
    whole, frac, running = billing["jobs"]
    for job in (whole, frac, running):
        for p in job.placements.all():
            for b in p.devices.select_related("device__model"):
                milli = 300 if job == frac else 1000
                LedgerInterval.objects.create(
                    tenant_id=job.tenant_id,
                    job_id=job.pk,
                    placement_id=p.pk,
                    device_uuid=b.device.uuid,
                    device_model=b.device.model.name,
                    flavor=b.device.model.name,
                    devices_milli=milli,
                    memory_mib=b.memory_mib,
                    cores_percent=b.cores_percent,
                    start=p.started_at,
                    end=p.ended_at,
                )
    with override_settings(TELEMETRY_COST_SOURCE="ledger"):
        assert _summary(cost_report(*MARCH, now=NOW)) == EXPECTED


def test_cost_api_json_csv_and_tenant_scope(api, billing):
    admin = make_user("root", is_superuser=True, is_staff=True)
    alice = make_user("alice", billing["team_a"], "member")
    api.force_authenticate(admin)
    body = api.get("/api/telemetry/cost/?month=2025-03").json()
    assert [(r["tenant"], r["gpu_hours"]) for r in body["rows"]][0] == ("team-a", "48.0000")
    api.force_authenticate(alice)
    rows = api.get("/api/telemetry/cost/?month=2025-03").json()["rows"]
    assert [(r["tenant"], r["model"], r["gpu_hours"], r["cost"], r["currency"]) for r in rows] == [
        ("team-a", "NVIDIA-A100-SXM4-80GB", "48.0000", "168.00", "USD")
    ]
    other = api.get(f"/api/telemetry/cost/?month=2025-03&tenant={billing['team_b'].pk}")
    assert other.status_code == 404
    assert other.json()["error"]["code"] == "not_found"
    csv_response = api.get("/api/telemetry/cost/csv/?month=2025-03")
    assert csv_response["Content-Type"].startswith("text/csv")
    lines = csv_response.content.decode().strip().splitlines()
    assert lines == [
        "month,tenant,tenant_id,model,gpu_hours,cost,currency,unpriced_hours,jobs",
        f"2025-03,team-a,{billing['team_a'].pk},NVIDIA-A100-SXM4-80GB,48.0000,168.00,USD,0.0000,1",
    ]
    bad = api.get("/api/telemetry/cost/?month=March")
    assert bad.status_code == 400 and bad.json()["error"]["fields"] == {
        "month": ["month must be YYYY-MM"]
    }


def test_prices_are_admin_edited_with_validation(api, billing):
    alice = make_user("alice", billing["team_a"], "member")
    api.force_authenticate(alice)
    body = {
        "model": "NVIDIA-A100-SXM4-80GB",
        "effective_from": "2025-05-01T00:00:00Z",
        "per_hour": "5.5",
    }
    assert api.post("/api/telemetry/prices/", body, format="json").status_code == 403
    assert len(api.get("/api/telemetry/prices/").json()["results"]) == 2
    api.force_authenticate(make_user("root", is_superuser=True, is_staff=True))
    created = api.post("/api/telemetry/prices/", body, format="json")
    assert created.status_code == 201 and created.json()["per_hour"] == "5.5000"
    unknown = api.post("/api/telemetry/prices/", {**body, "model": "Nope"}, format="json")
    assert unknown.status_code == 400 and "model" in unknown.json()["error"]["fields"]
    negative = api.post("/api/telemetry/prices/", {**body, "per_hour": "-1"}, format="json")
    assert negative.status_code == 400
    assert Device.objects.count() == 3  # nothing else touched
