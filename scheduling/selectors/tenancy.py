"""Which tenant owns a namespace of a cluster (the intake's tenant isolation)."""

from __future__ import annotations

from tenants.models import Tenant


def tenant_for_namespace(cluster, namespace: str) -> Tenant | None:
    """The tenant owning ``namespace`` in ``cluster``, or None (objects there are refused).

    Interim rule until tenant namespaces land: the tenant named like the namespace.
    """
    return Tenant.objects.filter(name=namespace).first()
