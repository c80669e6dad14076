"""Roles through the REST API: anonymous 401, deactivated users' tokens 401, viewers never
write, members never manage quotas, members or platform objects, tenant admins only their
own tenant (and never their own quota)."""

import pytest

from scheduling.models import DeviceModel, Job
from tenants.models import Membership, Quota, ResourceGroup, Tenant
from tests.adversarial.helpers import client_for

pytestmark = pytest.mark.django_db

JOB = {"name": "role-check", "containers": [{"device_count": 1}]}


def test_anonymous_gets_401_on_every_endpoint(api, world):
    job = world["a_train"]
    for path in (
        "/api/jobs/",
        f"/api/jobs/{job.pk}/",
        f"/api/jobs/{job.pk}/events/",
        "/api/placements/",
        "/api/queues/",
        "/api/usage/",
        "/api/quotas/",
        "/api/members/",
        "/api/tenants/",
        "/api/resource-groups/",
        "/api/nodes/",
        "/api/devices/",
        "/api/device-models/",
        "/api/clusters/",
        "/api/telemetry/efficiency/",
        "/api/telemetry/cost/csv/",
        "/api/telemetry/devices/GPU-c1-0-0/health/",
        "/api/telemetry/targets/",
    ):
        response = api.get(path)
        assert response.status_code == 401, path
        assert response.json()["error"]["code"] == "not_authenticated"
    for path in (
        "/api/jobs/",
        "/api/dry-run/",
        f"/api/jobs/{job.pk}/cancel/",
        "/api/quotas/dry-run/",
        "/api/members/",
    ):
        assert api.post(path, {}, format="json").status_code == 401, path
    job.refresh_from_db()
    assert job.state == "running"


def test_a_deactivated_users_token_is_refused(world):
    alice = client_for(world["alice"])
    assert alice.get("/api/jobs/").status_code == 200
    world["alice"].is_active = False
    world["alice"].save()
    for response in (
        alice.get("/api/jobs/"),
        alice.post(f"/api/jobs/{world['a_wait'].pk}/cancel/"),
        alice.post("/api/jobs/", {"queue": world["queue_a"].pk, **JOB}, format="json"),
    ):
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "authentication_failed"
    world["a_wait"].refresh_from_db()
    assert world["a_wait"].state == "queued"
    assert not Job.objects.filter(name="role-check").exists()


def test_a_viewer_writes_nothing(world):
    victor = client_for(world["victor"])
    queue = world["queue_a"]
    assert victor.post("/api/jobs/", {"queue": queue.pk, **JOB}, format="json").status_code == 403
    assert (
        victor.post("/api/dry-run/", {"queue": queue.pk, **JOB}, format="json").status_code == 403
    )
    assert victor.post(f"/api/jobs/{world['a_wait'].pk}/cancel/").status_code == 403
    assert (
        victor.post(
            "/api/members/",
            {"tenant": "team-a", "user": "victor", "role": "tenant_admin"},
            format="json",
        ).status_code
        == 403
    )
    mine = Membership.objects.get(user=world["victor"])
    assert (
        victor.patch(
            f"/api/members/{mine.pk}/", {"role": "tenant_admin"}, format="json"
        ).status_code
        == 403
    )
    assert (
        victor.delete(f"/api/members/{Membership.objects.get(user=world['alice']).pk}/").status_code
        == 403
    )
    mine.refresh_from_db()
    assert mine.role == "viewer" and Membership.objects.filter(user=world["alice"]).exists()
    world["a_wait"].refresh_from_db()
    assert world["a_wait"].state == "queued"
    assert not Job.objects.filter(name="role-check").exists()


def test_a_member_cannot_manage_quotas_members_or_platform_objects(world):
    alice = client_for(world["alice"])
    quota = Quota.objects.get(tenant=world["team_a"])
    group = world["group"]
    refused = [
        alice.patch(f"/api/quotas/{quota.pk}/", {"nominal": 99000}, format="json"),
        alice.delete(f"/api/quotas/{quota.pk}/"),
        alice.post(
            "/api/quotas/",
            {"tenant": "team-a", "resource_group": "g1", "dimension": "memory_mib", "nominal": 1},
            format="json",
        ),
        alice.patch(
            f"/api/members/{Membership.objects.get(user=world['alice']).pk}/",
            {"role": "tenant_admin"},
            format="json",
        ),
        alice.post(
            "/api/members/", {"tenant": "team-a", "user": "bob", "role": "member"}, format="json"
        ),
        alice.patch(f"/api/resource-groups/{group.pk}/", {"kind": "exclusive"}, format="json"),
        alice.post("/api/resource-groups/", {"name": "mine"}, format="json"),
        alice.patch(f"/api/tenants/{world['team_a'].pk}/", {"display_name": "x"}, format="json"),
        alice.post("/api/tenants/", {"name": "mine"}, format="json"),
        alice.post(
            "/api/device-models/", {"name": "X", "vendor": "NVIDIA", "memory_mib": 1}, format="json"
        ),
        alice.post(
            "/api/telemetry/prices/",
            {
                "model": "NVIDIA-A100-SXM4-80GB",
                "effective_from": "2024-01-01T00:00:00Z",
                "per_hour": "1",
            },
            format="json",
        ),
        alice.post("/api/telemetry/devices/GPU-c1-0-0/health/clear/"),
    ]
    assert [r.status_code for r in refused] == [403] * len(refused)
    quota.refresh_from_db()
    assert quota.nominal == 2000
    assert Membership.objects.get(user=world["alice"]).role == "member"
    assert not Membership.objects.filter(user=world["bob"], tenant=world["team_a"]).exists()
    group.refresh_from_db()
    assert group.kind == "shared" and not ResourceGroup.objects.filter(name="mine").exists()
    assert not Tenant.objects.filter(name="mine").exists()
    assert not DeviceModel.objects.filter(name="X").exists()


def test_a_tenant_admin_manages_only_their_tenants_members(world):
    ada = client_for(world["ada"])
    invited = ada.post(
        "/api/invitations/", {"tenant": "team-a", "invitee": "bob", "role": "viewer"}, format="json"
    )
    assert invited.status_code == 201
    added = client_for(world["bob"]).post(f"/api/invitations/{invited.json()['id']}/accept/")
    assert added.status_code == 200
    assert Membership.objects.get(user=world["bob"], tenant=world["team_a"]).role == "viewer"
    # bob's membership of team-b stays invisible and untouched
    theirs = Membership.objects.get(user=world["bob"], tenant=world["team_b"])
    assert ada.delete(f"/api/members/{theirs.pk}/").status_code == 404
    assert Membership.objects.filter(pk=theirs.pk).exists()
