"""Django admin: the audit log, read-only (platform admins only see the admin)."""

from django.contrib import admin

from core.models import AuditEntry


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    list_display = ["time", "actor_name", "action", "object_type", "object_repr", "tenant_id"]
    list_filter = ["action", "object_type", "source"]
    search_fields = ["actor_name", "object_repr", "object_id", "action"]
    date_hierarchy = "time"
    readonly_fields = [f.name for f in AuditEntry._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
