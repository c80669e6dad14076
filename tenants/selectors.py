"""Read-side queries of the tenants app."""

from __future__ import annotations

import enum
import hashlib
import re
import string
from collections.abc import Iterable

from django.apps import apps
from django.conf import settings
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from tenants.choices import Role
from tenants.models import Budget, Invitation, Membership, Tenant, TenantNamespace, UserLimit

SUBMIT_ROLES = (Role.TENANT_ADMIN, Role.MEMBER)
"""Roles that submit to a tenant's queues and change its jobs (a viewer only reads)."""


class Access(enum.IntEnum):
    """What a user may do with one tenant's objects (jobs, queues, quotas' usage).

    ``NONE``: nothing, not even learn the object exists (interfaces answer 404);
    ``READ``: see it (writes answer 403); ``WRITE``: also submit to its queues and change its
    jobs (cancel, scale, stop, resume).
    """

    NONE = 0
    READ = 1
    WRITE = 2


def _memberships(user) -> list[tuple[int, str]]:
    return list(Membership.objects.filter(user=user).values_list("tenant_id", "role"))


def get_roles(user) -> dict[int, str]:
    """``{tenant id: role}`` of the user's own memberships (one query)."""
    return dict(_memberships(user))


def get_user_tenant_ids(user) -> set[int] | None:
    """Ids of the tenants the user is a member of (any role), or ``None`` for a platform
    admin (no restriction); an anonymous user (e.g. drf-spectacular's schema request) has
    none. Membership, not visibility: what the user may read is :func:`get_visible_tenant_ids`."""
    if not user.is_authenticated:
        return set()
    if user.is_superuser:
        return None
    return {tenant_id for tenant_id, _ in _memberships(user)}


def get_descendant_ids(tenant_ids: set[int]) -> set[int]:
    """``tenant_ids`` plus every tenant below them (one query per tree level)."""
    found = set(tenant_ids)
    frontier = set(tenant_ids)
    while frontier:
        frontier = (
            set(Tenant.objects.filter(parent_id__in=frontier).values_list("pk", flat=True)) - found
        )
        found |= frontier
    return found


def get_visible_tenant_ids(user) -> set[int] | None:
    """Tenants whose objects the user may read (jobs, queues, quotas and usage, in the API and
    in the pages alike): their own tenants and, where they are tenant admin, every tenant
    below (a department's admin reads its teams: DESIGN.md §2 "department -> team")
    (None = platform admin, no restriction)."""
    if not user.is_authenticated:
        return set()
    if user.is_superuser:
        return None
    roles = _memberships(user)
    admin = {tenant_id for tenant_id, role in roles if role == Role.TENANT_ADMIN}
    return {tenant_id for tenant_id, _ in roles} | get_descendant_ids(admin)


def visible_tenants(user) -> QuerySet[Tenant]:
    """Tenants ``user`` may read (:func:`get_visible_tenant_ids`), by name."""
    tenant_ids = get_visible_tenant_ids(user)
    tenants = Tenant.objects.order_by("name")
    return tenants if tenant_ids is None else tenants.filter(pk__in=tenant_ids)


def visible_tenant_ids_by_user() -> dict[int, set[int]]:
    """``{user id: tenant ids}`` of every user with a membership: the tenants
    :func:`get_visible_tenant_ids` gives that user, for all users in two queries (the
    gauges task's per-user overview scopes). Platform admins get their memberships' rule
    here too; callers treat them as unrestricted."""
    children: dict[int, set[int]] = {}
    for pk, parent in Tenant.objects.filter(parent__isnull=False).values_list("pk", "parent_id"):
        children.setdefault(parent, set()).add(pk)
    visible: dict[int, set[int]] = {}
    for user_id, tenant_id, role in Membership.objects.values_list("user_id", "tenant_id", "role"):
        seen = visible.setdefault(user_id, set())
        seen.add(tenant_id)
        frontier = set(children.get(tenant_id, ())) if role == Role.TENANT_ADMIN else set()
        while frontier:
            seen |= frontier
            frontier = {c for t in frontier for c in children.get(t, ())} - seen
    return visible


