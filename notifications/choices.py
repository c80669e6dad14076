"""Enumerations of the notifications app."""

from django.db import models

from core.events import (
    BUDGET_THRESHOLD_CROSSED,
    CAPACITY_ALERT,
    EVENT_KINDS,
    INVENTORY_BOOKINGS_UNMATCHED,
    JOB_FAILED,
    JOB_IDLE,
    JOB_PREEMPTED,
)

#: Kinds about the platform (no tenant): only platform subscriptions receive them.
PLATFORM_ONLY = (CAPACITY_ALERT, INVENTORY_BOOKINGS_UNMATCHED)


class Scope(models.TextChoices):
    """Whose events a subscription receives.

    ``tenant``: every event of one tenant (its tenant admins manage it); ``user``: events
    about the owner's own jobs in their tenants; ``platform``: every event of every tenant
    and the capacity alerts (platform admins).
    """

    TENANT = "tenant", "Tenant"
    USER = "user", "My jobs"
    PLATFORM = "platform", "Platform"


class Channel(models.TextChoices):
    WEBHOOK = "webhook", "Webhook (HTTP POST JSON)"
    EMAIL = "email", "E-mail"


class DeliveryStatus(models.TextChoices):
    """``pending`` → ``delivered``; ``retrying`` after a transient failure (timeout,
    connection error, 408/429/5xx) until ``NOTIFY_MAX_ATTEMPTS``; ``failed`` for good."""

    PENDING = "pending", "Pending"
    RETRYING = "retrying", "Retrying"
    DELIVERED = "delivered", "Delivered"
    FAILED = "failed", "Failed"


EVENT_CHOICES = [(kind, f"{kind}: {text}") for kind, text in EVENT_KINDS.items()]

#: Kinds each scope can receive.
SCOPE_KINDS = {
    Scope.TENANT: tuple(k for k in EVENT_KINDS if k not in PLATFORM_ONLY),
    Scope.USER: (JOB_PREEMPTED, JOB_FAILED, JOB_IDLE, BUDGET_THRESHOLD_CROSSED),
    Scope.PLATFORM: tuple(EVENT_KINDS),
}
