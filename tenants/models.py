"""Tenants, memberships, resource groups, quotas, stored usage and the usage ledger.

Quotas name their flavor (a device model name or a model family, Kueue's ResourceFlavor) as a
string so that this app never imports ``scheduling``; ``"*"`` means every model of the
resource group that has no more specific quota row. The ledger and usage rows likewise name
jobs and devices by id/uuid without foreign keys (tenants owns entitlement and the usage
ledger, STYLE.md §3; history outlives the jobs and devices it describes).
"""

from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.utils import timezone

from core.models import BaseModel
from tenants.choices import (
    ALLOWED_STRATEGY_LISTS,
    DevicePolicy,
    Dimension,
    FragmentationPolicy,
    GroupKind,
    NodePolicy,
    Role,
    default_strategies,
)

slug_validator = RegexValidator(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "lowercase DNS label")
ANY_FLAVOR = "*"


class Tenant(BaseModel):
    """An organisation unit (department or team) owning members, queues and quotas."""

    name = models.CharField(max_length=63, unique=True, validators=[slug_validator])
    display_name = models.CharField(max_length=200, blank=True)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="children"
    )
    fair_share_weight = models.FloatField(
        default=1.0,
        validators=[MinValueValidator(0.0)],
        help_text="Kueue fairSharing.weight: a larger weight borrows earlier and is reclaimed "
        "later; 0 makes any borrowing an infinite share.",
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        node, seen = self.parent, {self.pk}
        while node is not None:
            if node.pk in seen:
                raise ValidationError({"parent": "A tenant cannot be its own ancestor."})
            seen.add(node.pk)
            node = node.parent


class Membership(BaseModel):
    """A user's role in one tenant."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.MEMBER)

    class Meta:
        ordering = ["tenant__name", "user__username"]
        constraints = [
            models.UniqueConstraint(fields=["user", "tenant"], name="membership_unique_user_tenant")
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.tenant} ({self.role})"


class Topology(BaseModel):
    """A network topology: node-label keys from the widest level to the node (Kueue's
    ``Topology`` ``spec.levels[].nodeLabel``; KAI's Topology CRD), e.g.
    ``["topology.kubernetes.io/zone", "cloud.provider.com/topology-block",
    "cloud.provider.com/topology-rack", "kubernetes.io/hostname"]``; a GB200-style NVLink
    domain is the level ``nvidia.com/gpu.clique``.

    Attached to a resource group (``ResourceGroup.topology``) or to a flavor
    (``scheduling.DeviceModel.topology``, Kueue's ``ResourceFlavor.topologyName``); a job's
    topology request names one of its ``levels``. A node's domain at a level is the value
    of that label on the node; a node without the label is outside every domain of it.
    """

    name = models.CharField(max_length=63, unique=True, validators=[slug_validator])
    levels = models.JSONField(
        default=list,
        help_text="Node-label keys, widest level first, the node level (e.g. "
        "kubernetes.io/hostname) last.",
    )
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "topologies"

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        """``levels``: a non-empty list of distinct label keys (no blanks or spaces)."""
        levels = self.levels
        if (
            not isinstance(levels, list)
            or not levels
            or not all(isinstance(k, str) and k.split() == [k] for k in levels)
        ):
            raise ValidationError(
                {"levels": "A non-empty list of node-label keys, widest level first."}
            )
        repeated = sorted({k for k in levels if levels.count(k) > 1})
        if repeated:
            raise ValidationError({"levels": f"Levels must be distinct: {', '.join(repeated)}."})


#: The window of a resource group's consolidation move budget
#: (``ResourceGroup.consolidation_max_moves_per_hour``).
CONSOLIDATION_BUDGET_WINDOW = timedelta(hours=1)


class ResourceGroup(BaseModel):
    """A pool of devices selected by device model names and/or node labels; the root cohort
    of its tenants' quotas.

    ``device_models`` lists DeviceModel names (empty = every model); ``node_selector`` is a map
    of node labels that must all match (empty = every node).

    Placement profile of the group's admission cycles: ``node_policy`` and ``device_policy``
    (HAMi's scheduler policies, HAMi defaults binpack / spread), ``fragmentation_policy``
    (FragGuard / FGD node scoring against the group's recent job shapes, or none) and
    ``pod_policy_override`` (whether a job's pod annotations ``hami.io/node-scheduler-policy``
    / ``hami.io/gpu-scheduler-policy`` override the group's policies for that job).
    Consolidation (``consolidation_enabled``, a budget of ``consolidation_max_moves_per_hour``
    moves and at most ``consolidation_max_moves`` per pending job) moves opted-in jobs to
    defragment the group (:mod:`scheduling.services.consolidation`).
    The cohort options (fair sharing and its preemption strategies, history-aware fair share,
    starvation reservation) are read by every admission cycle of the group.
    """

    name = models.CharField(max_length=63, unique=True, validators=[slug_validator])
    kind = models.CharField(max_length=16, choices=GroupKind.choices, default=GroupKind.SHARED)
    device_models = models.JSONField(default=list, blank=True)
    node_selector = models.JSONField(default=dict, blank=True)
    description = models.TextField(blank=True)
    node_policy = models.CharField(
        max_length=16,
        choices=NodePolicy.choices,
        default=NodePolicy.BINPACK,
        help_text="HAMi node scheduler policy: binpack fills busy nodes, spread idle ones.",
    )
    device_policy = models.CharField(
        max_length=16,
        choices=DevicePolicy.choices,
        default=DevicePolicy.SPREAD,
        help_text="HAMi GPU scheduler policy within the chosen node.",
    )
    fragmentation_policy = models.CharField(
        max_length=16,
        choices=FragmentationPolicy.choices,
        default=FragmentationPolicy.NONE,
        help_text="FragGuard/FGD: choose nodes and devices to keep free capacity usable by "
        "the group's recent job shapes (replaces the HAMi node score).",
    )
    pod_policy_override = models.BooleanField(
        default=True,
        help_text="Jobs may override the policies with the pod annotations "
        "hami.io/node-scheduler-policy and hami.io/gpu-scheduler-policy.",
    )
    fair_sharing = models.BooleanField(
        null=True,
        blank=True,
        help_text="Kueue fair sharing in this cohort (admission by dominant share, "
        "fair-sharing preemption); empty = the ADMISSION_FAIR_SHARING setting.",
    )
    preemption_strategies = models.JSONField(
        default=default_strategies,
        blank=True,
        help_text="Fair-sharing preemption strategies: [LessThanOrEqualToFinalShare, "
        "LessThanInitialShare] (default), or one of them alone.",
    )
    usage_half_life_s = models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1.0)],
        help_text="History-aware fair share: past usage from the ledger, halved every this "
        "many seconds, orders tenants before priority; empty = off.",
    )
    reservation_after_s = models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(0.0)],
        help_text="Starvation protection: a queue head pending this long reserves capacity; "
        "smaller jobs then backfill only if they end (max runtime) before it can "
        "start. Empty = off.",
    )
    max_reservations = models.PositiveIntegerField(default=1, validators=[MinValueValidator(1)])
    consolidation_enabled = models.BooleanField(
        default=False,
        help_text="Consolidation: a job that does not fit only because free capacity is "
        "fragmented may have opted-in preemptible jobs moved (restarted elsewhere) to free a "
        "whole device or node for it.",
    )
    consolidation_max_moves_per_hour = models.PositiveIntegerField(
        default=20,
        validators=[MinValueValidator(1), MaxValueValidator(10_000)],
        help_text="Move budget: at most this many jobs moved by consolidation in any hour.",
    )
    consolidation_max_moves = models.PositiveIntegerField(
        default=2,
        validators=[MinValueValidator(1), MaxValueValidator(8)],
        help_text="At most this many jobs moved to make room for one pending job "
        "(KAI scheduler's maxConsolidationPreemptees).",
    )
    max_reservation_hold_s = models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(0.0)],
        help_text="A reservation not admitted after this long is dropped for one cycle.",
    )
    topology = models.ForeignKey(
        Topology,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="resource_groups",
        help_text="Network topology of the group's nodes (Kueue TAS): jobs may ask their "
        "pods inside one domain of a level. Empty: the topology of the group's device "
        "models (flavors), if they name one.",
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if not isinstance(self.device_models, list) or not all(
            isinstance(m, str) and m for m in self.device_models
        ):
            raise ValidationError({"device_models": "A list of device model names."})
        if not isinstance(self.node_selector, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in self.node_selector.items()
        ):
            raise ValidationError({"node_selector": "A map of label name to label value."})
        if self.preemption_strategies not in ALLOWED_STRATEGY_LISTS:
            raise ValidationError(
                {
                    "preemption_strategies": (
                        "One of " + "; ".join(str(s) for s in ALLOWED_STRATEGY_LISTS) + "."
                    )
                }
            )


# PostgreSQL bigint: the largest quota amount (nominal, borrowing or lending limit) the
# database stores; the quota services refuse more, so every writer (API, pages) shares it.
MAX_QUOTA_AMOUNT = 2**63 - 1


class Quota(BaseModel):
    """Nominal quota of one tenant × resource group × flavor × dimension (Kueue semantics).

    ``nominal`` is in the dimension's unit (milli-devices, MiB, percent of a device).
    ``borrowing_limit``: how much above nominal the tenant may borrow from the cohort
    (``None`` = unlimited). ``lending_limit``: how much of the unused nominal may be lent
    (``None`` = all of it). An exclusive group neither lends nor borrows.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="quotas")
    resource_group = models.ForeignKey(
        ResourceGroup, on_delete=models.CASCADE, related_name="quotas"
    )
    flavor = models.CharField(max_length=100, default=ANY_FLAVOR)
    dimension = models.CharField(max_length=16, choices=Dimension.choices)
    nominal = models.BigIntegerField(validators=[MinValueValidator(0)])
    borrowing_limit = models.BigIntegerField(
        null=True, blank=True, validators=[MinValueValidator(0)]
    )
    lending_limit = models.BigIntegerField(null=True, blank=True, validators=[MinValueValidator(0)])

    class Meta:
        ordering = ["tenant__name", "resource_group__name", "flavor", "dimension"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "resource_group", "flavor", "dimension"],
                name="quota_unique_tenant_group_flavor_dimension",
            )
        ]

    def __str__(self) -> str:
        return f"{self.tenant}/{self.resource_group}/{self.flavor}/{self.dimension}={self.nominal}"

    def clean(self) -> None:
        if self.lending_limit is not None and self.lending_limit > self.nominal:
            raise ValidationError({"lending_limit": "Must not exceed nominal."})


class AggregateCap(BaseModel):
    """A hard cap on a tenant's total usage (own + descendants) in one resource group and one
    dimension, over a set of flavors (a model family) or over every flavor (``flavors`` empty:
    a per-tenant cap). Borrowed usage counts too.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="caps")
    resource_group = models.ForeignKey(ResourceGroup, on_delete=models.CASCADE, related_name="caps")
    name = models.CharField(max_length=63, validators=[slug_validator])
    dimension = models.CharField(max_length=16, choices=Dimension.choices)
    limit = models.BigIntegerField(validators=[MinValueValidator(0)])
    flavors = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["tenant__name", "resource_group__name", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "resource_group", "name"], name="cap_unique_tenant_group_name"
            )
        ]

    def __str__(self) -> str:
        return f"{self.tenant}/{self.resource_group}/{self.name}<={self.limit} {self.dimension}"

    def clean(self) -> None:
        if not isinstance(self.flavors, list) or not all(
            isinstance(f, str) and f for f in self.flavors
        ):
            raise ValidationError({"flavors": "A list of flavor names (empty = every flavor)."})


class QuotaUsage(models.Model):
    """Stored usage of one tenant × resource group × flavor × dimension (own jobs only).

    Changed only by ``tenants.services.apply_usage_deltas`` (admission commit, preemption,
    settlement of released placements) and ``replace_usage`` (drift repair), rows locked in
    (tenant, group, flavor, dimension) order. It must always equal the
    sum of the charges of the tenant's live placements; ``scheduling.services.usage`` checks
    that and reports any drift.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="usage")
    resource_group = models.ForeignKey(
        ResourceGroup, on_delete=models.CASCADE, related_name="usage"
    )
    flavor = models.CharField(max_length=100)
    dimension = models.CharField(max_length=16, choices=Dimension.choices)
    amount = models.BigIntegerField(default=0)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["tenant_id", "resource_group_id", "flavor", "dimension"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "resource_group", "flavor", "dimension"],
                name="usage_unique_tenant_group_flavor_dimension",
            )
        ]

    def __str__(self) -> str:
        return f"{self.tenant_id}/{self.resource_group_id}/{self.flavor}/{self.dimension}"


