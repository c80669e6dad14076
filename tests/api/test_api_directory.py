"""Tenants, members and resource groups API: happy path, 400 with field errors, 401, 403,
404 for another tenant's object; every write audited."""

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from core.models import AuditEntry
from tenants.models import Membership, ResourceGroup, Tenant

pytestmark = pytest.mark.django_db


def as_user(api, user):
    token, _ = Token.objects.get_or_create(user=user)
    api.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return api


def test_anonymous_gets_401_with_the_error_shape(api, world):
    for url in ("/api/tenants/", "/api/members/", "/api/resource-groups/"):
        response = api.get(url)
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "not_authenticated"


def test_member_lists_only_own_tenant(api, world):
    body = as_user(api, world["alice"]).get("/api/tenants/").json()
    assert [t["name"] for t in body["results"]] == ["team-a"]
    assert as_user(api, world["root"]).get("/api/tenants/").json()["count"] == 2


def test_other_tenant_is_404(api, world):
    response = as_user(api, world["alice"]).get(f"/api/tenants/{world['team_b'].pk}/")
    assert response.status_code == 404
    assert "team-b" not in response.content.decode()


def test_platform_admin_creates_updates_and_deletes_a_tenant(api, world):
    client = as_user(api, world["root"])
    created = client.post(
        "/api/tenants/",
        {"name": "team-c", "display_name": "Team C", "parent": "team-a"},
        format="json",
    )
    assert created.status_code == 201, created.content
    assert created.json()["parent"] == "team-a"
    pk = created.json()["id"]
    patched = client.patch(f"/api/tenants/{pk}/", {"display_name": "C"}, format="json")
    assert patched.json()["display_name"] == "C"
    entries = list(
        AuditEntry.objects.filter(object_type="tenants.tenant", object_id=str(pk)).order_by("id")
    )
    assert [e.action for e in entries] == ["tenant.create", "tenant.update"]
    assert entries[1].before["display_name"] == "Team C"
    assert entries[1].after["display_name"] == "C"
    assert entries[1].actor_name == "root"
    assert client.delete(f"/api/tenants/{pk}/").status_code == 204
    assert not Tenant.objects.filter(pk=pk).exists()
    assert AuditEntry.objects.filter(action="tenant.delete", object_id=str(pk)).count() == 1


def test_tenant_field_errors(api, world):
    client = as_user(api, world["root"])
    response = client.post("/api/tenants/", {"name": "Bad Name", "parent": "nope"}, format="json")
    assert response.status_code == 400
    fields = response.json()["error"]["fields"]
    assert set(fields) == {"name", "parent"}
    duplicate = client.post("/api/tenants/", {"name": "team-a"}, format="json")
    assert duplicate.status_code == 400 and "name" in duplicate.json()["error"]["fields"]


