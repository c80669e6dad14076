"""Subscriptions (who hears about which events, through which channel) and the delivery log
(one row per event and subscription, with its attempts)."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from core.models import BaseModel
from notifications.choices import Channel, DeliveryStatus, Scope


class Subscription(BaseModel):
    """A webhook or e-mail address that receives events of one scope (:class:`Scope`).

    ``tenant`` is set for the tenant scope only; ``owner`` is the user whose own jobs a
    user-scope subscription follows, and who created the others. ``events`` lists event
    kinds (:data:`core.events.EVENT_KINDS`; empty = every kind the scope receives).
    A webhook is signed when a secret is set: ``secret_encrypted`` (typed in, stored
    encrypted, :mod:`notifications.signing`) or ``secret_env`` (an environment variable).
    """

    name = models.CharField(max_length=100)
    scope = models.CharField(max_length=16, choices=Scope.choices)
    tenant = models.ForeignKey(
        "tenants.Tenant",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="subscriptions",
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="notification_subscriptions",
    )
    events = models.JSONField(default=list, blank=True)
    channel = models.CharField(max_length=16, choices=Channel.choices, default=Channel.WEBHOOK)
    url = models.URLField(max_length=500, blank=True)
    email = models.EmailField(blank=True)
    secret_encrypted = models.TextField(blank=True, editable=False)
    secret_env = models.CharField(
        max_length=100,
        blank=True,
        help_text="Name of an environment variable holding the webhook's signing secret.",
    )
    enabled = models.BooleanField(default=True)

    class Meta:
        ordering = ["scope", "tenant__name", "name", "id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(scope="tenant", tenant__isnull=False)
                | (~models.Q(scope="tenant") & models.Q(tenant__isnull=True)),
                name="subscription_tenant_iff_tenant_scope",
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.scope}, {self.channel})"

    @property
    def target(self) -> str:
        """Where deliveries go (the URL or the address)."""
        return self.url if self.channel == Channel.WEBHOOK else self.email

    @property
    def signed(self) -> bool:
        return bool(self.secret_encrypted or self.secret_env)


class Delivery(models.Model):
    """One event sent (or being sent) to one subscription.

    ``event_id`` is shared by the deliveries of one event; ``payload`` is what was sent
    (written for the subscriber's tenant). ``attempts`` counts tries, ``response_code`` is
    the last HTTP status (None for e-mail or no answer), ``last_error`` the last failure,
    ``next_attempt_at`` when a retry is due.
    """

    subscription = models.ForeignKey(
        Subscription, on_delete=models.CASCADE, related_name="deliveries"
    )
    event_id = models.UUIDField(default=uuid.uuid4, db_index=True)
    kind = models.CharField(max_length=40)
    payload = models.JSONField(default=dict)
    status = models.CharField(
        max_length=16, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING
    )
    attempts = models.PositiveIntegerField(default=0)
    response_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-id"]
        indexes = [models.Index(fields=["subscription", "-created"])]
        verbose_name_plural = "deliveries"

    def __str__(self) -> str:
        return f"{self.kind} → {self.subscription_id} ({self.status})"
