"""HAMi I/O and place_from_kube: annotations and manifests as users have them."""

import json
import os
import re
import subprocess
import sys

import pytest
from placement_builders import kube_node, kube_pod, nvidia_register

from scheduling.devices.hami_files import read_hami_config
from scheduling.kube.hami import (
    decode_pod_devices,
    encode_pod_devices,
    node_from_kube,
    place_from_kube,
    pod_request_from_kube,
    snapshot_from_kube,
)
from scheduling.placement.types import DeviceGrant
from scheduling.placement.vendors import default_device_configs

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "hami")
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CFGS = default_device_configs()


def load(name):
    with open(os.path.join(FIX, name)) as fh:
        return json.load(fh)


def test_legacy_and_json_registration_formats():
    n = node_from_kube(
        kube_node(
            "h",
            {
                "hami.io/node-dcu-register": "DCU-0,4,16368,100,DCU_Z100,0,true:"
                "DCU-1,4,16368,100,DCU_Z100,1,false,5,hami-core:"
            },
        ),
        CFGS,
    )
    assert n.error is None
    d0, d1 = n.devices
    assert (
        d0.uuid,
        d0.split_count,
        d0.memory_mib,
        d0.type,
        d0.vendor,
        d0.numa,
        d0.healthy,
        d0.index,
        d0.mode,
    ) == ("DCU-0", 4, 16368, "DCU_Z100", "DCU", 0, True, 0, "hami-core")
    assert (d1.healthy, d1.index, d1.numa) == (False, 5, 1)
    j = node_from_kube(
        kube_node(
            "g",
            {
                "hami.io/node-nvidia-register": json.dumps(
                    [
                        {
                            "id": "GPU-a",
                            "count": 10,
                            "devmem": 81920,
                            "devcore": 100,
                            "type": "NVIDIA A100-SXM4-80GB",
                            "numa": 1,
                            "mode": "hami-core",
                        }
                    ]
                )
            },
        ),
        CFGS,
    )
    # missing health means false, missing index means 0
    assert (j.devices[0].healthy, j.devices[0].index, j.devices[0].numa) == (False, 0, 1)


def test_malformed_annotation_flags_only_that_node():
    out = place_from_kube(
        load("nvidia_nodes.json"),
        [],
        kube_pod("p", [("c", {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "1000"})]),
    )
    assert out["schedulable"] is True
    bad = place_from_kube(
        load("nvidia_nodes.json"), [], kube_pod("p", [("c", {"nvidia.com/gpu": "9"})])
    )
    assert bad["reasons"]["gpu-broken"].startswith(
        "NodeRegistrationError: hami.io/node-nvidia-register: invalid JSON"
    )
    assert bad["reasons"]["gpu-b"] == "NodeInsufficientDevice: 9 NVIDIA requested, 1 on node"


def test_duplicate_uuid_on_two_nodes_is_a_conflict_not_a_merge():
    reg = nvidia_register([("GPU-dup", 10, 16384, "T4", 0)])
    snap = snapshot_from_kube(
        [
            kube_node("a", {"hami.io/node-nvidia-register": reg}),
            kube_node("b", {"hami.io/node-nvidia-register": reg}),
        ],
        CFGS,
    )
    assert snap.errors == [
        "device 'GPU-dup' registered on nodes 'a' and 'b'; both copies are kept out of placement"
    ]
    assert [len(n.devices) for n in snap.nodes.values()] == [1, 1]
    assert not any(d.healthy for n in snap.nodes.values() for d in n.devices)


