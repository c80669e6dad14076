"""``make lint``'s checks fail on what they guard against: the import contracts on a
deliberately wrong import (run on a copy of the packages), the size bounds on a long function
or module (data tables exempt, the exceptions list can only shrink)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("console", "core", "scheduling", "telemetry", "tenants")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
sys.path.insert(0, str(ROOT / ".ci"))
import check_sizes  # noqa: E402 - the checker is a script, not a package


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    """A copy of the five packages and pyproject.toml (contracts included)."""
    dest = tmp_path_factory.mktemp("tree")
    for name in PACKAGES:
        shutil.copytree(
            ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__", "migrations")
        )
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")
    return dest


def _lint_imports(tree: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(tree)}  # the copy shadows the installed packages
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _inject(tree: Path, module: str, line: str) -> Path:
    path = tree / module
    original = path.read_text()
    path.write_text(f"{line}\n{original}")
    return path


def test_contracts_hold_on_the_code_as_it_is(tree):
    run = _lint_imports(tree)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("scheduling/placement/types.py", "import django  # noqa", "Pure cores"),
        (
            "tenants/selectors.py",
            "import scheduling.services.jobs  # noqa",
            "tenants imports neither scheduling nor telemetry",
        ),
        (
            "scheduling/models/__init__.py",
            "import scheduling.api.views  # noqa",
            "scheduling: interfaces > services",
        ),
    ],
)
def test_a_wrong_import_breaks_its_contract(tree, module, line, contract):
    path = tree / module
    original = path.read_text()
    _inject(tree, module, line)
    try:
        run = _lint_imports(tree)
    finally:
        path.write_text(original)
    assert run.returncode != 0
    broken = [x for x in run.stdout.splitlines() if x.endswith("BROKEN")]
    assert any(x.startswith(contract) for x in broken), run.stdout


def _function(name: str, body_lines: int) -> str:
    return (
        f"def {name}():\n"
        + "".join(f"    x{i} = {i}\n" for i in range(body_lines - 1))
        + "    return None\n"
    )


def test_size_check_flags_long_functions_and_modules_not_tables(tmp_path, capsys):
    (tmp_path / "ok.py").write_text(_function("short", 59))  # 60 lines with the def
    (tmp_path / "long.py").write_text(_function("long", 60))  # 61 lines
    table = (
        "def table():\n    return {\n"
        + "".join(f"        {i}: {i},\n" for i in range(80))
        + "    }\n"
    )
    (tmp_path / "table.py").write_text(table)
    (tmp_path / "big.py").write_text("x = 1\n" * 601)
    empty = tmp_path / "none.txt"
    assert check_sizes.main(["--exceptions", str(empty), str(tmp_path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert sorted(x.split(": ", 1)[1] for x in out) == [
        "function long has 61 lines (max 60)",
        "module has 601 lines (max 600)",
    ]


def test_size_exceptions_excuse_listed_units_and_go_stale(tmp_path, capsys):
    src = tmp_path / "src"
    src.mkdir()
    long_fn = src / "long.py"
    long_fn.write_text(_function("long", 60))
    listed = tmp_path / "exceptions.txt"
    listed.write_text(f"{long_fn.as_posix()}::long  # being split elsewhere\n")
    assert check_sizes.main(["--exceptions", str(listed), str(src)]) == 0
    long_fn.write_text(_function("long", 10))  # fixed: the entry must go
    assert check_sizes.main(["--exceptions", str(listed), str(src)]) == 1
    assert "remove the entry" in capsys.readouterr().out


def test_the_code_base_is_within_the_size_bounds(monkeypatch):
    monkeypatch.chdir(ROOT)  # exception keys are paths from the repository root
    assert check_sizes.main(["--exceptions", str(check_sizes.EXCEPTIONS), *PACKAGES]) == 0


def test_the_doc_path_check_finds_a_missing_document(tmp_path):
    import check_doc_paths as module  # a script beside check_sizes (sys.path above)

    (tmp_path / "repo" / "docs").mkdir(parents=True)
    (tmp_path / "shared" / "docs").mkdir(parents=True)
    (tmp_path / "repo" / "docs" / "here.md").write_text("x")
    (tmp_path / "shared" / "docs" / "hami.md").write_text("x")
    here, gone, theirs = (
        "/".join(("docs", name)) for name in ("here.md", "gone.md", "develop/x.md")
    )
    (tmp_path / "repo" / "m.py").write_text(
        f'"""{here}, shared/{"docs/"}hami.md, HAMi\'s {theirs}, {gone}"""\n'
    )
    assert module.missing(tmp_path / "repo", tmp_path / "shared") == [f"m.py:1: {gone}"]
    assert module.missing() == []  # this checkout
