"""``manage.py place``: the HAMi what-if answered without a database."""

import json
import os
import subprocess
import sys
from pathlib import Path

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
