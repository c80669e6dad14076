"""``place`` answers as HAMi v2.10 for every vendor it supports, with either config file.

Each case is worked from HAMi's source (research notes /work/notes/research/hami-v2.10.md;
file:line there): the expected node, devices and allocation annotation are what HAMi's
Filter writes. Every case runs with the config given as the scheduler's device-config.yaml,
as its ConfigMap and, where the chart can express it, as the chart's values.yaml.
"""

import json

import pytest
import yaml
from placement_builders import kube_node, kube_pod, nvidia_register

from scheduling.kube.hami import place_from_kube

A100 = "NVIDIA A100-SXM4-80GB"


def configmap(device_config: dict) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "hami-scheduler-device", "namespace": "kube-system"},
            "data": {"device-config.yaml": yaml.safe_dump(device_config)}}


def running(node, key, value):
    return {"metadata": {"name": f"old-{node}", "annotations": {
        "hami.io/vgpu-node": node, key: value}},
        "spec": {"containers": [{"name": "c"}]}, "status": {"phase": "Running"}}


def _mig_register():
    return json.dumps([{
        "id": f"GPU-M{i}", "index": i, "count": 7, "devmem": 81920, "devcore": 100,
        "type": A100, "mode": "mig", "health": True,
        "migProfiles": [{"name": "1g.10gb", "memoryMB": 9856, "core": 14, "sliceCount": 1,
                         "placements": [{"start": s, "size": 1} for s in range(7)]}]}
        for i in range(2)])


ASCEND_REG = json.dumps([{"id": f"NPU-{i}", "index": i, "count": 4, "devmem": 65536,
                          "devcore": 20, "type": "Ascend910B3", "health": True}
                         for i in range(2)])
VNPUS = {"vnpus": {"hamiVnpuCore": False, "configs": [{
    "chipName": "910B3", "commonWord": "Ascend910B3", "memoryAllocatable": 65536,
    "memoryCapacity": 65536, "aiCore": 20,
    "templates": [{"name": "vir05_1c_16g", "memory": 16384, "aiCore": 5},
                  {"name": "vir10_3c_32g", "memory": 32768, "aiCore": 10}]}]}}

