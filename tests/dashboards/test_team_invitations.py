"""Team page and invitations page (issue 15): tenant admins invite (no username oracle),
change roles and revoke; the invitee sees a notice on every page and accepts."""

from __future__ import annotations

import re

import pytest
from django.contrib.messages import get_messages

from core.models import AuditEntry
from tenants.models import Invitation, Membership
from tests.builders import make_user

pytestmark = pytest.mark.django_db


def _message(response) -> str:
    """The newest flash message of the response's request."""
    return [str(m) for m in get_messages(response.wsgi_request)][-1]


def test_the_invite_message_is_the_same_for_existing_and_missing_users(client, world):
    client.force_login(world["ada"])
    texts = []
    for name in ("bob", "ghost"):
        response = client.post(
            "/tenants/team-a/", {"action": "invite", "username": name, "role": "member"}
        )
        assert response.status_code == 302
        text = _message(response).replace(name, "<who>")
        texts.append(re.sub(r"token=[\w-]+", "token=<token>", text))
    assert texts[0] == texts[1]
    assert "If such a user exists they see it after logging in" in texts[0]
    page = client.get("/tenants/team-a/").content.decode()
    assert "ghost" in page and "Open invitations" in page
    assert not Membership.objects.filter(user=world["bob"], tenant=world["team_a"]).exists()


def test_the_invitee_is_told_on_every_page_and_accepts(client, world):
    Invitation.objects.all().delete()
    client.force_login(world["ada"])
    client.post("/tenants/team-a/", {"username": "bob", "role": "viewer"})
    client.force_login(world["bob"])
    overview = client.get("/").content.decode()
    assert 'id="invitation-notice"' in overview and "1 open invitation" in overview
    listing = client.get("/account/invitations/").content.decode()
    assert "team-a" in listing and "Viewer" in listing
    invitation = Invitation.objects.get(invitee="bob")
    # an answer other than accept/decline names nothing
    assert client.post(f"/account/invitations/{invitation.pk}/maybe/").status_code == 404
    response = client.post(f"/account/invitations/{invitation.pk}/accept/")
    assert response.status_code == 302 and response["Location"] == "/tenants/team-a/"
    assert Membership.objects.get(user=world["bob"], tenant=world["team_a"]).role == "viewer"
    assert 'id="invitation-notice"' not in client.get("/").content.decode()


def test_another_user_cannot_answer_the_invitation(client, world):
    client.force_login(world["ada"])
    client.post("/tenants/team-a/", {"username": "bob", "role": "member"})
    invitation = Invitation.objects.get(invitee="bob")
    client.force_login(make_user("mallory"))
    assert client.post(f"/account/invitations/{invitation.pk}/accept/").status_code == 404
    assert "team-a" not in client.get("/account/invitations/").content.decode()


def test_admin_changes_a_role_and_revokes_an_invitation(client, world):
    client.force_login(world["ada"])
    alice = Membership.objects.get(user=world["alice"], tenant=world["team_a"])
    assert (
        client.post(
            "/tenants/team-a/", {"action": "role", "membership": alice.pk, "role": "viewer"}
        ).status_code
        == 302
    )
    alice.refresh_from_db()
    assert alice.role == "viewer"
    assert (
        client.post(
            "/tenants/team-a/", {"action": "role", "membership": "x", "role": "viewer"}
        ).status_code
        == 400
    )
    client.post("/tenants/team-a/", {"username": "bob", "role": "member"})
    invitation = Invitation.objects.get(invitee="bob")
    assert client.post("/tenants/team-a/", {"revoke": invitation.pk}).status_code == 302
    invitation.refresh_from_db()
    assert invitation.state == "revoked"
    assert list(
        AuditEntry.objects.filter(tenant_id=world["team_a"].pk, source="ui")
        .order_by("id")
        .values_list("action", flat=True)
    ) == ["membership.update", "invitation.create", "invitation.revoke"]


def test_only_a_platform_admin_adds_directly_and_learns_about_missing_users(client, world):
    client.force_login(world["ada"])
    client.post("/tenants/team-a/", {"action": "add", "username": "bob", "role": "member"})
    assert not Membership.objects.filter(user=world["bob"], tenant=world["team_a"]).exists()
    client.force_login(world["root"])
    assert (
        client.post(
            "/tenants/team-a/", {"action": "add", "username": "bob", "role": "member"}
        ).status_code
        == 302
    )
    assert Membership.objects.get(user=world["bob"], tenant=world["team_a"]).role == "member"
    missing = client.post(
        "/tenants/team-a/", {"action": "add", "username": "ghost", "role": "member"}
    )
    assert missing.status_code == 200 and "No user with this username." in missing.content.decode()