def test_handshake_staleness_and_cordon():
    from datetime import UTC, datetime

    ann = {
        "hami.io/node-dcu-register": "DCU-0,4,16368,100,Z100,0,true:",
        "hami.io/node-handshake-dcu": "Requesting_2026-01-01 10:00:00",
        "hami.io/device-cordon": "DCU-0",
    }
    fresh = node_from_kube(
        kube_node("h", ann), CFGS, now=datetime(2026, 1, 1, 10, 0, 30, tzinfo=UTC)
    )
    stale = node_from_kube(
        kube_node("h", ann), CFGS, now=datetime(2026, 1, 1, 10, 1, 1, tzinfo=UTC)
    )
    assert fresh.devices[0].healthy and not stale.devices[0].healthy
    assert stale.devices[0].cordoned
    alloc = node_from_kube(
        kube_node("h", ann, allocatable={"hygon.com/dcunum": "4"}),
        CFGS,
        now=datetime(2026, 1, 1, 10, 5, 0, tzinfo=UTC),
    )
    assert alloc.devices[0].healthy


def test_encode_decode_keep_empty_container_entries():
    g = DeviceGrant("GPU-0fc3", "NVIDIA", 3000, 0)
    h = DeviceGrant("GPU-0fc3", "NVIDIA", 5000, 0)
    s = encode_pod_devices([[g], [], [h]])
    assert s == "GPU-0fc3,NVIDIA,3000,0:;;GPU-0fc3,NVIDIA,5000,0:;"
    assert decode_pod_devices(s) == [
        [("GPU-0fc3", "NVIDIA", 3000, 0)],
        [],
        [("GPU-0fc3", "NVIDIA", 5000, 0)],
    ]
    with pytest.raises(ValueError, match="UUID,TYPE,MEM,CORES"):
        decode_pod_devices("GPU-0,NVIDIA,3000:;")


def test_pod_request_nvidia_defaults():
    def req(limits, ann=None):
        pod = pod_request_from_kube(kube_pod("p", [("c", limits)], ann), CFGS)
        return pod.containers[0].devices[0]

    r = req({"nvidia.com/gpu": "2"})
    assert (r.count, r.memory_mib, r.memory_percent, r.cores_percent) == (2, 0, None, 100)
    r = req({"nvidia.com/gpu": "1", "nvidia.com/gpumem-percentage": "100"})
    assert (r.memory_percent, r.cores_percent) == (100, 100)
    r = req({"nvidia.com/gpu": "1", "nvidia.com/gpumem": "3000"})
    assert (r.memory_mib, r.cores_percent) == (3000, 0)
    r = req({"nvidia.com/gpumem-percentage": "30"})
    assert (r.count, r.memory_percent, r.cores_percent) == (1, 30, 0)
    r = req(
        {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "10"},
        {
            "nvidia.com/use-gputype": "A100-SXM4-80GB, H100",
            "nvidia.com/numa-bind": "true",
            "nvidia.com/nouse-gpuuuid": "GPU-1",
            "nvidia.com/vgpu-mode": "mig",
        },
    )
    assert (r.types_include, r.uuids_exclude, r.numa_bind, r.modes) == (
        ("A100-SXM4-80GB", "H100"),
        ("GPU-1",),
        True,
        ("mig",),
    )
    with pytest.raises(
        ValueError,
        match=r"pod.spec.containers\[0\].resources.limits."
        r"nvidia.com/gpumem: '16Gi' must be a plain",
    ):
        req({"nvidia.com/gpu": "1", "nvidia.com/gpumem": "16Gi"})
    with pytest.raises(ValueError, match="outside 0..100"):
        req({"nvidia.com/gpu": "1", "nvidia.com/gpumem-percentage": "120"})
    cfg = read_hami_config({"nvidia": {"defaultMemory": 2000, "memoryFactor": 2}}).devices
    pod = pod_request_from_kube(kube_pod("p", [("c", {"nvidia.com/gpu": "1"})]), list(cfg))
    assert (
        pod.containers[0].devices[0].memory_mib,
        pod.containers[0].devices[0].cores_percent,
    ) == (2000, 0)
    pod = pod_request_from_kube(kube_pod("p", [("c", {"nvidia.com/gpumem": "1000"})]), list(cfg))
    assert pod.containers[0].devices[0].memory_mib == 2000


