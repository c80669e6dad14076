"""Invitations API (``/api/invitations/``): tenant admins invite, invitees accept.

* ``POST /api/invitations/`` ``{"tenant", "invitee", "role"}`` — a tenant admin of
  ``tenant`` (or a platform admin) invites a username or an e-mail address. The 201 answer
  has the same shape and wording whether or not such a user exists; its ``token`` is shown
  only here.
* ``GET /api/invitations/`` — invitations of the tenants the caller administers, and the
  open ones addressed to the caller (``?mine=true``: only those).
* ``POST /api/invitations/{id}/accept/`` / ``decline/`` — the invitee; ``POST
  /api/invitations/accept-token/`` ``{"token"}`` accepts by token (the caller must still be
  the invitee).
* ``POST /api/invitations/{id}/revoke/`` — the tenant's admin.

An invitation the caller may not see answers 404.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Q
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.response import Response

from core.api.filters import StrictBooleanField
from core.api.throttling import WriteRateThrottle
from tenants import services
from tenants.choices import Role
from tenants.models import Invitation, Tenant
from tenants.selectors import admin_tenant_ids, pending_invitations_for


class InvitationSerializer(serializers.ModelSerializer):
    tenant = serializers.CharField(source="tenant.name", read_only=True)
    created_by = serializers.CharField(
        source="created_by.username", read_only=True, allow_null=True, default=None
    )
    state = serializers.CharField(read_only=True)

    class Meta:
        model = Invitation
        fields = [
            "id",
            "tenant",
            "invitee",
            "role",
            "state",
            "created",
            "expires_at",
            "created_by",
            "accepted_at",
            "revoked_at",
        ]


class InvitationCreatedSerializer(InvitationSerializer):
    token = serializers.CharField(read_only=True, help_text="Shown once; not stored.")

    class Meta(InvitationSerializer.Meta):
        fields = [*InvitationSerializer.Meta.fields, "token"]


class InvitationWriteSerializer(serializers.Serializer):
    tenant = serializers.CharField(max_length=63, help_text="Name of a tenant you administer.")
    invitee = serializers.RegexField(
        r"^[\w.@+-]+\Z",
        max_length=254,
        help_text="Username or e-mail address of the person invited.",
        error_messages={"invalid": "A username or an e-mail address."},
    )
    role = serializers.ChoiceField(choices=Role.choices, default=Role.MEMBER)


class InvitationTokenSerializer(serializers.Serializer):
    token = serializers.CharField(max_length=128)


class InvitationViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet,
):
    """Invitations to tenants (see the module docstring)."""

    serializer_class = InvitationSerializer
    throttle_classes = [WriteRateThrottle]

    def get_queryset(self):
        user = self.request.user
        mine = Q(pk__in=pending_invitations_for(user).values("pk"))
        if self._only_mine():
            scope = mine
        else:
            admin_ids = admin_tenant_ids(user)
            scope = mine | (Q() if admin_ids is None else Q(tenant_id__in=admin_ids))
        return (
            Invitation.objects.filter(scope)
            .select_related("tenant", "created_by")
            .order_by("-created", "-id")
        )

    def _only_mine(self) -> bool:
        try:
            return bool(StrictBooleanField().to_python(self.request.query_params.get("mine")))
        except DjangoValidationError as exc:
            raise serializers.ValidationError({"mine": exc.messages}) from None

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "mine", bool, description="Only the open invitations addressed to you."
            )
        ]
    )
    def list(self, request, *args, **kwargs):
        return super().list(request, *args, **kwargs)

    def _admin_tenant(self, name: str) -> Tenant:
        ids = admin_tenant_ids(self.request.user)
        tenants = Tenant.objects.all() if ids is None else Tenant.objects.filter(pk__in=ids)
        tenant = tenants.filter(name=name).first()
        if tenant is None:
            raise NotFound("No such tenant among those you administer.")
        return tenant

    @extend_schema(request=InvitationWriteSerializer, responses={201: InvitationCreatedSerializer})
    def create(self, request, *args, **kwargs):
        if admin_tenant_ids(request.user) == set():
            raise PermissionDenied("Only tenant admins invite members.")
        serializer = InvitationWriteSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        invitation, token = services.create_invitation(
            tenant=self._admin_tenant(data["tenant"]),
            invitee=data["invitee"],
            role=data["role"],
            actor=request.user,
        )
        invitation.token = token
        return Response(
            InvitationCreatedSerializer(invitation).data, status=status.HTTP_201_CREATED
        )

    @extend_schema(request=None, responses={200: InvitationSerializer})
    @action(detail=True, methods=["post"])
    def revoke(self, request, pk=None):
        """Withdraw an open invitation (the tenant's admin)."""
        invitation = self.get_object()
        ids = admin_tenant_ids(request.user)
        if ids is not None and invitation.tenant_id not in ids:
            raise PermissionDenied("Only the tenant's admins revoke its invitations.")
        return Response(
            InvitationSerializer(services.revoke_invitation(invitation, actor=request.user)).data
        )

    @extend_schema(request=None, responses={200: InvitationSerializer})
    @action(detail=True, methods=["post"])
    def accept(self, request, pk=None):
        """Accept an invitation addressed to you: you get its role in its tenant."""
        invitation = services.accept_invitation(self.get_object(), user=request.user)
        return Response(InvitationSerializer(invitation).data)

    @extend_schema(request=None, responses={200: InvitationSerializer})
    @action(detail=True, methods=["post"])
    def decline(self, request, pk=None):
        """Decline an invitation addressed to you."""
        invitation = self.get_object()
        return Response(
            InvitationSerializer(services.decline_invitation(invitation, user=request.user)).data
        )

    @extend_schema(request=InvitationTokenSerializer, responses={200: InvitationSerializer})
    @action(detail=False, methods=["post"], url_path="accept-token")
    def accept_token(self, request):
        """Accept the invitation of a token (it must be addressed to you)."""
        serializer = InvitationTokenSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        invitation = services.accept_invitation_token(
            serializer.validated_data["token"], user=request.user
        )
        return Response(InvitationSerializer(invitation).data)