def submit_memberships(user) -> QuerySet[Membership]:
    """The user's memberships with one of :data:`SUBMIT_ROLES` (lazy: usable as a subquery,
    ``tenant_id__in=submit_memberships(user).values("tenant_id")``)."""
    return Membership.objects.filter(user=user, role__in=SUBMIT_ROLES)


def submit_tenant_ids(user) -> set[int] | None:
    """Tenants whose queues the user may submit to and whose jobs they may change: those
    where they are member or tenant admin themselves (None = platform admin). A viewer
    submits nowhere; a parent tenant's admin reads the tenants below
    (:func:`get_visible_tenant_ids`) but submits and changes jobs only where they hold one
    of :data:`SUBMIT_ROLES` (a job spends its own tenant's quota, which that tenant's people
    run)."""
    if not user.is_authenticated:
        return set()
    if user.is_superuser:
        return None
    return set(submit_memberships(user).values_list("tenant_id", flat=True))


def tenant_access(user, tenant_id: int) -> Access:
    """What ``user`` may do with the objects of tenant ``tenant_id`` (one rule for the API,
    the pages and every intake path): :attr:`Access.WRITE` in :func:`submit_tenant_ids`,
    :attr:`Access.READ` in :func:`get_visible_tenant_ids`, else :attr:`Access.NONE`."""
    writable = submit_tenant_ids(user)
    if writable is None or tenant_id in writable:
        return Access.WRITE
    visible = get_visible_tenant_ids(user)
    return Access.READ if visible is None or tenant_id in visible else Access.NONE


def action_refusal(user, tenant_id: int, verb: str) -> str | None:
    """Why ``user`` may not ``verb`` (e.g. ``"cancel"``) the jobs of a tenant they can read,
    or None when they may: the message of the 403 in the API and the pages."""
    if tenant_access(user, tenant_id) == Access.WRITE:
        return None
    role = dict(_memberships(user)).get(tenant_id)
    if role == Role.VIEWER:
        return f"Viewers cannot {verb} jobs."
    return (
        f"You can read this tenant's jobs as the admin of a tenant above it; only its own "
        f"members and tenant admins may {verb} them."
    )


def can_manage_quota(user, tenant: Tenant) -> bool:
    """Platform admins manage every quota; a tenant admin manages the quotas of the tenants
    strictly below their tenant (a team's quota is set by its department's admin, never by
    the team itself)."""
    if user.is_superuser:
        return True
    admin = set(
        Membership.objects.filter(user=user, role=Role.TENANT_ADMIN).values_list(
            "tenant_id", flat=True
        )
    )
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


def pending_invitations_for(user):
    """Open, unexpired invitations addressed to ``user`` (by username, or by e-mail ignoring
    case), newest first, with their tenant."""
    if not user.is_authenticated:
        return Invitation.objects.none()
    addressed = Q(invitee=user.get_username())
    email = (user.email or "").strip()
    if email:
        addressed |= Q(invitee__iexact=email)
    return (
        Invitation.objects.filter(
            addressed,
            accepted_at__isnull=True,
            revoked_at__isnull=True,
            expires_at__gt=timezone.now(),
        )
        .select_related("tenant")
        .order_by("-created", "-id")
    )


def admin_tenant_ids(user) -> set[int] | None:
    """Tenants whose members ``user`` manages: where they are tenant admin (None = every
    tenant, platform admin)."""
    if not user.is_authenticated:
        return set()
    if user.is_superuser:
        return None
    return set(
        Membership.objects.filter(user=user, role=Role.TENANT_ADMIN).values_list(
            "tenant_id", flat=True
        )
    )


