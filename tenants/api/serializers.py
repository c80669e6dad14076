from rest_framework import serializers

from tenants.models import Quota, Tenant


class TenantSerializer(serializers.ModelSerializer):
    parent = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = Tenant
        fields = ["id", "name", "display_name", "parent"]


class QuotaSerializer(serializers.ModelSerializer):
    tenant = serializers.CharField(source="tenant.name")
    resource_group = serializers.CharField(source="resource_group.name")

    class Meta:
        model = Quota
        fields = [
            "id", "tenant", "resource_group", "flavor", "dimension", "nominal",
            "borrowing_limit", "lending_limit",
        ]
