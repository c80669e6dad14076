"""Memberships: a user's role in a tenant, written by platform admins, accepted invitations
(:mod:`tenants.services.invitations`) and the identity-provider group sync; one audit entry
per change."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from django.db import transaction

from core.audit import record, snapshot
from core.exceptions import InvalidRequest
from core.locks import lock_rows
from tenants.choices import Role
from tenants.models import Membership, Tenant

MEMBERSHIP_FIELDS = ["user", "role"]


def check_role(role: str) -> None:
    """Raises InvalidRequest (field ``role``) unless ``role`` is a :class:`Role` value."""
    if role not in Role.values:
        raise InvalidRequest(f"unknown role {role!r}", field="role")


def add_member(*, tenant: Tenant, user, role: str, actor=None, source: str = "api") -> Membership:
    """Give ``user`` ``role`` in ``tenant`` (create the membership or change its role).

    Direct enrolment is for platform admins and for accepted invitations only; tenant admins
    invite (:func:`create_invitation`).

    Raises:
        InvalidRequest: unknown role.
    """
    check_role(role)
    with transaction.atomic():
        membership, created = lock_rows(Membership).get_or_create(
            user=user, tenant=tenant, defaults={"role": role}
        )
        before = None if created else snapshot(membership, MEMBERSHIP_FIELDS)
        if not created and membership.role != role:
            membership.role = role
            membership.save(update_fields=["role", "updated"])
        record(
            "membership.create" if created else "membership.update",
            membership,
            actor=actor,
            tenant_id=tenant.pk,
            before=before,
            after=snapshot(membership, MEMBERSHIP_FIELDS),
            source=source,
        )
    return membership


def change_member_role(
    membership: Membership, *, role: str, actor=None, source: str = "api"
) -> Membership:
    """Change the role of an existing membership.

    Raises:
        InvalidRequest: unknown role.
    """
    check_role(role)
    with transaction.atomic():
        locked = lock_rows(Membership).get(pk=membership.pk)
        before = snapshot(locked, MEMBERSHIP_FIELDS)
        locked.role = role
        locked.save(update_fields=["role", "updated"])
        record(
            "membership.update",
            locked,
            actor=actor,
            tenant_id=locked.tenant_id,
            before=before,
            after=snapshot(locked, MEMBERSHIP_FIELDS),
            source=source,
        )
    return locked


def remove_member(membership: Membership, *, actor=None, source: str = "api") -> None:
    """Delete a membership (the user loses every right in that tenant)."""
    with transaction.atomic():
        record(
            "membership.delete",
            membership,
            actor=actor,
            tenant_id=membership.tenant_id,
            before=snapshot(membership, MEMBERSHIP_FIELDS),
            source=source,
        )
        membership.delete()


#: Role precedence when several identity-provider groups grant roles in one tenant.
ROLE_RANK = {"viewer": 0, "member": 1, "tenant_admin": 2}


def sync_idp_memberships(
    user, grants: Mapping[str, str], managed: Iterable[str], *, source: str = "oidc"
) -> dict[str, str]:
    """Make ``user``'s memberships follow their identity-provider groups.

    Args:
        user: the signed-in user.
        grants: ``{tenant name: role}`` from the user's groups (the highest role per tenant).
        managed: tenant names any mapping rule names; a membership in one of them that the
            groups no longer grant is removed. Memberships in other tenants (granted in the
            console by a tenant admin) are left alone.
        source: the audit entries' source.

    Returns:
        ``{tenant name: role}`` after the sync for the managed tenants. Unknown tenant names are
        skipped (logged by the caller's configuration check).

    Each change goes through :func:`add_member` / :func:`remove_member` (one audit entry each,
    with ``source``), in one transaction.

    Raises:
        InvalidRequest: a granted role that is not a :class:`Role` value.
    """
    managed_names = set(managed)
    tenants = {t.name: t for t in Tenant.objects.filter(name__in=managed_names | set(grants))}
    out: dict[str, str] = {}
    with transaction.atomic():
        current = {
            m.tenant.name: m
            for m in Membership.objects.select_related("tenant").filter(
                user=user, tenant__name__in=list(tenants)
            )
        }
        for name, tenant in tenants.items():
            role = grants.get(name)
            membership = current.get(name)
            if role is None:
                if membership is not None and name in managed_names:
                    remove_member(membership, actor=user, source=source)
                continue
            if membership is None or membership.role != role:
                add_member(tenant=tenant, user=user, role=role, actor=user, source=source)
            out[name] = role
    return out
