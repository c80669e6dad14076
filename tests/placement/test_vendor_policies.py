"""binpack vs spread for every vendor path, on the console's own path and through ``place``.

One node per vendor word of ``VENDOR_PLUGINS`` (HAMi's registration of that vendor: register
annotation, or capacity for the vendors HAMi reads from capacity), one running pod on one of
its devices, and a new pod asking for a share of one device. The console's cycle runs the
same inventory codec and placement core with the console profile; ``place`` is the command
line ``manage.py place`` runs (:mod:`scheduling.kube.hami.cli`) with ``--device-policy``.

Console: binpack takes the used device, spread an idle one, for every vendor that can share
a device; the whole-card paths (Metax GPU, Enflame GCU, Kunlun XPU: a used card takes no
second task) take an idle card under both. ``place`` answers as HAMi v2.10, which differs
for two paths (docs/devices.md, "Device policy"): Kunlun vXPU walks its wings over the
policy-sorted list from the front (spread takes the used XPU, binpack an idle one) and AWS
Neuron devices register no memory, so every device scores 0 and both policies take the last.
"""

import json

import pytest
from placement_builders import kube_node, kube_pod

from scheduling.devices.hami_files import read_hami_config
from scheduling.kube.hami import (
    apply_existing_pods,
    place_from_kube,
    pod_request_from_kube,
    snapshot_from_kube,
)
from scheduling.kube.hami.cli import main as place_main
from scheduling.placement import Profile, place
from scheduling.placement.types import PlacementRequest
from scheduling.placement.vendors import VENDOR_PLUGINS


def register(ids, typ, count, mem, core, **extra):
    """A JSON register annotation (``MarshalNodeDevices``) of healthy devices."""
    return json.dumps(
        [
            {
                "id": u,
                "index": i,
                "count": count,
                "devmem": mem,
                "devcore": core,
                "type": typ,
                "health": True,
                **extra,
            }
            for i, u in enumerate(ids)
        ]
    )


def running(key, value):
    """A running pod HAMi accounts for on node ``n`` (its allocation annotation)."""
    return {
        "metadata": {"name": "old", "annotations": {"hami.io/vgpu-node": "n", key: value}},
        "spec": {"containers": [{"name": "c"}]},
        "status": {"phase": "Running"},
    }


