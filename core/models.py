"""Abstract base model shared by every app, and the audit log."""

from django.conf import settings
from django.db import models


class BaseModel(models.Model):
    """Adds ``created`` and ``updated`` timestamps (UTC) to a model."""

    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class AuditEntry(models.Model):
    """One state-changing action: who did what to which object, when, before and after.

    Append-only. ``actor_name`` keeps the username even after the user is deleted;
    ``tenant_id`` (no foreign key, so deleting a tenant keeps its history) scopes the entry;
    ``before``/``after`` are JSON snapshots of the changed fields (``None`` on create/delete).
    """

    time = models.DateTimeField(db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_name = models.CharField(max_length=150, blank=True)
    action = models.CharField(max_length=64, db_index=True)
    object_type = models.CharField(max_length=64)
    object_id = models.CharField(max_length=64, blank=True)
    object_repr = models.CharField(max_length=200, blank=True)
    tenant_id = models.BigIntegerField(null=True, blank=True, db_index=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    source = models.CharField(max_length=16, default="api")

    class Meta:
        ordering = ["-time", "-id"]
        verbose_name_plural = "audit entries"

    def __str__(self) -> str:
        return f"{self.time:%Y-%m-%d %H:%M:%S} {self.actor_name or 'system'} {self.action}"
