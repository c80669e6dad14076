"""``GET /api/fragmentation/``: FGD fragmentation rate and stranded GPUs (cluster, groups,
nodes).

Who sees what:

* platform admins: the whole inventory (or ``?resource_group=<id>``), every group's row and
  the per-node rows with each stranded device and why;
* everyone else: the union of the resource groups where one of their tenants (for a tenant
  admin: also the tenants below) has a quota or a queue, one row per such group, and no node
  rows (``node_detail`` false): per-node free capacity and stranded devices are operator
  data, like device-level utilisation and capacity alerts (telemetry API). A group outside
  that set answers 400 as an unknown id would (no existence oracle).

``?cluster=<id>`` keeps the nodes of one cluster (totals, group rows and node rows). Bad
values of either filter, or a filter given twice, are 400 in the API's error shape.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from scheduling.models import Cluster
from scheduling.selectors.fragmentation import (
    cluster_fragmentation,
    group_fragmentation,
    groups_for_tenants,
)
from tenants.selectors import get_visible_tenant_ids

MAX_ID = 2**63 - 1


class FragStrandedDeviceSerializer(serializers.Serializer):
    uuid = serializers.CharField(help_text="Device serial / UUID.")
    index = serializers.IntegerField(help_text="Device index on the node.")
    model = serializers.CharField()
    free_milli = serializers.IntegerField(help_text="Free share, milli-GPU.")
    code = serializers.ChoiceField(
        choices=["no_gpu_class", "model", "cpu", "too_small", "too_few_gpus", "shape"],
        help_text="Why no class of the target workload can use it (``model``: no recent task "
        "allows the model; ``shape``: the tasks that allow it need more GPUs or CPU "
        "than the node has).",
    )
    reason = serializers.CharField()


class FragTotalsSerializer(serializers.Serializer):
    nodes = serializers.IntegerField()
    capacity_milli = serializers.IntegerField(help_text="1000 per healthy, uncordoned device.")
    idle_milli = serializers.IntegerField(help_text="Free GPU milli.")
    fragment_milli = serializers.FloatField(help_text="F(M): idle milli M cannot use.")
    rate_percent = serializers.FloatField(help_text="F(M) / idle x 100.")
    fragment_of_capacity_percent = serializers.FloatField()
    stranded_milli = serializers.IntegerField(help_text="Free milli no class of M can use.")
    stranded_gpus = serializers.FloatField(help_text="stranded_milli / 1000.")
    stranded_devices = serializers.IntegerField()


class FragWorkloadSerializer(serializers.Serializer):
    jobs = serializers.IntegerField(help_text="Recent jobs read (at most 500 per group).")
    tasks = serializers.IntegerField()
    classes = serializers.IntegerField()
    coverage = serializers.FloatField()
    default = serializers.BooleanField(help_text="No task found: M is one whole GPU.")


class FragGroupRowSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="group_id")
    name = serializers.CharField()
    kind = serializers.CharField()
    totals = FragTotalsSerializer()
    workload = FragWorkloadSerializer()


class FragNodeRowSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="node_id")
    name = serializers.CharField(source="node")
    cluster_id = serializers.IntegerField()
    cluster = serializers.CharField()
    resource_groups = serializers.ListField(child=serializers.CharField())
    capacity_milli = serializers.IntegerField()
    idle_milli = serializers.IntegerField()
    fragment_milli = serializers.FloatField()
    rate_percent = serializers.FloatField()
    stranded_milli = serializers.IntegerField()
    stranded_gpus = serializers.FloatField()
    stranded_devices = FragStrandedDeviceSerializer(source="stranded", many=True)


class FragScopeSerializer(serializers.Serializer):
    resource_group = serializers.IntegerField(allow_null=True)
    cluster = serializers.IntegerField(allow_null=True)


class FragmentationSerializer(serializers.Serializer):
    scope = FragScopeSerializer()
    node_detail = serializers.BooleanField(help_text="False: node rows are for platform admins.")
    totals = FragTotalsSerializer()
    workload = FragWorkloadSerializer()
    groups = FragGroupRowSerializer(many=True)
    nodes = FragNodeRowSerializer(many=True, help_text="Most fragment first.")


class FragmentationQuerySerializer(serializers.Serializer):
    resource_group = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_ID, help_text="Resource group id."
    )
    cluster = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_ID, help_text="Cluster id."
    )

    def validate(self, attrs):
        # A QueryDict answers the last of repeated values; two ids are ambiguous, not "the
        # last one".
        repeated = {
            name: ["Give this filter once."]
            for name in self.fields
            if len(self.initial_data.getlist(name)) > 1
        }
        if repeated:
            raise serializers.ValidationError(repeated)
        return attrs


class FragmentationView(APIView):
    """FGD fragmentation rate, fragment and stranded GPUs of the caller's scope."""

    @extend_schema(
        parameters=[FragmentationQuerySerializer], responses={200: FragmentationSerializer}
    )
    def get(self, request):
        query = FragmentationQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        group_id = query.validated_data.get("resource_group")
        cluster_id = query.validated_data.get("cluster")
        admin = request.user.is_superuser
        if cluster_id is not None and not Cluster.objects.filter(pk=cluster_id).exists():
            raise serializers.ValidationError({"cluster": ["No such cluster."]})
        if admin and group_id is None:
            report = cluster_fragmentation(None, cluster_id)
        else:
            groups = groups_for_tenants(None if admin else get_visible_tenant_ids(request.user))
            if group_id is None:
                report = cluster_fragmentation(groups, cluster_id)
            else:
                group = next((g for g in groups if g.pk == group_id), None)
                if group is None:
                    raise serializers.ValidationError(
                        {"resource_group": ["No such resource group."]}
                    )
                report = group_fragmentation(group, cluster_id)
        body = {
            "scope": {"resource_group": group_id, "cluster": cluster_id},
            "node_detail": admin,
            "totals": report.totals,
            "workload": report.workload,
            "groups": report.groups,
            "nodes": report.nodes if admin else [],
        }
        return Response(FragmentationSerializer(body).data)
