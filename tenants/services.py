"""Write side of the tenants app: quotas, aggregate caps, memberships and invitations, stored
usage and the usage ledger.

Scheduling tells this app about charges through these functions (it never writes the rows
itself); this app never imports ``scheduling`` (STYLE.md §3).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from core.audit import record, snapshot
from core.events import QUOTA_NEARLY_EXHAUSTED, emit
from core.exceptions import Conflict, InvalidRequest, NotFound
from tenants.choices import Dimension, Role
from tenants.models import (
    AggregateCap,
    Invitation,
    LedgerInterval,
    Membership,
    Quota,
    QuotaUsage,
    ResourceGroup,
    Tenant,
    TenantNamespace,
)

QUOTA_FIELDS = [
    "tenant",
    "resource_group",
    "flavor",
    "dimension",
    "nominal",
    "borrowing_limit",
    "lending_limit",
]

UsageKey = tuple[int, int, str, str]
"""``(tenant id, resource group id, flavor, dimension)``."""


# -- quotas -------------------------------------------------------------------------------------


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
        Quota.objects.select_for_update()
        .filter(tenant=parent, resource_group=resource_group, flavor=flavor, dimension=dimension)
        .first()
    )
    if row is None:
        raise InvalidRequest(
            f"tenant {parent.name} has no {dimension} quota for flavor {flavor} in "
            f"{resource_group.name}: a child's quota is a split of its parent's",
            field="nominal",
        )
    siblings = (
        Quota.objects.filter(
            tenant__parent=parent, resource_group=resource_group, flavor=flavor, dimension=dimension
        )
        .exclude(pk=exclude_pk)
        .values_list("nominal", flat=True)
    )
    given = sum(siblings)
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
    if allowed_flavors is not None and flavor not in allowed_flavors:
        raise InvalidRequest(
            f"flavor {flavor!r} is not '*', a device model or a model family of group "
            f"{resource_group.name} (known: {', '.join(sorted(allowed_flavors))})",
            field="flavor",
        )
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
        locked = Quota.objects.select_for_update().get(pk=quota.pk)
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
        [
            QuotaUsage(tenant_id=t, resource_group_id=g, flavor=f, dimension=d)
            for t, g, f, d in keys
        ],
        ignore_conflicts=True,
    )
    wanted = set(keys)
    rows = {}
    tenant_ids = sorted({k[0] for k in keys})
    group_ids = sorted({k[1] for k in keys})
    for row in (
        QuotaUsage.objects.select_for_update()
        .filter(tenant_id__in=tenant_ids, resource_group_id__in=group_ids)
        .order_by("tenant_id", "resource_group_id", "flavor", "dimension")
    ):
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
        _announce_quota_crossings(
            {
                key: (rows[key].amount, rows[key].amount + deltas[key])
                for key in deltas
                if deltas[key] > 0
            }
        )


def _announce_quota_crossings(changes: Mapping[UsageKey, tuple[int, int]]) -> None:
    """Emit ``quota.nearly_exhausted`` for each quota whose usage went from below to at or
    above ``QUOTA_ALERT_THRESHOLD_PERCENT`` % of its nominal quota (``changes``: key ->
    (amount before, amount after)); once per crossing, so a tenant hovering above the line
    is not told again until it dropped below."""
    if not changes:
        return
    threshold = settings.QUOTA_ALERT_THRESHOLD_PERCENT
    tenants = {key[0] for key in changes}
    groups = {key[1] for key in changes}
    quotas = {
        (q.tenant_id, q.resource_group_id, q.flavor, q.dimension): q
        for q in Quota.objects.filter(
            tenant_id__in=tenants, resource_group_id__in=groups
        ).select_related("resource_group")
    }
    for key, (before, after) in sorted(changes.items()):
        quota = quotas.get(key)
        if quota is None or quota.nominal <= 0:
            continue
        line = quota.nominal * threshold / 100
        if before < line <= after:
            emit(
                QUOTA_NEARLY_EXHAUSTED,
                tenant_id=key[0],
                payload={
                    "resource_group": quota.resource_group.name,
                    "flavor": quota.flavor,
                    "dimension": quota.dimension,
                    "used": after,
                    "nominal": quota.nominal,
                    "used_percent": round(100 * after / quota.nominal, 1),
                    "threshold_percent": threshold,
                },
            )


def replace_usage(group_id: int, amounts: Mapping[tuple[int, str, str], int]) -> int:
    """Overwrite a group's stored usage with ``{(tenant id, flavor, dimension): amount}``
    (rows not named become 0), under ordered row locks. Used only to repair drift.

    Returns:
        Number of rows whose amount changed.
    """
    with transaction.atomic():
        existing = QuotaUsage.objects.filter(resource_group_id=group_id).values_list(
            "tenant_id", "flavor", "dimension"
        )
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
        closed += LedgerInterval.objects.filter(placement_id=placement_id, end__isnull=True).update(
            end=F("start")
        )
    return closed


# -- memberships ---------------------------------------------------------------------------------

MEMBERSHIP_FIELDS = ["user", "role"]


def _check_role(role: str) -> None:
    if role not in Role.values:
        raise InvalidRequest(f"unknown role {role!r}", field="role")


def add_member(*, tenant: Tenant, user, role: str, actor=None, source: str = "api") -> Membership:
    """Give ``user`` ``role`` in ``tenant`` (create the membership or change its role).

    Direct enrolment is for platform admins and for accepted invitations only; tenant admins
    invite (:func:`create_invitation`).

    Raises:
        InvalidRequest: unknown role.
    """
    _check_role(role)
    with transaction.atomic():
        membership, created = Membership.objects.select_for_update().get_or_create(
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
    _check_role(role)
    with transaction.atomic():
        locked = Membership.objects.select_for_update().get(pk=membership.pk)
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


# -- invitations ---------------------------------------------------------------------------------

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
    _check_role(role)
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
    locked = Invitation.objects.select_for_update().select_related("tenant").get(pk=invitation.pk)
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
        locked = Invitation.objects.select_for_update().get(pk=invitation.pk)
        if locked.accepted_at is not None or locked.revoked_at is not None:
            raise Conflict(f"This invitation is already {locked.state}.")
        locked.revoked_at = timezone.now()
        locked.save(update_fields=["revoked_at", "updated"])
        record("invitation.revoke", locked, actor=actor, tenant_id=locked.tenant_id, source=source)
    return locked


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
    """
    tenants = {t.name: t for t in Tenant.objects.filter(name__in=set(managed) | set(grants))}
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
                if membership is not None and name in set(managed):
                    record(
                        "membership.delete",
                        membership,
                        actor=user,
                        tenant_id=tenant.pk,
                        before=snapshot(membership, ["user", "role"]),
                        source=source,
                    )
                    membership.delete()
                continue
            if membership is None:
                membership = Membership.objects.create(user=user, tenant=tenant, role=role)
                record(
                    "membership.create",
                    membership,
                    actor=user,
                    tenant_id=tenant.pk,
                    after=snapshot(membership, ["user", "role"]),
                    source=source,
                )
            elif membership.role != role:
                before = snapshot(membership, ["user", "role"])
                membership.role = role
                membership.save(update_fields=["role"])
                record(
                    "membership.update",
                    membership,
                    actor=user,
                    tenant_id=tenant.pk,
                    before=before,
                    after=snapshot(membership, ["user", "role"]),
                    source=source,
                )
            out[name] = role
    return out


