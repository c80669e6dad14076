"""API of tenants, members and resource groups (CRUD by role, audited, write-throttled).

* Tenants: everyone reads their own tenants; platform admins create, change and delete.
* Members (``/api/members/``): everyone reads the memberships of their tenants; tenant admins
  re-role and remove members of their tenant and invite new ones (``/api/invitations/``);
  only platform admins enrol a user directly. Every membership write goes through
  ``tenants.services``.
* Resource groups: platform admins see and change all; others see the groups their tenants
  have a queue or quota in.

Another tenant's object answers 404, exactly as a missing one.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db.models import Count, Q
from django.utils import timezone
from rest_framework import serializers, viewsets
from rest_framework.exceptions import PermissionDenied

from core.api.fields import WordChoiceField
from core.api.mixins import AuditedWritesMixin
from core.api.throttling import WriteRateThrottle
from core.api.validators import no_nul_characters
from tenants import services
from tenants.api.permissions import IsPlatformAdminOrReadOnly
from tenants.choices import DevicePolicy, NodePolicy, Role
from tenants.filtersets import MembershipFilterSet, ResourceGroupFilterSet, TenantFilterSet
from tenants.models import (
    CONSOLIDATION_BUDGET_WINDOW,
    Membership,
    ResourceGroup,
    Tenant,
    Topology,
    slug_validator,
)
from tenants.selectors import get_user_tenant_ids, get_visible_tenant_ids


class TenantWriteSerializer(serializers.ModelSerializer):
    parent = serializers.SlugRelatedField(
        slug_field="name", queryset=Tenant.objects.all(), required=False, allow_null=True
    )

    class Meta:
        model = Tenant
        fields = ["id", "name", "display_name", "parent"]

    def validate(self, attrs):
        parent = attrs.get("parent")
        node, seen = parent, {self.instance.pk} if self.instance else set()
        while node is not None:
            if node.pk in seen:
                raise serializers.ValidationError(
                    {"parent": "A tenant cannot be its own ancestor."}
                )
            seen.add(node.pk)
            node = node.parent
        return attrs


class TenantViewSet(AuditedWritesMixin, viewsets.ModelViewSet):
    """The tenants the caller may read (``get_visible_tenant_ids``: own tenants and, for a
    tenant admin, those below; every tenant for a platform admin); platform admins write."""

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
        ids = get_visible_tenant_ids(self.request.user)
        return tenants if ids is None else tenants.filter(pk__in=ids)


class MembershipSerializer(serializers.ModelSerializer):
    tenant = serializers.SlugRelatedField(slug_field="name", queryset=Tenant.objects.none())
    user = serializers.SlugRelatedField(
        slug_field="username", queryset=get_user_model().objects.all()
    )

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
                Tenant.objects.all() if ids is None else Tenant.objects.filter(pk__in=ids)
            )

    def validate(self, attrs):
        if (
            self.instance is not None
            and "tenant" in attrs
            and attrs["tenant"].pk != self.instance.tenant_id
        ):
            raise serializers.ValidationError({"tenant": "A membership cannot change tenant."})
        if (
            self.instance is not None
            and "user" in attrs
            and attrs["user"].pk != self.instance.user_id
        ):
            raise serializers.ValidationError({"user": "A membership cannot change user."})
        return attrs


def _require_tenant_admin(user, tenant_id: int) -> None:
    if user.is_superuser:
        return
    if not Membership.objects.filter(
        user=user, tenant_id=tenant_id, role=Role.TENANT_ADMIN
    ).exists():
        raise PermissionDenied("Only tenant admins manage members.")


class MembershipViewSet(viewsets.ModelViewSet):
    """Members of the caller's tenants; tenant admins re-role and remove them (and invite
    new ones through ``/api/invitations/``); platform admins also add them directly."""

    serializer_class = MembershipSerializer
    throttle_classes = [WriteRateThrottle]
    filterset_class = MembershipFilterSet

    def get_queryset(self):
        members = Membership.objects.select_related("tenant", "user").order_by(
            "tenant__name", "user__username"
        )
        ids = get_user_tenant_ids(self.request.user)
        return members if ids is None else members.filter(tenant_id__in=ids)

    def create(self, request, *args, **kwargs):
        # Refused before validating, so the answer never tells which usernames exist: a
        # tenant admin invites (the invitee accepts), only platform admins enrol directly.
        if not request.user.is_superuser:
            raise PermissionDenied(
                "Only platform admins add members directly; tenant admins invite users with "
                "POST /api/invitations/."
            )
        return super().create(request, *args, **kwargs)

    def perform_create(self, serializer):
        data = serializer.validated_data  # a duplicate is refused by UniqueTogetherValidator
        serializer.instance = services.add_member(
            tenant=data["tenant"],
            user=data["user"],
            role=data.get("role", Role.MEMBER),
            actor=self.request.user,
        )

    def perform_update(self, serializer):
        _require_tenant_admin(self.request.user, serializer.instance.tenant_id)
        serializer.instance = services.change_member_role(
            serializer.instance,
            role=serializer.validated_data.get("role", serializer.instance.role),
            actor=self.request.user,
        )

    def perform_destroy(self, instance):
        _require_tenant_admin(self.request.user, instance.tenant_id)
        services.remove_member(instance, actor=self.request.user)


class ResourceGroupSerializer(serializers.ModelSerializer):
    name = serializers.CharField(max_length=63, validators=[slug_validator])
    device_models = serializers.ListField(
        child=serializers.CharField(max_length=100), required=False, max_length=256
    )
    node_selector = serializers.DictField(
        child=serializers.CharField(max_length=253), required=False, validators=[no_nul_characters]
    )
    # HAMi's words in any case, stray spaces ignored, as the scheduling side reads them
    # (scheduling.devices.policies); an unknown word is a 400 naming the valid ones
    node_policy = WordChoiceField(choices=NodePolicy.choices, required=False)
    device_policy = WordChoiceField(choices=DevicePolicy.choices, required=False)
    consolidation_moves_last_hour = serializers.IntegerField(
        read_only=True,
        default=0,
        help_text="Jobs moved by consolidation in the last hour (the budget used).",
    )
    topology = serializers.SlugRelatedField(
        slug_field="name",
        queryset=Topology.objects.all(),
        required=False,
        allow_null=True,
        help_text="Name of the network topology its jobs are placed under (Kueue TAS; null = "
        "the one its device models name, if any).",
        error_messages={"does_not_exist": "No topology named {value}."},
    )

    class Meta:
        model = ResourceGroup
        fields = [
            "id",
            "name",
            "kind",
            "device_models",
            "node_selector",
            "description",
            "node_policy",
            "device_policy",
            "fragmentation_policy",
            "pod_policy_override",
            "consolidation_enabled",
            "consolidation_mode",
            "consolidation_max_moves_per_hour",
            "consolidation_max_moves",
            "consolidation_moves_last_hour",
            "topology",
        ]

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
    audit_fields = [
        "name",
        "kind",
        "device_models",
        "node_selector",
        "description",
        "node_policy",
        "device_policy",
        "fragmentation_policy",
        "pod_policy_override",
        "consolidation_enabled",
        "consolidation_mode",
        "consolidation_max_moves_per_hour",
        "consolidation_max_moves",
        "topology",
    ]

    def get_queryset(self):
        window = timezone.now() - CONSOLIDATION_BUDGET_WINDOW
        groups = (
            ResourceGroup.objects.select_related("topology")
            .order_by("name")
            .annotate(
                consolidation_moves_last_hour=Count(
                    "consolidation_moves",
                    filter=Q(consolidation_moves__time__gt=window),
                    distinct=True,
                )
            )
        )
        ids = get_visible_tenant_ids(self.request.user)
        if ids is None:
            return groups
        return groups.filter(Q(queues__tenant_id__in=ids) | Q(quotas__tenant_id__in=ids)).distinct()
