"""Viewset mixin that audits every create / update / delete and maps protected deletes to
409 (instead of a 500 from ``ProtectedError``)."""

from __future__ import annotations

from django.db import transaction
from django.db.models import ProtectedError
from rest_framework.request import Request

from core.audit import record, snapshot
from core.exceptions import Conflict


class AuditedWritesMixin:
    """For ``ModelViewSet``s: set ``audit_name`` (``"tenant"``) and ``audit_fields``; override
    :meth:`audit_tenant_id` for tenant-owned objects. Each write and its audit entry commit
    together."""

    audit_name = ""
    audit_fields: list[str] = []
    request: Request  # the viewset's (this mixin goes before a GenericViewSet)

    def audit_tenant_id(self, instance) -> int | None:
        return None

    def perform_create(self, serializer):
        with transaction.atomic():
            instance = serializer.save()
            record(
                f"{self.audit_name}.create",
                instance,
                actor=self.request.user,
                after=snapshot(instance, self.audit_fields),
                tenant_id=self.audit_tenant_id(instance),
            )

    def perform_update(self, serializer):
        with transaction.atomic():
            before = snapshot(serializer.instance, self.audit_fields)
            instance = serializer.save()
            record(
                f"{self.audit_name}.update",
                instance,
                actor=self.request.user,
                before=before,
                after=snapshot(instance, self.audit_fields),
                tenant_id=self.audit_tenant_id(instance),
            )

    def perform_destroy(self, instance):
        before = snapshot(instance, self.audit_fields)
        tenant_id = self.audit_tenant_id(instance)
        object_id, object_repr = instance.pk, str(instance)
        try:
            with transaction.atomic():
                instance.delete()
                record(
                    f"{self.audit_name}.delete",
                    None,
                    actor=self.request.user,
                    before=before,
                    tenant_id=tenant_id,
                    object_type=instance._meta.label_lower,
                    object_id=object_id,
                    object_repr=object_repr,
                )
        except ProtectedError as exc:
            kinds = sorted({str(o._meta.verbose_name_plural) for o in exc.protected_objects})
            raise Conflict(
                f"{object_repr} is still referenced by {', '.join(kinds)}; remove those first."
            ) from None