def administers_a_tenant(user, roles: Iterable[str] | None = None) -> bool:
    """True for a platform admin or a tenant admin of some tenant: who may open the
    Simulation page (and so who sees it in the navigation). ``roles``: the user's membership
    roles, when the caller has read them already (no query then)."""
    if not user.is_authenticated:
        return False
    if user.is_superuser:
        return True
    if roles is None:
        roles = Membership.objects.filter(user=user).values_list("role", flat=True)
    return Role.TENANT_ADMIN in set(roles)


# -- tenant namespaces --------------------------------------------------------------------------

_NOT_DNS = re.compile(r"[^a-z0-9-]+")
_DASHES = re.compile(r"-{2,}")
_MAX_NAMESPACE = 63
_HASHED = re.compile(r"(^|-)[0-9a-f]{8}$")


def _dns_label(text: str) -> str:
    """``text`` as an RFC 1123 label (a namespace name): lower-cased, other characters as
    '-', at most 63 characters. A name that had to change gets ``-<8 hex of sha256(text)>``
    so that two distinct inputs never meet (the rule of ``scheduling.kube.names.dns_label``,
    repeated here because this app does not import ``scheduling``)."""
    clean = _DASHES.sub("-", _NOT_DNS.sub("-", text.lower())).strip("-")
    if clean == text and len(clean) <= _MAX_NAMESPACE:
        return clean
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    head = clean[: _MAX_NAMESPACE - 9].rstrip("-")
    return f"{head}-{digest}" if head else digest


def namespace_pattern(cluster) -> str:
    """The naming pattern of tenant namespaces in ``cluster``: the cluster's
    ``namespace_pattern`` when set, else the ``TENANT_NAMESPACE_PATTERN`` setting
    (placeholders ``{slug}``, the tenant name, and ``{cluster}``, the cluster name)."""
    return getattr(cluster, "namespace_pattern", "") or settings.TENANT_NAMESPACE_PATTERN


RESERVED_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
"""Namespaces Kubernetes keeps for itself (with every ``kube-`` name: the prefix is reserved
for the system, Kubernetes docs "Namespaces", "Initial namespaces")."""


def render_namespace(pattern: str, tenant_name: str, cluster_name: str) -> str:
    """The namespace name ``pattern`` gives a tenant in a cluster (a DNS-1123 label).

    A rendering Kubernetes reserves (:data:`RESERVED_NAMESPACES`, any ``kube-*``; e.g. the
    tenant ``default`` under the pattern ``{slug}``) becomes ``tenant-<name>-<8 hex>``
    instead: the console would otherwise adopt the system namespace, unlabelled, for the
    tenant and take in what others create there.
    """
    name = _dns_label(pattern.format(slug=tenant_name, cluster=cluster_name))
    if name in RESERVED_NAMESPACES or name.startswith("kube-"):
        digest = hashlib.sha256(name.encode()).hexdigest()[:8]
        name = f"tenant-{name[: _MAX_NAMESPACE - 16].rstrip('-')}-{digest}"
    return name


def tenant_namespace(tenant: Tenant, cluster) -> str:
    """The namespace ``tenant`` owns in ``cluster`` (a ``scheduling.Cluster``, or any object
    with ``pk``, ``name`` and optionally ``namespace_pattern``).

    The name the console recorded when it created the namespace (``TenantNamespace``) wins;
    otherwise the cluster's pattern (:func:`namespace_pattern`) applied to the tenant's name,
    e.g. ``tenant-team-nlp``. Reads only: the namespace is created on the tenant's first
    submission to the cluster.
    """
    stored = (
        TenantNamespace.objects.filter(tenant=tenant, cluster_id=cluster.pk)
        .values_list("name", flat=True)
        .first()
    )
    if stored:
        return stored
    return render_namespace(namespace_pattern(cluster), tenant.name, cluster.name)


