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
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "hami-scheduler-device", "namespace": "kube-system"},
        "data": {"device-config.yaml": yaml.safe_dump(device_config)},
    }


def running(node, key, value):
    return {
        "metadata": {"name": f"old-{node}", "annotations": {"hami.io/vgpu-node": node, key: value}},
        "spec": {"containers": [{"name": "c"}]},
        "status": {"phase": "Running"},
    }


def _mig_register():
    return json.dumps(
        [
            {
                "id": f"GPU-M{i}",
                "index": i,
                "count": 7,
                "devmem": 81920,
                "devcore": 100,
                "type": A100,
                "mode": "mig",
                "health": True,
                "migProfiles": [
                    {
                        "name": "1g.10gb",
                        "memoryMB": 9856,
                        "core": 14,
                        "sliceCount": 1,
                        "placements": [{"start": s, "size": 1} for s in range(7)],
                    }
                ],
            }
            for i in range(2)
        ]
    )


def _topology_register():
    """GPU-A, GPU-B: hami-core A100s of split count 2; GPU-M0: the MIG A100 of
    :func:`_mig_register`, walked first under spread."""
    whole = {"count": 2, "devmem": 81920, "devcore": 100, "type": A100, "mode": "hami-core"}
    mig = dict(json.loads(_mig_register())[0], index=2)
    return json.dumps(
        [
            {"id": "GPU-A", "index": 0, **whole, "health": True},
            {"id": "GPU-B", "index": 1, **whole, "health": True},
            mig,
        ]
    )


# hami.io/node-nvidia-score: GPU-M0 and GPU-A share NVLinks, GPU-B is across the CPUs
TOPOLOGY_SCORES = json.dumps(
    [
        {"uuid": "GPU-M0", "score": {"GPU-A": 200, "GPU-B": 10}},
        {"uuid": "GPU-A", "score": {"GPU-M0": 200, "GPU-B": 10}},
        {"uuid": "GPU-B", "score": {"GPU-M0": 10, "GPU-A": 10}},
    ]
)

ASCEND_REG = json.dumps(
    [
        {
            "id": f"NPU-{i}",
            "index": i,
            "count": 4,
            "devmem": 65536,
            "devcore": 20,
            "type": "Ascend910B3",
            "health": True,
        }
        for i in range(2)
    ]
)
VNPUS = {
    "vnpus": {
        "hamiVnpuCore": False,
        "configs": [
            {
                "chipName": "910B3",
                "commonWord": "Ascend910B3",
                "memoryAllocatable": 65536,
                "memoryCapacity": 65536,
                "aiCore": 20,
                "templates": [
                    {"name": "vir05_1c_16g", "memory": 16384, "aiCore": 5},
                    {"name": "vir10_3c_32g", "memory": 32768, "aiCore": 10},
                ],
            }
        ],
    }
}

