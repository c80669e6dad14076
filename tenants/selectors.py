"""Read-side queries of the tenants app."""

from __future__ import annotations

from django.apps import apps

from tenants.models import Membership, Tenant


def get_user_tenant_ids(user) -> set[int] | None:
    """Ids of the user's tenants, or ``None`` for a platform admin (no restriction); an
    anonymous user (e.g. drf-spectacular's schema request) has none."""
    if user.is_superuser:
        return None
    if not user.is_authenticated:
        return set()
    return set(Membership.objects.filter(user=user).values_list("tenant_id", flat=True))


def get_descendant_ids(tenant_ids: set[int]) -> set[int]:
    """``tenant_ids`` plus every tenant below them (one query per tree level)."""
    found = set(tenant_ids)
    frontier = set(tenant_ids)
    while frontier:
        frontier = set(Tenant.objects.filter(parent_id__in=frontier).values_list(
            "pk", flat=True)) - found
        found |= frontier
    return found


def get_visible_tenant_ids(user) -> set[int] | None:
    """Tenants whose quotas and usage the user may read: their own tenants and, where they
    are tenant admin, every tenant below (None = platform admin, no restriction)."""
    if user.is_superuser:
        return None
    if not user.is_authenticated:
        return set()
    roles = list(Membership.objects.filter(user=user).values_list("tenant_id", "role"))
    admin = {tenant_id for tenant_id, role in roles if role == "tenant_admin"}
    return {tenant_id for tenant_id, _ in roles} | get_descendant_ids(admin)


def can_manage_quota(user, tenant: Tenant) -> bool:
    """Platform admins manage every quota; a tenant admin manages the quotas of the tenants
    strictly below their tenant (a team's quota is set by its department's admin, never by
    the team itself)."""
    if user.is_superuser:
        return True
    admin = set(Membership.objects.filter(user=user, role="tenant_admin").values_list(
        "tenant_id", flat=True))
    node = tenant.parent
    while node is not None:
        if node.pk in admin:
            return True
        node = node.parent
    return False


def flavor_names(group) -> set[str]:
    """Flavor names a quota row of ``group`` may use: ``"*"``, the group's device model names
    and their families (every registered model when the group names none).

    The device inventory belongs to the scheduling app; it is read here by app label
    (``apps.get_model``) so that this app keeps no import of ``scheduling``.
    """
    device_model = apps.get_model("scheduling", "DeviceModel")
    models = device_model.objects.all()
    if group.device_models:
        models = models.filter(name__in=group.device_models)
    names = {"*"}
    for name, family in models.values_list("name", "family"):
        names.add(name)
        if family:
            names.add(family)
    return names
