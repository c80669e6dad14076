from django.contrib import admin

from notifications.models import Delivery, Subscription


@admin.register(Subscription)
class SubscriptionAdmin(admin.ModelAdmin):
    """Subscriptions; the signing secret is never shown (set it through the API or page)."""

    list_display = ["name", "scope", "tenant", "owner", "channel", "enabled", "signed"]
    list_filter = ["scope", "channel", "enabled"]
    search_fields = ["name", "url", "email", "tenant__name", "owner__username"]
    readonly_fields = ["created", "updated"]

    @admin.display(boolean=True)
    def signed(self, obj) -> bool:
        return obj.signed


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    list_display = ["created", "kind", "subscription", "status", "attempts", "response_code"]
    list_filter = ["status", "kind"]
    readonly_fields = [f.name for f in Delivery._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False
