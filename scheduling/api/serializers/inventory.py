"""Inventory: read shapes of nodes and devices, and the input of a device cordon."""

from __future__ import annotations

from rest_framework import serializers

from scheduling.api.serializers.fields import RejectUnknownFieldsMixin
from scheduling.models import Device, Node


class NodeSerializer(serializers.ModelSerializer):
    cluster = serializers.CharField(source="cluster.name")
    device_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Node
        fields = [
            "id",
            "cluster",
            "name",
            "cpu_milli",
            "host_memory_mib",
            "labels",
            "schedulable",
            "error",
            "device_count",
            "removed_at",
        ]


class DeviceSerializer(serializers.ModelSerializer):
    node = serializers.CharField(source="node.name")
    cluster = serializers.CharField(source="node.cluster.name")
    model = serializers.CharField(source="model.name")
    vendor = serializers.CharField(source="model.vendor")
    model_error = serializers.CharField(
        source="model.error",
        read_only=True,
        help_text="Why the device's model config does not resolve; the device is then kept "
        "out of placement (empty = fine).",
    )

    class Meta:
        model = Device
        fields = [
            "id",
            "uuid",
            "cluster",
            "node",
            "model",
            "vendor",
            "index",
            "numa",
            "memory_mib",
            "cores_percent",
            "split_count",
            "healthy",
            "cordoned",
            "mode",
            "removed_at",
            "model_error",
            "console_unhealthy",
            "cordon_reason",
        ]


class DeviceCordonSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    """Input of ``POST /api/devices/<id>/cordon/``: why, and what happens to the jobs on it
    (``wait``: keep running; ``requeue``: back to their queue; ``fail``)."""

    reason = serializers.CharField(max_length=200, allow_blank=True, default="")
    drain = serializers.ChoiceField(choices=["wait", "requeue", "fail"], default="wait")
