"""Filterset of the audit log (shared by /audit/ and /api/audit/)."""

import django_filters

from core.models import AuditEntry


class AuditFilterSet(django_filters.FilterSet):
    actor = django_filters.CharFilter(field_name="actor_name")
    action = django_filters.CharFilter(lookup_expr="startswith")
    object_type = django_filters.CharFilter()
    since = django_filters.IsoDateTimeFilter(field_name="time", lookup_expr="gte")
    until = django_filters.IsoDateTimeFilter(field_name="time", lookup_expr="lt")

    class Meta:
        model = AuditEntry
        fields = ["actor", "action", "object_type", "tenant_id", "source"]
