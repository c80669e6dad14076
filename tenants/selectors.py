"""Read-side queries of the tenants app."""

from __future__ import annotations

from dataclasses import dataclass

from tenants.models import Membership, Quota, Tenant


@dataclass(frozen=True)
class QuotaLimit:
    """One quota row as plain data (amounts in the dimension's unit)."""

    flavor: str
    dimension: str
    nominal: int
    borrowing_limit: int | None
    lending_limit: int | None


def get_group_quotas(group_id: int) -> dict[int, dict[tuple[str, str], QuotaLimit]]:
    """Quotas of every tenant in a resource group.

    Returns:
        ``{tenant id: {(flavor, dimension): QuotaLimit}}``; flavor ``"*"`` = any model.
    """
    out: dict[int, dict[tuple[str, str], QuotaLimit]] = {}
    for q in Quota.objects.filter(resource_group_id=group_id):
        out.setdefault(q.tenant_id, {})[(q.flavor, q.dimension)] = QuotaLimit(
            q.flavor, q.dimension, q.nominal, q.borrowing_limit, q.lending_limit
        )
    return out


def list_user_tenants(user) -> list[Tenant]:
    """Tenants the user belongs to (every tenant for a platform admin)."""
    if user.is_superuser:
        return list(Tenant.objects.all())
    return list(Tenant.objects.filter(memberships__user=user).distinct())


def get_user_tenant_ids(user) -> set[int] | None:
    """Ids of the user's tenants, or ``None`` for a platform admin (no restriction)."""
    if user.is_superuser:
        return None
    return set(Membership.objects.filter(user=user).values_list("tenant_id", flat=True))


def get_role(user, tenant_id: int) -> str | None:
    """The user's role in a tenant (``"platform_admin"`` for superusers), or None."""
    if user.is_superuser:
        return "platform_admin"
    return (
        Membership.objects.filter(user=user, tenant_id=tenant_id)
        .values_list("role", flat=True)
        .first()
    )