# id, nodes, existing pods, pod, device-config, values (None = not expressible),
#   expected (node, [(uuid, memory_mib, cores)], {annotation: value})
CASES = [
    # spread (HAMi default): the idle GPU scores lowest; the renamed memory resource of the
    # chart (resourceMem) is what the pod asks for (nvidia/device.go:520-600)
    ("nvidia-renamed-memory-spread",
     [kube_node("g", {"hami.io/node-nvidia-register": nvidia_register(
         [("GPU-0", 10, 81920, A100, 0), ("GPU-1", 10, 81920, A100, 0)])})],
     [running("g", "hami.io/vgpu-devices-allocated", "GPU-0,NVIDIA,20000,30:;")],
     kube_pod("p", [("c", {"nvidia.com/gpu": "1", "example.com/vram": "3000",
                           "nvidia.com/gpucores": "30"})]),
     {"nvidia": {"resourceMemoryName": "example.com/vram"}},
     {"resourceMem": "example.com/vram"},
     ("g", [("GPU-1", 3000, 30)],
      {"hami.io/vgpu-devices-to-allocate": "GPU-1,NVIDIA,3000,30:;"})),
    # binpack from the chart's defaultSchedulerPolicy: the used GPU first
    ("nvidia-binpack-policy",
     [kube_node("g", {"hami.io/node-nvidia-register": nvidia_register(
         [("GPU-0", 10, 81920, A100, 0), ("GPU-1", 10, 81920, A100, 0)])})],
     [running("g", "hami.io/vgpu-devices-allocated", "GPU-0,NVIDIA,20000,30:;")],
     kube_pod("p", [("c", {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "3000"})]),
     {"gpuSchedulerPolicy": "binpack"},
     {"scheduler": {"defaultSchedulerPolicy": {"gpuSchedulerPolicy": "binpack"}}},
     ("g", [("GPU-0", 3000, 0)], {"hami.io/vgpu-devices-allocated": "GPU-0,NVIDIA,3000,0:;"})),
    # CheckType is a substring: use-gputype H20 also selects an H200 (devices.go:693-738)
    ("nvidia-type-substring",
     [kube_node("h", {"hami.io/node-nvidia-register": nvidia_register(
         [("GPU-H200", 10, 143771, "NVIDIA H200", 0)])})],
     [], kube_pod("p", [("c", {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "1000"})],
                  {"nvidia.com/use-gputype": "H20"}),
     {}, {}, ("h", [("GPU-H200", 1000, 0)], {})),
    # MIG: two instances of one container are packed onto one GPU under spread
    # (nvidia/device.go:846-848); 1g placements from the highest start (mig_topology.go)
    ("nvidia-mig-packs",
     [kube_node("m", {"hami.io/node-nvidia-register": _mig_register()})], [],
     kube_pod("p", [("c", {"nvidia.com/gpu": "2", "nvidia.com/gpumem": "9000"})]),
     {}, {}, ("m", [("GPU-M1", 9856, 14), ("GPU-M1", 9856, 14)],
              {"hami.io/vgpu-devices-to-allocate":
               "GPU-M1,NVIDIA,9856,14:GPU-M1,NVIDIA,9856,14:;"})),
    # Cambricon with the plugin's per-model names: cards from capacity[vcore]
    # (ceil(200/100) = 2), devmem = 192*256*100/200 = 24576, vmemory x 256
    # (cambricon/device.go:209-310)
    ("cambricon-per-model-names",
     [kube_node("mlu", capacity={"cambricon.com/mlu370.smlu.vcore": "200",
                                 "cambricon.com/mlu370.smlu.vmemory": "192"})], [],
     kube_pod("p", [("c", {"cambricon.com/vmlu": "1",
                           "cambricon.com/mlu370.smlu.vmemory": "20",
                           "cambricon.com/mlu370.smlu.vcore": "30"})]),
     {"cambricon": {"resourceMemoryName": "cambricon.com/mlu370.smlu.vmemory",
                    "resourceCoreName": "cambricon.com/mlu370.smlu.vcore"}},
     {"mluResourceMem": "cambricon.com/mlu370.smlu.vmemory",
      "mluResourceCores": "cambricon.com/mlu370.smlu.vcore"},
     ("mlu", [("mlu-cambricon-mlu-1", 5120, 30)],
      {"hami.io/cambricon-mlu-devices-allocated": "mlu-cambricon-mlu-1,MLU,5120,30:;"})),
    # Hygon: dcucores absent -> 100, which needs an idle DCU (hygon/device.go:168-239)
    ("hygon-default-cores",
     [kube_node("dcu", {"hami.io/node-dcu-register":
                        "DCU-0,4,16368,100,DCU_Z100,0,true:DCU-1,4,16368,100,DCU_Z100,0,true:"})],
     [running("dcu", "hami.io/dcu-devices-allocated", "DCU-1,DCU,8000,50:;")],
     kube_pod("p", [("c", {"hygon.com/dcunum": "1", "hygon.com/dcumem": "8000"})]),
     {}, {}, ("dcu", [("DCU-0", 8000, 100)],
              {"hami.io/dcu-devices-to-allocate": "DCU-0,DCU,8000,100:;"})),
    # Ascend (enabled in the device config; the chart enables it with devices.ascend):
    # memory rounds up to the smallest template >= request (ascend/device.go:69-79)
    ("ascend-template",
     [kube_node("npu", {"hami.io/node-register-Ascend910B3": ASCEND_REG})], [],
     kube_pod("p", [("c", {"huawei.com/Ascend910B3": "1",
                           "huawei.com/Ascend910B3-memory": "20000"})]),
     VNPUS, {"devices": {"ascend": {"enabled": True}}},
     ("npu", [("NPU-1", 32768, 0)],
      {"huawei.com/Ascend910B3":
       '[{"UUID":"NPU-1","temp":"vir10_3c_32g","memory":32768,"core":0}]'})),
    # Mthreads: memory units of 512 MiB, cores in sixteenths (mthreads/device.go:41-264)
    ("mthreads-units",
     [kube_node("mt", capacity={"mthreads.com/sgpu-core": "32",
                                "mthreads.com/sgpu-memory": "192"})], [],
     kube_pod("p", [("c", {"mthreads.com/vgpu": "1", "mthreads.com/sgpu-memory": "8",
                           "mthreads.com/sgpu-core": "4"})]),
     {}, {}, ("mt", [("mt-mthreads-1", 4096, 4)],
              {"hami.io/mthreads-vgpu-devices-allocated": "mt-mthreads-1,Mthreads,4096,4:;"})),
    # AMD: gpucores is a percentage turned into compute units, TYPE = registered product
    ("amd-compute-units",
     [kube_node("a", {"hami.io/node-amd-register": json.dumps([{
         "id": "AMD-0", "index": 0, "count": 10, "devmem": 196608, "devcore": 304,
         "type": "MI300X", "health": True}])})], [],
     kube_pod("p", [("c", {"amd.com/gpu": "1", "amd.com/gpumem": "10000",
                           "amd.com/gpucores": "50"})]),
     {}, {}, ("a", [("AMD-0", 10000, 152)],
              {"hami.io/amd-devices-allocated": "AMD-0,MI300X,10000,152:;"})),
    # Iluvatar (enabled in the device config): vMem units of 256 MiB, vCore default 0
    ("iluvatar-units",
     [kube_node("i", {"hami.io/node-BI-V150-register": "IL-0,10,32768,100,BI-V150,0,true:"})],
     [], kube_pod("p", [("c", {"iluvatar.ai/BI-V150-vgpu": "1",
                               "iluvatar.ai/BI-V150.vMem": "8"})]),
     {}, {"devices": {"iluvatar": {"enabled": True}}},
     ("i", [("IL-0", 2048, 0)],
      {"hami.io/BI-V150-devices-allocated": "IL-0,BI-V150,2048,0:;"})),
]