ASCEND_CONFIG = {
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
DRS = {
    "devices": [
        {"index": "0", "minor": "0", "capacity": 6},
        {"index": "1", "minor": "1", "capacity": 6},
    ],
    "profiles": {"1g.8gb": "p1", "3g.24gb": "p3", "6g.48gb": "p6"},
}
# Metax sGPU: the plugin's own entries (HAMi MetaxSDeviceInfo, metax/protocol.go:50-64)
METAX_SGPU = [
    {
        "uuid": f"MX-{i}",
        "model": "MXC500",
        "totalDevCount": 16,
        "totalCompute": 100,
        "totalVRam": 65536,
        "healthy": True,
    }
    for i in range(2)
]
AMD_TYPE = "AMD Instinct MI300X VF"  # as registered (HAMi's docs/develop/amd-vgpu.md)

# vendor word: (node "n", its device uuids, (allocation key, value on the used device {u}),
#   the new pod's limits, HAMi device config or None, the new pod's allocation annotation
#   on an idle node (key, value))
CASES = {
    "NVIDIA": (
        kube_node(
            "n",
            {
                "hami.io/node-nvidia-register": register(
                    ["GPU-0", "GPU-1"], "NVIDIA A100-SXM4-80GB", 10, 81920, 100, mode="hami-core"
                )
            },
        ),
        ["GPU-0", "GPU-1"],
        ("hami.io/vgpu-devices-allocated", "{u},NVIDIA,10000,10:;"),
        {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "10000", "nvidia.com/gpucores": "10"},
        None,
        ("hami.io/vgpu-devices-allocated", "GPU-1,NVIDIA,10000,10:;"),
    ),
    "MLU": (
        kube_node(
            "n",
            capacity={
                "cambricon.com/mlu.smlu.vcore": "200",
                "cambricon.com/mlu.smlu.vmemory": "192",
            },
        ),
        ["n-cambricon-mlu-0", "n-cambricon-mlu-1"],
        ("hami.io/cambricon-mlu-devices-allocated", "{u},MLU,2560,10:;"),
        {
            "cambricon.com/vmlu": "1",
            "cambricon.com/mlu.smlu.vmemory": "10",
            "cambricon.com/mlu.smlu.vcore": "10",
        },
        None,
        ("hami.io/cambricon-mlu-devices-allocated", "n-cambricon-mlu-1,MLU,2560,10:;"),
    ),
    "DCU": (
        kube_node(
            "n",
            {
                "hami.io/node-dcu-register": "DCU-0,4,16368,100,DCU_Z100,0,true:"
                "DCU-1,4,16368,100,DCU_Z100,0,true:"
            },
        ),
        ["DCU-0", "DCU-1"],
        ("hami.io/dcu-devices-allocated", "{u},DCU,2000,10:;"),
        {"hygon.com/dcunum": "1", "hygon.com/dcumem": "2000", "hygon.com/dcucores": "10"},
        None,
        ("hami.io/dcu-devices-allocated", "DCU-1,DCU,2000,10:;"),
    ),
    "Ascend": (
        kube_node(
            "n",
            {
                "hami.io/node-register-Ascend910B3": register(
                    ["NPU-0", "NPU-1"], "Ascend910B3", 4, 65536, 20
                )
            },
        ),
        ["NPU-0", "NPU-1"],
        ("hami.io/Ascend910B3-devices-allocated", "{u},Ascend910B3,16384,5:;"),
        {"huawei.com/Ascend910B3": "1", "huawei.com/Ascend910B3-memory": "16000"},
        ASCEND_CONFIG,
        ("hami.io/Ascend910B3-devices-allocated", "NPU-1,Ascend910B3,16384,0:;"),
    ),
    "Metax": (
        kube_node("n", capacity={"metax-tech.com/gpu": "2"}),
        ["n-metax-0", "n-metax-1"],
        ("hami.io/metax-gpu-devices-allocated", "{u},Metax-GPU,65536,100:;"),
        {"metax-tech.com/gpu": "1"},
        None,
        ("hami.io/metax-gpu-devices-allocated", "n-metax-1,Metax-GPU,65536,100:;"),
    ),
    "MetaxSGPU": (
        kube_node("n", {"metax-tech.com/node-gpu-devices": json.dumps(METAX_SGPU)}),
        ["MX-0", "MX-1"],
        ("hami.io/metax-sgpu-devices-allocated", "{u},Metax-SGPU,4096,10:;"),
        {"metax-tech.com/sgpu": "1", "metax-tech.com/vmemory": "4", "metax-tech.com/vcore": "10"},
        None,
        ("hami.io/metax-sgpu-devices-allocated", "MX-1,Metax-SGPU,4096,10:;"),
    ),
    "Iluvatar": (
        kube_node(
            "n",
            {
                "hami.io/node-BI-V150-register": "IL-0,10,32768,100,BI-V150,0,true:"
                "IL-1,10,32768,100,BI-V150,0,true:"
            },
        ),
        ["IL-0", "IL-1"],
        ("hami.io/BI-V150-devices-allocated", "{u},BI-V150,2048,10:;"),
        {
            "iluvatar.ai/BI-V150-vgpu": "1",
            "iluvatar.ai/BI-V150.vMem": "8",
            "iluvatar.ai/BI-V150.vCore": "10",
        },
        None,
        ("hami.io/BI-V150-devices-allocated", "IL-1,BI-V150,2048,10:;"),
    ),
    "Enflame": (
        kube_node("n", capacity={"enflame.com/gcu": "2"}),
        ["n-GCU-0", "n-GCU-1"],
        ("hami.io/enflame-gcu-devices-allocated", "{u},GCU,100,100:;"),
        {"enflame.com/gcu": "1"},
        None,
        ("hami.io/enflame-gcu-devices-allocated", "n-GCU-1,GCU,100,100:;"),
    ),
    "Mthreads": (
        kube_node(
            "n", capacity={"mthreads.com/sgpu-core": "32", "mthreads.com/sgpu-memory": "192"}
        ),
        ["n-mthreads-0", "n-mthreads-1"],
        ("hami.io/mthreads-vgpu-devices-allocated", "{u},Mthreads,4096,4:;"),
        {"mthreads.com/vgpu": "1", "mthreads.com/sgpu-memory": "8", "mthreads.com/sgpu-core": "4"},
        None,
        ("hami.io/mthreads-vgpu-devices-allocated", "n-mthreads-1,Mthreads,4096,4:;"),
    ),
    "Kunlun": (
        kube_node("n", capacity={"kunlunxin.com/xpu": "8"}),
        [f"n-kunlun-{i}" for i in range(8)],
        ("hami.io/kunlun-allocated", "{u},kunlun,98304,100:;"),
        {"kunlunxin.com/xpu": "1"},
        None,
        ("hami.io/kunlun-allocated", "n-kunlun-0,kunlun,98304,100:;"),
    ),
    "KunlunVXPU": (
        kube_node(
            "n", {"hami.io/node-register-xpu": register(["XPU-0", "XPU-1"], "XPU", 4, 98304, 100)}
        ),
        ["XPU-0", "XPU-1"],
        ("hami.io/xpu-devices-allocated", "{u},XPU,24576,25:;"),
        {"kunlunxin.com/vxpu": "1", "kunlunxin.com/vxpu-memory": "20000"},
        None,
        ("hami.io/xpu-devices-allocated", "XPU-0,XPU,24576,25:;"),
    ),
    "AMD": (
        kube_node(
            "n",
            {"hami.io/node-amd-register": register(["AMD-0", "AMD-1"], AMD_TYPE, 10, 196608, 304)},
        ),
        ["AMD-0", "AMD-1"],
        ("hami.io/amd-devices-allocated", "{u}," + AMD_TYPE + ",10000,30:;"),
        {"amd.com/gpu": "1", "amd.com/gpumem": "10000", "amd.com/gpucores": "10"},
        None,
        ("hami.io/amd-devices-allocated", f"AMD-1,{AMD_TYPE},10000,30:;"),
    ),
    "EnflameDRS": (
        kube_node("n", {"enflame.com/gcu-drs-capacity": json.dumps(DRS)}),
        ["n-enflame-drs-0", "n-enflame-drs-1"],
        ("hami.io/enflame-vgpu-devices-allocated", "{u},Enflame,8192,17:;"),
        {"enflame.com/drs-gcu": "1"},
        None,
        ("hami.io/enflame-vgpu-devices-allocated", "n-enflame-drs-1,Enflame,8192,17:;"),
    ),
    "AWSNeuron": (
        kube_node(
            "n",
            capacity={"aws.amazon.com/neuron": "2", "aws.amazon.com/neuroncore": "4"},
            labels={"node.kubernetes.io/instance-type": "trn1.32xlarge"},
        ),
        ["n-AWSNeuron-0", "n-AWSNeuron-1"],
        ("hami.io/aws-neuron-devices-allocated", "{u},AWSNeuron,0,1:;"),
        {"aws.amazon.com/neuroncore": "1"},
        None,
        ("hami.io/aws-neuron-devices-allocated", "n-AWSNeuron-1,AWSNeuron,0,1:;"),
    ),
    "Vastai": (
        kube_node(
            "n", {"hami.io/node-va-register": register(["VA-0", "VA-1"], "Vastai", 4, 16384, 100)}
        ),
        ["VA-0", "VA-1"],
        ("hami.io/Vastai-devices-allocated", "{u},Vastai,0,0:;"),
        {"vastaitech.com/va": "1"},
        None,
        ("hami.io/Vastai-devices-allocated", "VA-1,Vastai,0,0:;"),
    ),
    "Biren": (
        kube_node(
            "n", {"hami.io/node-biren-register": register(["BR-0", "BR-1"], "Biren", 4, 65536, 100)}
        ),
        ["BR-0", "BR-1"],
        ("hami.io/Biren-devices-allocated", "{u},Biren,0,0:;"),
        {"birentech.com/gpu": "1"},
        None,
        ("hami.io/Biren-devices-allocated", "BR-1,Biren,0,0:;"),
    ),
}
WHOLE_CARD = {"Metax", "Enflame", "Kunlun"}
"""Vendor paths whose cards take one task: no policy can put a second task on a used card."""

# (vendor, index of the used device) -> (binpack's device, spread's device), where a path's
# answer is not "binpack: the used device, spread: the other one"
CONSOLE_EXCEPTIONS = {
    ("Metax", 0): ("n-metax-1", "n-metax-1"),
    ("Metax", 1): ("n-metax-0", "n-metax-0"),
    ("Enflame", 0): ("n-GCU-1", "n-GCU-1"),
    ("Enflame", 1): ("n-GCU-0", "n-GCU-0"),
    # the lower wing's lowest free XPU (3 free there: topo.go:247-263)
    ("Kunlun", 0): ("n-kunlun-1", "n-kunlun-1"),
    ("Kunlun", 1): ("n-kunlun-0", "n-kunlun-0"),
}
PLACE_EXCEPTIONS = {
    **{k: v for k, v in CONSOLE_EXCEPTIONS.items() if k[0] != "Kunlun"},
    # HAMi walks the wings over the policy-sorted list (score.go:89-105, topo.go:222-268):
    # binpack's list ends with the used XPU, so positions 4-7 hold 3 free XPUs and the walk
    # takes position 4 (n-kunlun-5); spread's list starts with it, as the index order does
    ("Kunlun", 0): ("n-kunlun-5", "n-kunlun-1"),
    ("Kunlun", 1): ("n-kunlun-5", "n-kunlun-0"),
    # the same walk takes a vXPU slice from the front of the sorted list: spread's front is
    # the used XPU, binpack's an idle one (vdevice.go:231-257)
    ("KunlunVXPU", 0): ("XPU-1", "XPU-0"),
    ("KunlunVXPU", 1): ("XPU-0", "XPU-1"),
    # Devmem 0 (awsneuron/device.go:178-190): every device scores 0 (gpu_policy.go:195-198),
    # Fit takes the last device under either policy
    ("AWSNeuron", 0): ("n-AWSNeuron-1", "n-AWSNeuron-1"),
    ("AWSNeuron", 1): ("n-AWSNeuron-1", "n-AWSNeuron-1"),
}


def test_every_registered_vendor_path_has_a_case():
    assert set(CASES) == set(VENDOR_PLUGINS)
    assert len(CASES) == 16


def _expected(vendor, used, exceptions):
    _, ids, *_ = CASES[vendor]
    if (vendor, used) in exceptions:
        return exceptions[(vendor, used)]
    other = next(u for i, u in enumerate(ids) if i != used)
    return ids[used], other


def _inputs(vendor, used):
    node, ids, (key, value), limits, config, _ = CASES[vendor]
    return node, [running(key, value.format(u=ids[used]))], kube_pod("p", [("c", limits)]), config


def console_choice(vendor, used, policy):
    """The device the console's cycle gives the new pod: the inventory codec reads the node
    and the running pod, the core places with the console profile."""
    node, pods, pod, config = _inputs(vendor, used)
    configs = list(read_hami_config(config).devices)
    snapshot = snapshot_from_kube([node], configs)
    apply_existing_pods(snapshot, pods, configs)
    request = PlacementRequest("p", (pod_request_from_kube(pod, configs),))
    profile = Profile(device_policy=policy, device_configs=tuple(configs))
    decision = place(snapshot, request, profile)
    assert decision.schedulable, decision.reasons
    return [g.uuid for c in decision.pods[0].containers for g in c.devices]


def run_place(tmp_path, capsys, nodes, pods, pod, config, *args):
    """``manage.py place`` (its command line, in process) on these objects; its JSON."""
    files = []
    for name, data in (("nodes", nodes), ("pods", pods), ("pod", pod), ("config", config)):
        if data is None:
            continue
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(data))
        files += [f"--{name}", str(path)]
    assert place_main([*files, *args]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("used", [0, 1], ids=["used-first", "used-second"])
@pytest.mark.parametrize("vendor", list(CASES))
def test_console_binpack_takes_the_used_device_and_spread_an_idle_one(vendor, used):
    binpack, spread = _expected(vendor, used, CONSOLE_EXCEPTIONS)
    assert console_choice(vendor, used, "binpack") == [binpack]
    assert console_choice(vendor, used, "spread") == [spread]
    if vendor not in WHOLE_CARD:
        assert binpack == CASES[vendor][1][used] != spread


@pytest.mark.parametrize("used", [0, 1], ids=["used-first", "used-second"])
@pytest.mark.parametrize("vendor", list(CASES))
def test_place_binpack_and_spread_answer_as_hami(vendor, used, tmp_path, capsys):
    node, pods, pod, config = _inputs(vendor, used)
    binpack, spread = _expected(vendor, used, PLACE_EXCEPTIONS)
    for policy, want in (("binpack", binpack), ("spread", spread)):
        out = run_place(tmp_path, capsys, [node], pods, pod, config, "--device-policy", policy)
        assert out["schedulable"] is True, (policy, out)
        assert [d["uuid"] for c in out["containers"] for d in c["devices"]] == [want], policy


@pytest.mark.parametrize("vendor", list(CASES))
def test_place_on_a_minimal_node_with_free_devices(vendor, tmp_path, capsys):
    """No pod running: the HAMi default policy (spread) places the pod; the allocation
    annotation names the device, HAMi's TYPE, the booked MiB and cores."""
    node, _, _, limits, config, (key, value) = CASES[vendor]
    out = run_place(tmp_path, capsys, [node], [], kube_pod("p", [("c", limits)]), config)
    assert out["schedulable"] is True, out
    assert out["node"] == "n"
    assert out["annotations"][key] == value
    uuid, _, mem, cores = value.rstrip(":;").split(",")
    device = out["containers"][0]["devices"][0]
    assert (device["uuid"], device["memory_mib"]) == (uuid, int(mem))
    if vendor != "AWSNeuron":  # the annotation carries Neuron's core bit mask
        assert device["cores_percent"] == int(cores)


def test_console_vxpu_slices_fill_a_wing_in_the_policy_order():
    """Two vXPU slices on an 8-XPU node with one quarter slice on XPU-2: every wing has 4
    XPUs that fit, the walk takes the lower wing (topo.go:247-262), inside it binpack
    starts with the used XPU and spread with the idle ones (later ones first, as HAMi's
    stable sort leaves equal scores)."""
    node = kube_node(
        "n",
        {
            "hami.io/node-register-xpu": register(
                [f"XPU-{i}" for i in range(8)], "XPU", 4, 98304, 100
            )
        },
    )
    pods = [running("hami.io/xpu-devices-allocated", "XPU-2,XPU,24576,25:;")]
    pod = kube_pod("p", [("c", {"kunlunxin.com/vxpu": "2", "kunlunxin.com/vxpu-memory": "20000"})])
    configs = list(read_hami_config(None).devices)
    snapshot = snapshot_from_kube([node], configs)
    apply_existing_pods(snapshot, pods, configs)
    request = PlacementRequest("p", (pod_request_from_kube(pod, configs),))
    got = {}
    for policy in ("binpack", "spread"):
        d = place(snapshot, request, Profile(device_policy=policy, device_configs=tuple(configs)))
        got[policy] = [g.uuid for g in d.pods[0].containers[0].devices]
    assert got == {"binpack": ["XPU-2", "XPU-3"], "spread": ["XPU-3", "XPU-1"]}


def test_place_offers_a_metax_sgpu_of_any_model():
    """HAMi types every sGPU ``Metax-SGPU`` (metax/protocol.go:112), so a registration in the
    common format whose type is the model (``MXC500``) is placed as before."""
    reg = register(["S-0", "S-1"], "MXC500", 16, 65536, 100)
    out = place_from_kube(
        [kube_node("m", {"metax-tech.com/node-gpu-devices": reg})],
        [],
        kube_pod("p", [("c", {"metax-tech.com/sgpu": "1", "metax-tech.com/vmemory": "4"})]),
    )
    assert out["annotations"]["hami.io/metax-sgpu-devices-allocated"] == (
        "S-1,Metax-SGPU,4096,100:;"
    )


@pytest.mark.parametrize(
    ("annotation", "typ", "limits", "word"),
    [
        ("hami.io/node-amd-register", "MI300X", {"amd.com/gpu": "1"}, "AMD"),
        ("hami.io/node-register-xpu", "P800", {"kunlunxin.com/vxpu": "1"}, "XPU"),
    ],
    ids=["amd", "kunlun-vxpu"],
)
def test_place_refuses_a_registered_type_without_the_vendor_word_as_hami(
    annotation, typ, limits, word
):
    """HAMi keeps AMD's and Kunlun vXPU's registered type (amd/device.go:114-116,
    kunlun/vdevice.go:113-115) and offers a request only devices whose type contains the
    request's (``AMD``, ``XPU``; getNodeResources, score.go:43-52): such a node is refused,
    and the reason says why. The console's own cycle places them."""
    nodes = [kube_node("n", {annotation: register(["D-0", "D-1"], typ, 4, 98304, 100)})]
    pod = kube_pod("p", [("c", limits)])
    out = place_from_kube(nodes, [], pod)
    assert out["schedulable"] is False
    assert out["reasons"]["n"] == (
        f"NodeInsufficientDevice: 1 {'AMD' if word == 'AMD' else 'KunlunVXPU'} requested, "
        f"0 on node (2 registered with a type without {word!r}, which HAMi does not offer: "
        "getNodeResources, pkg/scheduler/score.go:43-52)"
    )
    configs = list(read_hami_config(None).devices)
    snapshot = snapshot_from_kube(nodes, configs)
    request = PlacementRequest("p", (pod_request_from_kube(pod, configs),))
    assert place(snapshot, request, Profile(device_configs=tuple(configs))).schedulable


def test_metax_sgpu_registration_is_read_as_its_plugin_writes_it():
    """``metax-tech.com/node-gpu-devices`` entries (metax/protocol.go:50-64, 102-127): index
    = position, count / memory / cores from ``totalDevCount`` / ``totalVRam`` /
    ``totalCompute``, a missing ``healthy`` is false, ``qosPolicy`` is the device's."""
    entries = [
        {**METAX_SGPU[0], "numa": 1, "qosPolicy": "fixed-share"},
        {"uuid": "MX-9", "model": "MXC500", "totalDevCount": 8, "totalVRam": 32768},
    ]
    n = snapshot_from_kube(
        [kube_node("m", {"metax-tech.com/node-gpu-devices": json.dumps(entries)})],
        list(read_hami_config(None).devices),
    ).nodes["m"]
    assert n.error is None
    got = [
        (d.uuid, d.index, d.type, d.vendor, d.split_count, d.memory_mib, d.cores_percent)
        + (d.numa, d.healthy, d.qos_policy)
        for d in n.devices
    ]
    assert got == [
        ("MX-0", 0, "MXC500", "MetaxSGPU", 16, 65536, 100, 1, True, "fixed-share"),
        ("MX-9", 1, "MXC500", "MetaxSGPU", 8, 32768, 0, 0, False, ""),
    ]
    bad = [{**METAX_SGPU[0], "totalVRam": -1}]
    n = snapshot_from_kube(
        [kube_node("m", {"metax-tech.com/node-gpu-devices": json.dumps(bad)})],
        list(read_hami_config(None).devices),
    ).nodes["m"]
    assert n.error.startswith("metax-tech.com/node-gpu-devices[0].totalVRam: ")


def test_metax_sgpu_qos_policy_binds_only_a_used_device():
    """A shared pod joins a used sGPU only when its QoS policy is the device's; an idle sGPU
    takes any policy (checkDeviceQos, sdevice.go:528-535)."""
    entries = [{**e, "qosPolicy": "fixed-share"} for e in METAX_SGPU]
    node = kube_node("n", {"metax-tech.com/node-gpu-devices": json.dumps(entries)})
    pods = [running("hami.io/metax-sgpu-devices-allocated", "MX-0,Metax-SGPU,4096,10:;")]
    limits = {
        "metax-tech.com/sgpu": "1",
        "metax-tech.com/vmemory": "4",
        "metax-tech.com/vcore": "10",
    }
    best_effort = kube_pod("p", [("c", limits)])  # the webhook's default policy
    fixed = kube_pod("p", [("c", limits)], {"metax-tech.com/sgpu-qos-policy": "fixed-share"})
    for pod, want in ((best_effort, "MX-1"), (fixed, "MX-0")):
        out = place_from_kube([node], pods, pod, device_policy="binpack")
        assert [d["uuid"] for d in out["containers"][0]["devices"]] == [want]
