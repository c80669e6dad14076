"""Dashboard pages: access by role, tenant isolation, values worked out by hand."""

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone
from rest_framework.authtoken.models import Token

from core.models import AuditEntry
from scheduling.models import Device, Job, Placement
from scheduling.selectors.job_board import queue_slots, store_start_ranges
from scheduling.selectors.quota_board import QuotaBar, _attribute_lending, quota_board
from scheduling.selectors.usage_report import month_bounds, monthly_usage
from scheduling.services.cycle import run_admission_cycle
from tenants.models import Invitation, Membership
from tests.builders import gpu_job, submit_form

pytestmark = pytest.mark.django_db

PAGES = [
    "/",
    "/?fragment=1",
    "/quotas/",
    "/jobs/",
    "/jobs/new/",
    "/nodes/",
    "/usage/",
    "/usage.csv",
    "/account/token/",
    "/audit/",
    "/tenants/team-a/",
]
EXPECTED = {
    "root": dict.fromkeys(PAGES, 200),
    "alice": {**dict.fromkeys(PAGES, 200), "/audit/": 403},
    "victor": {**dict.fromkeys(PAGES, 200), "/audit/": 403, "/jobs/new/": 403},
    "bob": {**dict.fromkeys(PAGES, 200), "/audit/": 403, "/tenants/team-a/": 404},
}


@pytest.mark.parametrize("who", sorted(EXPECTED))
def test_page_access_by_role(client, world, who):
    client.force_login(world[who])
    got = {url: client.get(url).status_code for url in PAGES}
    assert got == EXPECTED[who]