def _slug_candidates(pattern: str, cluster_name: str, namespace: str) -> list[str]:
    """Tenant names the pattern could have turned into ``namespace`` (exact renderings only;
    a cleaned or shortened name, with its hash suffix, is found by the caller's scan)."""
    regex, seen_slug = "", False
    for literal, field, _spec, _conv in string.Formatter().parse(pattern):
        regex += re.escape(literal)
        if field == "slug":
            regex += "(?P=slug)" if seen_slug else "(?P<slug>[a-z0-9]([-a-z0-9]*[a-z0-9])?)"
            seen_slug = True
        elif field == "cluster":
            regex += re.escape(cluster_name)
    match = re.fullmatch(regex, namespace)
    return [match.group("slug")] if match else []


def tenant_for_namespace(cluster, namespace: str) -> Tenant | None:
    """The tenant owning ``namespace`` in ``cluster``, or None (a namespace the console does
    not give to any tenant: ``kube-system``, a user's own, another tenant's stored name).

    A recorded ``TenantNamespace`` answers first; otherwise the namespace belongs to the
    tenant whose pattern name it is, provided that tenant has no other namespace recorded in
    the cluster.
    """
    if namespace in RESERVED_NAMESPACES or namespace.startswith("kube-"):
        return None  # never a tenant's, even if recorded before render_namespace refused it
    row = (
        TenantNamespace.objects.filter(cluster_id=cluster.pk, name=namespace)
        .select_related("tenant")
        .first()
    )
    if row is not None:
        return row.tenant
    pattern = namespace_pattern(cluster)
    names = _slug_candidates(pattern, cluster.name, namespace)
    recorded = TenantNamespace.objects.filter(cluster_id=cluster.pk).values("tenant_id")
    tenants = Tenant.objects.exclude(pk__in=recorded)
    searches = [tenants.filter(name__in=names)] if names else []
    if _HASHED.search(namespace):
        searches.append(tenants)  # a cleaned/shortened rendering: compare with each tenant
    for candidates in searches:
        for tenant in candidates.order_by("name"):
            if render_namespace(pattern, tenant.name, cluster.name) == namespace:
                return tenant
    return None


# --- limits below the tenant (issue 33) --------------------------------------------------------


def can_manage_limits(user, tenant: Tenant) -> bool:
    """Platform admins and the tenant admins of ``tenant`` itself set its per-user limits
    and budgets (they name its members, whom a parent tenant's admin does not see)."""
    admin = admin_tenant_ids(user)
    return admin is None or tenant.pk in admin


def device_model_names() -> set[str]:
    """Every registered device model name (a per-model user limit names one). Read by app
    label, as :func:`flavor_names` does, so this app keeps no import of ``scheduling``."""
    device_model = apps.get_model("scheduling", "DeviceModel")
    return set(device_model.objects.values_list("name", flat=True))


def price_currencies() -> set[str]:
    """The currencies of the device-hour price table (``telemetry.DevicePrice``; read by app
    label so this app keeps no import of ``telemetry``): a money budget must use one."""
    price = apps.get_model("telemetry", "DevicePrice")
    return set(price.objects.values_list("currency", flat=True).distinct())


def user_limits_of(tenant_ids: set[int] | None) -> QuerySet:
    """Per-user limit rows of the given tenants (None = every tenant), user and tenant
    loaded, by tenant name then username (the default row, user None, first)."""
    rows = UserLimit.objects.select_related("tenant", "user").order_by(
        "tenant__name", F("user__username").asc(nulls_first=True)
    )
    return rows if tenant_ids is None else rows.filter(tenant_id__in=tenant_ids)


def budgets_of(tenant_ids: set[int] | None) -> QuerySet:
    """Budgets of the given tenants (None = every tenant), user and tenant loaded."""
    rows = Budget.objects.select_related("tenant", "user").order_by("tenant__name", "name")
    return rows if tenant_ids is None else rows.filter(tenant_id__in=tenant_ids)
