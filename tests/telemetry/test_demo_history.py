"""The demo's seeded history (issue 30: "the demo seeds a few hours of history so the first
look matches the README screenshots"): after ``seed_demo`` + ``seed_demo_history`` the chart
selectors read series spanning the hours asked, consistent with the demo's inventory and
quotas; a second seeding changes nothing; outside the demo nothing is written."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from scheduling.choices import PlacementState
from scheduling.models import Device, Job, JobEvent, Placement
from scheduling.services.demo import DEMO_QUOTA_DEVICES, seed_demo
from telemetry.exporters import POD_UTIL, UTIL
from telemetry.models import Rollup, TrendRollup, UsageMonth
from telemetry.selectors import device_series, device_utilisation, node_utilisation, trend_series
from telemetry.services.demo_history import SOURCE, HistoryCounts, seed_demo_history
from tenants.models import LedgerInterval, ResourceGroup, Tenant

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 3, 10, 12, 2, 30, tzinfo=UTC)  # mid-month: one month of usage rows
END = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)  # NOW rounded down to 5 minutes


def _counts() -> dict[str, int]:
    return {
        m.__name__: m.objects.count()
        for m in (Job, Placement, JobEvent, Rollup, TrendRollup, LedgerInterval, UsageMonth)
    }


def test_overview_trends_span_the_hours_and_agree_with_the_inventory():
    seed_demo("demo-password-1")
    counts = seed_demo_history(6, now=NOW)
    assert counts.hours == 6 and counts.jobs > 100
    start = END - timedelta(hours=6)
    s = trend_series("all", [""], ("capacity", "allocated", "used", "queued", "wait_s"), start, END)
    capacity, allocated, used = s[("", "capacity")], s[("", "allocated")], s[("", "used")]
    assert [p.time for p in capacity] == [start + timedelta(minutes=5 * i) for i in range(72)]
    assert {p.mean for p in capacity} == {Device.objects.count()}  # the 48 demo devices
    for c, a, u in zip(capacity, allocated, used, strict=True):
        assert 0 <= u.mean <= a.mean + 1e-9 <= c.mean  # utilisation within the booked shares
    assert sum(p.mean for p in allocated) / 72 > 10  # busy, not a flat line at zero
    assert len({round(p.mean, 2) for p in used}) > 30
    waits = s[("", "wait_s")]
    assert waits and all(0 < p.minimum <= p.mean <= p.maximum for p in waits)
    assert sum(p.mean > 0 for p in s[("", "queued")]) > 5  # jobs waited in some buckets
    assert sum(p.time < start + timedelta(hours=1) for p in waits) > 0  # from the first hour on


def test_group_tenant_device_and_usage_charts_have_history():
    seed_demo("demo-password-1")
    seed_demo_history(6, now=NOW)
    start = END - timedelta(hours=6)
    group = ResourceGroup.objects.get(name="nvidia-shared")
    nlp = Tenant.objects.get(name="team-nlp")
    g = trend_series("group", [str(group.pk)], ("capacity", "allocated"), start, END)
    assert {p.mean for p in g[(str(group.pk), "capacity")]} == {24}  # 2 x A100 + 1 x H20 nodes
    assert len(g[(str(group.pk), "allocated")]) == 72
    key = f"{nlp.pk}:{group.pk}"
    q = trend_series("quota", [key], ("usage", "nominal"), start, END)
    assert {p.mean for p in q[(key, "nominal")]} == {DEMO_QUOTA_DEVICES["team-nlp"]}
    assert len(q[(key, "usage")]) == 72 and max(p.mean for p in q[(key, "usage")]) > 0
    device = Device.objects.filter(model__name="NVIDIA-A100-SXM4-80GB").order_by("pk").first()
    util = device_utilisation(device.pk, start, END)[UTIL]
    assert [p.time for p in util] == [start + timedelta(minutes=i) for i in range(360)]
    assert all(0 <= p.mean <= 100 for p in util)
    assert len(node_utilisation(device.node_id, start, END)) == 360
    job = Job.objects.filter(source=SOURCE, placements__devices__device=device).first()
    assert device_series(device.pk, POD_UTIL, job.started_at, job.finished_at, job_ids=[job.pk])
    month = UsageMonth.objects.filter(month=END.date().replace(day=1), gpu_hours__gt=0)
    assert month.filter(tenant=nlp).exists()


def test_history_jobs_are_finished_with_ledger_and_never_overbook_a_device():
    seed_demo("demo-password-1")
    seed_demo_history(6, now=NOW)
    history = Placement.objects.filter(job__source=SOURCE)
    assert set(history.values_list("state", flat=True)) <= {
        PlacementState.SUCCEEDED,
        PlacementState.FAILED,
    }
    assert all(p.ended_at <= END for p in history)
    assert LedgerInterval.objects.filter(job_id__in=history.values("job_id")).count() == (
        history.count()
    )
    assert not LedgerInterval.objects.filter(end__isnull=True, job_id__in=history.values("job_id"))
    for device in Device.objects.all():
        bookings = list(
            history.filter(devices__device=device).values_list(
                "started_at", "ended_at", "devices__memory_mib", "devices__cores_percent"
            )
        )
        for t, *_ in bookings:  # at every start, what runs fits the card
            on = [b for b in bookings if b[0] <= t < b[1]]
            assert sum(b[2] for b in on) <= device.memory_mib
            assert sum(b[3] for b in on) <= device.cores_percent
    job = Job.objects.filter(source=SOURCE).order_by("pk").first()
    assert job.created < job.admitted_at < job.started_at < job.finished_at
    assert list(job.events.values_list("kind", flat=True))[:3] == ["queued", "admitted", "running"]


def test_a_second_seeding_changes_nothing():
    seed_demo("demo-password-1")
    seed_demo_history(6, now=NOW)
    before = _counts()
    assert seed_demo_history(6, now=NOW + timedelta(hours=1)) == HistoryCounts()
    seed_demo("demo-password-1")
    assert _counts() == before


def test_nothing_outside_the_demo(world):
    """A console without the demo cluster (a real install) gets no history."""
    before = _counts()
    assert seed_demo_history(6, now=NOW) == HistoryCounts()
    assert _counts() == before


def test_command_reads_the_hours_from_the_environment(monkeypatch):
    seed_demo("demo-password-1")
    monkeypatch.setenv("DEMO_HISTORY_HOURS", "0")
    out = StringIO()
    call_command("seed_demo_history", stdout=out)
    assert "nothing to add" in out.getvalue() and not Job.objects.filter(source=SOURCE)
    monkeypatch.setenv("DEMO_HISTORY_HOURS", "2")
    call_command("seed_demo_history", stdout=out)
    assert "demo history: 2 h" in out.getvalue()
    jobs = Job.objects.filter(source=SOURCE)
    assert jobs.exists()
    now = timezone.now()
    assert min(j.admitted_at for j in jobs) >= now - timedelta(hours=2, minutes=6)
    assert max(j.finished_at for j in jobs) <= now
