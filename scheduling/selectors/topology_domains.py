"""The domains of a network topology over a set of nodes, with their free and used devices
and the jobs (gangs) in each: ``GET /api/topologies/`` and the cluster topology page
(issue 31).

A node belongs to the domain of each level whose label it carries, widest first (zone ->
block -> rack -> node); a node missing a level's label is outside every domain of that
level and the levels below (Kueue TAS), and counted in :attr:`TopologyTree.outside_nodes`.
Device counts are whole devices: ``used`` = booked by a live placement (any share),
``free`` = healthy, uncordoned and not booked. Reads: three queries per tree, whatever
the number of nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Exists, OuterRef, Q, QuerySet

from scheduling.choices import BOOKED_PLACEMENT_STATES
from scheduling.models import Device, Node, Placement, PlacementDevice
from scheduling.selectors.snapshot import group_nodes, group_topology
from tenants.models import ResourceGroup, Topology

__all__ = ["Domain", "GangRef", "TopologyTree", "topology_tree", "topologies_of_groups"]


@dataclass
class GangRef:
    """A job with pods in a domain: id, name, tenant id and name, pods there."""

    job_id: int
    name: str
    tenant_id: int
    tenant: str
    pods: int = 0


@dataclass
class Domain:
    """One domain: ``level`` (label key), ``value`` (label value; the node name at the node
    level), ``path`` (values from the widest level down to it), counts (nodes, devices,
    used / free devices), ``gangs`` ``{job id: GangRef}`` (pods counted in this domain),
    ``children`` (next level, by value), ``node_id`` (node level only)."""

    level: str
    value: str
    path: tuple[str, ...]
    nodes: int = 0
    devices: int = 0
    used_devices: int = 0
    free_devices: int = 0
    gangs: dict[int, GangRef] = field(default_factory=dict)
    children: dict[str, Domain] = field(default_factory=dict)
    node_id: int | None = None

    @property
    def depth(self) -> int:
        return len(self.path) - 1

    def walk(self):
        """This domain, then its children's walks, in value order (depth first)."""
        yield self
        for value in sorted(self.children):
            yield from self.children[value].walk()


@dataclass
class TopologyTree:
    """A topology's domains over some nodes: ``roots`` (widest level, by value) and the
    number of nodes ``outside_nodes`` that miss a level's label."""

    topology: Topology
    roots: dict[str, Domain] = field(default_factory=dict)
    outside_nodes: int = 0

    def domains(self) -> list[Domain]:
        """Every domain, depth first (zone, its blocks, each block's racks, ...)."""
        return [d for value in sorted(self.roots) for d in self.roots[value].walk()]


def topologies_of_groups(groups: list[ResourceGroup]) -> list[tuple[Topology, list]]:
    """``[(topology, its groups among groups)]`` by topology name: the topology each group
    is placed under (:func:`~scheduling.selectors.topology.group_topology`); groups without
    one are left out."""
    found: dict[int, tuple[Topology, list]] = {}
    for group in groups:
        topology = group_topology(group)
        if topology is not None:
            found.setdefault(topology.pk, (topology, []))[1].append(group)
    return sorted(found.values(), key=lambda pair: pair[0].name)


def nodes_of_groups(groups: list[ResourceGroup]) -> QuerySet[Node]:
    """The present nodes of any of ``groups`` (:func:`group_nodes` of each, one query)."""
    condition = Q(pk__in=[])
    for group in groups:
        condition |= Q(pk__in=group_nodes(group).values("pk"))
    return Node.objects.filter(condition, removed_at__isnull=True)


def _device_counts(node_ids: list[int]) -> dict[int, tuple[int, int, int]]:
    """``{node id: (devices, used, free)}`` of the present devices of ``node_ids``."""
    booked = PlacementDevice.objects.filter(
        device=OuterRef("pk"), placement__state__in=BOOKED_PLACEMENT_STATES
    )
    counts: dict[int, list[int]] = {}
    rows = (
        Device.objects.filter(node_id__in=node_ids, removed_at__isnull=True)
        .annotate(booked=Exists(booked))
        .values_list("node_id", "booked", "healthy", "cordoned", "console_unhealthy")
    )
    for node_id, used, healthy, cordoned, console_unhealthy in rows:
        c = counts.setdefault(node_id, [0, 0, 0])
        c[0] += 1
        c[1] += int(used)
        c[2] += int(not used and healthy and not cordoned and not console_unhealthy)
    return {k: (v[0], v[1], v[2]) for k, v in counts.items()}


def _gangs(node_ids: list[int]) -> dict[int, list[GangRef]]:
    """``{node id: [GangRef with its pods on that node]}`` of the booked placements."""
    out: dict[int, dict[int, GangRef]] = {}
    rows = Placement.objects.filter(
        node_id__in=node_ids, state__in=BOOKED_PLACEMENT_STATES
    ).values_list("node_id", "job_id", "job__name", "job__tenant_id", "job__tenant__name")
    for node_id, job_id, name, tenant_id, tenant in rows:
        ref = out.setdefault(node_id, {}).setdefault(
            job_id, GangRef(job_id, name, tenant_id, tenant)
        )
        ref.pods += 1
    return {k: list(v.values()) for k, v in out.items()}


def topology_tree(topology: Topology, nodes: QuerySet[Node]) -> TopologyTree:
    """The domains of ``topology`` over ``nodes`` (see the module docstring)."""
    tree = TopologyTree(topology)
    rows = list(nodes.order_by("name").values_list("pk", "name", "labels"))
    ids = [pk for pk, _, _ in rows]
    counts = _device_counts(ids)
    gangs = _gangs(ids)
    levels = list(topology.levels)
    for pk, _name, labels in rows:
        values = [str((labels or {}).get(level, "")) for level in levels]
        if not all(values):
            tree.outside_nodes += 1
            continue
        devices, used, free = counts.get(pk, (0, 0, 0))
        level_domains, path = tree.roots, ()
        for level, value in zip(levels, values, strict=True):
            path = (*path, value)
            domain = level_domains.setdefault(value, Domain(level, value, path))
            domain.nodes += 1
            domain.devices += devices
            domain.used_devices += used
            domain.free_devices += free
            for ref in gangs.get(pk, ()):
                held = domain.gangs.setdefault(
                    ref.job_id, GangRef(ref.job_id, ref.name, ref.tenant_id, ref.tenant)
                )
                held.pods += ref.pods
            level_domains = domain.children
        domain.node_id = pk if domain.nodes == 1 else None
    return tree
