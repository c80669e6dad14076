"""The namespace the console created for a tenant in each Kubernetes cluster."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction

from core.exceptions import Conflict
from core.locks import lock_rows
from tenants.models import TenantNamespace


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
        row, created = lock_rows(TenantNamespace).get_or_create(
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