# id, nodes, existing pods, pod, device-config, values (None = not expressible),
#   expected (node, [(uuid, memory_mib, cores)], {annotation: value})
CASES = [
    # spread (HAMi default): the idle GPU scores lowest; the renamed memory resource of the
    # chart (resourceMem) is what the pod asks for (nvidia/device.go:520-600)
    (
        "nvidia-renamed-memory-spread",
        [
            kube_node(
                "g",
                {
                    "hami.io/node-nvidia-register": nvidia_register(
                        [("GPU-0", 10, 81920, A100, 0), ("GPU-1", 10, 81920, A100, 0)]
                    )
                },
            )
        ],
        [running("g", "hami.io/vgpu-devices-allocated", "GPU-0,NVIDIA,20000,30:;")],
        kube_pod(
            "p",
            [
                (
                    "c",
                    {
                        "nvidia.com/gpu": "1",
                        "example.com/vram": "3000",
                        "nvidia.com/gpucores": "30",
                    },
                )
            ],
        ),
        {"nvidia": {"resourceMemoryName": "example.com/vram"}},
        {"resourceMem": "example.com/vram"},
        (
            "g",
            [("GPU-1", 3000, 30)],
            {"hami.io/vgpu-devices-to-allocate": "GPU-1,NVIDIA,3000,30:;"},
        ),
    ),
    # binpack from the chart's defaultSchedulerPolicy: the used GPU first
    (
        "nvidia-binpack-policy",
        [
            kube_node(
                "g",
                {
                    "hami.io/node-nvidia-register": nvidia_register(
                        [("GPU-0", 10, 81920, A100, 0), ("GPU-1", 10, 81920, A100, 0)]
                    )
                },
            )
        ],
        [running("g", "hami.io/vgpu-devices-allocated", "GPU-0,NVIDIA,20000,30:;")],
        kube_pod("p", [("c", {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "3000"})]),
        {"gpuSchedulerPolicy": "binpack"},
        {"scheduler": {"defaultSchedulerPolicy": {"gpuSchedulerPolicy": "binpack"}}},
        ("g", [("GPU-0", 3000, 0)], {"hami.io/vgpu-devices-allocated": "GPU-0,NVIDIA,3000,0:;"}),
    ),
    # CheckType is a substring: use-gputype H20 also selects an H200 (devices.go:693-738)
    (
        "nvidia-type-substring",
        [
            kube_node(
                "h",
                {
                    "hami.io/node-nvidia-register": nvidia_register(
                        [("GPU-H200", 10, 143771, "NVIDIA H200", 0)]
                    )
                },
            )
        ],
        [],
        kube_pod(
            "p",
            [("c", {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "1000"})],
            {"nvidia.com/use-gputype": "H20"},
        ),
        {},
        {},
        ("h", [("GPU-H200", 1000, 0)], {}),
    ),
    # MIG: two instances of one container are packed onto one GPU under spread
    # (nvidia/device.go:846-848); 1g placements from the highest start (mig_topology.go)
    (
        "nvidia-mig-packs",
        [kube_node("m", {"hami.io/node-nvidia-register": _mig_register()})],
        [],
        kube_pod("p", [("c", {"nvidia.com/gpu": "2", "nvidia.com/gpumem": "9000"})]),
        {},
        {},
        (
            "m",
            [("GPU-M1", 9856, 14), ("GPU-M1", 9856, 14)],
            {"hami.io/vgpu-devices-to-allocate": "GPU-M1,NVIDIA,9856,14:GPU-M1,NVIDIA,9856,14:;"},
        ),
    ),
    # topology-aware, 3 GPUs (issue 29): every MIG instance that fits is collected (M0 x7,
    # then B, A) and the best-scoring combination may hold M0 twice: {M0, M0, A} = 2 x 200
    # beats {M0, B, A} = 220 (nvidia/device.go:829-870, 887-915, 953-978)
    (
        "nvidia-topology-three-gpus",
        [
            kube_node(
                "t",
                {
                    "hami.io/node-nvidia-register": _topology_register(),
                    "hami.io/node-nvidia-score": TOPOLOGY_SCORES,
                },
            )
        ],
        [],
        kube_pod(
            "p",
            [("c", {"nvidia.com/gpu": "3", "nvidia.com/gpumem": "9000"})],
            {"hami.io/gpu-scheduler-policy": "topology-aware"},
        ),
        {},
        {},
        (
            "t",
            [("GPU-M0", 9856, 14), ("GPU-M0", 9856, 14), ("GPU-A", 9000, 0)],
            {
                "hami.io/vgpu-devices-to-allocate": "GPU-M0,NVIDIA,9856,14:GPU-M0,NVIDIA,9856,14:GPU-A,NVIDIA,9000,0:;"  # noqa: E501
            },
        ),
    ),
    # Cambricon with the plugin's per-model names: cards from capacity[vcore]
    # (ceil(200/100) = 2), devmem = 192*256*100/200 = 24576, vmemory x 256
    # (cambricon/device.go:209-310)
    (
        "cambricon-per-model-names",
        [
            kube_node(
                "mlu",
                capacity={
                    "cambricon.com/mlu370.smlu.vcore": "200",
                    "cambricon.com/mlu370.smlu.vmemory": "192",
                },
            )
        ],
        [],
        kube_pod(
            "p",
            [
                (
                    "c",
                    {
                        "cambricon.com/vmlu": "1",
                        "cambricon.com/mlu370.smlu.vmemory": "20",
                        "cambricon.com/mlu370.smlu.vcore": "30",
                    },
                )
            ],
        ),
        {
            "cambricon": {
                "resourceMemoryName": "cambricon.com/mlu370.smlu.vmemory",
                "resourceCoreName": "cambricon.com/mlu370.smlu.vcore",
            }
        },
        {
            "mluResourceMem": "cambricon.com/mlu370.smlu.vmemory",
            "mluResourceCores": "cambricon.com/mlu370.smlu.vcore",
        },
        (
            "mlu",
            [("mlu-cambricon-mlu-1", 5120, 30)],
            {"hami.io/cambricon-mlu-devices-allocated": "mlu-cambricon-mlu-1,MLU,5120,30:;"},
        ),
    ),
    # Hygon: dcucores absent -> 100, which needs an idle DCU (hygon/device.go:168-239)
    (
        "hygon-default-cores",
        [
            kube_node(
                "dcu",
                {
                    "hami.io/node-dcu-register": "DCU-0,4,16368,100,DCU_Z100,0,true:DCU-1,4,16368,100,DCU_Z100,0,true:"  # noqa: E501
                },
            )
        ],
        [running("dcu", "hami.io/dcu-devices-allocated", "DCU-1,DCU,8000,50:;")],
        kube_pod("p", [("c", {"hygon.com/dcunum": "1", "hygon.com/dcumem": "8000"})]),
        {},
        {},
        (
            "dcu",
            [("DCU-0", 8000, 100)],
            {"hami.io/dcu-devices-to-allocate": "DCU-0,DCU,8000,100:;"},
        ),
    ),
    # Ascend (enabled in the device config; the chart enables it with devices.ascend):
    # memory rounds up to the smallest template >= request (ascend/device.go:69-79)
    (
        "ascend-template",
        [kube_node("npu", {"hami.io/node-register-Ascend910B3": ASCEND_REG})],
        [],
        kube_pod(
            "p", [("c", {"huawei.com/Ascend910B3": "1", "huawei.com/Ascend910B3-memory": "20000"})]
        ),
        VNPUS,
        {"devices": {"ascend": {"enabled": True}}},
        (
            "npu",
            [("NPU-1", 32768, 0)],
            {"huawei.com/Ascend910B3": '[{"UUID":"NPU-1","temp":"vir10_3c_32g","memory":32768}]'},
        ),
    ),
    # Mthreads: memory units of 512 MiB, cores in sixteenths (mthreads/device.go:41-264)
    (
        "mthreads-units",
        [
            kube_node(
                "mt", capacity={"mthreads.com/sgpu-core": "32", "mthreads.com/sgpu-memory": "192"}
            )
        ],
        [],
        kube_pod(
            "p",
            [
                (
                    "c",
                    {
                        "mthreads.com/vgpu": "1",
                        "mthreads.com/sgpu-memory": "8",
                        "mthreads.com/sgpu-core": "4",
                    },
                )
            ],
        ),
        {},
        {},
        (
            "mt",
            [("mt-mthreads-1", 4096, 4)],
            {"hami.io/mthreads-vgpu-devices-allocated": "mt-mthreads-1,Mthreads,4096,4:;"},
        ),
    ),
    # AMD: gpucores is a percentage turned into compute units, TYPE = the registered type
    # (HAMi only offers devices whose registered type contains "AMD", score.go:43-52)
    (
        "amd-compute-units",
        [
            kube_node(
                "a",
                {
                    "hami.io/node-amd-register": json.dumps(
                        [
                            {
                                "id": "AMD-0",
                                "index": 0,
                                "count": 10,
                                "devmem": 196608,
                                "devcore": 304,
                                "type": "AMD-MI300X",
                                "health": True,
                            }
                        ]
                    )
                },
            )
        ],
        [],
        kube_pod(
            "p", [("c", {"amd.com/gpu": "1", "amd.com/gpumem": "10000", "amd.com/gpucores": "50"})]
        ),
        {},
        {},
        (
            "a",
            [("AMD-0", 10000, 152)],
            {"hami.io/amd-devices-allocated": "AMD-0,AMD-MI300X,10000,152:;"},
        ),
    ),
    # Iluvatar (enabled in the device config): vMem units of 256 MiB, vCore default 0
    (
        "iluvatar-units",
        [kube_node("i", {"hami.io/node-BI-V150-register": "IL-0,10,32768,100,BI-V150,0,true:"})],
        [],
        kube_pod("p", [("c", {"iluvatar.ai/BI-V150-vgpu": "1", "iluvatar.ai/BI-V150.vMem": "8"})]),
        {},
        {"devices": {"iluvatar": {"enabled": True}}},
        ("i", [("IL-0", 2048, 0)], {"hami.io/BI-V150-devices-allocated": "IL-0,BI-V150,2048,0:;"}),
    ),
]


