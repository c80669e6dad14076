"""Write side of the tenants app: quotas, aggregate caps, stored usage, the usage ledger and
memberships.

Scheduling tells this app about charges through these functions (it never writes the rows
itself); this app never imports ``scheduling`` (STYLE.md §3).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import F

from core.audit import record, snapshot
from core.exceptions import Conflict, InvalidRequest
from tenants.choices import Dimension
from tenants.models import (
    AggregateCap,
    LedgerInterval,
    Membership,
    Quota,
    QuotaUsage,
    ResourceGroup,
    Tenant,
    TenantNamespace,
)

QUOTA_FIELDS = ["tenant", "resource_group", "flavor", "dimension", "nominal", "borrowing_limit",
                "lending_limit"]

UsageKey = tuple[int, int, str, str]
"""``(tenant id, resource group id, flavor, dimension)``."""


# -- quotas -------------------------------------------------------------------------------------


def _check_quota_values(nominal: int, borrowing_limit: int | None,
                        lending_limit: int | None, dimension: str) -> None:
    if dimension not in Dimension.values:
        raise InvalidRequest(f"unknown dimension {dimension!r}", field="dimension")
    if nominal < 0:
        raise InvalidRequest("nominal must be >= 0", field="nominal")
    if borrowing_limit is not None and borrowing_limit < 0:
        raise InvalidRequest("borrowing_limit must be >= 0 or null", field="borrowing_limit")
    if lending_limit is not None and not 0 <= lending_limit <= nominal:
        raise InvalidRequest("lending_limit must be between 0 and nominal", field="lending_limit")


def check_within_parent(tenant: Tenant, resource_group: ResourceGroup, flavor: str,
                        dimension: str, nominal: int, *, exclude_pk: int | None = None) -> None:
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
    row = Quota.objects.select_for_update().filter(
        tenant=parent, resource_group=resource_group, flavor=flavor, dimension=dimension
    ).first()
    if row is None:
        raise InvalidRequest(
            f"tenant {parent.name} has no {dimension} quota for flavor {flavor} in "
            f"{resource_group.name}: a child's quota is a split of its parent's",
            field="nominal")
    siblings = Quota.objects.filter(
        tenant__parent=parent, resource_group=resource_group, flavor=flavor,
        dimension=dimension).exclude(pk=exclude_pk).values_list("nominal", flat=True)
    given = sum(siblings)
    left = max(0, row.nominal - given)
    if nominal > left:
        raise InvalidRequest(
            f"nominal {nominal} exceeds what tenant {parent.name} has left to split: its "
            f"{dimension} quota for {flavor} in {resource_group.name} is {row.nominal}, its "
            f"other children hold {given}, so at most {left}", field="nominal")


def create_quota(*, tenant: Tenant, resource_group: ResourceGroup, flavor: str, dimension: str,
                 nominal: int, borrowing_limit: int | None = None,
                 lending_limit: int | None = None, allowed_flavors: set[str] | None = None,
                 within_parent: bool = False, actor=None) -> Quota:
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
    if allowed_flavors is not None and flavor not in allowed_flavors:
        raise InvalidRequest(
            f"flavor {flavor!r} is not '*', a device model or a model family of group "
            f"{resource_group.name} (known: {', '.join(sorted(allowed_flavors))})",
            field="flavor",
        )
    with transaction.atomic():
        if within_parent:
            check_within_parent(tenant, resource_group, flavor, dimension, nominal)
        if Quota.objects.filter(tenant=tenant, resource_group=resource_group, flavor=flavor,
                                dimension=dimension).exists():
            raise Conflict(
                f"tenant {tenant.name} already has a {dimension} quota for {flavor} in "
                f"{resource_group.name}", field="flavor")
        quota = Quota.objects.create(
            tenant=tenant, resource_group=resource_group, flavor=flavor, dimension=dimension,
            nominal=nominal, borrowing_limit=borrowing_limit, lending_limit=lending_limit,
        )
        record("quota.create", quota, actor=actor, after=snapshot(quota, QUOTA_FIELDS),
               tenant_id=tenant.pk)
    return quota


def update_quota(quota: Quota, *, nominal: int, borrowing_limit: int | None,
                 lending_limit: int | None, within_parent: bool = False, actor=None) -> Quota:
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
            check_within_parent(quota.tenant, quota.resource_group, quota.flavor,
                                quota.dimension, nominal, exclude_pk=quota.pk)
        locked = Quota.objects.select_for_update().get(pk=quota.pk)
        before = snapshot(locked, QUOTA_FIELDS)
        locked.nominal, locked.borrowing_limit, locked.lending_limit = (
            nominal, borrowing_limit, lending_limit)
        locked.save(update_fields=["nominal", "borrowing_limit", "lending_limit", "updated"])
        record("quota.update", locked, actor=actor, before=before,
               after=snapshot(locked, QUOTA_FIELDS), tenant_id=locked.tenant_id)
    return locked


def delete_quota(quota: Quota, *, actor=None) -> None:
    """Delete a quota row (the tenant loses that entitlement; running jobs are not evicted
    here: use the quota dry-run to see what a cycle would have to reclaim)."""
    with transaction.atomic():
        before = snapshot(quota, QUOTA_FIELDS)
        record("quota.delete", quota, actor=actor, before=before, tenant_id=quota.tenant_id)
        quota.delete()


def create_cap(*, tenant: Tenant, resource_group: ResourceGroup, name: str, dimension: str,
               limit: int, flavors: list[str], actor=None) -> AggregateCap:
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
        if AggregateCap.objects.filter(tenant=tenant, resource_group=resource_group,
                                       name=name).exists():
            raise Conflict(f"cap {name} exists", field="name")
        cap = AggregateCap.objects.create(tenant=tenant, resource_group=resource_group,
                                          name=name, dimension=dimension, limit=limit,
                                          flavors=list(flavors))
        record("cap.create", cap, actor=actor, tenant_id=tenant.pk,
               after=snapshot(cap, ["name", "dimension", "limit", "flavors"]))
    return cap


# -- stored usage ---------------------------------------------------------------------------------


def lock_usage_rows(keys: Iterable[UsageKey]) -> dict[UsageKey, QuotaUsage]:
    """Create missing ``QuotaUsage`` rows, then lock every row of ``keys`` with
    ``SELECT ... FOR UPDATE`` in (tenant, group, flavor, dimension) order, so concurrent
    writers always lock in the same order (Saleor ``lock_objects``) and cannot deadlock.

    Must run inside a transaction.
    """
    keys = sorted(set(keys))
    if not keys:
        return {}
    QuotaUsage.objects.bulk_create(
        [QuotaUsage(tenant_id=t, resource_group_id=g, flavor=f, dimension=d)
         for t, g, f, d in keys],
        ignore_conflicts=True,
    )
    wanted = set(keys)
    rows = {}
    tenant_ids = sorted({k[0] for k in keys})
    group_ids = sorted({k[1] for k in keys})
    for row in (QuotaUsage.objects.select_for_update()
                .filter(tenant_id__in=tenant_ids, resource_group_id__in=group_ids)
                .order_by("tenant_id", "resource_group_id", "flavor", "dimension")):
        key = (row.tenant_id, row.resource_group_id, row.flavor, row.dimension)
        if key in wanted:
            rows[key] = row
    return rows


def apply_usage_deltas(deltas: Mapping[UsageKey, int]) -> None:
    """Add ``deltas`` to the stored usage under ordered row locks (see
    :func:`lock_usage_rows`); zero deltas are skipped. Runs in the caller's transaction
    (the admission commit), so usage changes commit or roll back with the placements."""
    deltas = {k: v for k, v in deltas.items() if v}
    if not deltas:
        return
    with transaction.atomic():
        rows = lock_usage_rows(deltas)
        for key in sorted(deltas):
            QuotaUsage.objects.filter(pk=rows[key].pk).update(amount=F("amount") + deltas[key])


def replace_usage(group_id: int, amounts: Mapping[tuple[int, str, str], int]) -> int:
    """Overwrite a group's stored usage with ``{(tenant id, flavor, dimension): amount}``
    (rows not named become 0), under ordered row locks. Used only to repair drift.

    Returns:
        Number of rows whose amount changed.
    """
    with transaction.atomic():
        existing = QuotaUsage.objects.filter(resource_group_id=group_id).values_list(
            "tenant_id", "flavor", "dimension")
        keys = {(t, group_id, f, d) for t, f, d in existing}
        keys |= {(t, group_id, f, d) for t, f, d in amounts}
        rows = lock_usage_rows(keys)
        changed = 0
        for key in sorted(rows):
            want = amounts.get((key[0], key[2], key[3]), 0)
            if rows[key].amount != want:
                QuotaUsage.objects.filter(pk=rows[key].pk).update(amount=want)
                changed += 1
    return changed


# -- ledger --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LedgerEntry:
    """One device share held by a job's pod, to be written as an open ledger interval."""

    tenant_id: int
    resource_group_id: int | None
    job_id: int
    placement_id: int
    device_uuid: str
    device_model: str
    flavor: str
    devices_milli: int
    memory_mib: int
    cores_percent: int
    start: datetime
    end: datetime | None = None