# -- tenant namespaces --------------------------------------------------------------------------


def record_tenant_namespace(
    *, tenant_id: int, cluster_id: int, name: str, now: datetime
) -> TenantNamespace:
    """Record that the console created (or found, labelled for the tenant) ``name`` as the
    tenant's namespace in the cluster; later calls refresh ``ensured_at`` only.

    Raises:
        Conflict: the tenant already has another namespace in the cluster, or another tenant
            holds this name there (the caller checked the namespace's labels, so this is a
            race or a pattern that maps two tenants to one name).
    """
    with transaction.atomic():
        other = (
            TenantNamespace.objects.filter(cluster_id=cluster_id, name=name)
            .exclude(tenant_id=tenant_id)
            .first()
        )
        if other is not None:
            raise Conflict(
                f"namespace {name!r} of cluster {cluster_id} belongs to tenant {other.tenant_id}",
                field="namespace",
            )
        row, created = TenantNamespace.objects.select_for_update().get_or_create(
            tenant_id=tenant_id, cluster_id=cluster_id, defaults={"name": name, "ensured_at": now}
        )
        if not created and row.name != name:
            raise Conflict(
                f"tenant {tenant_id} already owns namespace {row.name!r} in cluster "
                f"{cluster_id}, not {name!r}",
                field="namespace",
            )
        if not created:
            TenantNamespace.objects.filter(pk=row.pk).update(ensured_at=now)
    return row
