"""Invitations: a tenant admin invites a username or e-mail address with a role; the invitee
accepts (becoming a member through :func:`tenants.services.memberships.add_member`) or
declines; the admin may revoke. Only the token's hash is stored."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.audit import record, snapshot
from core.exceptions import Conflict, NotFound
from core.locks import lock_rows
from tenants.models import Invitation, Tenant
from tenants.services.memberships import add_member, check_role

INVITATION_FIELDS = ["tenant", "invitee", "role", "expires_at"]


def hash_invitation_token(token: str) -> str:
    """SHA-256 hex digest of an invitation token (what the database keeps)."""
    return hashlib.sha256(token.encode()).hexdigest()


def create_invitation(
    *, tenant: Tenant, invitee: str, role: str, actor=None, source: str = "api"
) -> tuple[Invitation, str]:
    """Invite ``invitee`` (a username or an e-mail address) to ``tenant`` with ``role``.

    The answer is the same whether or not such a user exists (or is already a member): the
    inviter learns nothing about the user directory. An open invitation of the same tenant
    and invitee is revoked and replaced. Valid for ``INVITATION_TTL_HOURS``.

    Returns:
        ``(invitation, token)``: the token is not stored (only its hash) and is shown once.

    Raises:
        InvalidRequest: unknown role.
    """
    check_role(role)
    token = secrets.token_urlsafe(32)
    now = timezone.now()
    with transaction.atomic():
        Invitation.objects.filter(
            tenant=tenant, invitee=invitee, accepted_at__isnull=True, revoked_at__isnull=True
        ).update(revoked_at=now)
        invitation = Invitation.objects.create(
            tenant=tenant,
            invitee=invitee,
            role=role,
            token_hash=hash_invitation_token(token),
            expires_at=now + timedelta(hours=settings.INVITATION_TTL_HOURS),
            created_by=actor if getattr(actor, "is_authenticated", False) else None,
        )
        record(
            "invitation.create",
            invitation,
            actor=actor,
            tenant_id=tenant.pk,
            after=snapshot(invitation, INVITATION_FIELDS),
            source=source,
        )
    return invitation, token


def invitation_is_for(invitation: Invitation, user) -> bool:
    """True when ``invitation`` is addressed to ``user`` (username, or e-mail ignoring case)."""
    email = (user.email or "").strip().lower()
    return invitation.invitee == user.get_username() or (
        bool(email) and invitation.invitee.strip().lower() == email
    )


def _open_invitation(invitation: Invitation, user, now) -> Invitation:
    locked = lock_rows(Invitation).select_related("tenant").get(pk=invitation.pk)
    if not invitation_is_for(locked, user):
        raise NotFound("No such invitation.")
    if locked.accepted_at is not None or locked.revoked_at is not None:
        raise Conflict(f"This invitation is already {locked.state}.")
    if locked.expires_at <= now:
        raise Conflict("This invitation has expired; ask for a new one.")
    return locked


def accept_invitation(invitation: Invitation, *, user, source: str = "api") -> Invitation:
    """The invitee accepts: they get the invitation's role in its tenant (a role they already
    hold there is replaced).

    Returns:
        The accepted invitation.

    Raises:
        NotFound: the invitation is not addressed to ``user``.
        Conflict: already accepted, revoked or declined, or expired.
    """
    now = timezone.now()
    with transaction.atomic():
        locked = _open_invitation(invitation, user, now)
        locked.accepted_at, locked.accepted_by = now, user
        locked.save(update_fields=["accepted_at", "accepted_by", "updated"])
        record("invitation.accept", locked, actor=user, tenant_id=locked.tenant_id, source=source)
        add_member(tenant=locked.tenant, user=user, role=locked.role, actor=user, source=source)
    return locked


def accept_invitation_token(token: str, *, user, source: str = "api") -> Invitation:
    """Accept the invitation whose token is ``token`` (it must be addressed to ``user``).

    Raises:
        NotFound: no invitation with this token for ``user``.
        Conflict: see :func:`accept_invitation`.
    """
    invitation = Invitation.objects.filter(token_hash=hash_invitation_token(token)).first()
    if invitation is None:
        raise NotFound("No such invitation.")
    return accept_invitation(invitation, user=user, source=source)


def decline_invitation(invitation: Invitation, *, user, source: str = "api") -> Invitation:
    """The invitee declines (the invitation is closed as revoked).

    Raises:
        NotFound / Conflict: see :func:`accept_invitation`.
    """
    now = timezone.now()
    with transaction.atomic():
        locked = _open_invitation(invitation, user, now)
        locked.revoked_at = now
        locked.save(update_fields=["revoked_at", "updated"])
        record("invitation.decline", locked, actor=user, tenant_id=locked.tenant_id, source=source)
    return locked


def revoke_invitation(invitation: Invitation, *, actor=None, source: str = "api") -> Invitation:
    """The tenant's admin withdraws an open invitation.

    Raises:
        Conflict: already accepted or revoked.
    """
    with transaction.atomic():
        locked = lock_rows(Invitation).get(pk=invitation.pk)
        if locked.accepted_at is not None or locked.revoked_at is not None:
            raise Conflict(f"This invitation is already {locked.state}.")
        locked.revoked_at = timezone.now()
        locked.save(update_fields=["revoked_at", "updated"])
        record("invitation.revoke", locked, actor=actor, tenant_id=locked.tenant_id, source=source)
    return locked
