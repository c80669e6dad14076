"""Admin: prices (admin-editable, with effective dates), scrape targets, health records."""

from django.contrib import admin

from telemetry.models import (
    CapacityAlert,
    DeviceHealth,
    DeviceHealthEvent,
    DevicePrice,
    ScrapeTarget,
)


@admin.register(DevicePrice)
class DevicePriceAdmin(admin.ModelAdmin):
    list_display = ("model", "effective_from", "per_hour", "currency")
    list_filter = ("model", "currency")
    ordering = ("model__name", "effective_from")


@admin.register(ScrapeTarget)
class ScrapeTargetAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "cluster",
        "kind",
        "url",
        "enabled",
        "last_status",
        "last_scrape_at",
        "consecutive_failures",
    )
    list_filter = ("kind", "last_status", "enabled")
    readonly_fields = (
        "last_scrape_at",
        "last_success_at",
        "last_status",
        "last_error",
        "last_duration_ms",
        "consecutive_failures",
        "last_samples",
        "last_rejected_lines",
        "last_ignored",
        "last_attributed",
        "last_unattributed",
        "last_conflicts",
        "last_node_mismatches",
    )


@admin.register(DeviceHealth)
class DeviceHealthAdmin(admin.ModelAdmin):
    list_display = ("serial", "healthy", "changed_at", "checked_at")
    list_filter = ("healthy",)
    search_fields = ("serial",)


@admin.register(DeviceHealthEvent)
class DeviceHealthEventAdmin(admin.ModelAdmin):
    list_display = ("serial", "time", "kind", "severity", "node_name", "message")
    list_filter = ("kind", "severity")
    search_fields = ("serial",)


@admin.register(CapacityAlert)
class CapacityAlertAdmin(admin.ModelAdmin):
    list_display = ("resource_group", "flavor", "opened_at", "resolved_at", "message")
