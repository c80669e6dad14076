"""Quotas (Kueue nominal quota, borrowing limit, lending limit; a child tenant's quota is a
split of its parent's) and aggregate caps: create, change, delete, each with an audit entry."""

from __future__ import annotations

from django.db import transaction

from core.audit import record, snapshot
from core.exceptions import Conflict, InvalidRequest
from core.locks import lock_rows
from tenants.choices import Dimension
from tenants.models import AggregateCap, Quota, ResourceGroup, Tenant

QUOTA_FIELDS = [
    "tenant",
    "resource_group",
    "flavor",
    "dimension",
    "nominal",
    "borrowing_limit",
    "lending_limit",
]


def _check_quota_values(
    nominal: int, borrowing_limit: int | None, lending_limit: int | None, dimension: str
) -> None:
    if dimension not in Dimension.values:
        raise InvalidRequest(f"unknown dimension {dimension!r}", field="dimension")
    if nominal < 0:
        raise InvalidRequest("nominal must be >= 0", field="nominal")
    if borrowing_limit is not None and borrowing_limit < 0:
        raise InvalidRequest("borrowing_limit must be >= 0 or null", field="borrowing_limit")
    if lending_limit is not None and not 0 <= lending_limit <= nominal:
        raise InvalidRequest("lending_limit must be between 0 and nominal", field="lending_limit")


def _check_flavor(
    flavor: str, allowed_flavors: set[str] | None, resource_group: ResourceGroup
) -> None:
    """Raises InvalidRequest (field ``flavor``) when ``allowed_flavors`` (None: not checked)
    does not name ``flavor``."""
    if allowed_flavors is not None and flavor not in allowed_flavors:
        raise InvalidRequest(
            f"flavor {flavor!r} is not '*', a device model or a model family of group "
            f"{resource_group.name} (known: {', '.join(sorted(allowed_flavors))})",
            field="flavor",
        )


def check_within_parent(
    tenant: Tenant,
    resource_group: ResourceGroup,
    flavor: str,
    dimension: str,
    nominal: int,
    *,
    exclude_pk: int | None = None,
) -> None:
    """A child tenant's nominal quota must come out of its parent's: the parent's row for
    the same group, flavor and dimension, minus what its other children already hold, must
    cover ``nominal``. Locks the parent's row, so two concurrent splits cannot both pass
    (call inside the writing transaction). A top-level tenant is not bounded.

    Raises:
        InvalidRequest (field ``nominal``): the parent has no such row, or not enough left.
    """
    parent = tenant.parent
    if parent is None:
        return
    row = (
        lock_rows(Quota)
        .filter(tenant=parent, resource_group=resource_group, flavor=flavor, dimension=dimension)
        .first()
    )
    if row is None:
        raise InvalidRequest(
            f"tenant {parent.name} has no {dimension} quota for flavor {flavor} in "
            f"{resource_group.name}: a child's quota is a split of its parent's",
            field="nominal",
        )
    siblings = Quota.objects.filter(
        tenant__parent=parent, resource_group=resource_group, flavor=flavor, dimension=dimension
    )
    if exclude_pk is not None:
        siblings = siblings.exclude(pk=exclude_pk)
    given = sum(siblings.values_list("nominal", flat=True))
    left = max(0, row.nominal - given)
    if nominal > left:
        raise InvalidRequest(
            f"nominal {nominal} exceeds what tenant {parent.name} has left to split: its "
            f"{dimension} quota for {flavor} in {resource_group.name} is {row.nominal}, its "
            f"other children hold {given}, so at most {left}",
            field="nominal",
        )


