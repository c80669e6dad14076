"""The demo cluster and the trace import carry a network topology (issue 31): node labels
for zone, block, rack and hostname, and a Topology attached to their resource groups."""

import pytest
from django.core.management import call_command

from scheduling.models import Node
from scheduling.services.demo import seed_demo
from tenants.models import ResourceGroup, Topology
from tests.topology_world import BLOCK, HOST, RACK, ZONE

pytestmark = pytest.mark.django_db


def test_demo_seeds_rack_labels_and_its_topology():
    seed_demo("pw")
    racks = {
        n.name: (n.labels[ZONE], n.labels[BLOCK], n.labels[RACK], n.labels[HOST])
        for n in Node.objects.filter(cluster__name="demo")
    }
    assert racks == {
        "gpu-a100-0": ("zone-a", "block-0", "rack-0", "gpu-a100-0"),
        "gpu-a100-1": ("zone-a", "block-0", "rack-0", "gpu-a100-1"),
        "gpu-h20-0": ("zone-a", "block-0", "rack-1", "gpu-h20-0"),
        "npu-910b3-0": ("zone-a", "block-1", "rack-2", "npu-910b3-0"),
        "mlu-370-0": ("zone-a", "block-1", "rack-3", "mlu-370-0"),
        "dcu-k100-0": ("zone-a", "block-1", "rack-3", "dcu-k100-0"),
    }
    topology = Topology.objects.get(name="demo-dc")
    assert topology.levels == [ZONE, BLOCK, RACK, HOST]
    groups = dict(ResourceGroup.objects.values_list("name", "topology__name"))
    assert groups == {
        "nvidia-shared": "demo-dc",
        "ascend-exclusive": "demo-dc",
        "domestic-elastic": "demo-dc",
    }


def test_trace_import_lays_nodes_out_in_racks_and_blocks(tmp_path):
    nodes = tmp_path / "nodes.csv"
    rows = "".join(f"n{i},64000,262144,1,T4\n" for i in range(7))
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\n" + rows)
    pods = tmp_path / "pods.csv"
    pods.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,1,500\n")
    call_command(
        "import_trace",
        "--nodes",
        nodes,
        "--pods",
        pods,
        "--cluster",
        "tr",
        "--no-place",
        "--nodes-per-rack",
        "2",
        "--racks-per-block",
        "2",
    )
    layout = [
        (n.name, n.labels[ZONE], n.labels[BLOCK], n.labels[RACK], n.labels[HOST])
        for n in Node.objects.filter(cluster__name="tr").order_by("name")
    ]
    assert layout == [
        ("n0", "zone-0", "block-0", "rack-0", "n0"),
        ("n1", "zone-0", "block-0", "rack-0", "n1"),
        ("n2", "zone-0", "block-0", "rack-1", "n2"),
        ("n3", "zone-0", "block-0", "rack-1", "n3"),
        ("n4", "zone-0", "block-1", "rack-2", "n4"),
        ("n5", "zone-0", "block-1", "rack-2", "n5"),
        ("n6", "zone-0", "block-1", "rack-3", "n6"),
    ]
    group = ResourceGroup.objects.get(name="tr")
    assert (group.topology.name, group.topology.levels) == ("tr-racks", [ZONE, BLOCK, RACK, HOST])
