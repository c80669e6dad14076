"""Notification API under ``/api/notifications/``: subscriptions the caller may manage and
their delivery log (another tenant's subscription answers 404)."""

from __future__ import annotations

import django_filters
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from core.api.throttling import WriteRateThrottle
from notifications import selectors, services
from notifications.api.serializers import (
    DeliverySerializer,
    SubscriptionSerializer,
    SubscriptionUpdateSerializer,
)
from notifications.choices import DeliveryStatus
from notifications.models import Delivery, Subscription


class SubscriptionViewSet(viewsets.ModelViewSet):
    """Webhook and e-mail subscriptions: yours ("my jobs"), your tenants' (tenant admins),
    the platform's (platform admins). ``POST …/{id}/test/`` sends a test delivery."""

    serializer_class = SubscriptionSerializer
    throttle_classes = [WriteRateThrottle]
    queryset = Subscription.objects.none()

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # drf-spectacular's schema pass
            return Subscription.objects.none()
        return selectors.visible_subscriptions(self.request.user).order_by("pk")

    def get_serializer_class(self):
        if self.action in ("update", "partial_update"):
            return SubscriptionUpdateSerializer
        return SubscriptionSerializer

    def perform_create(self, serializer):
        data = serializer.validated_data
        serializer.instance = services.create_subscription(
            user=self.request.user,
            name=data["name"],
            scope=data["scope"],
            tenant=data.get("tenant"),
            channel=data["channel"],
            url=data.get("url", ""),
            email=data.get("email", ""),
            events=data.get("events", []),
            secret=data.get("secret", ""),
            secret_env=data.get("secret_env", ""),
            enabled=data.get("enabled", True),
        )

    def perform_update(self, serializer):
        serializer.instance = services.update_subscription(
            serializer.instance, user=self.request.user, changes=dict(serializer.validated_data)
        )

    def perform_destroy(self, instance):
        services.delete_subscription(instance, user=self.request.user)

    @extend_schema(request=None, responses={202: DeliverySerializer})
    @action(detail=True, methods=["post"])
    def test(self, request, pk=None):
        """Queue a test delivery to this subscription."""
        row = services.send_test(self.get_object(), user=request.user)
        return Response(DeliverySerializer(row).data, status=status.HTTP_202_ACCEPTED)


class DeliveryFilterSet(django_filters.FilterSet):
    status = django_filters.MultipleChoiceFilter(choices=DeliveryStatus.choices)

    class Meta:
        model = Delivery
        fields = ["subscription", "kind", "status"]


class DeliveryViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """The delivery log of your subscriptions, newest first: status, attempts, last HTTP
    status and error."""

    serializer_class = DeliverySerializer
    filterset_class = DeliveryFilterSet
    queryset = Delivery.objects.none()

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # drf-spectacular's schema pass
            return Delivery.objects.none()
        return selectors.visible_deliveries(self.request.user)
