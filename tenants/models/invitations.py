"""Invitations to a tenant and the Kubernetes namespaces a tenant owns."""

from django.conf import settings
from django.db import models
from django.utils import timezone

from core.models import BaseModel
from tenants.choices import Role
from tenants.models.tenancy import Tenant, slug_validator


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