def _shapes(device_config, values):
    yield "device-config", device_config
    yield "configmap", configmap(device_config)
    if values is not None:
        yield "values", values


@pytest.mark.parametrize(("case", "nodes", "pods", "pod", "device_config", "values", "want"),
                         CASES, ids=[c[0] for c in CASES])
def test_place_answers_as_hami(case, nodes, pods, pod, device_config, values, want):
    node, devices, annotations = want
    for shape, config in _shapes(device_config, values):
        out = place_from_kube(nodes, pods, pod, config=config)
        assert out["schedulable"] is True, (shape, out)
        assert out["node"] == node, shape
        got = [(d["uuid"], d["memory_mib"], d["cores_percent"])
               for c in out["containers"] for d in c["devices"]]
        assert got == devices, shape
        for key, value in annotations.items():
            assert out["annotations"][key] == value, (shape, key)


def test_kunlun_whole_xpus_and_node_score():
    """Count 2 on an idle 8-XPU node: the left wing (indices 0, 1; topo.go:208-268), TYPE
    ``kunlun``; node score: bubbles 1 before, 2 after -> 1000 (topo.go:50-97)."""
    out = place_from_kube([kube_node("k", capacity={"kunlunxin.com/xpu": "8"})], [],
                          kube_pod("p", [("c", {"kunlunxin.com/xpu": "2"})]))
    value = out["annotations"]["hami.io/kunlun-allocated"]
    entries = [e.split(",") for e in value.rstrip(";").split(":") if e]
    assert [(e[1], e[2], e[3]) for e in entries] == [("kunlun", "98304", "100")] * 2
    assert [e[0].rsplit("-", 1)[1] for e in entries] == ["0", "1"]
    assert out["node_scores"] == {"k": 1000.0}


def test_the_chart_default_leaves_ascend_to_no_one():
    """devices.ascend.enabled defaults to false: HAMi runs no Ascend backend, so the pod's
    huawei.com resources get no devices from HAMi (deployment.yaml:119-124)."""
    pod = kube_pod("p", [("c", {"huawei.com/Ascend910B3": "1"})])
    nodes = [kube_node("npu", {"hami.io/node-register-Ascend910B3": ASCEND_REG})]
    out = place_from_kube(nodes, [], pod, config={"schedulerName": "hami-scheduler"})
    assert out["containers"] == [{"name": "c", "devices": []}]