def test_config_errors_name_the_key():
    with pytest.raises(ValueError, match="config nvidia.deviceSplitCont: unknown key"):
        read_hami_config({"nvidia": {"deviceSplitCont": 3}})
    with pytest.raises(ValueError, match="unknown key"):
        read_hami_config({"nvidai": {}})


def test_place_from_kube_nvidia_fixture_existing_usage_and_policies():
    nodes, pods = load("nvidia_nodes.json"), load("nvidia_pods.json")
    import yaml

    with open(os.path.join(FIX, "pod_nvidia_share.yaml")) as fh:
        pod = yaml.safe_load(fh)
    out = place_from_kube(nodes, pods, pod)
    # gpu-a usage (done-1 Succeeded is ignored): 10*(1/40 + 30/400 + 20000/327680)
    assert out == {
        "schedulable": True,
        "node": "gpu-a",
        "containers": [
            {
                "name": "main",
                "devices": [
                    {
                        "uuid": "GPU-a100-2",
                        "type": "NVIDIA A100-SXM4-80GB",
                        "memory_mib": 10000,
                        "cores_percent": 20,
                    }
                ],
            }
        ],
        "annotations": {
            "hami.io/vgpu-node": "gpu-a",
            "hami.io/vgpu-devices-to-allocate": "GPU-a100-2,NVIDIA,10000,20:;",
            "hami.io/vgpu-devices-allocated": "GPU-a100-2,NVIDIA,10000,20:;",
        },
        "node_scores": {"gpu-a": 1.610352, "gpu-b": 0.0},
    }
    packed = place_from_kube(nodes, pods, pod, device_policy="binpack")
    assert packed["containers"][0]["devices"][0]["uuid"] == "GPU-a100-3"
    spread = place_from_kube(nodes, pods, pod, node_policy="spread")
    assert spread["node"] == "gpu-b"


def test_place_from_kube_mig():
    reg = json.dumps(
        [
            {
                "id": "GPU-m",
                "index": 0,
                "count": 7,
                "devmem": 81920,
                "devcore": 100,
                "type": "NVIDIA A100-SXM4-80GB",
                "mode": "mig",
                "health": True,
                "migProfiles": [
                    {
                        "name": "1g.10gb",
                        "memoryMB": 9856,
                        "core": 14,
                        "sliceCount": 1,
                        "placements": [{"start": i, "size": 1} for i in range(7)],
                    },
                    {
                        "name": "3g.40gb",
                        "memoryMB": 40192,
                        "core": 42,
                        "sliceCount": 3,
                        "placements": [{"start": 0, "size": 4}, {"start": 4, "size": 4}],
                    },
                ],
            }
        ]
    )
    existing = {
        "metadata": {
            "name": "old",
            "annotations": {
                "hami.io/vgpu-node": "m",
                "hami.io/vgpu-devices-allocated": "GPU-m,NVIDIA,40192,42:;",
                "hami.io/vgpu-mig-allocations": json.dumps(
                    [
                        {
                            "containerIndex": 0,
                            "deviceIndex": 0,
                            "gpuUUID": "GPU-m",
                            "profile": "3g.40gb",
                            "placement": {"start": 4, "size": 4},
                        }
                    ]
                ),
            },
        },
        "spec": {"containers": [{"name": "c"}]},
        "status": {"phase": "Running"},
    }
    out = place_from_kube(
        [kube_node("m", {"hami.io/node-nvidia-register": reg})],
        [existing],
        kube_pod("p", [("c", {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "20000"})]),
    )
    assert out["containers"][0]["devices"][0] == {
        "uuid": "GPU-m",
        "type": "NVIDIA A100-SXM4-80GB",
        "memory_mib": 40192,
        "cores_percent": 42,
    }
    assert json.loads(out["annotations"]["hami.io/vgpu-mig-allocations"]) == [
        {
            "containerIndex": 0,
            "deviceIndex": 0,
            "gpuUUID": "GPU-m",
            "profile": "3g.40gb",
            "placement": {"start": 0, "size": 4},
        }
    ]
    full = place_from_kube(
        [kube_node("m", {"hami.io/node-nvidia-register": reg})],
        [existing],
        kube_pod("p", [("c", {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "50000"})]),
    )
    assert full == {"schedulable": False, "reasons": {"m": "1/1 CardMigTopologyInfeasible"}}


