"""Small builders for placement tests (no Django)."""

from __future__ import annotations

import json

from scheduling.placement import (
    ClusterSnapshot,
    ContainerRequest,
    DeviceRequest,
    DeviceUsage,
    NodeInfo,
    PlacementRequest,
    PodRequest,
)

# Ascend 910B3 vNPU templates with the DRA counters each consumes of its card (the driver's
# ``consumesCounters``); the card's ``sharedCounters`` are ASCEND_B3_CARD_COUNTERS.
ASCEND_B3_TEMPLATES = (
    {
        "name": "vir05_1c_16g",
        "memory_mib": 16384,
        "cores_percent": 5,
        "counters": {"aicore": 5, "hbm-gib": 16},
    },
    {
        "name": "vir10_3c_32g",
        "memory_mib": 32768,
        "cores_percent": 10,
        "counters": {"aicore": 12, "hbm-gib": 32},
    },
)
ASCEND_B3_CARD_COUNTERS = {"aicore": 20, "hbm-gib": 64}


def gpu(uuid, node="n1", index=0, mem=81920, count=10, model="NVIDIA-A100-SXM4-80GB", **kw):
    return DeviceUsage(uuid, node, index, model, "NVIDIA", mem, 100, count, **kw)


def node(name, devices, cpu=64000, mem=512000, **kw):
    for d in devices:
        d.node = name
    return NodeInfo(name, devices, cpu_milli=cpu, memory_mib=mem, **kw)


def snap(*nodes):
    return ClusterSnapshot.from_nodes(list(nodes))


def one(*reqs, name="p", cpu=0, mem=0, selector=None, **podkw):
    pod = PodRequest(
        name, cpu, mem, (ContainerRequest("c", tuple(reqs)),), node_selector=selector or {}, **podkw
    )
    return PlacementRequest(name, (pod,))


def pod_of(*containers, name="p", cpu=0, mem=0):
    return PlacementRequest(name, (PodRequest(name, cpu, mem, tuple(containers)),))


def nv(count=1, **kw):
    return DeviceRequest("NVIDIA", count, **kw)


def uuids(decision, container=0, pod=0):
    return [g.uuid for g in decision.pods[pod].containers[container].devices]


def kube_node(
    name,
    annotations=None,
    cpu="64",
    memory="512Gi",
    labels=None,
    capacity=None,
    allocatable=None,
    unschedulable=False,
):
    status = {"allocatable": {"cpu": cpu, "memory": memory, **(allocatable or {})}}
    if capacity is not None:
        status["capacity"] = {"cpu": cpu, "memory": memory, **capacity}
    return {
        "metadata": {"name": name, "annotations": annotations or {}, "labels": labels or {}},
        "spec": {"unschedulable": unschedulable},
        "status": status,
    }


def nvidia_register(devs):
    return json.dumps(
        [
            {
                "id": u,
                "index": i,
                "count": c,
                "devmem": m,
                "devcore": 100,
                "type": t,
                "numa": numa,
                "mode": "hami-core",
                "health": True,
            }
            for i, (u, c, m, t, numa) in enumerate(devs)
        ]
    )


def kube_pod(name, containers, annotations=None, init=None, node_selector=None):
    spec = {"containers": [{"name": n, "resources": {"limits": lim}} for n, lim in containers]}
    if init:
        spec["initContainers"] = [{"name": n, "resources": {"limits": lim}} for n, lim in init]
    if node_selector:
        spec["nodeSelector"] = node_selector
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations or {}},
        "spec": spec,
    }


def trace_node(name, frees, *, cpu, memory_mib, cpu_used=0, model="T4"):
    """A trace-style node of ``model`` GPUs (16,000 MiB, split 100), GPU j with ``frees[j]``
    free milli (cores and memory booked in proportion)."""
    return mixed_node(
        name, frees, (model,) * len(frees), cpu=cpu, memory_mib=memory_mib, cpu_used=cpu_used
    )


def mixed_node(name, frees, models, cpu=16000, vendors=None, memory_mib=262144, cpu_used=0):
    """A trace-style node whose GPU j has model ``models[j]`` (vendor ``vendors[j]``, default
    NVIDIA; 16,000 MiB, split 100) and ``frees[j]`` free milli."""
    devs = []
    for j, (free, model) in enumerate(zip(frees, models, strict=True)):
        used = 100 - free // 10
        vendor = vendors[j] if vendors else "NVIDIA"
        devs.append(
            DeviceUsage(
                f"{name}-{j}",
                name,
                j,
                model,
                vendor,
                16000,
                100,
                100,
                used_slots=1 if used else 0,
                used_cores_percent=used,
                used_memory_mib=16000 * used // 100,
            )
        )
    return NodeInfo(name, devs, cpu_milli=cpu, memory_mib=memory_mib, used_cpu_milli=cpu_used)
