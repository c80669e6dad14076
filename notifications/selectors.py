"""Read side of notifications: which subscriptions an event reaches, and what a user may
see (subscriptions and their delivery log)."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from notifications.choices import SCOPE_KINDS, Scope
from notifications.models import Delivery, Subscription
from tenants.models import Membership
from tenants.selectors import admin_tenant_ids as tenant_admin_ids


def subscriptions_for_event(
    kind: str, tenant_id: int | None, user_id: int | None
) -> list[Subscription]:
    """Enabled subscriptions that receive event ``kind`` about ``tenant_id``:

    - platform scope: every event;
    - tenant scope: events of its tenant;
    - user scope: events about the owner's own jobs (``user_id``) in a tenant the owner is
      still a member of.

    Each must list ``kind`` in ``events`` or list none (every kind its scope receives).
    """
    scopes = Q(scope=Scope.PLATFORM)
    if tenant_id is not None:
        scopes |= Q(scope=Scope.TENANT, tenant_id=tenant_id)
        if user_id is not None:
            member = Membership.objects.filter(user_id=user_id, tenant_id=tenant_id).exists()
            if member:
                scopes |= Q(scope=Scope.USER, owner_id=user_id)
    candidates = Subscription.objects.filter(scopes, enabled=True).order_by("pk")
    return [
        s
        for s in candidates
        if kind in SCOPE_KINDS[Scope(s.scope)] and (not s.events or kind in s.events)
    ]


def admin_tenant_ids(user) -> set[int]:
    """Tenants where ``user`` is tenant admin (the rule of
    :func:`tenants.selectors.admin_tenant_ids`; callers answer platform admins before asking,
    so its "every tenant" (None) reads as none here)."""
    return tenant_admin_ids(user) or set()


def visible_subscriptions(user) -> QuerySet[Subscription]:
    """What ``user`` may see and manage: everything for platform admins; otherwise their own
    user-scope subscriptions and the tenant-scope ones of tenants they administer."""
    subs = Subscription.objects.select_related("tenant", "owner")
    if user.is_superuser:
        return subs
    if not user.is_authenticated:
        return subs.none()
    return subs.filter(
        Q(scope=Scope.USER, owner=user)
        | Q(scope=Scope.TENANT, tenant_id__in=admin_tenant_ids(user))
    )


def visible_deliveries(user) -> QuerySet[Delivery]:
    """The delivery log of :func:`visible_subscriptions`, newest first."""
    return (
        Delivery.objects.filter(subscription__in=visible_subscriptions(user).values("pk"))
        .select_related("subscription")
        .order_by("-created", "-id")
    )
