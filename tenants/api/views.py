from drf_spectacular.utils import extend_schema
from rest_framework import status, viewsets
from rest_framework.exceptions import PermissionDenied
from rest_framework.response import Response

from core.api.throttling import WriteRateThrottle
from tenants import services
from tenants.api.serializers import QuotaSerializer, QuotaWriteSerializer
from tenants.models import Quota
from tenants.selectors import can_manage_quota, flavor_names, get_visible_tenant_ids


class QuotaViewSet(viewsets.ModelViewSet):
    """Quotas (Kueue nominal quota, borrowing limit, lending limit) per tenant × resource
    group × flavor × dimension.

    Reads: quotas of the caller's tenants (and, for tenant admins, of the tenants below).
    Writes: platform admins; a tenant admin for the tenants strictly below their tenant,
    and only by splitting what the parent has (a child's nominal quotas together stay within
    the parent's row for the same group, flavor and dimension; else 400 on ``nominal``).
    Another tenant's quota answers 404; viewers and members get 403 on writes.
    """

    serializer_class = QuotaSerializer
    filterset_fields = ["dimension", "flavor"]
    throttle_classes = [WriteRateThrottle]

    def get_queryset(self):
        quotas = Quota.objects.select_related("tenant", "resource_group").order_by(
            "tenant__name", "resource_group__name", "flavor", "dimension"
        )
        ids = get_visible_tenant_ids(self.request.user)
        return quotas if ids is None else quotas.filter(tenant_id__in=ids)

    def _require_manage(self, tenant):
        if not can_manage_quota(self.request.user, tenant):
            raise PermissionDenied(
                "Quotas are set by platform admins, or by the admin of a parent tenant."
            )

    @extend_schema(request=QuotaWriteSerializer, responses={201: QuotaSerializer})
    def create(self, request, *args, **kwargs):
        visible = get_visible_tenant_ids(request.user)
        serializer = QuotaWriteSerializer(
            data=request.data, context={"visible_tenant_ids": visible}
        )
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        self._require_manage(data["tenant"])
        quota = services.create_quota(
            tenant=data["tenant"],
            resource_group=data["resource_group"],
            flavor=data["flavor"],
            dimension=data["dimension"],
            nominal=data["nominal"],
            borrowing_limit=data.get("borrowing_limit"),
            lending_limit=data.get("lending_limit"),
            allowed_flavors=flavor_names(data["resource_group"]),
            within_parent=not request.user.is_superuser,
            actor=request.user,
        )
        return Response(QuotaSerializer(quota).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=QuotaWriteSerializer, responses={200: QuotaSerializer})
    def update(self, request, *args, **kwargs):
        quota = self.get_object()
        self._require_manage(quota.tenant)
        partial = kwargs.get("partial", False)
        serializer = QuotaWriteSerializer(quota, data=request.data, partial=partial)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        quota = services.update_quota(
            quota,
            nominal=data.get("nominal", quota.nominal),
            borrowing_limit=data.get("borrowing_limit", quota.borrowing_limit)
            if partial
            else data.get("borrowing_limit"),
            lending_limit=data.get("lending_limit", quota.lending_limit)
            if partial
            else data.get("lending_limit"),
            within_parent=not request.user.is_superuser,
            actor=request.user,
        )
        return Response(QuotaSerializer(quota).data)

    def destroy(self, request, *args, **kwargs):
        quota = self.get_object()
        self._require_manage(quota.tenant)
        services.delete_quota(quota, actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