def test_place_from_kube_ascend_template():
    reg = json.dumps(
        [
            {
                "id": f"NPU-{i}",
                "index": i,
                "count": 4,
                "devmem": 65536,
                "devcore": 20,
                "type": "Ascend910B3",
                "health": True,
                "custominfo": {"NetworkID": 0},
            }
            for i in range(2)
        ]
    )
    nodes = [kube_node("npu", {"hami.io/node-register-Ascend910B3": reg})]
    pod = kube_pod(
        "p", [("c", {"huawei.com/Ascend910B3": "1", "huawei.com/Ascend910B3-memory": "5000"})]
    )
    out = place_from_kube(nodes, [], pod)
    assert out["containers"][0]["devices"] == [
        {"uuid": "NPU-1", "type": "Ascend910B3", "memory_mib": 16384, "cores_percent": 0}
    ]
    a = out["annotations"]
    assert a["hami.io/Ascend910B3-devices-to-allocate"] == "NPU-1,Ascend910B3,16384,0:;"
    # RuntimeInfo fields are omitempty: core 0 is not written
    assert json.loads(a["huawei.com/Ascend910B3"]) == [
        {"UUID": "NPU-1", "temp": "vir05_1c_16g", "memory": 16384}
    ]
    # node score: no usage + 10 * (1 device on one NetworkID / 1)
    assert out["node_scores"] == {"npu": 10.0}


def test_place_from_kube_cambricon_unit_256_and_unit_0():
    node = kube_node(
        "mlu",
        capacity={"cambricon.com/mlu.smlu.vcore": "400", "cambricon.com/mlu.smlu.vmemory": "256"},
    )
    pod = kube_pod(
        "p", [("c", {"cambricon.com/vmlu": "1", "cambricon.com/mlu.smlu.vmemory": "10"})]
    )
    out = place_from_kube([node], [], pod)
    # 4 cards of 256*256*100/400 = 16384 MiB; 10 units * 256 MiB; cores default 100
    assert out["containers"][0]["devices"] == [
        {"uuid": "mlu-cambricon-mlu-3", "type": "MLU", "memory_mib": 2560, "cores_percent": 100}
    ]
    assert (
        out["annotations"]["hami.io/cambricon-mlu-devices-to-allocate"]
        == "mlu-cambricon-mlu-3,MLU,2560,100:;"
    )
    unit0 = {"cambricon": {"memoryFactor": 0, "memoryAllocatable": 24576}}
    pod0 = kube_pod(
        "p",
        [
            (
                "c",
                {
                    "cambricon.com/vmlu": "1",
                    "cambricon.com/mlu.smlu.vmemory": "25",
                    "cambricon.com/mlu.smlu.vcore": "0",
                },
            )
        ],
    )
    out0 = place_from_kube([node], [], pod0, config=unit0)
    # 25 % of 24576 MiB = 6144; explicit vcore 0 stays 0
    assert out0["containers"][0]["devices"][0]["memory_mib"] == 6144
    assert out0["containers"][0]["devices"][0]["cores_percent"] == 0
    # unit 0 without a configured card memory: the node is flagged, not guessed
    out1 = place_from_kube([node], [], pod0, config={"cambricon": {"memoryFactor": 0}})
    assert out1["schedulable"] is False
    assert "needs memoryAllocatable" in out1["reasons"]["mlu"]