def test_anonymous_is_sent_to_login(client, world):
    response = client.get("/jobs/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_other_tenant_never_appears_for_a_member(client, world):
    client.force_login(world["bob"])
    node_id = Placement.objects.get(job=world["a_train"]).node_id
    pages = [
        "/",
        "/quotas/",
        "/jobs/",
        f"/nodes/{node_id}/",
        "/usage/",
        "/usage.csv",
        "/devices/GPU-c1-0-0/",
        "/devices/GPU-c1-0-1/",
    ]
    for url in pages:
        text = client.get(url).content.decode()
        assert "team-a" not in text and "a-train" not in text and "alice" not in text, url
    assert client.get(f"/jobs/{world['a_train'].pk}/").status_code == 404
    card_map = client.get(f"/nodes/{node_id}/").content.decode()
    assert "other tenant" in card_map


def test_card_map_shows_own_slices_by_name(client, world):
    client.force_login(world["alice"])
    placement = Placement.objects.get(job=world["a_train"])
    text = client.get(f"/nodes/{placement.node_id}/").content.decode()
    assert "team-a / a-train" in text
    assert "32,768 MiB, 30 %" in text  # 40 % of 81920 MiB, 30 % cores
    client.force_login(world["root"])
    assert (
        "team-b / b-secret" in client.get(f"/nodes/{placement.node_id}/").content.decode()
        or Placement.objects.get(job=world["b_secret"]).node_id != placement.node_id
    )


def test_capacity_counts_booked_shares(world):
    from scheduling.selectors.allocation import capacity_by_group, capacity_by_model
    from scheduling.selectors.overview import top_tenants

    (row,) = capacity_by_model()
    assert (row.devices, row.allocated_devices, row.allocated_memory_mib) == (4, 1.4, 114688)
    assert [(g.label, g.allocated_devices) for g in capacity_by_group()] == [("g1", 1.4)]
    assert [(t.tenant, t.devices) for t in top_tenants(None)] == [("team-b", 1.0), ("team-a", 0.4)]
    assert [t.tenant for t in top_tenants({world["team_a"].pk})] == ["team-a"]


def test_quota_board_values(world):
    boards = quota_board(None)
    rows = {(r.tenant, r.dimension): r for b in boards for r in b.rows}
    # a-train: max(32768/81920, 30/100) = 0.4 device; b-secret: a whole device.
    assert (rows[("team-a", "devices")].used, rows[("team-a", "devices")].nominal) == (400, 2000)
    assert rows[("team-b", "devices")].used == 1000
    assert rows[("team-a", "devices")].display_used == "0.4 devices"
    member_view = quota_board({world["team_b"].pk})
    assert [r.tenant for b in member_view for r in b.rows] == ["team-b"]


def test_lending_is_split_in_proportion_to_lendable_capacity():
    x = QuotaBar(1, "x", "*", "devices", 1000, 1600, None, None)
    y = QuotaBar(2, "y", "*", "devices", 2000, 500, None, None)
    z = QuotaBar(3, "z", "*", "devices", 1000, 0, None, 500)
    _attribute_lending([x, y, z])
    assert (x.borrowed, y.lendable, z.lendable) == (600, 1500, 500)
    assert (x.lent, y.lent, z.lent) == (0, 450, 150)
    assert y.segments == {
        "own": 25.0,
        "lent": 22.5,
        "free": 52.5,
        "borrowed": 0.0,
        "nominal": 100.0,
    }


def test_queue_position_and_eta(world):
    now = timezone.now()
    first = gpu_job(world["queue_a"], "urgent", count=4, priority=10)
    slots = queue_slots([world["a_wait"], first], now=now, fresh=True)
    assert (slots[first.pk].position, slots[world["a_wait"].pk].position) == (1, 2)
    # 4 devices; a-train (0.4) ends in 100 s, b-secret (1) in 300 s; urgent (4, 60 s) then
    # a-wait (4, 60 s) queued, both whole-group jobs
    Job.objects.filter(pk=world["a_train"].pk).update(started_at=now, duration_s=100)
    Job.objects.filter(pk=world["b_secret"].pk).update(started_at=now, duration_s=300)
    slots = queue_slots([world["a_wait"], first], now=now, fresh=True)
    assert (slots[first.pk].eta.earliest, slots[first.pk].eta.latest) == (
        now + timedelta(seconds=300),
        now + timedelta(seconds=300),
    )
    assert slots[world["a_wait"].pk].eta.earliest == now + timedelta(seconds=360)
    small = gpu_job(world["queue_b"], "small", count=1, duration_s=30)
    slots = queue_slots([small], now=now, fresh=True)
    # strictly in order it waits for both: 420 s; passing them it takes the 2.6 free devices now
    assert (slots[small.pk].eta.earliest, slots[small.pk].eta.latest) == (
        now,
        now + timedelta(seconds=420),
    )
    too_big = gpu_job(world["queue_b"], "too-big", count=5)
    assert queue_slots([too_big], now=now, fresh=True)[too_big.pk].eta is None
    # the jobs pages read the ranges the gauges task stored (a job queued since has none)
    store_start_ranges(now)
    later = gpu_job(world["queue_b"], "later", count=1, duration_s=30)
    slots = queue_slots([small, later], now=now)
    assert (slots[small.pk].eta.earliest, slots[small.pk].eta.latest) == (
        now,
        now + timedelta(seconds=420),
    )
    assert slots[later.pk].position == 3 and slots[later.pk].eta is None  # small, too-big


def test_monthly_usage_in_gpu_hours(world):
    jan = datetime(2026, 1, 10, tzinfo=UTC)
    Placement.objects.filter(job=world["a_train"]).update(
        started_at=jan, ended_at=jan + timedelta(hours=5)
    )
    Placement.objects.filter(job=world["b_secret"]).update(
        started_at=datetime(2026, 1, 31, 22, tzinfo=UTC), ended_at=None
    )
    now = datetime(2026, 2, 1, 3, tzinfo=UTC)
    rows = {r.tenant: r for r in monthly_usage(None, "2026-01", now=now)}
    assert rows["team-a"].gpu_hours == pytest.approx(2.0)  # 5 h x 0.4 device
    assert rows["team-a"].memory_gib_hours == pytest.approx(160.0)  # 32 GiB x 5 h
    assert rows["team-b"].gpu_hours == pytest.approx(2.0)  # 22:00-24:00 x 1 device
    feb = monthly_usage({world["team_b"].pk}, "2026-02", now=now)
    assert [(r.tenant, r.gpu_hours) for r in feb] == [("team-b", 3.0)]
    assert month_bounds("2024-02") == (
        datetime(2024, 2, 1, tzinfo=UTC),
        datetime(2024, 3, 1, tzinfo=UTC),
    )
    with pytest.raises(ValueError):
        month_bounds("2024-13")


def test_usage_csv_is_tenant_scoped(client, world):
    jan = datetime(2026, 1, 10, tzinfo=UTC)
    Placement.objects.update(started_at=jan, ended_at=jan + timedelta(hours=1))
    client.force_login(world["alice"])
    lines = client.get("/usage.csv?month=2026-01").content.decode().splitlines()
    assert lines == [
        "month,tenant,vendor,model,gpu_hours,memory_gib_hours,jobs,cost,currency",
        "2026-01,team-a,NVIDIA,NVIDIA-A100-SXM4-80GB,0.4000,32.0000,1,,",
    ]
    assert client.get("/usage/?month=2026-99").status_code == 404


def test_usage_cost_comes_from_the_telemetry_price_list(client, world):
    from decimal import Decimal

    from scheduling.models import DeviceModel
    from telemetry.models import DevicePrice

    jan = datetime(2026, 1, 10, tzinfo=UTC)
    Placement.objects.update(started_at=jan, ended_at=jan + timedelta(hours=10))
    DevicePrice.objects.create(
        model=DeviceModel.objects.get(),
        per_hour=Decimal("2.50"),
        effective_from=datetime(2025, 1, 1, tzinfo=UTC),
        currency="EUR",
    )
    client.force_login(world["alice"])
    lines = client.get("/usage.csv?month=2026-01").content.decode().splitlines()
    # 10 h x 0.4 device = 4 GPU-hours at 2.50 EUR
    assert lines[1] == "2026-01,team-a,NVIDIA,NVIDIA-A100-SXM4-80GB,4.0000,320.0000,1,10.00,EUR"


def test_submit_form_creates_a_job_and_shows_field_errors(client, world):
    client.force_login(world["alice"])
    form = submit_form(world["queue_a"], priority=1, device_memory_mib=10240, cores_percent=25)
    response = client.post("/jobs/new/", form)
    job = Job.objects.get(name="from-ui")
    assert response.status_code == 302 and response["Location"] == f"/jobs/{job.pk}/"
    assert (job.source, job.submitted_by, job.containers.get().device_memory_mib) == (
        "ui",
        world["alice"],
        10240,
    )
    bad = client.post("/jobs/new/", {**form, "name": "bad", "device_memory_percent": 50})
    assert bad.status_code == 200
    assert "Give device_memory_mib or memory_percent, not both." in bad.content.decode()
    other = client.post("/jobs/new/", {**form, "name": "sneaky", "queue": world["queue_b"].pk})
    assert other.status_code == 200
    assert not Job.objects.filter(name__in=["bad", "sneaky"]).exists()


def test_the_submit_form_takes_hami_pod_annotations_that_steer_placement(client, world):
    """Issue 29: the form had no way to give the pod annotations the API takes, so HAMi's
    device pins (``nvidia.com/use-gpuuuid`` ...) could not steer a job submitted there."""
    client.force_login(world["alice"])
    uuids = sorted(Device.objects.filter(node__cluster__name="c1").values_list("uuid", flat=True))
    form = submit_form(
        world["queue_a"],
        "pinned-ui",
        device_memory_mib=None,
        device_memory_percent=50,
        cores_percent=25,
        annotations=f"nvidia.com/use-gpuuuid: {uuids[-1]}\r\nexample.com/owner: team a\r\n",
    )
    response = client.post("/jobs/new/", form)
    assert response.status_code == 302, response.content.decode()[-2000:]
    job = Job.objects.get(name="pinned-ui")
    assert job.annotations == {"nvidia.com/use-gpuuuid": uuids[-1], "example.com/owner": "team a"}
    assert job.pk in run_admission_cycle(world["group"].pk).admitted
    (placement,) = Placement.objects.filter(job=job)
    assert [d["uuid"] for d in placement.assignment["containers"][0]["devices"]] == [uuids[-1]]
    bad = client.post("/jobs/new/", {**form, "name": "bad-ann", "annotations": "no colon here"})
    assert bad.status_code == 200 and "key: value" in bad.content.decode()
    assert not Job.objects.filter(name="bad-ann").exists()


def test_cancel_from_the_page(client, world):
    job = world["a_wait"]
    client.force_login(world["victor"])
    assert client.post(f"/jobs/{job.pk}/cancel/").status_code == 403
    client.force_login(world["bob"])
    assert client.post(f"/jobs/{job.pk}/cancel/").status_code == 404
    client.force_login(world["alice"])
    assert client.post(f"/jobs/{job.pk}/cancel/").status_code == 302
    job.refresh_from_db()
    assert job.state == "cancelled"
    assert AuditEntry.objects.filter(action="job.cancel", actor_name="alice").count() == 1


def test_tenant_admin_manages_members(client, world):
    client.force_login(world["alice"])
    assert client.post("/tenants/team-a/", {"username": "bob", "role": "viewer"}).status_code == 403
    client.force_login(world["ada"])
    # a tenant admin invites (issue 15): same answer for an existing and a missing user
    assert client.post("/tenants/team-a/", {"username": "bob", "role": "viewer"}).status_code == 302
    assert (
        client.post("/tenants/team-a/", {"username": "ghost", "role": "viewer"}).status_code == 302
    )
    assert not Membership.objects.filter(user=world["bob"], tenant=world["team_a"]).exists()
    client.force_login(world["bob"])
    invitation = Invitation.objects.get(invitee="bob")
    assert client.post(f"/account/invitations/{invitation.pk}/accept/").status_code == 302
    membership = Membership.objects.get(user=world["bob"], tenant=world["team_a"])
    assert membership.role == "viewer"
    client.force_login(world["ada"])
    assert client.post("/tenants/team-a/", {"remove": membership.pk}).status_code == 302
    assert not Membership.objects.filter(pk=membership.pk).exists()
    actions = list(
        AuditEntry.objects.filter(object_type="tenants.membership")
        .order_by("id")
        .values_list("action", flat=True)
    )
    assert actions == ["membership.create", "membership.delete"]


def test_token_page_creates_regenerates_and_revokes(client, world):
    client.force_login(world["alice"])
    client.post("/account/token/", {"action": "create"})
    first = Token.objects.get(user=world["alice"]).key
    assert first in client.get("/account/token/").content.decode()
    client.post("/account/token/", {"action": "create"})
    second = Token.objects.get(user=world["alice"]).key
    assert second != first
    client.post("/account/token/", {"action": "revoke"})
    assert not Token.objects.filter(user=world["alice"]).exists()
    assert list(
        AuditEntry.objects.filter(actor_name="alice", action__startswith="token.")
        .order_by("id")
        .values_list("action", flat=True)
    ) == ["token.create", "token.create", "token.revoke"]


def test_audit_page_lists_and_filters(client, world):
    client.force_login(world["root"])
    text = client.get("/audit/?action=job.submit").content.decode()
    assert text.count("job.submit") >= 3 and "job.cancel" not in text


def test_overview_shows_measured_utilisation_per_model(client, world):
    from scheduling.models import Device
    from telemetry.exporters import UTIL
    from telemetry.models import Rollup

    bucket = timezone.now().replace(second=0, microsecond=0) - timedelta(minutes=1)
    for uuid, util in (("GPU-c1-0-0", 80.0), ("GPU-c1-0-1", 40.0)):
        Rollup.objects.create(
            resolution_s=60,
            bucket=bucket,
            metric=UTIL,
            device=Device.objects.get(uuid=uuid),
            count=2,
            total=2 * util,
            minimum=util,
            maximum=util,
        )
    client.force_login(world["alice"])
    response = client.get("/?fragment=1")
    assert response.context["used"] == {"NVIDIA-A100-SXM4-80GB": 60.0, "NVIDIA": 60.0}
    assert "60.0 %" in response.content.decode()


def test_refusals_are_pages_that_say_why(client, world):
    job = world["a_wait"]
    client.force_login(world["victor"])
    refused = client.post(f"/jobs/{job.pk}/cancel/")
    assert refused.status_code == 403
    body = refused.content.decode()
    assert "Viewers cannot cancel jobs." in body
    assert 'href="/"' in body  # the page keeps the console's navigation
    client.force_login(world["bob"])
    missing = client.get(f"/jobs/{job.pk}/")
    assert missing.status_code == 404
    assert "belongs to a tenant you are not a member of" in missing.content.decode()
    assert job.name not in missing.content.decode()


def test_usage_page_reads_the_months_the_rollup_task_keeps(client, world):
    """The usage page reads the monthly rows the rollup task stores (issue #14): a change of
    the placements shows after the next refresh, never recomputed by a page view; a month
    computed before it ended is computed once more after its end, then left alone."""
    from telemetry.models import UsageMonth, UsageMonthStatus
    from telemetry.services.usage_months import refresh_usage_months

    jan = datetime(2026, 1, 10, tzinfo=UTC)
    Placement.objects.filter(job=world["a_train"]).update(
        started_at=jan, ended_at=jan + timedelta(hours=5)
    )
    during = datetime(2026, 1, 20, tzinfo=UTC)
    done = refresh_usage_months(now=during)
    assert done["2026-01"] == UsageMonth.objects.filter(month="2026-01-01").count() >= 1
    client.force_login(world["alice"])
    lines = client.get("/usage.csv?month=2026-01").content.decode().splitlines()
    assert lines[1] == "2026-01,team-a,NVIDIA,NVIDIA-A100-SXM4-80GB,2.0000,160.0000,1,,"
    # a change after the refresh is not seen by a view (stored rows), then seen after one
    Placement.objects.filter(job=world["a_train"]).update(ended_at=jan + timedelta(hours=10))
    assert client.get("/usage.csv?month=2026-01").content.decode().splitlines()[1] == lines[1]
    after = datetime(2026, 2, 2, tzinfo=UTC)
    assert "2026-01" in refresh_usage_months(now=after)  # computed before its end: again
    assert client.get("/usage.csv?month=2026-01").content.decode().splitlines()[1] == (
        "2026-01,team-a,NVIDIA,NVIDIA-A100-SXM4-80GB,4.0000,320.0000,1,,"
    )
    assert "2026-01" not in refresh_usage_months(now=after + timedelta(days=1))  # final
    assert UsageMonthStatus.objects.get(month="2026-01-01").computed_at == after
