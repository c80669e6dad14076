"""A topology-aware training gang on a Kubernetes cluster, end to end (issue 31): submitted
through the REST API with ``topology: {required: rack}``, admitted by a cycle, submitted to
the HTTP fake API server. Each Pod is pinned to the node its placement chose (node
affinity on ``metadata.name``), ``RANK`` follows the Decision's pod order (neighbouring
ranks share a node), and every Pod passes kubernetes-validate."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from scheduling.choices import JobState
from scheduling.models import Placement
from scheduling.services.cluster_submission import submit_to_cluster
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.inventory import sync_cluster_inventory
from tenants.models import Topology
from tests.builders import make_group, make_tenant, make_user
from tests.kube.kube_helpers import make_kube_cluster, nvidia_node
from tests.scheduling.test_job_kinds_kube import _env, _validate_all
from tests.topology_world import BLOCK, HOST, RACK, ZONE

pytestmark = pytest.mark.django_db

A100 = "NVIDIA-A100-SXM4-80GB"
RACKS = {"gpu-0": "rack-0", "gpu-1": "rack-0", "gpu-2": "rack-1", "gpu-3": "rack-1"}


@pytest.fixture
def world(fake, tmp_path, settings):
    settings.KUBE_RETRY_BASE_DELAY_S = 0.0
    cluster = make_kube_cluster(fake, tmp_path)
    for name, rack in RACKS.items():
        labels = {ZONE: "zone-a", BLOCK: "block-0", RACK: rack}
        fake.put(nvidia_node(name, uuids=(f"GPU-{name}-a", f"GPU-{name}-b"), labels=labels))
    sync_cluster_inventory(cluster.pk)
    group = make_group("g1", models=(A100,))
    group.topology = Topology.objects.create(name="dc", levels=[ZONE, BLOCK, RACK, HOST])
    group.save()
    team_a, queue = make_tenant("team-a", group, devices_milli=100_000)
    client = APIClient()
    client.force_authenticate(make_user("alice", team_a))
    return group, queue, client


def _job(client, queue, name, workers, topology=None) -> dict:
    body = {
        "queue": queue.pk,
        "name": name,
        "kind": "training",
        "workers": workers,
        "port": 23456,
        "restart_policy": "OnFailure",
        "containers": [
            {"name": "trainer", "image": "busybox:1.37", "device_count": 1, "cores_percent": 100}
        ],
    }
    if topology:
        body["topology"] = topology
    resp = client.post("/api/jobs/", body, format="json")
    assert resp.status_code == 201, resp.json()
    return resp.json()


def test_a_rack_gang_is_pinned_to_its_nodes_with_ranks_in_domain_order(fake, world):
    group, queue, client = world
    # one whole GPU taken on gpu-0 (rack-0 keeps 3 free): a 4-pod gang needs a whole rack
    filler = _job(client, queue, "filler", 1)
    assert run_admission_cycle(group.pk).admitted == [filler["id"]]
    filler_node = Placement.objects.get(job_id=filler["id"]).node.name
    gang = _job(client, queue, "ring", 4, {"required": "rack"})
    assert run_admission_cycle(group.pk).admitted == [gang["id"]]
    assert submit_to_cluster(gang["id"]) == JobState.ADMITTED
    placements = list(Placement.objects.filter(job_id=gang["id"]).order_by("pod_index"))
    other_rack = "rack-1" if RACKS[filler_node] == "rack-0" else "rack-0"
    assert [p.domains[:3] for p in placements] == [["zone-a", "block-0", other_rack]] * 4
    assert [p.domains[3] for p in placements] == [p.node.name for p in placements]
    nodes = [p.node.name for p in placements]
    assert nodes[0] == nodes[1] and nodes[2] == nodes[3] and nodes[0] != nodes[2]
    pods = {p["metadata"]["name"]: p for p in fake.list("pods")}
    for placement in placements:
        pod = pods[placement.backend_ref.rpartition("/")[2]]
        terms = pod["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]["nodeSelectorTerms"]
        assert terms == [
            {
                "matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [placement.node.name]}
                ]
            }
        ]
        (trainer,) = pod["spec"]["containers"]
        assert _env(trainer)["RANK"] == str(placement.pod_index)
    _validate_all(fake)


def test_a_rack_gang_larger_than_any_rack_waits_with_the_topology_reason(fake, world):
    group, queue, client = world
    gang = client.post(
        "/api/jobs/",
        {
            "queue": queue.pk,
            "name": "too-wide",
            "pod_count": 5,
            "containers": [{"device_count": 1, "image": "busybox:1.37"}],
            "topology": {"required": "rack"},
        },
        format="json",
    )
    assert gang.status_code == 400
    assert gang.json()["error"]["message"] == (
        "never fits group g1 even when empty: TopologyPlacementFailed: needs 5 pods in one "
        "rack; the best rack has 4 free"
    )
    assert fake.list("pods") == []
