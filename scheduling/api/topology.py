"""``GET /api/topologies/``: each network topology the caller's resource groups are placed
under, with its domains and their free and used devices (issue 31).

Who sees what (as ``GET /api/fragmentation/``): platform admins every group; everyone else
the groups where one of their tenants (a tenant admin: also the tenants below) has a quota
or a queue. A topology is listed when one of those groups is placed under it, and its
domains are counted over those groups' nodes only. Node inventory carries no tenant data
(``GET /api/nodes/`` lists every node), so domain names and device counts are shown; the
jobs in each domain are not (the topology page shows the caller's own).
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from scheduling.selectors.fragmentation import groups_for_tenants
from scheduling.selectors.topology_domains import (
    nodes_of_groups,
    topologies_of_groups,
    topology_tree,
)
from tenants.selectors import get_visible_tenant_ids


class TopologyDomainSerializer(serializers.Serializer):
    level = serializers.CharField(help_text="The level's node-label key.")
    value = serializers.CharField(help_text="The label value naming the domain.")
    path = serializers.ListField(
        child=serializers.CharField(), help_text="Values from the widest level down to it."
    )
    nodes = serializers.IntegerField()
    devices = serializers.IntegerField(help_text="Present devices of its nodes.")
    used_devices = serializers.IntegerField(help_text="Devices booked by a live placement.")
    free_devices = serializers.IntegerField(
        help_text="Healthy, uncordoned devices no live placement books."
    )


class TopologyListItemSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    levels = serializers.ListField(
        child=serializers.CharField(), help_text="Node-label keys, widest level first."
    )
    resource_groups = serializers.ListField(
        child=serializers.CharField(), help_text="The caller's groups placed under it."
    )
    outside_nodes = serializers.IntegerField(
        help_text="Nodes of those groups missing a level's label (outside every domain)."
    )
    domains = TopologyDomainSerializer(many=True, help_text="Depth first, by value.")


class TopologyListView(APIView):
    """Network topologies of the caller's resource groups and their domains."""

    @extend_schema(responses={200: TopologyListItemSerializer(many=True)})
    def get(self, request):
        admin = request.user.is_superuser
        groups = groups_for_tenants(None if admin else get_visible_tenant_ids(request.user))
        body = []
        for topology, its_groups in topologies_of_groups(groups):
            tree = topology_tree(topology, nodes_of_groups(its_groups))
            body.append(
                {
                    "id": topology.pk,
                    "name": topology.name,
                    "levels": list(topology.levels),
                    "resource_groups": [g.name for g in its_groups],
                    "outside_nodes": tree.outside_nodes,
                    "domains": tree.domains(),
                }
            )
        return Response(TopologyListItemSerializer(body, many=True).data)