def open_ledger_intervals(entries: Iterable[LedgerEntry]) -> int:
    """Insert intervals (idempotent: one per placement and device; an existing one is kept
    unchanged). An entry with ``end`` set is inserted already closed.

    Returns:
        Number of entries given (inserts that already existed are ignored).
    """
    rows = [LedgerInterval(**e.__dict__) for e in entries]
    LedgerInterval.objects.bulk_create(rows, ignore_conflicts=True)
    return len(rows)


def close_ledger_intervals(placement_ends: Mapping[int, datetime]) -> int:
    """Close the open intervals of the given placements at their end time (conditional
    UPDATE on ``end IS NULL``: a closed interval is never changed again).

    Returns:
        Number of intervals closed.
    """
    closed = 0
    for placement_id, end in sorted(placement_ends.items()):
        closed += LedgerInterval.objects.filter(
            placement_id=placement_id, end__isnull=True, start__lte=end
        ).update(end=end)
        # an end before the recorded start (clock skew between writers) closes at start
        closed += LedgerInterval.objects.filter(
            placement_id=placement_id, end__isnull=True
        ).update(end=F("start"))
    return closed


# -- memberships --------------------------------------------------------------------------------

MEMBERSHIP_FIELDS = ["user", "tenant", "role"]


def add_membership(*, tenant: Tenant, user, role: str, actor=None,
                   source: str = "api") -> Membership:
    """Give ``user`` the ``role`` (a :class:`tenants.choices.Role` value) in ``tenant``.

    The row and its ``membership.create`` audit entry commit together. The caller checks that
    ``actor`` may manage ``tenant``'s members.

    Raises:
        Conflict: the user is already a member of the tenant (change the role instead).
    """
    with transaction.atomic():
        if Membership.objects.filter(user=user, tenant=tenant).exists():
            raise Conflict(f"{user} is already a member of {tenant}", field="user")
        membership = Membership.objects.create(user=user, tenant=tenant, role=role)
        record("membership.create", membership, actor=actor, tenant_id=tenant.pk,
               after=snapshot(membership, MEMBERSHIP_FIELDS), source=source)
    return membership


