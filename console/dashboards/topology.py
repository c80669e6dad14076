"""The topology page of a cluster (issue 31): zone -> block -> rack -> node with free and
used devices per domain and the gangs (jobs) in each.

Scoped like the other pages: a member sees the topologies of the resource groups where one
of their tenants has a quota or a queue (``scheduling.selectors.fragmentation.groups_for_tenants``
over ``get_visible_tenant_ids``), counted over those groups' nodes in this cluster; jobs of
other tenants are counted, never named (``card_map.OTHER_TENANT``). Platform admins see
every group and every job.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, render

from scheduling.models import Cluster
from scheduling.placement.topology_index import level_word
from scheduling.selectors.card_map import OTHER_TENANT
from scheduling.selectors.fragmentation import groups_for_tenants
from scheduling.selectors.topology_domains import (
    Domain,
    nodes_of_groups,
    topologies_of_groups,
    topology_tree,
)
from tenants.selectors import get_visible_tenant_ids


def _row(domain: Domain, scope: set[int] | None) -> dict:
    """A table row of one domain: its counts, the viewer's gangs (name, id, pods) and the
    pods of other tenants' jobs."""
    own = [g for g in domain.gangs.values() if scope is None or g.tenant_id in scope]
    shown = {g.job_id for g in own}
    others = sum(g.pods for g in domain.gangs.values() if g.job_id not in shown)
    used_pct = 100.0 * domain.used_devices / domain.devices if domain.devices else 0.0
    return {
        "domain": domain,
        "level": level_word(domain.level),
        "indent_em": 1.5 * domain.depth,
        "used_pct": used_pct,
        "gangs": sorted(own, key=lambda g: (g.name, g.job_id)),
        "other_pods": others,
    }


@login_required
def cluster_topology(request, pk: int):
    """Topology page of cluster ``pk`` (see the module docstring)."""
    cluster = get_object_or_404(Cluster, pk=pk)
    scope = get_visible_tenant_ids(request.user)
    groups = groups_for_tenants(scope)
    trees = []
    for topology, its_groups in topologies_of_groups(groups):
        tree = topology_tree(topology, nodes_of_groups(its_groups).filter(cluster=cluster))
        if tree.roots or tree.outside_nodes:
            trees.append(
                {
                    "topology": topology,
                    "groups": [g.name for g in its_groups],
                    "outside_nodes": tree.outside_nodes,
                    "rows": [_row(d, scope) for d in tree.domains()],
                }
            )
    return render(
        request,
        "dashboards/cluster_topology.html",
        {"cluster": cluster, "trees": trees, "other_tenant": OTHER_TENANT},
    )
