"""Issue 15, first bullet: one malformed node or ResourceSlice touches only itself.

Every input below made the whole inventory sync raise (TypeError / RecursionError /
IntegrityError / DataError) before, so nothing of the cluster was written; a node advertising
``enflame.com/gcu: 2000000`` cost seconds and hundreds of MB. Now each bad object is flagged
with its error and every good node is written (on PostgreSQL, through the official client and
the HTTP fake API server).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from scheduling.models import Device, Node
from scheduling.services.inventory import apply_inventory, sync_cluster_inventory
from tests.kube.kube_helpers import make_kube_cluster, node_json, nvidia_node

pytestmark = pytest.mark.django_db

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)
REG = "hami.io/node-nvidia-register"


def _gpu(uuid: str, **over) -> dict:
    dev = {
        "id": uuid,
        "index": 0,
        "count": 10,
        "devmem": 81920,
        "devcore": 100,
        "type": "NVIDIA A100-SXM4-80GB",
        "numa": 0,
        "mode": "hami-core",
        "health": True,
    }
    dev.update(over)
    return dev


def _bad_node(name: str, registration: str, capacity: dict | None = None) -> dict:
    return node_json(name, {REG: registration}, {"cpu": "8", "memory": "64Gi", **(capacity or {})})


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


BAD_NODES = {
    "mig-profiles-int": (json.dumps([_gpu("GPU-m1", mode="mig", migProfiles=5)]), "migProfiles"),
    "placements-int": (
        json.dumps(
            [
                _gpu(
                    "GPU-p1",
                    mode="mig",
                    migProfiles=[
                        {
                            "name": "1g.10gb",
                            "memoryMB": 9856,
                            "core": 14,
                            "sliceCount": 1,
                            "placements": 7,
                        }
                    ],
                )
            ]
        ),
        "placements",
    ),
    "deep-json": ('[{"id": "GPU-d1", "custominfo": ' + _deep(5000) + "}]", "deeper than"),
    "negative-devmem": (json.dumps([_gpu("GPU-n1", devmem=-1)]), "devmem"),
    "negative-count": (json.dumps([_gpu("GPU-n2", count=-4)]), "count"),
    "huge-count": (
        '[{"id": "GPU-h1", "count": 1000000000000000000000000000000, '
        '"devmem": 81920, "devcore": 100, "type": "NVIDIA A100", "health": true}]',
        "count",
    ),
}


def test_each_bad_registration_flags_only_its_node(fake, tmp_path):
    cluster = make_kube_cluster(fake, tmp_path)
    fake.put(nvidia_node("gpu-1", ("GPU-aaaa", "GPU-bbbb")))
    for name, (value, _field) in BAD_NODES.items():
        fake.put(_bad_node(name, value))
    fake.put(
        node_json("gcu-flood", {}, {"cpu": "8", "memory": "64Gi", "enflame.com/gcu": "2000000"})
    )
    report = sync_cluster_inventory(cluster.pk, now=NOW)
    nodes = {n.name: n for n in Node.objects.filter(cluster=cluster)}
    assert set(nodes) == {"gpu-1", "gcu-flood", *BAD_NODES}
    assert nodes["gpu-1"].error == ""
    assert sorted(Device.objects.filter(node__name="gpu-1").values_list("uuid", flat=True)) == [
        "GPU-aaaa",
        "GPU-bbbb",
    ]
    for name, (_value, field) in BAD_NODES.items():
        assert field in nodes[name].error, (name, nodes[name].error)
        assert nodes[name].error.startswith(REG), nodes[name].error
        assert not Device.objects.filter(node=nodes[name]).exists()
    # the flood is refused before a single device object is built
    assert nodes["gcu-flood"].error == (
        "status.capacity.enflame.com/gcu: 2000000 devices exceed the bound of 256 per node "
        "(setting INVENTORY_MAX_DEVICES_PER_NODE)"
    )
    assert len(report.errors) == len(BAD_NODES) + 1
    assert all(e.startswith("Node ") for e in report.errors)
    cluster.refresh_from_db()
    assert cluster.inventory_errors == report.errors


def test_a_bad_node_keeps_its_last_good_devices(fake, tmp_path):
    cluster = make_kube_cluster(fake, tmp_path)
    fake.put(_bad_node("gpu-9", json.dumps([_gpu("GPU-9a")])))
    sync_cluster_inventory(cluster.pk, now=NOW)
    fake.put(_bad_node("gpu-9", json.dumps([_gpu("GPU-9a", devmem=-5)])))
    report = sync_cluster_inventory(cluster.pk, now=NOW)
    dev = Device.objects.get(uuid="GPU-9a")
    assert (dev.memory_mib, dev.removed_at) == (81920, None)
    assert report.devices_removed == []
    assert "devmem" in Node.objects.get(name="gpu-9").error


def test_bounds_are_settings(fake, tmp_path, settings):
    settings.INVENTORY_MAX_DEVICES_PER_NODE = 1
    cluster = make_kube_cluster(fake, tmp_path)
    fake.put(nvidia_node("gpu-1", ("GPU-aaaa", "GPU-bbbb")))
    sync_cluster_inventory(cluster.pk, now=NOW)
    assert Node.objects.get(name="gpu-1").error == (
        f"{REG}: 2 devices exceed the bound of 1 per node (setting INVENTORY_MAX_DEVICES_PER_NODE)"
    )
    settings.INVENTORY_MAX_DEVICES_PER_NODE = 256
    settings.INVENTORY_MAX_SPLIT_COUNT = 5
    sync_cluster_inventory(cluster.pk, now=NOW)
    assert "count" in Node.objects.get(name="gpu-1").error
    assert "less than or equal to 5" in Node.objects.get(name="gpu-1").error


SLICE_DEVICE = {
    "name": "hami-gpu-0",
    "allowMultipleAllocations": True,
    "attributes": {
        "uuid": {"string": "GPU-dra0"},
        "minor": {"int": 0},
        "productName": {"string": "NVIDIA-H100-80GB-HBM3"},
    },
    "capacity": {"cores": {"value": "100"}, "memory": {"value": "80Gi"}},
}


def _slice(name: str, node: str, spec_over: dict | None = None, devices=None) -> dict:
    spec = {
        "driver": "hami-core-gpu.project-hami.io",
        "nodeName": node,
        "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
        "devices": devices if devices is not None else [SLICE_DEVICE],
    }
    spec.update(spec_over or {})
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": spec,
    }


@pytest.mark.parametrize(
    "bad",
    [
        {"spec": "not-a-mapping"},
        {"spec": {"driver": "d.example.com", "pool": {"name": "p", "generation": "first"}}},
        {
            "spec": {
                "driver": "d.example.com",
                "pool": {"name": "p"},
                "nodeName": "gpu-2",
                "devices": 5,
            }
        },
        {
            "spec": {
                "driver": "d.example.com",
                "pool": {"name": "p"},
                "nodeName": "gpu-2",
                "devices": [{"name": "x", "capacity": {"memory": {"value": "lots"}}}],
            }
        },
        {
            "spec": {
                "driver": "d.example.com",
                "pool": {"name": "p"},
                "nodeName": "gpu-2",
                "devices": [{"name": "x", "attributes": [1, 2]}],
            }
        },
        {
            "spec": {
                "driver": "d.example.com",
                "pool": {"name": "p"},
                "nodeName": "gpu-2",
                "sharedCounters": [{"name": "c", "counters": {"memory": {"value": -1}}}],
            }
        },
        {
            "spec": {
                "driver": "d.example.com",
                "pool": {"name": "p"},
                "nodeName": "gpu-2",
                "devices": [{"name": "x", "capacity": {"memory": {"value": "1e30"}}}],
            }
        },
    ],
)
def test_a_malformed_resource_slice_is_reported_and_the_rest_kept(fake, tmp_path, bad):
    cluster = make_kube_cluster(fake, tmp_path, mode="dra")
    nodes = [node_json("gpu-2", {}, {"cpu": "8", "memory": "64Gi"}), nvidia_node("gpu-1")]
    broken = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "broken"},
        **bad,
    }
    report = apply_inventory(cluster, nodes, [_slice("good", "gpu-2"), broken], now=NOW)
    assert sorted(Device.objects.values_list("uuid", flat=True)) == [
        "GPU-aaaa",
        "GPU-bbbb",
        "GPU-dra0",
    ]
    assert len(report.errors) == 1
    assert report.errors[0].startswith("ResourceSlice broken: "), report.errors


def test_a_pool_whose_slice_broke_keeps_its_devices(fake, tmp_path):
    cluster = make_kube_cluster(fake, tmp_path, mode="dra")
    nodes = [node_json("gpu-2", {}, {"cpu": "8", "memory": "64Gi"})]
    apply_inventory(cluster, nodes, [_slice("good", "gpu-2")], now=NOW)
    bad = _slice(
        "good", "gpu-2", devices=[{**SLICE_DEVICE, "capacity": {"memory": {"value": "-80Gi"}}}]
    )
    report = apply_inventory(cluster, nodes, [bad], now=NOW)
    dev = Device.objects.get(uuid="GPU-dra0")
    assert dev.removed_at is None
    assert report.devices_removed == []
    assert dev.error.startswith("ResourceSlice good: ")
    assert dev.healthy is False
    # the slice is fixed: the device is clean again
    apply_inventory(cluster, nodes, [_slice("good", "gpu-2")], now=NOW)
    dev.refresh_from_db()
    assert (dev.error, dev.healthy) == ("", True)


def test_node_envelope_of_the_wrong_shape_is_flagged(fake, tmp_path):
    cluster = make_kube_cluster(fake, tmp_path)
    odd = nvidia_node("odd-1")
    odd["metadata"]["annotations"] = {REG: 17}
    odd2 = nvidia_node("odd-2")
    odd2["status"]["allocatable"]["cpu"] = "1e30"
    report = apply_inventory(
        cluster, [nvidia_node("gpu-1"), odd, odd2, "junk", {"x": 1}], [], now=NOW
    )
    assert sorted(Node.objects.values_list("name", flat=True)) == ["gpu-1", "odd-1", "odd-2"]
    errors = dict(Node.objects.values_list("name", "error"))
    assert errors["gpu-1"] == ""
    assert errors["odd-1"].startswith("metadata.annotations")
    assert errors["odd-2"].startswith("status.allocatable.cpu")
    assert "Node #3: no metadata.name; skipped" in report.errors