def change_membership(membership: Membership, *, role: str | None = None, user=None,
                      actor=None, source: str = "api") -> Membership:
    """Change a membership's role and/or user (never its tenant); one ``membership.update``
    audit entry with the before and after values, in the same transaction."""
    with transaction.atomic():
        before = snapshot(membership, MEMBERSHIP_FIELDS)
        if role is not None:
            membership.role = role
        if user is not None:
            membership.user = user
        membership.save()
        record("membership.update", membership, actor=actor, tenant_id=membership.tenant_id,
               before=before, after=snapshot(membership, MEMBERSHIP_FIELDS), source=source)
    return membership


def set_membership(*, tenant: Tenant, user, role: str, actor=None,
                   source: str = "api") -> tuple[Membership, bool]:
    """Add ``user`` to ``tenant`` with ``role``, or re-role an existing member (the team page's
    single form). Returns ``(membership, created)``."""
    with transaction.atomic():
        existing = Membership.objects.select_for_update().filter(user=user,
                                                                 tenant=tenant).first()
        if existing is None:
            return add_membership(tenant=tenant, user=user, role=role, actor=actor,
                                  source=source), True
        return change_membership(existing, role=role, actor=actor, source=source), False


def remove_membership(membership: Membership, *, actor=None, source: str = "api") -> None:
    """Delete a membership; its ``membership.delete`` audit entry (with the old values)
    commits with the delete."""
    with transaction.atomic():
        record("membership.delete", membership, actor=actor, tenant_id=membership.tenant_id,
               before=snapshot(membership, MEMBERSHIP_FIELDS), source=source)
        membership.delete()
# -- tenant namespaces --------------------------------------------------------------------------


def record_tenant_namespace(*, tenant_id: int, cluster_id: int, name: str,
                            now: datetime) -> TenantNamespace:
    """Record that the console created (or found, labelled for the tenant) ``name`` as the
    tenant's namespace in the cluster; later calls refresh ``ensured_at`` only.

    Raises:
        Conflict: the tenant already has another namespace in the cluster, or another tenant
            holds this name there (the caller checked the namespace's labels, so this is a
            race or a pattern that maps two tenants to one name).
    """
    with transaction.atomic():
        other = TenantNamespace.objects.filter(cluster_id=cluster_id, name=name).exclude(
            tenant_id=tenant_id).first()
        if other is not None:
            raise Conflict(f"namespace {name!r} of cluster {cluster_id} belongs to tenant "
                           f"{other.tenant_id}", field="namespace")
        row, created = TenantNamespace.objects.select_for_update().get_or_create(
            tenant_id=tenant_id, cluster_id=cluster_id,
            defaults={"name": name, "ensured_at": now})
        if not created and row.name != name:
            raise Conflict(f"tenant {tenant_id} already owns namespace {row.name!r} in cluster "
                           f"{cluster_id}, not {name!r}", field="namespace")
        if not created:
            TenantNamespace.objects.filter(pk=row.pk).update(ensured_at=now)
    return row
