"""A racked cluster for the topology tests (issue 31): explicit values, no randomness.

Cluster ``tc``: ``racks`` racks of ``per_rack`` nodes ``tc-r<r>-n<i>``, each node ``gpus``
whole A100s, labelled with the Kueue sample levels (zone ``zone-a``, block ``block-<r // 2>``,
rack ``rack-<r>``, hostname = the node name). Topology ``dc`` with those levels attached to
group ``tg``; tenants ``team-a`` / ``team-b`` with ample quota and their members ``alice`` /
``bob``.
"""

from __future__ import annotations

from scheduling.models import Cluster, Device, DeviceModel, Node, Queue
from scheduling.placement.topology_names import RACK_LAYOUT_LEVELS
from tenants.models import Topology
from tests.builders import A100, make_group, make_tenant, make_user

ZONE, BLOCK, RACK, HOST = RACK_LAYOUT_LEVELS


def make_racked_cluster(name="tc", racks=2, per_rack=2, gpus=4) -> Cluster:
    cluster = Cluster.objects.create(name=name, backend="simulated")
    model, _ = DeviceModel.objects.get_or_create(
        name=A100, defaults={"vendor": "NVIDIA", "config": {"memory_mib": 81920}}
    )
    for r in range(racks):
        for i in range(per_rack):
            node_name = f"{name}-r{r}-n{i}"
            node = Node.objects.create(
                cluster=cluster,
                name=node_name,
                cpu_milli=64000,
                host_memory_mib=262144,
                labels={
                    ZONE: "zone-a",
                    BLOCK: f"block-{r // 2}",
                    RACK: f"rack-{r}",
                    HOST: node_name,
                },
            )
            Device.objects.bulk_create(
                Device(
                    uuid=f"GPU-{node_name}-{j}", node=node, model=model, index=j, memory_mib=81920
                )
                for j in range(gpus)
            )
    return cluster


def topology_world(racks=2, per_rack=2, gpus=4) -> dict:
    """The cluster, topology ``dc`` on group ``tg``, and a plain group ``plain`` (no
    topology) with a queue of team-a."""
    make_racked_cluster(racks=racks, per_rack=per_rack, gpus=gpus)
    topology = Topology.objects.create(name="dc", levels=list(RACK_LAYOUT_LEVELS))
    group = make_group("tg")
    group.topology = topology
    group.save()
    team_a, queue_a = make_tenant("team-a", group, devices_milli=10**6)
    team_b, queue_b = make_tenant("team-b", group, devices_milli=10**6)
    plain = make_group("plain")
    plain_queue = Queue.objects.create(tenant=team_a, resource_group=plain, name="plain")
    return {
        "topology": topology,
        "group": group,
        "plain_queue": plain_queue,
        "team_a": team_a,
        "team_b": team_b,
        "queue_a": queue_a,
        "queue_b": queue_b,
        "alice": make_user("alice", team_a, "member"),
        "bob": make_user("bob", team_b, "member"),
    }
