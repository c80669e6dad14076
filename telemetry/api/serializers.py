"""Response shapes of the telemetry API for the OpenAPI schema (drf-spectacular).

The views build plain dicts; these serializers only describe them (field names, types and
units) so ``/api/schema/`` documents every telemetry endpoint.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers


class HealthEventSerializer(serializers.Serializer):
    time = serializers.DateTimeField()
    kind = serializers.CharField()
    severity = serializers.CharField()
    value = serializers.FloatField(allow_null=True)
    message = serializers.CharField()
    node = serializers.CharField()
    cluster = serializers.CharField()
    source = serializers.CharField()


class DeviceHealthSerializer(serializers.Serializer):
    serial = serializers.CharField(help_text="Device serial / UUID.")
    node = serializers.CharField(allow_null=True)
    inventory_healthy = serializers.BooleanField(allow_null=True)
    healthy = serializers.BooleanField(allow_null=True)
    reasons = serializers.DictField(child=serializers.CharField(),
                                    help_text="Open health conditions {kind: message}.")
    changed_at = serializers.DateTimeField(allow_null=True)
    checked_at = serializers.DateTimeField(allow_null=True)
    events = HealthEventSerializer(many=True)


class DeviceHealthClearedSerializer(serializers.Serializer):
    serial = serializers.CharField()
    healthy = serializers.BooleanField()
    reasons = serializers.DictField(child=serializers.CharField())


class PointSerializer(serializers.Serializer):
    time = serializers.DateTimeField(help_text="Start of the rollup bucket.")
    mean = serializers.FloatField()
    min = serializers.FloatField()
    max = serializers.FloatField()


class DeviceUtilisationSerializer(serializers.Serializer):
    serial = serializers.CharField()
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    resolution_s = serializers.IntegerField(help_text="Rollup bucket width, seconds.")
    series = serializers.DictField(
        child=PointSerializer(many=True),
        help_text="Per metric (utilisation %, memory used MiB, temperature °C, power W).")


class EfficiencyFieldsSerializer(serializers.Serializer):
    allocated_memory_mib = serializers.IntegerField()
    allocated_cores_percent = serializers.IntegerField()
    used_memory_mib = serializers.FloatField(allow_null=True)
    used_cores_percent = serializers.FloatField(allow_null=True)
    memory_ratio = serializers.FloatField(allow_null=True, help_text="used / allocated")
    cores_ratio = serializers.FloatField(allow_null=True, help_text="used / allocated")
    devices_with_data = serializers.IntegerField()


class JobEfficiencySerializer(EfficiencyFieldsSerializer):
    job = serializers.IntegerField()
    tenant = serializers.CharField()
    idle_since = serializers.DateTimeField(allow_null=True)


class TenantEfficiencySerializer(EfficiencyFieldsSerializer):
    tenant = serializers.CharField()
    tenant_id = serializers.IntegerField()
    jobs = serializers.IntegerField()
    idle_jobs = serializers.IntegerField()


class IdleJobSerializer(serializers.Serializer):
    job = serializers.IntegerField()
    job_name = serializers.CharField()
    tenant = serializers.CharField()
    idle_since = serializers.DateTimeField()
    used_cores_percent = serializers.FloatField()
    allocated_cores_percent = serializers.IntegerField()


class CostRowSerializer(serializers.Serializer):
    month = serializers.CharField(help_text="YYYY-MM")
    tenant = serializers.CharField()
    tenant_id = serializers.IntegerField()
    model = serializers.CharField(help_text="Device model.")
    gpu_hours = serializers.DecimalField(max_digits=20, decimal_places=6)
    cost = serializers.DecimalField(max_digits=20, decimal_places=4)
    currency = serializers.CharField()
    unpriced_hours = serializers.DecimalField(max_digits=20, decimal_places=6)
    jobs = serializers.IntegerField()


class CostReportSerializer(serializers.Serializer):
    # "from" is a Python keyword: declared below
    to = serializers.DateTimeField()
    rows = CostRowSerializer(many=True)

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = serializers.DateTimeField()
        return fields


class CapacityAlertSerializer(serializers.Serializer):
    resource_group = serializers.CharField()
    flavor = serializers.CharField(help_text='Device model, family or "*" (whole group).')
    opened_at = serializers.DateTimeField()
    healthy_devices = serializers.FloatField()
    guaranteed_devices = serializers.FloatField()
    message = serializers.CharField()


WINDOW_PARAMETERS = [
    OpenApiParameter("start", str, description="ISO 8601 date-time with a time zone"),
    OpenApiParameter("end", str, description="ISO 8601 date-time with a time zone (now)"),
]
TENANT_PARAMETER = OpenApiParameter(
    "tenant", str, description="A tenant name or id (one of the caller's tenants)")
MONTH_PARAMETERS = [
    OpenApiParameter("month", str, description="YYYY-MM"),
    OpenApiParameter("from", str, description="YYYY-MM (first month)"),
    OpenApiParameter("to", str, description="YYYY-MM (last month, included)"),
    TENANT_PARAMETER,
]
