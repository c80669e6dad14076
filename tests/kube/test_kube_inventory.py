"""Inventory from realistic Node / ResourceSlice JSON, and pod state mapping."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from scheduling.kube.inventory import (
    FAILED,
    PENDING,
    RUNNING,
    STARTING,
    SUCCEEDED,
    TERMINATING,
    UNKNOWN,
    PodState,
    dra_devices_to_placement,
    job_state,
    nodes_to_snapshot,
    pod_state,
    slices_to_inventory,
)

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)


def node(
    name: str, annotations: dict, capacity: dict, ready: bool = True, unschedulable: bool = False
) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": annotations,
            "labels": {"kubernetes.io/hostname": name},
        },
        "spec": {"unschedulable": unschedulable},
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "reason": "KubeletReady" if ready else "KubeletNotReady",
                    "message": "" if ready else "PLEG is not healthy",
                }
            ],
        },
    }


NVIDIA_NODE = node(
    "gpu-1",
    {
        "hami.io/node-nvidia-register": json.dumps(
            [
                {
                    "id": "GPU-aaaa",
                    "index": 0,
                    "count": 10,
                    "devmem": 81920,
                    "devcore": 100,
                    "type": "NVIDIA A100-SXM4-80GB",
                    "numa": 0,
                    "mode": "hami-core",
                    "health": True,
                },
                {
                    "id": "GPU-bbbb",
                    "index": 1,
                    "count": 10,
                    "devmem": 81920,
                    "devcore": 100,
                    "type": "NVIDIA A100-SXM4-80GB",
                    "numa": 1,
                    "mode": "hami-core",
                    "health": True,
                },
            ]
        ),
        "hami.io/device-cordon": "GPU-bbbb",
    },
    {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "20"},
)

ASCEND_NODE = node(
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
                }
            ]
        ),
        "hami.io/node-handshake-Ascend910B3": "Requesting_2025-06-01 11:58:00",
    },
    {"cpu": "192", "memory": "1024Gi", "huawei.com/Ascend910B3": "0"},
)

CAMBRICON_NODE = node(
    "mlu-1",
    {},
    {
        "cpu": "32",
        "memory": "256Gi",
        "cambricon.com/mlu.smlu.vcore": "200",
        "cambricon.com/mlu.smlu.vmemory": "384",
    },
)

HYGON_NODE = node(
    "dcu-1",
    {
        "hami.io/node-dcu-register": "DCU-0,4,65520,100,Z100L,0,true,0,hami-core:"
        "DCU-1,4,65520,100,Z100L,0,false,1,hami-core:"
    },
    {"cpu": "64", "memory": "256Gi", "hygon.com/dcunum": "8"},
    ready=False,
)


def test_nodes_nvidia_ascend_cambricon_hygon() -> None:
    snap = nodes_to_snapshot([NVIDIA_NODE, ASCEND_NODE, CAMBRICON_NODE, HYGON_NODE], now=NOW)
    gpu = snap.nodes["gpu-1"]
    assert (gpu.cpu_milli, gpu.memory_mib, gpu.schedulable) == (64000, 524288, True)
    assert [
        (d.uuid, d.memory_mib, d.split_count, d.numa, d.cordoned, d.healthy) for d in gpu.devices
    ] == [("GPU-aaaa", 81920, 10, 0, False, True), ("GPU-bbbb", 81920, 10, 1, True, True)]
    # Ascend: handshake "Requesting_" 120 s old and allocatable 0 -> unhealthy (hami.md §3.4)
    (npu,) = snap.nodes["npu-1"].devices
    assert (npu.uuid, npu.vendor, npu.memory_mib, npu.healthy) == (
        "Ascend910B3-0",
        "Ascend",
        65536,
        False,
    )
    # Cambricon: cards = ceil(200/100) = 2; memory = 384 * 256 * 100 / 200 = 49152 MiB
    mlu = snap.nodes["mlu-1"].devices
    assert [(d.uuid, d.memory_mib) for d in mlu] == [
        ("mlu-1-cambricon-mlu-0", 49152),
        ("mlu-1-cambricon-mlu-1", 49152),
    ]
    # Hygon legacy format, second card unhealthy; node NotReady -> not schedulable
    dcu = snap.nodes["dcu-1"]
    assert [(d.uuid, d.healthy, d.split_count) for d in dcu.devices] == [
        ("DCU-0", True, 4),
        ("DCU-1", False, 4),
    ]
    assert dcu.schedulable is False
    assert dcu.error == "node not Ready (KubeletNotReady: PLEG is not healthy)"


def test_fresh_handshake_keeps_devices_healthy() -> None:
    fresh = json.loads(json.dumps(ASCEND_NODE))
    fresh["metadata"]["annotations"]["hami.io/node-handshake-Ascend910B3"] = (
        "Requesting_2025-06-01 11:59:30"
    )
    (npu,) = nodes_to_snapshot([fresh], now=NOW).nodes["npu-1"].devices
    assert npu.healthy is True


HAMI_SLICE_V1 = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceSlice",
    "metadata": {"name": "gpu-1-hami-core-gpu.project-hami.io-x7k2"},
    "spec": {
        "driver": "hami-core-gpu.project-hami.io",
        "nodeName": "gpu-1",
        "pool": {"name": "gpu-1", "generation": 2, "resourceSliceCount": 1},
        "devices": [
            {
                "name": "hami-gpu-0",
                "allowMultipleAllocations": True,
                "attributes": {
                    "type": {"string": "hami-gpu"},
                    "uuid": {"string": "GPU-aaaa"},
                    "minor": {"int": 0},
                    "productName": {"string": "NVIDIA A100-SXM4-80GB"},
                    "driverVersion": {"version": "570.124.6"},
                },
                "capacity": {
                    "cores": {
                        "value": "100",
                        "requestPolicy": {
                            "default": "100",
                            "validRange": {"min": "0", "max": "100", "step": "1"},
                        },
                    },
                    "memory": {
                        "value": "80Gi",
                        "requestPolicy": {
                            "default": "80Gi",
                            "validRange": {"min": "1Mi", "step": "1Mi"},
                        },
                    },
                },
            },
            {
                "name": "hami-gpu-1",
                "allowMultipleAllocations": True,
                "attributes": {
                    "uuid": {"string": "GPU-bbbb"},
                    "minor": {"int": 1},
                    "productName": {"string": "NVIDIA A100-SXM4-80GB"},
                },
                "capacity": {"cores": {"value": "100"}, "memory": {"value": "80Gi"}},
                "taints": [{"key": "example.com/unhealthy", "effect": "NoSchedule"}],
            },
        ],
    },
}

STALE_SLICE = {
    **HAMI_SLICE_V1,
    "metadata": {"name": "old"},
    "spec": {
        **HAMI_SLICE_V1["spec"],
        "pool": {"name": "gpu-1", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": "hami-gpu-9"}],
    },
}

MIG_SLICE_V1BETA1 = {
    "apiVersion": "resource.k8s.io/v1beta1",
    "kind": "ResourceSlice",
    "metadata": {"name": "gpu-2-mig"},
    "spec": {
        "driver": "gpu.nvidia.com",
        "nodeName": "gpu-2",
        "pool": {"name": "gpu-2", "generation": 1, "resourceSliceCount": 1},
        "sharedCounters": [
            {
                "name": "gpu-0-counters",
                "counters": {"memory": {"value": "80Gi"}, "memorySlice0": {"value": "1"}},
            }
        ],
        "devices": [
            {
                "name": "gpu-0",
                "basic": {
                    "attributes": {
                        "uuid": {"string": "GPU-cccc"},
                        "index": {"int": 0},
                        "productName": {"string": "NVIDIA H100 80GB HBM3"},
                    },
                    "capacity": {"memory": {"value": "80Gi"}},
                    "consumesCounters": [],
                },
            },
            {
                "name": "gpu-0-mig-1g10gb-0",
                "basic": {
                    "attributes": {
                        "parentUUID": {"string": "GPU-cccc"},
                        "profile": {"string": "1g.10gb"},
                    },
                    "capacity": {"memory": {"value": "9856Mi"}},
                    "consumesCounters": [
                        {
                            "counterSet": "gpu-0-counters",
                            "counters": {
                                "memory": {"value": "9856Mi"},
                                "memorySlice0": {"value": "1"},
                            },
                        }
                    ],
                },
            },
        ],
    },
}

ASCEND_SLICE = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceSlice",
    "metadata": {"name": "npu-1-ascend"},
    "spec": {
        "driver": "ascend.project-hami.io",
        "nodeName": "npu-1",
        "pool": {"name": "npu-1", "generation": 1, "resourceSliceCount": 1},
        "devices": [
            {
                "name": "npu-0-0",
                "allowMultipleAllocations": True,
                "attributes": {
                    "index": {"int": 0},
                    "uuid": {"string": "NPU-0"},
                    "model": {"string": "Ascend910B3"},
                    "type": {"string": "HAMivNPUCore"},
                },
                "capacity": {"memory": {"value": "64Gi"}, "cores": {"value": "100"}},
            }
        ],
    },
}


def test_slices_to_inventory() -> None:
    inv = slices_to_inventory(
        [
            HAMI_SLICE_V1,
            STALE_SLICE,
            MIG_SLICE_V1BETA1,
            ASCEND_SLICE,
            {"metadata": {"name": "broken"}, "spec": {}},
        ]
    )
    assert inv.errors == ("ResourceSlice broken: missing driver or pool name",)
    names = [(d.node, d.name) for d in inv.devices]
    assert names == [
        ("gpu-1", "hami-gpu-0"),
        ("gpu-1", "hami-gpu-1"),
        ("gpu-2", "gpu-0"),
        ("gpu-2", "gpu-0-mig-1g10gb-0"),
        ("npu-1", "npu-0-0"),
    ]  # gen 1 dropped
    g0 = inv.devices[0]
    assert (g0.uuid, g0.memory_mib, g0.cores_percent, g0.allow_multiple, g0.available) == (
        "GPU-aaaa",
        81920,
        100,
        True,
        True,
    )
    assert g0.attributes["driverVersion"] == "570.124.6"
    assert inv.devices[1].available is False  # NoSchedule taint
    mig = inv.devices[3]
    assert mig.is_partition and mig.consumes == {
        "gpu-0-counters": {"memory": Decimal(9856 * 1024 * 1024), "memorySlice0": Decimal(1)}
    }
    (cs,) = inv.counter_sets
    assert (cs.name, cs.counters["memory"]) == ("gpu-0-counters", Decimal(80 * 1024**3))


def test_dra_devices_to_placement() -> None:
    inv = slices_to_inventory([HAMI_SLICE_V1, MIG_SLICE_V1BETA1, ASCEND_SLICE])
    devs = dra_devices_to_placement(inv)
    assert [
        (
            d.uuid,
            d.node,
            d.index,
            d.type,
            d.vendor,
            d.memory_mib,
            d.cores_percent,
            d.split_count,
            d.healthy,
        )
        for d in devs
    ] == [
        ("GPU-aaaa", "gpu-1", 0, "NVIDIA A100-SXM4-80GB", "NVIDIA", 81920, 100, 100, True),
        ("GPU-bbbb", "gpu-1", 1, "NVIDIA A100-SXM4-80GB", "NVIDIA", 81920, 100, 100, False),
        ("GPU-cccc", "gpu-2", 0, "NVIDIA H100 80GB HBM3", "NVIDIA", 81920, 100, 1, True),
        ("NPU-0", "npu-1", 0, "Ascend910B3", "Ascend", 65536, 100, 100, True),
    ]


# -- pod state ----------------------------------------------------------------------------


def pod(phase: str | None, node: str = "gpu-1", **status) -> dict:
    st = dict(status)
    if phase:
        st["phase"] = phase
    return {"metadata": {"name": "p"}, "spec": {"nodeName": node} if node else {}, "status": st}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (
            pod(
                "Pending",
                node="",
                conditions=[
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": "0/3 nodes are available",
                    }
                ],
            ),
            PodState(PENDING, "Unschedulable", "0/3 nodes are available", ""),
        ),
        (pod("Pending", node=""), PodState(PENDING)),
        (
            pod(
                "Pending",
                containerStatuses=[
                    {"name": "main", "state": {"waiting": {"reason": "ContainerCreating"}}}
                ],
            ),
            PodState(STARTING, "ContainerCreating", "", "gpu-1"),
        ),
        (
            pod(
                "Pending",
                containerStatuses=[
                    {
                        "name": "main",
                        "state": {
                            "waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling"}
                        },
                    }
                ],
            ),
            PodState(STARTING, "ImagePullBackOff", "Back-off pulling", "gpu-1"),
        ),
        (
            pod(
                "Pending",
                containerStatuses=[
                    {
                        "name": "main",
                        "state": {"waiting": {"reason": "InvalidImageName", "message": "bad ref"}},
                    }
                ],
            ),
            PodState(FAILED, "InvalidImageName", "container main: bad ref", "gpu-1"),
        ),
        (
            pod("Running", containerStatuses=[{"name": "main", "state": {"running": {}}}]),
            PodState(RUNNING, "", "", "gpu-1"),
        ),
        (
            pod(
                "Running",
                containerStatuses=[
                    {
                        "name": "main",
                        "state": {
                            "waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s"}
                        },
                    }
                ],
            ),
            PodState(RUNNING, "CrashLoopBackOff", "container main: back-off 40s", "gpu-1"),
        ),
        (pod("Succeeded"), PodState(SUCCEEDED, "", "", "gpu-1")),
        (
            pod(
                "Failed",
                containerStatuses=[
                    {
                        "name": "main",
                        "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}},
                    }
                ],
            ),
            PodState(FAILED, "OOMKilled", "container main exited with code 137", "gpu-1"),
        ),
        (
            pod(
                "Failed",
                reason="UnexpectedAdmissionError",
                message="Allocate failed due to device plugin error",
            ),
            PodState(
                FAILED,
                "UnexpectedAdmissionError",
                "Allocate failed due to device plugin error",
                "gpu-1",
            ),
        ),
        (
            pod("Failed", reason="Evicted", message="The node was low on resource: memory."),
            PodState(FAILED, "Evicted", "The node was low on resource: memory.", "gpu-1"),
        ),
        (pod("Unknown"), PodState(UNKNOWN, "Unknown", "", "gpu-1")),
    ],
)
def test_pod_state(obj: dict, expected: PodState) -> None:
    assert pod_state(obj) == expected


def test_terminating_pod() -> None:
    obj = pod("Running")
    obj["metadata"]["deletionTimestamp"] = "2025-06-01T12:00:00Z"
    assert pod_state(obj).state == TERMINATING
    obj["status"]["phase"] = "Succeeded"
    assert pod_state(obj).state == SUCCEEDED


def test_job_state() -> None:
    r, s, f, p, st = (PodState(x) for x in (RUNNING, SUCCEEDED, FAILED, PENDING, STARTING))
    assert job_state([r, r], 2) == RUNNING
    assert job_state([r], 2) == PENDING  # a pod is missing
    assert job_state([r, f], 2) == FAILED
    assert job_state([s, s], 2) == SUCCEEDED
    assert job_state([s, r], 2) == RUNNING
    assert job_state([r, st], 2) == STARTING
    assert job_state([p, st], 2) == PENDING
    with pytest.raises(ValueError):
        job_state([], 0)