def test_place_from_kube_hygon_legacy_and_existing_usage():
    nodes = [
        kube_node(
            "dcu",
            {
                "hami.io/node-dcu-register": "DCU-0,4,16368,100,DCU_Z100,0,true:"
                "DCU-1,4,16368,100,DCU_Z100,0,true:"
            },
        )
    ]
    old = {
        "metadata": {
            "name": "old",
            "annotations": {
                "hami.io/vgpu-node": "dcu",
                "hami.io/dcu-devices-allocated": "DCU-1,DCU,8000,50:;",
            },
        },
        "spec": {"nodeName": "dcu", "containers": [{"name": "c"}]},
        "status": {"phase": "Running"},
    }
    pod = kube_pod("p", [("c", {"hygon.com/dcunum": "1", "hygon.com/dcumem": "8000"})])
    out = place_from_kube(nodes, [old], pod)
    # dcucores absent -> 100, which needs an idle DCU: DCU-1 is used, DCU-0 is taken
    assert out["containers"][0]["devices"] == [
        {"uuid": "DCU-0", "type": "DCU_Z100", "memory_mib": 8000, "cores_percent": 100}
    ]
    assert out["annotations"]["hami.io/dcu-devices-to-allocate"] == "DCU-0,DCU,8000,100:;"
    busy = place_from_kube(
        nodes,
        [
            old,
            {
                **old,
                "metadata": {
                    **old["metadata"],
                    "annotations": {
                        "hami.io/vgpu-node": "dcu",
                        "hami.io/dcu-devices-allocated": "DCU-0,DCU,100,0:;",
                    },
                },
            },
        ],
        pod,
    )
    assert busy == {
        "schedulable": False,
        # DCU-1 has 50 cores used (step 12 first), DCU-0 is used (step 13)
        "reasons": {"dcu": "1/2 CardInsufficientCore, 1/2 ExclusiveDeviceAllocateConflict"},
    }


def test_init_containers_come_first_in_the_annotation():
    reg = nvidia_register([("GPU-0", 10, 81920, "NVIDIA A100-SXM4-80GB", 0)])
    pod = kube_pod(
        "p",
        [("app", {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "5000"}), ("side", {})],
        init=[("init", {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "3000"})],
    )
    out = place_from_kube([kube_node("n", {"hami.io/node-nvidia-register": reg})], [], pod)
    assert [c["name"] for c in out["containers"]] == ["init", "app", "side"]
    assert (
        out["annotations"]["hami.io/vgpu-devices-to-allocate"]
        == "GPU-0,NVIDIA,3000,0:;GPU-0,NVIDIA,5000,0:;;"
    )


def test_bad_input_errors_name_the_field():
    with pytest.raises(ValueError, match=r"nodes: expected a list"):
        place_from_kube("x", [], kube_pod("p", [("c", {})]))
    with pytest.raises(ValueError, match=r"pod.spec.containers: required"):
        place_from_kube([], [], {"kind": "Pod", "spec": {}})
    with pytest.raises(ValueError, match=r"hami.io/gpu-scheduler-policy"):
        place_from_kube(
            [], [], kube_pod("p", [("c", {})], {"hami.io/gpu-scheduler-policy": "binpack,numa"})
        )


