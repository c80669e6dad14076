"""The import contracts of ``make lint`` (``[tool.importlinter]`` in pyproject.toml) hold on
the tree, and ``lint-imports`` fails, naming the contract, on a deliberately wrong import in a
copy of the packages."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("console", "core", "notifications", "telemetry", "scheduling", "tenants")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

PURE = "Pure cores: placement and admission import no framework and no app"
TENANTS = "tenants imports neither scheduling nor telemetry"
APP_LAYERS = "App layers: console > notifications > telemetry > scheduling > tenants > core"
SCHEDULING_LAYERS = "scheduling: interfaces > services > selectors/backends > models/kube > cores"
NO_CYCLES = "No import circles between the modules or packages of any package"
WHATIF = "The live placement core never imports the what-if replay"
LAB = "Nothing the product runs imports the placement benchmarks (lab)"
DEVICES = "Device catalogue: pure, imports nothing of the console"


def lint_imports(tree: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo"],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(tree)},
    )


def test_the_contracts_hold_on_the_tree():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout
    for name in (PURE, TENANTS, APP_LAYERS, SCHEDULING_LAYERS, NO_CYCLES, WHATIF, LAB, DEVICES):
        assert f"{name} KEPT" in result.stdout


@pytest.mark.parametrize(
    ("path", "wrong_import", "broken"),
    [
        ("scheduling/placement/types.py", "import django", [PURE]),
        ("tenants/models.py", "from scheduling import models", [TENANTS, APP_LAYERS]),
        (
            "scheduling/services/jobs.py",
            "from scheduling import tasks",
            [SCHEDULING_LAYERS, NO_CYCLES],
        ),
        (
            "scheduling/placement/runner.py",
            "from scheduling.placement.whatif import policies",
            [WHATIF],
        ),
        ("scheduling/services/whatif.py", "from scheduling.placement.lab import bench", [LAB]),
        ("scheduling/devices/schema.py", "import django", [DEVICES]),
        (
            "scheduling/devices/matching.py",
            "from scheduling.placement import types",
            [DEVICES, SCHEDULING_LAYERS],
        ),
    ],
)
def test_a_wrong_import_breaks_its_contract(tmp_path, path, wrong_import, broken):
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    with open(tmp_path / path, "a", encoding="utf-8") as module:
        module.write(f"\n{wrong_import}  # deliberately wrong\n")

    result = lint_imports(tmp_path)

    assert result.returncode != 0, result.stdout
    for name in broken:
        assert f"{name} BROKEN" in result.stdout, result.stdout
    assert path.removesuffix(".py").replace("/", ".") in result.stdout