VA_REG = json.dumps(
    [
        {
            "id": f"VA-{i}",
            "index": i,
            "count": 1,
            "devmem": 16384,
            "devcore": 100,
            "type": "Vastai",
            "health": True,
        }
        for i in range(2)
    ]
)
VA_DIES = json.dumps(
    [
        {
            "id": f"VA-{i}",
            "index": i,
            "count": 1,
            "devmem": 16384,
            "devcore": 100,
            "type": "Vastai",
            "health": i != 0,
            "custominfo": {"DeviceStrategy": "die", "AIC": str(i // 2)},
        }
        for i in range(4)
    ]
)
BIREN_REG = json.dumps(
    [
        {
            "id": f"BR-{i}",
            "index": i,
            "count": 1,
            "devmem": 65536,
            "devcore": 100,
            "type": "Biren",
            "health": True,
        }
        for i in range(2)
    ]
)
NPU_910C = json.dumps(
    [
        {
            "id": f"NPU-{i}",
            "index": i,
            "count": 4,
            "devmem": 65536,
            "devcore": 20,
            "type": "Ascend910C",
            "health": i != 0,
        }
        for i in range(4)
    ]
)
VNPUS_910C = {
    "vnpus": {
        "configs": [
            {
                "chipName": "Ascend910",
                "commonWord": "Ascend910C",
                "resourceName": "huawei.com/Ascend910C",
                "resourceMemoryName": "huawei.com/Ascend910C-memory",
                "memoryAllocatable": 65536,
                "memoryCapacity": 65536,
                "aiCore": 20,
                "aiCPU": 7,
                "superPod": True,
                "templates": [
                    {"name": "vir05_1c_16g", "memory": 16384, "aiCore": 5, "aiCPU": 1},
                    {"name": "vir10_3c_32g", "memory": 32768, "aiCore": 10, "aiCPU": 3},
                ],
            }
        ]
    }
}

DRS = json.dumps(
    {
        "devices": [
            {"index": "0", "minor": "0", "capacity": 6},
            {"index": "1", "minor": "1", "capacity": 6},
        ],
        "profiles": {"1g.8gb": "p1", "3g.24gb": "p3", "6g.48gb": "p6"},
    }
)


def drs_want(request: int) -> tuple:
    """The 3-slice profile on the last idle card (enflame/device.go:247-330, 391-470):
    memory 24 GB, cores ceil(3 * 100 / 6) = 50, and the DRS pod annotations."""
    return (
        "d",
        [("d-enflame-drs-1", 24576, 50)],
        {
            "hami.io/enflame-vgpu-devices-allocated": "d-enflame-drs-1,Enflame,24576,50:;",
            "enflame.com/gcu-assigned": "false",
            "enflame.com/gcu-assigned-index": "1",
            "enflame.com/gcu-assigned-id": "1",
            "enflame.com/gcu-assigned-minor": "1",
            "enflame.com/gcu-request-size": str(request),
            "assigned-containers": '{"c":{"allocated":false,"request":3,"profileID":"p3",'
            '"profileName":"3g.24gb"}}',
        },
    )


TRN1 = kube_node(
    "n",
    capacity={"aws.amazon.com/neuron": "4", "aws.amazon.com/neuroncore": "8"},
    labels={"node.kubernetes.io/instance-type": "trn1.32xlarge"},
)
INF2 = kube_node(
    "i",
    capacity={"aws.amazon.com/neuron": "4", "aws.amazon.com/neuroncore": "8"},
    labels={"node.kubernetes.io/instance-type": "inf2.48xlarge"},
)

VXPU_REG = json.dumps(
    [
        {
            "id": f"XPU-{i}",
            "index": i,
            "count": 4,
            "devmem": 98304,
            "devcore": 100,
            "type": "XPU-P800",
            "health": True,
        }
        for i in range(8)
    ]
)

CASES += [
    # Cambricon's use-mlutype / nouse-mlutype are defined but never read by HAMi v2.10
    # (checkType compares only the request type, cambricon/device.go:243-248): a pod asking
    # for MLU590 still gets the node's MLU card; the console's own cycle honours the type
    (
        "cambricon-use-mlutype-unread",
        [
            kube_node(
                "mlu",
                capacity={
                    "cambricon.com/mlu.smlu.vcore": "100",
                    "cambricon.com/mlu.smlu.vmemory": "96",
                },
            )
        ],
        [],
        kube_pod(
            "p",
            [("c", {"cambricon.com/vmlu": "1", "cambricon.com/mlu.smlu.vmemory": "8"})],
            {"cambricon.com/use-mlutype": "MLU590", "cambricon.com/nouse-mlutype": "MLU"},
        ),
        {},
        {},
        (
            "mlu",
            [("mlu-cambricon-mlu-0", 2048, 100)],  # no vcore -> 100 (:277)
            {"hami.io/cambricon-mlu-devices-allocated": "mlu-cambricon-mlu-0,MLU,2048,100:;"},
        ),
    ),
    # Kunlun vXPU: 20000 MiB -> the 24576 slice, cores 24576 x 100 / 98304 = 25; the XPUs
    # that fit are walked by wings (graghSelect): 4 free in the lower wing -> its lowest
    # index (kunlun/vdevice.go:166-278, topo.go:219-262)
    (
        "kunlun-vxpu-wing-walk",
        [kube_node("k", {"hami.io/node-register-xpu": VXPU_REG})],
        [],
        kube_pod("p", [("c", {"kunlunxin.com/vxpu": "1", "kunlunxin.com/vxpu-memory": "20000"})]),
        {},
        {},
        ("k", [("XPU-0", 24576, 25)], {"hami.io/xpu-devices-to-allocate": "XPU-0,XPU,24576,25:;"}),
    ),
    # AWS Neuron (awsneuron/device.go): devices <node>-AWSNeuron-<i> with 8 / 4 = 2 cores;
    # Devmem 0 gives every device score 0, so the last device is taken even though one of
    # its cores is used (mask 1); the new core is the next bit (addCoreUsage: 3 - 1 = 2),
    # core id 2 x 3 + 1. The devices list counts cores; the annotation carries the mask.
    (
        "neuron-one-core-next-to-a-used-one",
        [TRN1],
        [running("n", "hami.io/aws-neuron-devices-allocated", "n-AWSNeuron-3,AWSNeuron,0,1:;")],
        kube_pod("p", [("c", {"aws.amazon.com/neuroncore": "1"})]),
        {},
        {},
        (
            "n",
            [("n-AWSNeuron-3", 0, 1)],
            {
                "hami.io/aws-neuron-devices-allocated": "n-AWSNeuron-3,AWSNeuron,0,2:;",
                "AWS_NEURON_IDS": "7",
                "NEURON_RESOURCE_TYPE": "aws.amazon.com/neuroncore",
                "NEURON_ALLOCATED": "false",
                "aws.amazon.com/predicate-node": "n",
            },
        ),
    ),
    # whole devices on trn1: a run of 4 aligned to 4 (graphSelect), each booked whole
    # (Usedcores = Totalcore = mask 3), ids are device indices
    (
        "neuron-whole-devices-aligned-run",
        [TRN1],
        [],
        kube_pod("p", [("c", {"aws.amazon.com/neuron": "4"})]),
        {},
        {},
        (
            "n",
            [(f"n-AWSNeuron-{i}", 0, 2) for i in range(4)],
            {
                "hami.io/aws-neuron-devices-allocated": "".join(
                    f"n-AWSNeuron-{i},AWSNeuron,0,3:" for i in range(4)
                )
                + ";",
                "AWS_NEURON_IDS": "0,1,2,3",
            },
        ),
    ),
    # 4 cores = 2 whole devices; on an inf* instance any contiguous run (a ring), core ids
    (
        "neuron-cores-split-in-devices-on-inf",
        [INF2],
        [],
        kube_pod("p", [("c", {"aws.amazon.com/neuroncore": "4"})]),
        {},
        {},
        (
            "i",
            [("i-AWSNeuron-0", 0, 2), ("i-AWSNeuron-1", 0, 2)],
            {
                "hami.io/aws-neuron-devices-allocated": "i-AWSNeuron-0,AWSNeuron,0,3:i-AWSNeuron-1,AWSNeuron,0,3:;",  # noqa: E501
                "AWS_NEURON_IDS": "0,1,2,3",
                "NEURON_RESOURCE_TYPE": "aws.amazon.com/neuroncore",
            },
        ),
    ),
    # Enflame DRS: drs-gcu is the profile's slice count, one card per container
    (
        "enflame-drs-by-size",
        [kube_node("d", {"enflame.com/gcu-drs-capacity": DRS})],
        [],
        kube_pod("p", [("c", {"enflame.com/drs-gcu": "3"})]),
        {},
        {},
        drs_want(3),
    ),
    # by spec: 20 <= 2 x 48 is read as GB -> the smallest profile with >= 20 GB and >= 30 %
    (
        "enflame-drs-by-spec-gb",
        [kube_node("d", {"enflame.com/gcu-drs-capacity": DRS})],
        [],
        kube_pod("p", [("c", {"enflame.com/gcu-memory": "20", "enflame.com/gcu-core": "30"})]),
        {},
        {},
        drs_want(3),
    ),
    # a large value is MiB, rounded up to GB: 20000 MiB -> 20 GB
    (
        "enflame-drs-by-spec-mib",
        [kube_node("d", {"enflame.com/gcu-drs-capacity": DRS})],
        [],
        kube_pod("p", [("c", {"enflame.com/gcu-memory": "20000"})]),
        {},
        {},
        drs_want(3),
    ),
    # Enflame whole GCU: ids <node>-GCU-<i>, request = memory 100 / cores 100, only idle
    # cards, the last equal-score card first (enflame/gcu.go:66-180)
    (
        "enflame-whole-gcu",
        [kube_node("e", capacity={"enflame.com/gcu": "4"})],
        [running("e", "hami.io/enflame-gcu-devices-allocated", "e-GCU-3,GCU,100,100:;")],
        kube_pod("p", [("c", {"enflame.com/gcu": "2"})]),
        {},
        {},
        (
            "e",
            [("e-GCU-2", 100, 100), ("e-GCU-1", 100, 100)],
            {
                "hami.io/enflame-gcu-devices-to-allocate": "e-GCU-2,GCU,100,100:e-GCU-1,GCU,100,100:;"  # noqa: E501
            },
        ),
    ),
    # Metax whole GPU: ids <node>-metax-<i>, Devmem 65536, a whole card (metax/device.go:66-154)
    (
        "metax-whole-gpu",
        [kube_node("m", capacity={"metax-tech.com/gpu": "2"})],
        [],
        kube_pod("p", [("c", {"metax-tech.com/gpu": "1"})]),
        {},
        {},
        (
            "m",
            [("m-metax-1", 65536, 100)],
            {"hami.io/metax-gpu-devices-allocated": "m-metax-1,Metax-GPU,65536,100:;"},
        ),
    ),
    # Vastai: count only, the grant sets no memory (vastai/device.go:142-307)
    (
        "vastai-count",
        [kube_node("v", {"hami.io/node-va-register": VA_REG})],
        [],
        kube_pod("p", [("c", {"vastaitech.com/va": "1"})]),
        {},
        {},
        ("v", [("VA-1", 0, 0)], {"hami.io/Vastai-devices-allocated": "VA-1,Vastai,0,0:;"}),
    ),
    # Vastai die mode: every passing die collected, the card (AIC) with most dies first
    # (computeBestCombination); die 0 is unhealthy so card 1 has two, card 0 one
    (
        "vastai-die-mode",
        [kube_node("v", {"hami.io/node-va-register": VA_DIES})],
        [],
        kube_pod("p", [("c", {"vastaitech.com/va": "2"})]),
        {},
        {},
        (
            "v",
            [("VA-3", 0, 0), ("VA-2", 0, 0)],
            {"hami.io/Vastai-devices-to-allocate": "VA-3,Vastai,0,0:VA-2,Vastai,0,0:;"},
        ),
    ),
    # Vastai die mode under mutex (issue 29): a running pod holds VA-3, so its card (AIC 1,
    # read from the registration's custominfo) is busy and its idle die VA-2 is refused
    # (vastai/device.go:236-249, 274-286)
    (
        "vastai-die-mutex-busy-card",
        [kube_node("v", {"hami.io/node-va-register": VA_DIES})],
        [running("v", "hami.io/Vastai-devices-allocated", "VA-3,Vastai,0,0:;")],
        kube_pod(
            "p", [("c", {"vastaitech.com/va": "1"})], {"hami.io/gpu-scheduler-policy": "mutex"}
        ),
        {},
        {},
        ("v", [("VA-1", 0, 0)], {"hami.io/Vastai-devices-to-allocate": "VA-1,Vastai,0,0:;"}),
    ),
    # Vastai die mode under mutex (issue 29): the first container's die (VA-3) makes its card
    # (AIC 1) busy for the second container, whose idle sibling VA-2 is refused
    # (ExclusiveDeviceAllocateConflict); HAMi books each container before the next
    # (scheduler/score.go:105-131, vastai/device.go:236-249, 274-286)
    (
        "vastai-die-mutex-two-containers",
        [kube_node("v", {"hami.io/node-va-register": VA_DIES})],
        [],
        kube_pod(
            "p",
            [("c", {"vastaitech.com/va": "1"}), ("d", {"vastaitech.com/va": "1"})],
            {"hami.io/gpu-scheduler-policy": "mutex"},
        ),
        {},
        {},
        (
            "v",
            [("VA-3", 0, 0), ("VA-1", 0, 0)],
            {"hami.io/Vastai-devices-to-allocate": "VA-3,Vastai,0,0:;VA-1,Vastai,0,0:;"},
        ),
    ),
    # Biren: count only, no Usedmem in the grant (biren/device.go:182-226)
    (
        "biren-count",
        [kube_node("b", {"hami.io/node-biren-register": BIREN_REG})],
        [],
        kube_pod("p", [("c", {"birentech.com/gpu": "1"})]),
        {},
        {},
        ("b", [("BR-1", 0, 0)], {"hami.io/Biren-devices-allocated": "BR-1,Biren,0,0:;"}),
    ),
    # Ascend 910C (superPod): the webhook turns 1 NPU into 2; only a full 2-NPU module
    # (index // 2) is taken, its NPUs in candidate order; NPU-0 is unhealthy so module 0 is
    # not full (ascend/device.go:119-147, 582-590, 677-733); RuntimeInfo omits empty fields
    (
        "ascend-910c-module",
        [kube_node("c", {"hami.io/node-register-Ascend910C": NPU_910C})],
        [],
        kube_pod("p", [("c", {"huawei.com/Ascend910C": "1"})]),
        VNPUS_910C,
        {"devices": {"ascend": {"enabled": True}}},
        (
            "c",
            [("NPU-3", 65536, 0), ("NPU-2", 65536, 0)],
            {
                "hami.io/Ascend910C-devices-to-allocate": "NPU-3,Ascend910C,65536,0:NPU-2,Ascend910C,65536,0:;",  # noqa: E501
                "huawei.com/Ascend910C": '[{"UUID":"NPU-3","memory":65536},'
                '{"UUID":"NPU-2","memory":65536}]',
            },
        ),
    ),
]


def _shapes(device_config, values):
    yield "device-config", device_config
    yield "configmap", configmap(device_config)
    if values is not None:
        yield "values", values


@pytest.mark.parametrize(
    ("case", "nodes", "pods", "pod", "device_config", "values", "want"),
    CASES,
    ids=[c[0] for c in CASES],
)
def test_place_answers_as_hami(case, nodes, pods, pod, device_config, values, want):
    node, devices, annotations = want
    for shape, config in _shapes(device_config, values):
        out = place_from_kube(nodes, pods, pod, config=config)
        assert out["schedulable"] is True, (shape, out)
        assert out["node"] == node, shape
        got = [
            (d["uuid"], d["memory_mib"], d["cores_percent"])
            for c in out["containers"]
            for d in c["devices"]
        ]
        assert got == devices, shape
        for key, value in annotations.items():
            assert out["annotations"][key] == value, (shape, key)


def test_kunlun_whole_xpus_and_node_score():
    """Count 2 on an idle 8-XPU node: the left wing (indices 0, 1; topo.go:208-268), TYPE
    ``kunlun``; node score: bubbles 1 before, 2 after -> 1000 (topo.go:50-97)."""
    out = place_from_kube(
        [kube_node("k", capacity={"kunlunxin.com/xpu": "8"})],
        [],
        kube_pod("p", [("c", {"kunlunxin.com/xpu": "2"})]),
    )
    value = out["annotations"]["hami.io/kunlun-allocated"]
    entries = [e.split(",") for e in value.rstrip(";").split(":") if e]
    assert [(e[1], e[2], e[3]) for e in entries] == [("kunlun", "98304", "100")] * 2
    assert [e[0] for e in entries] == ["k-kunlun-0", "k-kunlun-1"]  # device.go:73
    assert out["node_scores"] == {"k": 1000.0}


def test_the_chart_default_leaves_ascend_to_no_one():
    """devices.ascend.enabled defaults to false: HAMi runs no Ascend backend, so the pod's
    huawei.com resources get no devices from HAMi (deployment.yaml:119-124)."""
    pod = kube_pod("p", [("c", {"huawei.com/Ascend910B3": "1"})])
    nodes = [kube_node("npu", {"hami.io/node-register-Ascend910B3": ASCEND_REG})]
    out = place_from_kube(nodes, [], pod, config={"schedulerName": "hami-scheduler"})
    assert out["containers"] == [{"name": "c", "devices": []}]


def test_neuron_two_devices_on_trn1_are_not_an_aligned_run():
    """``neuroncore: 4`` is 2 devices; outside inf* instances graphSelect only takes runs of
    1, 4, 8 or 16 (awsneuron/device.go graphSelect): NumaNotFit, as HAMi answers."""
    out = place_from_kube([TRN1], [], kube_pod("p", [("c", {"aws.amazon.com/neuroncore": "4"})]))
    assert out == {"schedulable": False, "reasons": {"n": "1/4 NumaNotFit"}}


def test_a_registered_type_without_the_vendor_word_is_not_offered():
    """HAMi offers a request only the devices whose registered type contains its type
    (``getNodeResources``, score.go:43-52): an AMD card registered as ``MI300X`` is never
    chosen (the AMD plugin registers ``AMD-<product>``); the console's own cycle is not
    bound by this."""
    reg = json.dumps(
        [
            {
                "id": "AMD-0",
                "index": 0,
                "count": 10,
                "devmem": 196608,
                "devcore": 304,
                "type": "MI300X",
                "health": True,
            }
        ]
    )
    out = place_from_kube(
        [kube_node("a", {"hami.io/node-amd-register": reg})],
        [],
        kube_pod("p", [("c", {"amd.com/gpu": "1"})]),
    )
    assert out["schedulable"] is False
    assert out["reasons"]["a"].startswith("NodeInsufficientDevice")