def test_cli_exit_codes():
    env = {**os.environ, "PYTHONPATH": ROOT}
    base = [
        sys.executable,
        "-m",
        "scheduling.kube.hami.cli",
        "--nodes",
        os.path.join(FIX, "nvidia_nodes.json"),
        "--pods",
        os.path.join(FIX, "nvidia_pods.json"),
    ]
    ok = subprocess.run(
        base
        + [
            "--pod",
            os.path.join(FIX, "pod_nvidia_share.yaml"),
            "--config",
            os.path.join(FIX, "config_binpack.yaml"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["containers"][0]["devices"][0]["uuid"] == "GPU-a100-3"
    bad = subprocess.run(
        base + ["--pod", os.path.join(FIX, "pod_bad_gpumem.yaml")],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1
    assert "pod_bad_gpumem.yaml" in bad.stderr and "nvidia.com/gpumem" in bad.stderr


def test_import_keeps_django_out():
    code = (
        "import sys, scheduling.placement, scheduling.kube.hami, "
        "scheduling.kube.hami.cli; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('django', 'rest_framework', "
        "'celery', 'kubernetes', 'prometheus_client', 'yaml')]; print(bad)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": ROOT},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


DRS_OK = json.dumps(
    {"devices": [{"index": "0", "capacity": 6}], "profiles": {"1g.8gb": "p1", "6g.48gb": "p6"}}
)


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("{not json", "enflame.com/gcu-drs-capacity: "),
        (
            json.dumps({"devices": [{"index": "0", "capacity": 6}], "profiles": {"x": "p"}}),
            "enflame.com/gcu-drs-capacity.profiles: no valid DRS profile",
        ),
        (
            json.dumps(
                {"devices": [{"index": "0", "capacity": "lots"}], "profiles": {"1g.8gb": "p1"}}
            ),
            "enflame.com/gcu-drs-capacity.devices[0].capacity: 'lots' is not a slice count",
        ),
        (json.dumps({"devices": 5, "profiles": {}}), "enflame.com/gcu-drs-capacity"),
    ],
)
def test_enflame_drs_cards_from_the_node_annotation_and_a_bad_one_flags_its_node(value, error):
    good = node_from_kube(kube_node("d1", {"enflame.com/gcu-drs-capacity": DRS_OK}), CFGS)
    (card,) = good.devices
    assert (
        card.uuid,
        card.type,
        card.vendor,
        card.memory_mib,
        card.split_count,
        card.custom["minor"],
        card.custom["maxSlice"],
    ) == ("d1-enflame-drs-0", "Enflame", "EnflameDRS", 49152, 6, "0", 6)
    bad = node_from_kube(kube_node("d2", {"enflame.com/gcu-drs-capacity": value}), CFGS)
    assert bad.devices == [] and bad.error.startswith(error), bad.error


@pytest.mark.parametrize(
    ("limits", "field"),
    [
        ({"enflame.com/drs-gcu": "0"}, "enflame.com/drs-gcu: must be greater than 0"),
        ({"enflame.com/gcu-memory": "0"}, "enflame.com/gcu-memory: must be greater than 0"),
        ({"enflame.com/gcu-core": "150"}, "enflame.com/gcu-core: must be in range (0,100]"),
    ],
)
def test_enflame_drs_requests_the_webhook_refuses_name_the_resource(limits, field):
    with pytest.raises(ValueError, match=re.escape(field)):
        pod_request_from_kube(kube_pod("p", [("c", limits)]), CFGS)


def test_policy_annotations_are_normalised_and_unknown_words_named():
    """Issue 29: stray spaces or case mean the word; an unknown word names the valid ones."""
    pod = pod_request_from_kube(
        kube_pod(
            "p",
            [("c", {"nvidia.com/gpu": "1"})],
            {
                "hami.io/node-scheduler-policy": " Spread ",
                "hami.io/gpu-scheduler-policy": "BINPACK",
            },
        ),
        CFGS,
    )
    assert (pod.node_policy, pod.device_policy) == ("spread", "binpack")
    with pytest.raises(ValueError, match=r"'random' is not one of binpack, spread$"):
        pod_request_from_kube(
            kube_pod("p", [("c", {})], {"hami.io/node-scheduler-policy": " random"}), CFGS
        )


def test_cli_policy_arguments_are_normalised(capsys):
    from scheduling.kube.hami.cli import main

    args = [
        *("--nodes", os.path.join(FIX, "nvidia_nodes.json")),
        *("--pods", os.path.join(FIX, "nvidia_pods.json")),
        *("--pod", os.path.join(FIX, "pod_nvidia_share.yaml")),
    ]
    assert main([*args, "--node-policy", " Spread", "--device-policy", "Binpack "]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main([*args, "--node-policy", "sideways"])
    assert "invalid choice: 'sideways'" in capsys.readouterr().err
