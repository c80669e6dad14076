"""Subscriptions and the delivery log over the REST API. The signing secret is write-only."""

from __future__ import annotations

from rest_framework import serializers

from notifications.choices import EVENT_CHOICES, Channel, Scope
from notifications.models import Delivery, Subscription
from notifications.selectors import admin_tenant_ids
from tenants.models import Tenant


class SubscriptionSerializer(serializers.ModelSerializer):
    """``tenant`` by name; ``secret`` write-only ("" clears it), ``signed`` tells whether one
    is set (typed in or through ``secret_env``)."""

    tenant = serializers.SlugRelatedField(
        slug_field="name", queryset=Tenant.objects.all(), required=False, allow_null=True
    )
    owner = serializers.CharField(source="owner.username", read_only=True)
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=EVENT_CHOICES),
        required=False,
        default=list,
        help_text="event kinds (empty = every kind of the scope)",
    )
    scope = serializers.ChoiceField(choices=Scope.choices)
    channel = serializers.ChoiceField(choices=Channel.choices, default=Channel.WEBHOOK)
    secret = serializers.CharField(
        write_only=True,
        required=False,
        allow_blank=True,
        max_length=256,
        style={"input_type": "password"},
        help_text="HMAC-SHA256 signing secret (stored encrypted)",
    )
    signed = serializers.BooleanField(read_only=True)

    class Meta:
        model = Subscription
        fields = [
            "id",
            "name",
            "scope",
            "tenant",
            "owner",
            "events",
            "channel",
            "url",
            "email",
            "secret",
            "secret_env",
            "signed",
            "enabled",
            "created",
        ]
        read_only_fields = ["created"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        request = self.context.get("request")
        user = getattr(request, "user", None)
        if (
            user is not None
            and user.is_authenticated
            and not user.is_superuser
            and "tenant" in self.fields
        ):
            # another tenant's name reads as unknown, exactly like a name that does not exist
            self.fields["tenant"].queryset = Tenant.objects.filter(pk__in=admin_tenant_ids(user))

    def validate_secret(self, value):
        if value and len(value) < 16:
            raise serializers.ValidationError("At least 16 characters.")
        return value


class SubscriptionUpdateSerializer(SubscriptionSerializer):
    """Scope, tenant and channel are fixed after creation."""

    class Meta(SubscriptionSerializer.Meta):
        read_only_fields = ["created", "scope", "tenant", "channel"]


class DeliverySerializer(serializers.ModelSerializer):
    subscription_name = serializers.CharField(source="subscription.name", read_only=True)

    class Meta:
        model = Delivery
        fields = [
            "id",
            "subscription",
            "subscription_name",
            "event_id",
            "kind",
            "payload",
            "status",
            "attempts",
            "response_code",
            "last_error",
            "created",
            "last_attempt_at",
            "next_attempt_at",
            "delivered_at",
        ]
