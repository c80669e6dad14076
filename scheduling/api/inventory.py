"""API of device models, clusters (read-only, no connection details) and placements.

Device models: everyone reads, platform admins write (audited, write-throttled). Clusters:
read-only, without kubeconfig paths, contexts or other connection settings. Placements:
the placements of the caller's tenants' jobs (another tenant's answers 404).
"""

from __future__ import annotations

from django.db.models import Count, Prefetch, Q
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers, viewsets

from core.api.mixins import AuditedWritesMixin
from core.api.throttling import WriteRateThrottle
from core.api.validators import no_nul_characters
from scheduling.api.config_schema import overlay_schema
from scheduling.choices import SlicingMode
from scheduling.devices.overlay import resolve_model
from scheduling.devices.schema import ConfigError
from scheduling.filtersets import ClusterFilterSet, DeviceModelFilterSet, PlacementFilterSet
from scheduling.models import Cluster, DeviceModel, Placement, PlacementDevice
from tenants.api.permissions import IsPlatformAdminOrReadOnly
from tenants.selectors import get_visible_tenant_ids


@extend_schema_field(overlay_schema())
class ConfigOverlayField(serializers.DictField):
    """A device model's config overlay (documented key by key, :mod:`.config_schema`)."""


class DeviceModelSerializer(serializers.ModelSerializer):
    """A device model. ``config`` is its overlay on HAMi's defaults (docs/devices.md),
    validated against the catalogue: an unknown key or a bad value is a 400 naming
    ``config.<key>``. ``resolved`` is the effective configuration (null while ``error``)."""

    config = ConfigOverlayField(required=False, validators=[no_nul_characters])
    resolved = serializers.SerializerMethodField()
    slicing_mode = serializers.ChoiceField(choices=SlicingMode.choices, read_only=True)

    class Meta:
        model = DeviceModel
        fields = ["id", "name", "vendor", "family", "config", "resolved", "slicing_mode", "error"]
        read_only_fields = ["error"]

    @extend_schema_field({"type": "object", "nullable": True, "additionalProperties": True})
    def get_resolved(self, obj: DeviceModel) -> dict | None:
        try:
            return obj.resolved().to_dict()
        except ConfigError:
            return None

    def validate(self, attrs: dict) -> dict:
        instance = self.instance
        vendor = attrs.get("vendor", getattr(instance, "vendor", ""))
        name = attrs.get("name", getattr(instance, "name", ""))
        config = attrs.get("config", getattr(instance, "config", {}))
        try:
            resolve_model(vendor, name, config)
        except ConfigError as exc:
            raise serializers.ValidationError(
                {"config": {key: [message] for key, message in exc.errors.items()}}
            ) from None
        if instance is not None and "config" in attrs:
            attrs["error"] = ""
        return attrs


class DeviceModelViewSet(AuditedWritesMixin, viewsets.ModelViewSet):
    """Device models with their per-model configuration overlay."""

    serializer_class = DeviceModelSerializer
    permission_classes = [IsPlatformAdminOrReadOnly]
    throttle_classes = [WriteRateThrottle]
    filterset_class = DeviceModelFilterSet
    queryset = DeviceModel.objects.order_by("vendor", "name")
    audit_name = "device_model"
    audit_fields = ["name", "vendor", "family", "config"]


class ClusterSerializer(serializers.ModelSerializer):
    node_count = serializers.IntegerField(read_only=True)
    device_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Cluster
        fields = [
            "id",
            "name",
            "backend",
            "description",
            "submission_mode",
            "namespace_pattern",
            "server_version",
            "connection_checked_at",
            "inventory_synced_at",
            "node_count",
            "device_count",
        ]


class ClusterViewSet(viewsets.ReadOnlyModelViewSet):
    """Clusters (no credentials or connection settings: those stay in the admin)."""

    serializer_class = ClusterSerializer
    filterset_class = ClusterFilterSet
    queryset = Cluster.objects.annotate(
        node_count=Count("nodes", filter=Q(nodes__removed_at__isnull=True), distinct=True),
        device_count=Count(
            "nodes__devices", filter=Q(nodes__devices__removed_at__isnull=True), distinct=True
        ),
    ).order_by("name")


class PlacementDeviceSerializer(serializers.ModelSerializer):
    uuid = serializers.CharField(source="device.uuid")
    model = serializers.CharField(source="device.model.name")

    class Meta:
        model = PlacementDevice
        fields = ["uuid", "model", "memory_mib", "cores_percent", "slots"]


class PlacementListSerializer(serializers.ModelSerializer):
    job = serializers.IntegerField(source="job_id")
    job_name = serializers.CharField(source="job.name")
    tenant = serializers.CharField(source="job.tenant.name")
    node = serializers.CharField(source="node.name")
    cluster = serializers.CharField(source="node.cluster.name")
    devices = PlacementDeviceSerializer(many=True)

    class Meta:
        model = Placement
        fields = [
            "id",
            "job",
            "job_name",
            "tenant",
            "pod_index",
            "cluster",
            "node",
            "state",
            "cpu_milli",
            "host_memory_mib",
            "devices",
            "backend_ref",
            "message",
            "created",
            "submitted_at",
            "started_at",
            "ended_at",
        ]


class PlacementViewSet(viewsets.ReadOnlyModelViewSet):
    """Placements (pods bound to nodes and devices) of the caller's tenants' jobs."""

    serializer_class = PlacementListSerializer
    filterset_class = PlacementFilterSet

    def get_queryset(self):
        placements = (
            Placement.objects.select_related("job__tenant", "node__cluster")
            .prefetch_related(
                Prefetch(
                    "devices",
                    queryset=PlacementDevice.objects.select_related("device__model").order_by(
                        "device__uuid"
                    ),
                )
            )
            .order_by("-id")
        )
        ids = get_visible_tenant_ids(self.request.user)
        return placements if ids is None else placements.filter(job__tenant_id__in=ids)
