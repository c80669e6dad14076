"""Quotas (Kueue nominal quota, borrowing limit, lending limit; a child tenant's quota is a
split of its parent's) and aggregate caps: create, change, delete, each with an audit entry."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from core.audit import record, snapshot
from core.exceptions import Conflict, InvalidRequest
from core.locks import lock_rows
from tenants.choices import Dimension
from tenants.models import MAX_QUOTA_AMOUNT, AggregateCap, Quota, ResourceGroup, Tenant

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
    """Raises InvalidRequest naming the field: an unknown dimension, an amount below 0 or
    above ``MAX_QUOTA_AMOUNT`` (what the database stores), a lending limit above nominal."""
    if dimension not in Dimension.values:
        raise InvalidRequest(f"unknown dimension {dimension!r}", field="dimension")
    if not 0 <= nominal <= MAX_QUOTA_AMOUNT:
        raise InvalidRequest(f"nominal must be between 0 and {MAX_QUOTA_AMOUNT}", field="nominal")
    if borrowing_limit is not None and not 0 <= borrowing_limit <= MAX_QUOTA_AMOUNT:
        raise InvalidRequest(
            f"borrowing_limit must be between 0 and {MAX_QUOTA_AMOUNT}, or null",
            field="borrowing_limit",
        )
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


def _parent_share(
    parent: Tenant,
    resource_group: ResourceGroup,
    flavor: str,
    dimension: str,
    exclude_pks: set[int],
) -> tuple[Quota, int]:
    """The parent's quota row for one group, flavor and dimension (locked: two concurrent
    splits cannot both pass) and what its children's other rows (``exclude_pks`` left out)
    hold together. The rule of a split: a child's nominal quota comes out of its parent's
    row, so the children's nominal quotas together stay within it (Run:ai department /
    project; in Kueue terms the parent's own nominal is what the children leave).

    Raises:
        InvalidRequest (field ``nominal``): the parent has no such row.
    """
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
    ).exclude(pk__in=exclude_pks)
    return row, sum(siblings.values_list("nominal", flat=True))


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
    cover ``nominal`` (:func:`_parent_share`). Locks the parent's row, so two concurrent
    splits cannot both pass (call inside the writing transaction). A top-level tenant is not
    bounded.

    Raises:
        InvalidRequest (field ``nominal``): the parent has no such row, or not enough left.
    """
    parent = tenant.parent
    if parent is None:
        return
    excluded = set() if exclude_pk is None else {exclude_pk}
    row, given = _parent_share(parent, resource_group, flavor, dimension, excluded)
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


@dataclass(frozen=True)
class QuotaShare:
    """A child's row in a split, with its new amounts (Kueue nominalQuota, borrowingLimit,
    lendingLimit; None = unlimited / all of it), in the dimension's unit."""

    quota: Quota
    nominal: int
    borrowing_limit: int | None
    lending_limit: int | None


def _check_share(parent: Tenant, share: QuotaShare) -> None:
    """One row of a split: a direct child's, with valid amounts (errors on the row's field,
    ``quotas[<row id>].<name>``)."""
    field = f"quotas[{share.quota.pk}]"
    if share.quota.tenant.parent_id != parent.pk:
        raise InvalidRequest(
            f"quota {share.quota.pk} is not a quota of a child of {parent.name}",
            field=f"{field}.nominal",
        )
    try:
        _check_quota_values(
            share.nominal, share.borrowing_limit, share.lending_limit, share.quota.dimension
        )
    except InvalidRequest as exc:
        raise InvalidRequest(exc.message, field=f"{field}.{exc.field}") from exc


def split_quota(parent: Tenant, shares: list[QuotaShare], *, actor=None) -> list[Quota]:
    """Set the amounts of several of ``parent``'s children's quota rows at once: a tenant
    admin splitting the parent's quota among its children. The split is checked as a whole
    before anything is written (quota moved from one child to another passes whatever the
    rows' order): each row's amounts as :func:`update_quota` checks them, each row a direct
    child's, and per group, flavor and dimension the children's nominal quotas together
    within the parent's row (:func:`_parent_share`). All rows are saved, each with an audit
    entry, or none.

    Returns:
        The saved rows, in the order of ``shares``.

    Raises:
        InvalidRequest: field ``quotas[<row id>].<nominal|borrowing_limit|lending_limit>``
            for a bad amount or a row that is not a child's of ``parent``; field ``nominal``
            when the children's nominal quotas would exceed the parent's row (or it has none).
    """
    for share in shares:
        _check_share(parent, share)
    by_key: dict[tuple[int, str, str], list[QuotaShare]] = {}
    for share in shares:
        q = share.quota
        by_key.setdefault((q.resource_group_id, q.flavor, q.dimension), []).append(share)
    with transaction.atomic():
        # the parent's rows first, in pk order (core.locks.LOCK_ORDER), then the children's
        list(lock_rows(Quota).filter(tenant=parent).order_by("pk").values_list("pk", flat=True))
        for (_, flavor, dimension), same in sorted(by_key.items()):
            group = same[0].quota.resource_group
            row, others = _parent_share(
                parent, group, flavor, dimension, {s.quota.pk for s in same}
            )
            total = others + sum(s.nominal for s in same)
            if total > row.nominal:
                raise InvalidRequest(
                    f"the children of {parent.name} would hold {total} of {dimension} for "
                    f"{flavor} in {group.name}, more than {parent.name}'s quota of "
                    f"{row.nominal}: lower a child's nominal quota by {total - row.nominal}",
                    field="nominal",
                )
        ordered = sorted(shares, key=lambda s: s.quota.pk)
        saved = {
            s.quota.pk: update_quota(
                s.quota,
                nominal=s.nominal,
                borrowing_limit=s.borrowing_limit,
                lending_limit=s.lending_limit,
                actor=actor,
            )
            for s in ordered
        }
    return [saved[s.quota.pk] for s in shares]


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
