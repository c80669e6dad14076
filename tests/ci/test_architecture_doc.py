"""docs/architecture.md cannot drift from the code silently (issue 28): its diagram names every
top-level package (the import-linter root packages, each a directory with an ``__init__.py``)
and every layer of the scheduling contract, and the counts it states are the code's: packages,
import contracts, size bounds, complexity bound, batch size, and the two homes of vendor
rules."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from scheduling.api.serializers.submit import MAX_BATCH_JOBS

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "architecture.md").read_text()
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
NUMBERS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
]


def _diagram() -> str:
    """The first fenced block of the document (the package diagram)."""
    match = re.search(r"^```\n(.*?)^```", DOC, re.S | re.M)
    assert match, "docs/architecture.md has no diagram"
    return match.group(1)


def _contracts() -> list[dict]:
    return PYPROJECT["tool"]["importlinter"]["contracts"]


def _packages() -> list[str]:
    return PYPROJECT["tool"]["importlinter"]["root_packages"]


def _one(pattern: str) -> str:
    found = re.findall(pattern, DOC)
    assert len(found) == 1, (pattern, found)
    return found[0]


def test_the_root_packages_are_the_top_level_packages_of_the_repository():
    on_disk = {p.parent.name for p in ROOT.glob("*/__init__.py")}
    assert set(_packages()) == on_disk


def test_the_diagram_names_every_top_level_package_in_layer_order():
    rows = [m.group(1) for m in re.finditer(r"^ (\w+) {2,}\S", _diagram(), re.M)]
    layers = next(c["layers"] for c in _contracts() if c["id"] == "app-layers")
    assert rows == layers
    assert set(rows) == set(_packages())


def test_the_package_count_is_the_code_s():
    word = _one(r"(\w+) top-level packages\.")
    assert word.lower() == NUMBERS[len(_packages())]


def test_the_diagram_names_every_layer_of_the_scheduling_contract():
    layers = next(c["layers"] for c in _contracts() if c["id"] == "scheduling-layers")
    words = set(re.findall(r"\w+", _diagram()))
    modules = {m.strip() for layer in layers for m in layer.split("|")}
    assert modules <= words, modules - words


def test_the_contract_count_is_the_code_s():
    assert int(_one(r"`lint-imports`: the (\d+) contracts")) == len(_contracts())


def test_the_size_and_complexity_bounds_are_the_code_s():
    sizes = (ROOT / ".ci" / "check_sizes.py").read_text()
    module = re.search(r'"--max-module", type=int, default=(\d+)', sizes)
    function = re.search(r'"--max-function", type=int, default=(\d+)', sizes)
    stated = re.search(r"modules have at most (\d+) lines and functions at most (\d+)", DOC)
    assert module and function and stated
    assert stated.groups() == (module.group(1), function.group(1))
    complexity = PYPROJECT["tool"]["ruff"]["lint"]["mccabe"]["max-complexity"]
    assert int(_one(r"complexity (\d+)")) == complexity


def test_the_batch_size_is_the_code_s():
    assert int(_one(r"\(up to (\d+) jobs")) == MAX_BATCH_JOBS


def test_the_vendor_section_names_the_homes_the_vendor_scan_allows():
    from tests.ci.test_vendor_rules import HOMES

    section = DOC[DOC.index("**A device vendor**") : DOC.index("**A placement policy**")]
    assert "scheduling/devices/vendors.py" in section
    for home in HOMES:
        assert home.rstrip("/") in section, home