def create_quota(
    *,
    tenant: Tenant,
    resource_group: ResourceGroup,
    flavor: str,
    dimension: str,
    nominal: int,
    borrowing_limit: int | None = None,
    lending_limit: int | None = None,
    allowed_flavors: set[str] | None = None,
    within_parent: bool = False,
    actor=None,
) -> Quota:
    """Create one quota row (Kueue nominal quota / borrowing limit / lending limit).

    Args:
        allowed_flavors: flavor names valid in the group (``"*"``, model names, families);
            None skips the check (the caller knows the inventory, this app does not).
        within_parent: bound a child tenant's nominal by what its parent has left
            (:func:`check_within_parent`; a tenant admin splitting their tenant's quota).

    Raises:
        InvalidRequest: bad amounts, an unknown flavor or dimension, more than the parent
            has left.
        Conflict: a row for the same tenant, group, flavor and dimension exists.
    """
    _check_quota_values(nominal, borrowing_limit, lending_limit, dimension)
    _check_flavor(flavor, allowed_flavors, resource_group)
    with transaction.atomic():
        if within_parent:
            check_within_parent(tenant, resource_group, flavor, dimension, nominal)
        if Quota.objects.filter(
            tenant=tenant, resource_group=resource_group, flavor=flavor, dimension=dimension
        ).exists():
            raise Conflict(
                f"tenant {tenant.name} already has a {dimension} quota for {flavor} in "
                f"{resource_group.name}",
                field="flavor",
            )
        quota = Quota.objects.create(
            tenant=tenant,
            resource_group=resource_group,
            flavor=flavor,
            dimension=dimension,
            nominal=nominal,
            borrowing_limit=borrowing_limit,
            lending_limit=lending_limit,
        )
        record(
            "quota.create",
            quota,
            actor=actor,
            after=snapshot(quota, QUOTA_FIELDS),
            tenant_id=tenant.pk,
        )
    return quota


def update_quota(
    quota: Quota,
    *,
    nominal: int,
    borrowing_limit: int | None,
    lending_limit: int | None,
    within_parent: bool = False,
    actor=None,
) -> Quota:
    """Change the amounts of a quota row (conditional on the row still existing). Usage
    already running above a smaller nominal stays counted (it becomes borrowing, reclaimable
    by the tenants whose quota it now uses); nothing is evicted here.

    Args:
        within_parent: see :func:`create_quota`.

    Raises:
        InvalidRequest: bad amounts, more than the parent has left.
    """
    _check_quota_values(nominal, borrowing_limit, lending_limit, quota.dimension)
    with transaction.atomic():
        if within_parent:
            check_within_parent(
                quota.tenant,
                quota.resource_group,
                quota.flavor,
                quota.dimension,
                nominal,
                exclude_pk=quota.pk,
            )
        locked = lock_rows(Quota).get(pk=quota.pk)
        before = snapshot(locked, QUOTA_FIELDS)
        locked.nominal, locked.borrowing_limit, locked.lending_limit = (
            nominal,
            borrowing_limit,
            lending_limit,
        )
        locked.save(update_fields=["nominal", "borrowing_limit", "lending_limit", "updated"])
        record(
            "quota.update",
            locked,
            actor=actor,
            before=before,
            after=snapshot(locked, QUOTA_FIELDS),
            tenant_id=locked.tenant_id,
        )
    return locked


def delete_quota(quota: Quota, *, actor=None) -> None:
    """Delete a quota row (the tenant loses that entitlement; running jobs are not evicted
    here: use the quota dry-run to see what a cycle would have to reclaim)."""
    with transaction.atomic():
        before = snapshot(quota, QUOTA_FIELDS)
        record("quota.delete", quota, actor=actor, before=before, tenant_id=quota.tenant_id)
        quota.delete()


def create_cap(
    *,
    tenant: Tenant,
    resource_group: ResourceGroup,
    name: str,
    dimension: str,
    limit: int,
    flavors: list[str],
    actor=None,
) -> AggregateCap:
    """Create an aggregate cap (model family or per-tenant; ``flavors`` empty = all).

    Raises:
        InvalidRequest: negative limit or unknown dimension.
        Conflict: a cap with that name exists for the tenant in the group.
    """
    if dimension not in Dimension.values:
        raise InvalidRequest(f"unknown dimension {dimension!r}", field="dimension")
    if limit < 0:
        raise InvalidRequest("limit must be >= 0", field="limit")
    with transaction.atomic():
        if AggregateCap.objects.filter(
            tenant=tenant, resource_group=resource_group, name=name
        ).exists():
            raise Conflict(f"cap {name} exists", field="name")
        cap = AggregateCap.objects.create(
            tenant=tenant,
            resource_group=resource_group,
            name=name,
            dimension=dimension,
            limit=limit,
            flavors=list(flavors),
        )
        record(
            "cap.create",
            cap,
            actor=actor,
            tenant_id=tenant.pk,
            after=snapshot(cap, ["name", "dimension", "limit", "flavors"]),
        )
    return cap
