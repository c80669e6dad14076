"""Who may do what in the pages (roles: platform admin = superuser; tenant_admin, member,
viewer per tenant). The API applies the same rules (tenants/api/permissions.py)."""

from __future__ import annotations

from scheduling.models import Queue
from tenants.choices import Role
from tenants.models import Membership
from tenants.selectors import admin_tenant_ids

__all__ = ["SUBMIT_ROLES", "admin_tenant_ids", "can_submit_in", "roles", "submit_queues"]

SUBMIT_ROLES = (Role.TENANT_ADMIN, Role.MEMBER)


def roles(user) -> dict[int, str]:
    """``{tenant id: role}`` of the user's memberships (one query)."""
    return dict(Membership.objects.filter(user=user).values_list("tenant_id", "role"))


def submit_queues(user):
    """Queues the user may submit to (all for a platform admin)."""
    queues = Queue.objects.select_related("tenant", "resource_group").order_by(
        "tenant__name", "name"
    )
    if user.is_superuser:
        return queues
    return queues.filter(tenant__memberships__user=user, tenant__memberships__role__in=SUBMIT_ROLES)


def can_submit_in(user, tenant_id: int) -> bool:
    """True when the user is a platform admin, or member / tenant admin of the tenant."""
    if user.is_superuser:
        return True
    return Membership.objects.filter(user=user, tenant_id=tenant_id, role__in=SUBMIT_ROLES).exists()