class LedgerInterval(models.Model):
    """One immutable allocation interval: a job of a tenant held a share of one device from
    ``start`` to ``end`` (open while ``end`` is null; closed once, never changed again).

    Amounts: ``devices_milli`` (dominant share of the device, 1000 = whole), ``memory_mib``,
    ``cores_percent``. ``placement_id``/``job_id`` and ``device_uuid`` are plain values, so the
    history survives deleted jobs and devices. GPU-hours = devices_milli / 1000 × hours.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="ledger")
    resource_group_id = models.BigIntegerField(null=True, blank=True)
    job_id = models.BigIntegerField(db_index=True)
    placement_id = models.BigIntegerField()
    device_uuid = models.CharField(max_length=128)
    device_model = models.CharField(max_length=100)
    flavor = models.CharField(max_length=100)
    devices_milli = models.PositiveIntegerField()
    memory_mib = models.PositiveIntegerField()
    cores_percent = models.PositiveIntegerField()
    start = models.DateTimeField()
    end = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["start", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["placement_id", "device_uuid"], name="ledger_unique_placement_device"
            ),
            models.CheckConstraint(
                condition=models.Q(end__isnull=True) | models.Q(end__gte=models.F("start")),
                name="ledger_end_after_start",
            ),
        ]
        indexes = [models.Index(fields=["tenant", "start"])]

    def __str__(self) -> str:
        return f"{self.tenant_id} job {self.job_id} on {self.device_uuid} from {self.start}"

    def save(self, *args, **kwargs):
        """Insert only: an interval is written once (open) and closed through
        ``tenants.services.close_ledger_intervals`` (a conditional UPDATE on ``end IS NULL``)."""
        if self.pk is not None:
            raise ValidationError("ledger intervals are immutable")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ValidationError("ledger intervals are immutable")


class Invitation(BaseModel):
    """An offer of a role in a tenant, addressed to a username or an e-mail address.

    A tenant admin invites; the invitee (the user whose username equals ``invitee``, or whose
    e-mail equals it ignoring case) sees the pending invitation after login and accepts or
    declines it. Whether such a user exists is never told to the inviter (no username
    oracle). Only the SHA-256 of the one-time token is stored (``token_hash``); the token
    itself is shown once, to the inviter. An invitation is pending while neither
    ``accepted_at`` nor ``revoked_at`` is set and ``expires_at`` is in the future; at most one
    per tenant and invitee is open at a time (a new one replaces it).
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="invitations")
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.MEMBER)
    invitee = models.CharField(max_length=254, help_text="Username or e-mail address.")
    token_hash = models.CharField(max_length=64, unique=True)
    expires_at = models.DateTimeField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "invitee"],
                condition=models.Q(accepted_at__isnull=True, revoked_at__isnull=True),
                name="invitation_one_open_per_tenant_invitee",
            )
        ]
        indexes = [models.Index(fields=["invitee"])]

    def __str__(self) -> str:
        return f"{self.invitee} to {self.tenant} ({self.role})"

    @property
    def state(self) -> str:
        """``accepted``, ``revoked``, ``expired`` or ``pending``."""
        if self.accepted_at is not None:
            return "accepted"
        if self.revoked_at is not None:
            return "revoked"
        return "expired" if self.expires_at <= timezone.now() else "pending"


class TenantNamespace(models.Model):
    """The Kubernetes namespace a tenant owns in one cluster, as created (and labelled) by the
    console the first time one of the tenant's pods went to that cluster.

    ``cluster_id`` is the ``scheduling.Cluster`` id as a plain value (this app never imports
    ``scheduling``). The stored ``name`` outlives a later change of the naming pattern: the
    tenant's pods keep going to the namespace that holds their Services and claims.
    ``tenants.selectors.tenant_namespace`` / ``tenant_for_namespace`` read it.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="namespaces")
    cluster_id = models.BigIntegerField()
    name = models.CharField(max_length=63, validators=[slug_validator])
    created = models.DateTimeField(auto_now_add=True)
    ensured_at = models.DateTimeField(
        help_text="Last time the console created or found the namespace with its labels."
    )

    class Meta:
        ordering = ["cluster_id", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "cluster_id"], name="tenant_namespace_one_per_cluster"
            ),
            models.UniqueConstraint(
                fields=["cluster_id", "name"], name="tenant_namespace_unique_name"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tenant} in cluster {self.cluster_id}: {self.name}"
