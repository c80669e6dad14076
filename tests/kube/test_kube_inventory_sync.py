"""Inventory sync from realistic Node and ResourceSlice JSON served by the HTTP fake API
server: NVIDIA (JSON registration), Ascend (stale handshake), Cambricon (capacity only),
Hygon (legacy format, NotReady node), HAMi's DRA driver; errors, conflicts, history."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from scheduling.models import Cluster, Device, DeviceModel, Node
from scheduling.services.inventory import sync_cluster_inventory
from tests.kube.kube_helpers import make_kube_cluster, node_json, nvidia_node

pytestmark = pytest.mark.django_db

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)

ASCEND = node_json(
    "npu-1",
    {
        "hami.io/node-register-Ascend910B3": json.dumps(
            [
                {
                    "id": "Ascend910B3-0",
                    "index": 0,
                    "count": 4,
                    "devmem": 65536,
                    "devcore": 20,
                    "type": "Ascend910B3",
                    "health": True,
                    "custominfo": {"NetworkID": 0},
                },
                {
                    "id": "Ascend910B3-1",
                    "index": 1,
                    "count": 4,
                    "devmem": 65536,
                    "devcore": 20,
                    "type": "Ascend910B3",
                    "health": True,
                    "custominfo": {"NetworkID": 0},
                },
            ]
        ),
        # HAMi asked the device plugin 120 s ago and got no answer, allocatable 0: unhealthy
        "hami.io/node-handshake-Ascend910B3": "Requesting_2025-06-01 11:58:00",
    },
    {"cpu": "192", "memory": "1024Gi", "huawei.com/Ascend910B3": "0"},
)

CAMBRICON = node_json(
    "mlu-1",
    {},
    {
        "cpu": "32",
        "memory": "256Gi",
        "cambricon.com/mlu.smlu.vcore": "200",
        "cambricon.com/mlu.smlu.vmemory": "384",
    },
)

HYGON = node_json(
    "dcu-1",
    {
        "hami.io/node-dcu-register": "DCU-0,4,65520,100,Z100L,0,true,0,hami-core:"
        "DCU-1,4,65520,100,Z100L,0,false,1,hami-core:"
    },
    {"cpu": "64", "memory": "256Gi", "hygon.com/dcunum": "8"},
    ready=False,
)

DRA_NODE = node_json("gpu-2", {}, {"cpu": "96", "memory": "768Gi"})

HAMI_SLICE = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceSlice",
    "metadata": {"name": "gpu-2-hami-core-gpu.project-hami.io-x7k2"},
    "spec": {
        "driver": "hami-core-gpu.project-hami.io",
        "nodeName": "gpu-2",
        "pool": {"name": "gpu-2", "generation": 1, "resourceSliceCount": 1},
        "devices": [
            {
                "name": "hami-gpu-0",
                "allowMultipleAllocations": True,
                "attributes": {
                    "uuid": {"string": "GPU-dddd"},
                    "minor": {"int": 0},
                    "productName": {"string": "NVIDIA-H100-80GB-HBM3"},
                },
                "capacity": {"cores": {"value": "100"}, "memory": {"value": "80Gi"}},
            },
            {
                "name": "hami-gpu-1",
                "allowMultipleAllocations": True,
                "attributes": {
                    "uuid": {"string": "GPU-eeee"},
                    "minor": {"int": 1},
                    "productName": {"string": "NVIDIA-H100-80GB-HBM3"},
                },
                "capacity": {"cores": {"value": "100"}, "memory": {"value": "80Gi"}},
                "taints": [{"key": "hami.io/unhealthy", "effect": "NoSchedule"}],
            },
        ],
    },
}


def _devices(cluster):
    return [
        (
            d.uuid,
            d.node.name,
            d.model.name,
            d.model.vendor,
            d.index,
            d.memory_mib,
            d.cores_percent,
            d.split_count,
            d.healthy,
            d.cordoned,
            d.source,
            d.removed_at is None,
        )
        for d in Device.objects.filter(node__cluster=cluster)
        .select_related("node", "model")
        .order_by("node__name", "index", "uuid")
    ]


def test_four_vendors_and_a_resource_slice(fake, tmp_path):
    cluster = make_kube_cluster(fake, tmp_path)
    gpu = nvidia_node("gpu-1")
    gpu["metadata"]["annotations"]["hami.io/device-cordon"] = "GPU-bbbb"
    for obj in (gpu, ASCEND, CAMBRICON, HYGON, DRA_NODE, HAMI_SLICE):
        fake.put(obj)
    report = sync_cluster_inventory(cluster.pk, now=NOW)
    assert report.nodes == ["dcu-1", "gpu-1", "gpu-2", "mlu-1", "npu-1"]
    assert report.errors == []
    assert _devices(cluster) == [
        # Hygon legacy format: second card reports health false; index-based ids with no
        # serial source are keyed by node (issue 13) and flagged with a warning
        ("dcu-1/DCU-0", "dcu-1", "Z100L", "DCU", 0, 65520, 100, 4, True, False, "hami", True),
        ("dcu-1/DCU-1", "dcu-1", "Z100L", "DCU", 1, 65520, 100, 4, False, False, "hami", True),
        (
            "GPU-aaaa",
            "gpu-1",
            "NVIDIA-A100-SXM4-80GB",
            "NVIDIA",
            0,
            81920,
            100,
            10,
            True,
            False,
            "hami",
            True,
        ),
        (
            "GPU-bbbb",
            "gpu-1",
            "NVIDIA-A100-SXM4-80GB",
            "NVIDIA",
            1,
            81920,
            100,
            10,
            True,
            True,
            "hami",
            True,
        ),
        # DRA: 80Gi = 81920 MiB, allowMultipleAllocations -> 100 slots; tainted -> unhealthy
        (
            "GPU-dddd",
            "gpu-2",
            "NVIDIA-H100-80GB-HBM3",
            "NVIDIA",
            0,
            81920,
            100,
            100,
            True,
            False,
            "dra",
            True,
        ),
        (
            "GPU-eeee",
            "gpu-2",
            "NVIDIA-H100-80GB-HBM3",
            "NVIDIA",
            1,
            81920,
            100,
            100,
            False,
            False,
            "dra",
            True,
        ),
        # Cambricon: ceil(200 / 100) = 2 cards of 384 * 256 * 100 / 200 = 49152 MiB, split
        # 100 (the chart's cambricon splitCount)
        (
            "mlu-1-cambricon-mlu-0",
            "mlu-1",
            "MLU",
            "MLU",
            0,
            49152,
            100,
            100,
            True,
            False,
            "hami",
            True,
        ),
        (
            "mlu-1-cambricon-mlu-1",
            "mlu-1",
            "MLU",
            "MLU",
            1,
            49152,
            100,
            100,
            True,
            False,
            "hami",
            True,
        ),
        # Ascend: stale handshake (120 s > 60 s) with allocatable 0 -> unhealthy
        (
            "Ascend910B3-0",
            "npu-1",
            "Ascend910B3",
            "Ascend",
            0,
            65536,
            20,
            4,
            False,
            False,
            "hami",
            True,
        ),
        (
            "Ascend910B3-1",
            "npu-1",
            "Ascend910B3",
            "Ascend",
            1,
            65536,
            20,
            4,
            False,
            False,
            "hami",
            True,
        ),
    ]
    assert [w.split(";")[0] for w in report.warnings] == [
        "Node dcu-1: DCU-0 is an index-based id and no serial source names card 0",
        "Node dcu-1: DCU-1 is an index-based id and no serial source names card 1",
    ]
    assert Device.objects.get(uuid="dcu-1/DCU-0").registered_id == "DCU-0"
    assert (
        Device.objects.get(uuid="GPU-dddd").dra_device
        == "hami-core-gpu.project-hami.io/gpu-2/hami-gpu-0"
    )
    nodes = {n.name: n for n in Node.objects.filter(cluster=cluster)}
    assert (nodes["gpu-1"].cpu_milli, nodes["gpu-1"].host_memory_mib) == (64000, 524288)
    assert nodes["dcu-1"].schedulable is False
    assert nodes["dcu-1"].error == "node not Ready (KubeletNotReady: PLEG is not healthy)"
    assert nodes["gpu-1"].labels == {"kubernetes.io/hostname": "gpu-1"}
    assert DeviceModel.objects.get(name="Z100L").slicing_mode == "unit"
    assert DeviceModel.objects.get(name="NVIDIA-A100-SXM4-80GB").slicing_mode == "fractional"
    cluster.refresh_from_db()
    assert cluster.inventory_synced_at == NOW
    # a second sync with nothing changed writes nothing
    again = sync_cluster_inventory(cluster.pk, now=NOW)
    assert (again.devices_added, again.devices_updated, again.devices_removed) == ([], [], [])


def test_fresh_handshake_keeps_ascend_healthy(fake, tmp_path):
    cluster = make_kube_cluster(fake, tmp_path)
    fresh = json.loads(json.dumps(ASCEND))
    fresh["metadata"]["annotations"]["hami.io/node-handshake-Ascend910B3"] = (
        "Requesting_2025-06-01 11:59:30"
    )
    fake.put(fresh)
    sync_cluster_inventory(cluster.pk, now=NOW)
    assert set(Device.objects.values_list("healthy", flat=True)) == {True}


def test_a_broken_node_keeps_its_devices_and_others_keep_working(fake, tmp_path):
    cluster = make_kube_cluster(fake, tmp_path)
    fake.put(nvidia_node("gpu-1"))
    fake.put(HYGON)
    sync_cluster_inventory(cluster.pk, now=NOW)
    broken = nvidia_node("gpu-1")
    broken["metadata"]["annotations"]["hami.io/node-nvidia-register"] = '[{"id": "GPU-aaaa",'
    fake.put(broken)
    fake.put(json.loads(json.dumps(HYGON).replace('"False"', '"True"')))
    report = sync_cluster_inventory(cluster.pk, now=NOW + timedelta(minutes=1))
    gpu = Node.objects.get(name="gpu-1")
    assert gpu.error.startswith("hami.io/node-nvidia-register")
    assert report.errors == [f"Node gpu-1: {gpu.error}"]
    assert report.devices_removed == []
    assert Device.objects.filter(node=gpu, removed_at__isnull=True).count() == 2
    dcu = Node.objects.get(name="dcu-1")
    assert (dcu.error, dcu.schedulable) == ("", True)
    cluster.refresh_from_db()
    assert cluster.inventory_errors == report.errors


def test_duplicate_uuid_is_reported_not_merged(fake, tmp_path):
    cluster = make_kube_cluster(fake, tmp_path)
    fake.put(nvidia_node("gpu-1", ("GPU-aaaa", "GPU-bbbb")))
    sync_cluster_inventory(cluster.pk, now=NOW)
    fake.put(nvidia_node("gpu-3", ("GPU-bbbb", "GPU-cccc")))
    report = sync_cluster_inventory(cluster.pk, now=NOW)
    message = "device GPU-bbbb registered on nodes gpu-1, gpu-3; not merged, kept out of placement"
    assert report.errors == [message]
    dup = Device.objects.get(uuid="GPU-bbbb")
    assert (dup.node.name, dup.healthy, dup.error) == ("gpu-1", False, message)
    assert Device.objects.get(uuid="GPU-cccc").node.name == "gpu-3"
    # the same uuid already live in another cluster is not taken over either
    other = make_kube_cluster(fake, tmp_path, name="k2")
    report2 = sync_cluster_inventory(other.pk, now=NOW)
    assert (
        "device GPU-aaaa on node gpu-1 is already registered in cluster k1 (node gpu-1); "
        "not merged" in report2.errors
    )
    assert Device.objects.get(uuid="GPU-aaaa").node.cluster == cluster


def test_removed_devices_and_nodes_are_kept_in_history(fake, tmp_path):
    cluster = make_kube_cluster(fake, tmp_path)
    fake.put(nvidia_node("gpu-1", ("GPU-aaaa", "GPU-bbbb")))
    fake.put(nvidia_node("gpu-3", ("GPU-cccc",)))
    sync_cluster_inventory(cluster.pk, now=NOW)
    later = NOW + timedelta(minutes=5)
    # GPU-bbbb pulled from gpu-1, GPU-cccc moved to gpu-1, node gpu-3 deleted
    fake.put(nvidia_node("gpu-1", ("GPU-aaaa", "GPU-cccc")))
    with fake._lock:  # delete the Node object as kubectl delete node would
        fake._store["nodes"].pop(("", "gpu-3"))
    report = sync_cluster_inventory(cluster.pk, now=later)
    assert report.devices_removed == ["GPU-bbbb"]
    assert report.nodes_removed == ["gpu-3"]
    gone = Device.objects.get(uuid="GPU-bbbb")
    assert gone.removed_at == later and gone.node.name == "gpu-1"
    moved = Device.objects.get(uuid="GPU-cccc")
    assert (moved.node.name, moved.index, moved.removed_at) == ("gpu-1", 1, None)
    assert Node.objects.get(name="gpu-3").removed_at == later
    assert Device.objects.count() == 3
    # the device comes back: same row, history kept
    fake.put(nvidia_node("gpu-1", ("GPU-aaaa", "GPU-cccc", "GPU-bbbb")))
    sync_cluster_inventory(cluster.pk, now=later + timedelta(minutes=1))
    assert Device.objects.get(uuid="GPU-bbbb").removed_at is None
    assert Device.objects.get(uuid="GPU-bbbb").pk == gone.pk


def test_sync_refuses_a_simulated_cluster_and_list_failure_changes_nothing(fake, tmp_path):
    sim = Cluster.objects.create(name="sim")
    with pytest.raises(ValueError):
        sync_cluster_inventory(sim.pk)
    cluster = make_kube_cluster(fake, tmp_path)
    fake.put(nvidia_node("gpu-1"))
    sync_cluster_inventory(cluster.pk, now=NOW)
    fake.inject_faults(403, count=1, path_contains="/nodes")
    from scheduling.kube.errors import Permanent

    with pytest.raises(Permanent):
        sync_cluster_inventory(cluster.pk, now=NOW + timedelta(minutes=1))
    assert Device.objects.filter(removed_at__isnull=True).count() == 2
