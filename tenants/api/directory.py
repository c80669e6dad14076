"""API of tenants, members and resource groups (CRUD by role, audited, write-throttled).

* Tenants: everyone reads their own tenants; platform admins create, change and delete.
* Members (``/api/members/``): everyone reads the memberships of their tenants; tenant admins
  (and platform admins) add, re-role and remove members of their tenant.
* Resource groups: platform admins see and change all; others see the groups their tenants
  have a queue or quota in.

Another tenant's object answers 404, exactly as a missing one.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db.models import Q
from rest_framework import serializers, viewsets
from rest_framework.exceptions import PermissionDenied

from core.api.mixins import AuditedWritesMixin
from core.api.throttling import WriteRateThrottle
from core.api.validators import no_nul_characters
from tenants.api.permissions import IsPlatformAdminOrReadOnly
from tenants.choices import Role
from tenants.filtersets import MembershipFilterSet, ResourceGroupFilterSet, TenantFilterSet
from tenants.models import Membership, ResourceGroup, Tenant, slug_validator
from tenants.selectors import get_user_tenant_ids
from tenants.services import add_membership, change_membership, remove_membership


class TenantWriteSerializer(serializers.ModelSerializer):
    parent = serializers.SlugRelatedField(
        slug_field="name", queryset=Tenant.objects.all(), required=False, allow_null=True)

    class Meta:
        model = Tenant
        fields = ["id", "name", "display_name", "parent"]

    def validate(self, attrs):
        parent = attrs.get("parent")
        node, seen = parent, {self.instance.pk} if self.instance else set()
        while node is not None:
            if node.pk in seen:
                raise serializers.ValidationError(
                    {"parent": "A tenant cannot be its own ancestor."})
            seen.add(node.pk)
            node = node.parent
        return attrs


class TenantViewSet(AuditedWritesMixin, viewsets.ModelViewSet):
    """The caller's tenants (every tenant for a platform admin); platform admins write."""

    serializer_class = TenantWriteSerializer
    permission_classes = [IsPlatformAdminOrReadOnly]
    throttle_classes = [WriteRateThrottle]
    filterset_class = TenantFilterSet
    audit_name = "tenant"
    audit_fields = ["name", "display_name", "parent"]

    def audit_tenant_id(self, instance):
        return instance.pk

    def get_queryset(self):
        tenants = Tenant.objects.select_related("parent").order_by("name")
        ids = get_user_tenant_ids(self.request.user)
        return tenants if ids is None else tenants.filter(pk__in=ids)


class MembershipSerializer(serializers.ModelSerializer):
    tenant = serializers.SlugRelatedField(slug_field="name", queryset=Tenant.objects.none())
    user = serializers.SlugRelatedField(slug_field="username",
                                        queryset=get_user_model().objects.all())

    class Meta:
        model = Membership
        fields = ["id", "tenant", "user", "role", "created"]
        read_only_fields = ["created"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        request = self.context.get("request")
        if request is not None and request.user.is_authenticated:
            ids = get_user_tenant_ids(request.user)
            self.fields["tenant"].queryset = (
                Tenant.objects.all() if ids is None else Tenant.objects.filter(pk__in=ids))

    def validate(self, attrs):
        if self.instance is not None and "tenant" in attrs and \
                attrs["tenant"].pk != self.instance.tenant_id:
            raise serializers.ValidationError({"tenant": "A membership cannot change tenant."})
        return attrs


def _require_tenant_admin(user, tenant_id: int) -> None:
    if user.is_superuser:
        return
    if not Membership.objects.filter(user=user, tenant_id=tenant_id,
                                     role=Role.TENANT_ADMIN).exists():
        raise PermissionDenied("Only tenant admins manage members.")


class MembershipViewSet(viewsets.ModelViewSet):
    """Members of the caller's tenants; tenant admins add, re-role and remove them (through
    :mod:`tenants.services`, which audits each write)."""

    serializer_class = MembershipSerializer
    throttle_classes = [WriteRateThrottle]
    filterset_class = MembershipFilterSet

    def get_queryset(self):
        members = Membership.objects.select_related("tenant", "user").order_by(
            "tenant__name", "user__username")
        ids = get_user_tenant_ids(self.request.user)
        return members if ids is None else members.filter(tenant_id__in=ids)

    def create(self, request, *args, **kwargs):
        # Refuse a caller who administers no tenant before validating, so the answer does
        # not tell which usernames and tenant names exist.
        if not request.user.is_superuser and not Membership.objects.filter(
                user=request.user, role=Role.TENANT_ADMIN).exists():
            raise PermissionDenied("Only tenant admins manage members.")
        return super().create(request, *args, **kwargs)

    def perform_create(self, serializer):
        data = serializer.validated_data
        _require_tenant_admin(self.request.user, data["tenant"].pk)
        serializer.instance = add_membership(
            tenant=data["tenant"], user=data["user"], role=data.get("role", Role.MEMBER),
            actor=self.request.user, source="api")

    def perform_update(self, serializer):
        _require_tenant_admin(self.request.user, serializer.instance.tenant_id)
        data = serializer.validated_data
        serializer.instance = change_membership(
            serializer.instance, role=data.get("role"), user=data.get("user"),
            actor=self.request.user, source="api")

    def perform_destroy(self, instance):
        _require_tenant_admin(self.request.user, instance.tenant_id)
        remove_membership(instance, actor=self.request.user, source="api")


class ResourceGroupSerializer(serializers.ModelSerializer):
    name = serializers.CharField(max_length=63, validators=[slug_validator])
    device_models = serializers.ListField(
        child=serializers.CharField(max_length=100), required=False, max_length=256)
    node_selector = serializers.DictField(
        child=serializers.CharField(max_length=253), required=False,
        validators=[no_nul_characters])

    class Meta:
        model = ResourceGroup
        fields = ["id", "name", "kind", "device_models", "node_selector", "description"]

    def validate_name(self, value):
        taken = ResourceGroup.objects.filter(name=value)
        if self.instance is not None:
            taken = taken.exclude(pk=self.instance.pk)
        if taken.exists():
            raise serializers.ValidationError("A resource group with this name exists.")
        return value


class ResourceGroupViewSet(AuditedWritesMixin, viewsets.ModelViewSet):
    """Resource groups (pools of devices by model and node labels)."""

    serializer_class = ResourceGroupSerializer
    permission_classes = [IsPlatformAdminOrReadOnly]
    throttle_classes = [WriteRateThrottle]
    filterset_class = ResourceGroupFilterSet
    audit_name = "resource_group"
    audit_fields = ["name", "kind", "device_models", "node_selector", "description"]

    def get_queryset(self):
        groups = ResourceGroup.objects.order_by("name")
        ids = get_user_tenant_ids(self.request.user)
        if ids is None:
            return groups
        return groups.filter(Q(queues__tenant_id__in=ids) | Q(quotas__tenant_id__in=ids)
                             ).distinct()