def test_tenant_cannot_be_its_own_ancestor(api, world):
    client = as_user(api, world["root"])
    child = Tenant.objects.create(name="child", parent=world["team_a"])
    response = client.patch(
        f"/api/tenants/{world['team_a'].pk}/", {"parent": "child"}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["error"]["fields"]["parent"] == ["A tenant cannot be its own ancestor."]
    assert child.parent_id == world["team_a"].pk


def test_deleting_a_tenant_with_jobs_is_a_409(api, world):
    response = as_user(api, world["root"]).delete(f"/api/tenants/{world['team_a'].pk}/")
    assert response.status_code == 409
    assert "still referenced by jobs" in response.json()["error"]["message"]
    assert Tenant.objects.filter(pk=world["team_a"].pk).exists()


def test_member_cannot_create_tenants(api, world):
    response = as_user(api, world["ada"]).post("/api/tenants/", {"name": "x"}, format="json")
    assert response.status_code == 403
    assert not Tenant.objects.filter(name="x").exists()


def test_members_are_scoped_to_own_tenants(api, world):
    body = as_user(api, world["victor"]).get("/api/members/").json()
    assert sorted(m["user"] for m in body["results"]) == ["ada", "alice", "victor"]
    bob_membership = Membership.objects.get(user=world["bob"])
    assert (
        as_user(api, world["victor"]).get(f"/api/members/{bob_membership.pk}/").status_code == 404
    )


def test_tenant_admin_invites_changes_and_removes_a_member(api, world):
    # a tenant admin invites (issue 15); the membership appears when the invitee accepts
    client = as_user(api, world["ada"])
    invited = client.post(
        "/api/invitations/", {"tenant": "team-a", "invitee": "bob", "role": "viewer"}, format="json"
    )
    assert invited.status_code == 201, invited.content
    accepted = as_user(APIClient(), world["bob"]).post(
        f"/api/invitations/{invited.json()['id']}/accept/"
    )
    assert accepted.status_code == 200, accepted.content
    pk = Membership.objects.get(user=world["bob"], tenant=world["team_a"]).pk
    assert (
        client.patch(f"/api/members/{pk}/", {"role": "member"}, format="json").json()["role"]
        == "member"
    )
    assert client.delete(f"/api/members/{pk}/").status_code == 204
    actions = list(
        AuditEntry.objects.filter(object_type="tenants.membership", object_id=str(pk))
        .order_by("id")
        .values_list("action", "tenant_id")
    )
    tid = world["team_a"].pk
    assert actions == [
        ("membership.create", tid),
        ("membership.update", tid),
        ("membership.delete", tid),
    ]


def test_member_cannot_manage_members(api, world):
    client = as_user(api, world["alice"])
    response = client.post("/api/members/", {"tenant": "team-a", "user": "bob"}, format="json")
    assert response.status_code == 403
    own = Membership.objects.get(user=world["victor"])
    assert (
        client.patch(f"/api/members/{own.pk}/", {"role": "tenant_admin"}, format="json").status_code
        == 403
    )
    own.refresh_from_db()
    assert own.role == "viewer"


def test_tenant_admin_cannot_add_to_another_tenant(api, world):
    # tenant admins never enrol directly (issue 15: invitations), and cannot invite to a
    # tenant they do not administer
    client = as_user(api, world["ada"])
    response = client.post("/api/members/", {"tenant": "team-b", "user": "victor"}, format="json")
    assert response.status_code == 403
    invited = client.post(
        "/api/invitations/", {"tenant": "team-b", "invitee": "victor"}, format="json"
    )
    assert invited.status_code == 404
    assert not Membership.objects.filter(tenant=world["team_b"], user=world["victor"]).exists()


def test_member_field_errors(api, world):
    # direct enrolment is for platform admins (who may know every username)
    response = as_user(api, world["root"]).post(
        "/api/members/", {"tenant": "team-a", "user": "nobody", "role": "king"}, format="json"
    )
    assert response.status_code == 400
    assert set(response.json()["error"]["fields"]) == {"user", "role"}
    duplicate = as_user(api, world["root"]).post(
        "/api/members/", {"tenant": "team-a", "user": "alice"}, format="json"
    )
    assert duplicate.status_code == 400


def test_resource_groups_by_role(api, world):
    other = ResourceGroup.objects.create(name="private-g", kind="exclusive")
    member = as_user(api, world["alice"])
    assert [g["name"] for g in member.get("/api/resource-groups/").json()["results"]] == ["g1"]
    assert member.get(f"/api/resource-groups/{other.pk}/").status_code == 404
    assert member.post("/api/resource-groups/", {"name": "x"}, format="json").status_code == 403
    root = as_user(api, world["root"])
    created = root.post(
        "/api/resource-groups/",
        {
            "name": "mlu-pool",
            "kind": "elastic",
            "device_models": ["MLU370-X8"],
            "node_selector": {"pool": "mlu"},
        },
        format="json",
    )
    assert created.status_code == 201, created.content
    assert created.json()["device_models"] == ["MLU370-X8"]
    bad = root.post(
        "/api/resource-groups/",
        {"name": "g1", "kind": "huge", "node_selector": {"a": ["b"]}},
        format="json",
    )
    assert bad.status_code == 400
    assert set(bad.json()["error"]["fields"]) >= {"name", "kind"}
    in_use = root.delete(f"/api/resource-groups/{world['group'].pk}/")
    assert in_use.status_code == 409
    assert (
        AuditEntry.objects.filter(action="resource_group.create", object_repr="mlu-pool").count()
        == 1
    )
