from rest_framework import viewsets

from tenants.api.serializers import QuotaSerializer, TenantSerializer
from tenants.models import Quota, Tenant
from tenants.selectors import get_user_tenant_ids


class TenantViewSet(viewsets.ReadOnlyModelViewSet):
    """The caller's tenants (every tenant for a platform admin)."""

    serializer_class = TenantSerializer

    def get_queryset(self):
        tenants = Tenant.objects.select_related("parent")
        ids = get_user_tenant_ids(self.request.user)
        return tenants if ids is None else tenants.filter(pk__in=ids)


class QuotaViewSet(viewsets.ReadOnlyModelViewSet):
    """Quotas of the caller's tenants."""

    serializer_class = QuotaSerializer
    filterset_fields = ["dimension", "flavor"]

    def get_queryset(self):
        quotas = Quota.objects.select_related("tenant", "resource_group")
        ids = get_user_tenant_ids(self.request.user)
        return quotas if ids is None else quotas.filter(tenant_id__in=ids)
