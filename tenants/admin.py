from django.contrib import admin

from tenants.models import (
    Invitation,
    Membership,
    Quota,
    ResourceGroup,
    Tenant,
    TenantNamespace,
    Topology,
)


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ["name", "display_name", "parent", "created"]
    search_fields = ["name", "display_name"]
    list_select_related = ["parent"]
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "tenant", "role"]
    list_filter = ["role", "tenant"]
    list_select_related = ["user", "tenant"]


@admin.register(ResourceGroup)
class ResourceGroupAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "kind",
        "device_models",
        "node_selector",
        "node_policy",
        "device_policy",
        "fragmentation_policy",
        "pod_policy_override",
    ]
    list_filter = ["kind", "fragmentation_policy", "consolidation_enabled"]
    fieldsets = [
        (None, {"fields": ["name", "kind", "device_models", "node_selector", "description"]}),
        (
            "Placement profile",
            {
                "fields": [
                    "node_policy",
                    "device_policy",
                    "fragmentation_policy",
                    "pod_policy_override",
                    "topology",
                ]
            },
        ),
        (
            "Consolidation",
            {
                "fields": [
                    "consolidation_enabled",
                    "consolidation_mode",
                    "consolidation_max_moves_per_hour",
                    "consolidation_max_moves",
                ]
            },
        ),
    ]
    search_fields = ["name"]


@admin.register(Topology)
class TopologyAdmin(admin.ModelAdmin):
    """Network topologies (Kueue ``Topology``): ordered node-label keys, validated by
    ``Topology.clean`` (non-empty, distinct)."""

    list_display = ["name", "levels", "description"]
    search_fields = ["name"]


@admin.register(Quota)
class QuotaAdmin(admin.ModelAdmin):
    list_display = [
        "tenant",
        "resource_group",
        "flavor",
        "dimension",
        "nominal",
        "borrowing_limit",
        "lending_limit",
    ]
    list_filter = ["resource_group", "dimension"]
    list_select_related = ["tenant", "resource_group"]
    search_fields = ["tenant__name", "flavor"]


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    """Invitations are created and answered on the team pages and the API (their token is
    shown once there); the admin lists them and can only delete."""

    list_display = ["invitee", "tenant", "role", "state", "expires_at", "created_by"]
    list_filter = ["role", "tenant"]
    list_select_related = ["tenant", "created_by"]
    search_fields = ["invitee", "tenant__name"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(TenantNamespace)
class TenantNamespaceAdmin(admin.ModelAdmin):
    """The namespaces the console created for tenants (read-only: the console writes them on
    a tenant's first submission to a cluster)."""

    list_display = ["name", "tenant", "cluster_id", "created", "ensured_at"]
    list_filter = ["cluster_id"]
    list_select_related = ["tenant"]
    search_fields = ["name", "tenant__name"]
    readonly_fields = ["tenant", "cluster_id", "name", "created", "ensured_at"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
