"""Membership by invitation (issue 15): a tenant admin cannot enrol an existing user directly
nor learn from the answer whether a username exists; the invitee accepts; platform admins may
still add members directly."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from core.models import AuditEntry
from tenants.models import Invitation, Membership
from tests.adversarial.helpers import client_for
from tests.builders import make_user

pytestmark = pytest.mark.django_db

VOLATILE = {"id", "invitee", "created", "expires_at", "token"}


def _invite(client, invitee, tenant="team-a", role="member"):
    return client.post(
        "/api/invitations/", {"tenant": tenant, "invitee": invitee, "role": role}, format="json"
    )


def test_a_tenant_admin_can_no_longer_enrol_an_existing_user_directly(world):
    ada = client_for(world["ada"])
    for user in ("bob", "nobody-at-all"):
        response = ada.post(
            "/api/members/", {"tenant": "team-a", "user": user, "role": "viewer"}, format="json"
        )
        assert response.status_code == 403
        assert "invitations" in response.json()["error"]["message"]
    assert not Membership.objects.filter(user=world["bob"], tenant=world["team_a"]).exists()


def test_the_answer_to_an_invitation_does_not_tell_whether_the_user_exists(world):
    ada = client_for(world["ada"])
    existing, missing = _invite(ada, "bob"), _invite(ada, "no-such-user")
    assert existing.status_code == missing.status_code == 201
    a, b = existing.json(), missing.json()
    assert a.keys() == b.keys()
    assert (
        {k: v for k, v in a.items() if k not in VOLATILE}
        == {k: v for k, v in b.items() if k not in VOLATILE}
        == {
            "tenant": "team-a",
            "role": "member",
            "state": "pending",
            "created_by": "ada",
            "accepted_at": None,
            "revoked_at": None,
        }
    )
    assert (a["invitee"], b["invitee"]) == ("bob", "no-such-user")
    assert len(a["token"]) >= 40 and a["token"] != b["token"]
    # the token itself is not stored
    stored = Invitation.objects.get(pk=a["id"])
    assert a["token"] not in stored.token_hash and len(stored.token_hash) == 64
    assert not Membership.objects.filter(user=world["bob"], tenant=world["team_a"]).exists()


def test_the_invitee_sees_and_accepts_the_invitation(world):
    created = _invite(client_for(world["ada"]), "bob", role="viewer").json()
    bob = client_for(world["bob"])
    mine = bob.get("/api/invitations/?mine=true").json()["results"]
    assert [(i["id"], i["tenant"], i["role"]) for i in mine] == [
        (created["id"], "team-a", "viewer")
    ]
    assert "token" not in mine[0]
    accepted = bob.post(f"/api/invitations/{created['id']}/accept/")
    assert accepted.status_code == 200, accepted.content
    assert accepted.json()["state"] == "accepted"
    assert Membership.objects.get(user=world["bob"], tenant=world["team_a"]).role == "viewer"
    # used once
    assert bob.post(f"/api/invitations/{created['id']}/accept/").status_code == 404
    actions = list(
        AuditEntry.objects.filter(
            tenant_id=world["team_a"].pk,
            action__in=["invitation.create", "invitation.accept", "membership.create"],
        )
        .order_by("id")
        .values_list("action", "actor_name")
    )
    assert actions == [
        ("invitation.create", "ada"),
        ("invitation.accept", "bob"),
        ("membership.create", "bob"),
    ]


def test_someone_else_cannot_accept_or_see_it(world):
    created = _invite(client_for(world["ada"]), "bob").json()
    mallory = make_user("mallory")
    client = client_for(mallory)
    assert client.get("/api/invitations/").json()["results"] == []
    assert client.post(f"/api/invitations/{created['id']}/accept/").status_code == 404
    assert (
        client.post(
            "/api/invitations/accept-token/", {"token": created["token"]}, format="json"
        ).status_code
        == 404
    )
    assert not Membership.objects.filter(user=mallory).exists()


def test_accept_by_token_and_by_e_mail_address(world):
    carol = make_user("carol", email="Carol@Example.org")
    created = _invite(client_for(world["ada"]), "carol@example.org", role="member").json()
    client = client_for(carol)
    assert (
        client.post("/api/invitations/accept-token/", {"token": "wrong"}, format="json").status_code
        == 404
    )
    response = client.post(
        "/api/invitations/accept-token/", {"token": created["token"]}, format="json"
    )
    assert response.status_code == 200, response.content
    assert Membership.objects.get(user=carol, tenant=world["team_a"]).role == "member"


def test_an_expired_revoked_or_declined_invitation_cannot_be_accepted(world):
    ada, bob = client_for(world["ada"]), client_for(world["bob"])
    first = _invite(ada, "bob").json()
    Invitation.objects.filter(pk=first["id"]).update(expires_at=timezone.now() - timedelta(1))
    assert bob.post(f"/api/invitations/{first['id']}/accept/").status_code == 404
    second = _invite(ada, "bob").json()
    assert ada.post(f"/api/invitations/{second['id']}/revoke/").json()["state"] == "revoked"
    assert ada.post(f"/api/invitations/{second['id']}/revoke/").status_code == 409
    assert bob.post(f"/api/invitations/{second['id']}/accept/").status_code == 404
    third = _invite(ada, "bob").json()
    assert bob.post(f"/api/invitations/{third['id']}/decline/").json()["state"] == "revoked"
    assert (
        bob.post(
            "/api/invitations/accept-token/", {"token": third["token"]}, format="json"
        ).status_code
        == 409
    )
    assert not Membership.objects.filter(user=world["bob"], tenant=world["team_a"]).exists()


def test_a_new_invitation_replaces_the_open_one(world):
    ada = client_for(world["ada"])
    first, second = _invite(ada, "bob").json(), _invite(ada, "bob", role="viewer").json()
    assert Invitation.objects.get(pk=first["id"]).state == "revoked"
    assert Invitation.objects.get(pk=second["id"]).state == "pending"


def test_only_admins_of_the_tenant_invite(world):
    assert _invite(client_for(world["alice"]), "bob").status_code == 403
    assert _invite(client_for(world["victor"]), "bob").status_code == 403
    # a tenant the admin does not administer: 404, whether or not it exists
    ada = client_for(world["ada"])
    assert _invite(ada, "bob", tenant="team-b").status_code == 404
    assert _invite(ada, "bob", tenant="no-such-tenant").status_code == 404
    # the other tenant's invitations stay invisible and cannot be revoked
    theirs = _invite(client_for(world["root"]), "alice", tenant="team-b").json()
    assert [i["id"] for i in ada.get("/api/invitations/").json()["results"]] == []
    assert ada.post(f"/api/invitations/{theirs['id']}/revoke/").status_code == 404


def test_invitation_field_errors(world):
    response = _invite(client_for(world["ada"]), "bad name!", role="king")
    assert response.status_code == 400
    assert set(response.json()["error"]["fields"]) == {"invitee", "role"}


def test_a_platform_admin_still_adds_members_directly(world):
    root = client_for(world["root"])
    created = root.post(
        "/api/members/", {"tenant": "team-a", "user": "bob", "role": "viewer"}, format="json"
    )
    assert created.status_code == 201, created.content
    assert Membership.objects.get(user=world["bob"], tenant=world["team_a"]).role == "viewer"
    assert AuditEntry.objects.filter(action="membership.create", actor_name="root").exists()


def test_a_tenant_admin_changes_roles_and_removes_members_through_the_services(world):
    ada = client_for(world["ada"])
    own = Membership.objects.get(user=world["alice"], tenant=world["team_a"])
    changed = ada.patch(f"/api/members/{own.pk}/", {"role": "viewer"}, format="json")
    assert changed.json()["role"] == "viewer"
    moved = ada.patch(f"/api/members/{own.pk}/", {"user": "bob"}, format="json")
    assert moved.status_code == 400
    assert ada.delete(f"/api/members/{own.pk}/").status_code == 204
    actions = list(
        AuditEntry.objects.filter(object_type="tenants.membership", object_id=str(own.pk))
        .order_by("id")
        .values_list("action", flat=True)
    )
    assert actions == ["membership.update", "membership.delete"]
    assert get_user_model().objects.filter(username="alice").exists()
