"""``manage.py place``: the HAMi what-if answered without a database."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures" / "hami"


def _place(*args: str) -> subprocess.CompletedProcess:
    # An unreachable DATABASE_URL proves the command never touches a database.
    env = {**os.environ, "DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"}
    return subprocess.run(
        [sys.executable, "manage.py", "place", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_place_nvidia_share_prints_the_decision():
    result = _place(
        "--nodes",
        str(FIX / "nvidia_nodes.json"),
        "--pods",
        str(FIX / "nvidia_pods.json"),
        "--pod",
        str(FIX / "pod_nvidia_share.yaml"),
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["schedulable"] is True
    assert out["node"] == "gpu-a"
    assert out["containers"] == [
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
    ]
    assert out["annotations"]["hami.io/vgpu-devices-to-allocate"] == "GPU-a100-2,NVIDIA,10000,20:;"
    assert set(out["node_scores"]) == {"gpu-a", "gpu-b"}


def test_place_bad_input_exits_2_with_one_line_naming_file_and_field():
    result = _place(
        "--nodes",
        str(FIX / "nvidia_nodes.json"),
        "--pods",
        str(FIX / "nvidia_pods.json"),
        "--pod",
        str(FIX / "pod_bad_gpumem.yaml"),
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: ")
    assert "pod_bad_gpumem.yaml" in lines[0]
    assert "nvidia.com/gpumem" in lines[0]
    assert result.stdout == ""


def test_place_missing_file_exits_2():
    result = _place(
        "--nodes",
        "/nonexistent.json",
        "--pods",
        str(FIX / "nvidia_pods.json"),
        "--pod",
        str(FIX / "pod_nvidia_share.yaml"),
    )
    assert result.returncode == 2
    assert "/nonexistent.json" in result.stderr


def test_place_config_accepts_chart_values_and_the_device_configmap():
    """Both files say binpack: the pod goes to the busier GPU (GPU-a100-3), as HAMi would."""
    answers = []
    for config in ("chart_values.yaml", "device_configmap.yaml"):
        result = _place(
            "--nodes",
            str(FIX / "nvidia_nodes.json"),
            "--pods",
            str(FIX / "nvidia_pods.json"),
            "--pod",
            str(FIX / "pod_nvidia_share.yaml"),
            "--config",
            str(FIX / config),
        )
        assert result.returncode == 0, result.stderr
        answers.append(json.loads(result.stdout))
    assert answers[0] == answers[1]
    assert answers[0]["containers"][0]["devices"][0]["uuid"] == "GPU-a100-3"


def test_place_config_unknown_key_names_it(tmp_path):
    bad = tmp_path / "values.yaml"
    bad.write_text("resourceName: nvidia.com/gpu\nscheduler:\n  defaultSchedulerPolcy: {}\n")
    result = _place(
        "--nodes",
        str(FIX / "nvidia_nodes.json"),
        "--pods",
        str(FIX / "nvidia_pods.json"),
        "--pod",
        str(FIX / "pod_nvidia_share.yaml"),
        "--config",
        str(bad),
    )
    assert result.returncode == 2
    assert "scheduler.defaultSchedulerPolcy: unknown key" in result.stderr
    assert str(bad) in result.stderr


def _register(ids, typ, count, mem, core):
    return json.dumps(
        [
            {"id": u, "index": i, "count": count, "devmem": mem, "devcore": core, "type": typ}
            | {"health": True}
            for i, u in enumerate(ids)
        ]
    )


METAX_SGPU = json.dumps(
    [
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
)


@pytest.mark.parametrize(
    ("annotations", "limits", "key", "value"),
    [
        (
            {"metax-tech.com/node-gpu-devices": METAX_SGPU},
            {"metax-tech.com/sgpu": "1", "metax-tech.com/vmemory": "4"},
            "hami.io/metax-sgpu-devices-allocated",
            "MX-1,Metax-SGPU,4096,100:;",
        ),
        (
            {
                "hami.io/node-amd-register": _register(
                    ["AMD-0"], "AMD Instinct MI300X VF", 4, 196608, 304
                )
            },
            {"amd.com/gpu": "1", "amd.com/gpumem": "8192", "amd.com/gpucores": "25"},
            "hami.io/amd-devices-allocated",
            "AMD-0,AMD Instinct MI300X VF,8192,76:;",
        ),
        (
            {"hami.io/node-register-xpu": _register(["XPU-0", "XPU-1"], "XPU", 4, 98304, 100)},
            {"kunlunxin.com/vxpu": "1", "kunlunxin.com/vxpu-memory": "40000"},
            "hami.io/xpu-devices-allocated",
            "XPU-0,XPU,49152,50:;",
        ),
    ],
    ids=["metax-sgpu", "amd", "kunlun-vxpu"],
)
def test_place_a_vendor_pod_on_a_node_with_free_devices(tmp_path, annotations, limits, key, value):
    """Issue 36: HAMi registrations of Metax sGPU, AMD and Kunlun vXPU with free devices are
    placed (the device, HAMi's TYPE, booked MiB and cores), not answered "0 on node"."""
    node = {"metadata": {"name": "n", "annotations": annotations}, "status": {"allocatable": {}}}
    pod = {
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "resources": {"limits": limits}}]},
    }
    files = []
    for name, data in (("nodes", [node]), ("pods", []), ("pod", pod)):
        (tmp_path / f"{name}.json").write_text(json.dumps(data))
        files += [f"--{name}", str(tmp_path / f"{name}.json")]
    result = _place(*files)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["schedulable"] is True, out
    assert out["node"] == "n"
    assert out["annotations"][key] == value


def test_place_prints_the_bookings_it_cannot_match(tmp_path):
    # running-1 books GPU-a100-3 and a card gpu-a no longer registers: HAMi counts the
    # first and skips the second; place counts the same and prints what it skipped
    pods = json.loads((FIX / "nvidia_pods.json").read_text())
    ann = pods["items"][0]["metadata"]["annotations"]
    ann["hami.io/vgpu-devices-allocated"] = "GPU-a100-3,NVIDIA,20000,30:GPU-gone,NVIDIA,40000,50:;"
    path = tmp_path / "pods.json"
    path.write_text(json.dumps(pods))
    result = _place(
        "--nodes",
        str(FIX / "nvidia_nodes.json"),
        "--pods",
        str(path),
        "--pod",
        str(FIX / "pod_nvidia_share.yaml"),
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["unmatched_bookings"] == [
        {
            "pod": "team-a/running-1",
            "node": "gpu-a",
            "container": 0,
            "uuid": "GPU-gone",
            "type": "NVIDIA",
            "memory_mib": 40000,
            "cores_percent": 50,
        }
    ]
    assert result.stderr.splitlines() == [
        "warning: pod team-a/running-1 books device GPU-gone that node gpu-a does not "
        "register; not counted (as HAMi), its capacity may be in use"
    ]
    # the matched booking still counts: the decision is the one of the plain fixture
    assert (out["node"], out["containers"][0]["devices"][0]["uuid"]) == ("gpu-a", "GPU-a100-2")
