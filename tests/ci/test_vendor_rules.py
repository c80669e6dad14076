"""Vendor rules have two homes: the device catalogue (``scheduling/devices/``, the vendor
descriptors of ``scheduling/devices/vendors.py``) and the vendor plugins
(``scheduling/placement/vendors/``). Every other module asks a vendor's traits
(``vendor_traits(vendor).per_chip``) instead of comparing vendor names (issue 28).

What counts as comparing vendor names (an AST scan of the app packages but those two homes
and migrations), with a *vendor name* = a string literal equal, case included, to a vendor
word of the catalogue (``VENDOR_WORDS``: ``NVIDIA``, ``MLU``, ``DCU``, ``Ascend``, ...) or to
the HAMi type word of a vendor-wide backend (``GCU``, ``XPU``, ``kunlun``, ``Metax-SGPU``, ...):

* a comparison with a vendor name as an operand: ``vendor == "DCU"``, ``!=``, ``is``;
* a membership test against a literal holding one: ``vendor in ("Ascend", "Iluvatar")``;
* a lookup keyed by one: ``TABLE["NVIDIA"]``, ``table.get("MLU")`` (``pop``, ``setdefault``);
* a dict literal keyed by one (a per-vendor table): ``{"Metax": "metax"}``;
* a ``match`` case on one: ``case "AWSNeuron":``;
* a module-level tuple / list / set / frozenset of vendor names only (a vendor list that a
  membership test elsewhere would use: ``CHIP_VENDORS = ("Ascend", "Iluvatar")``).

Not counted: a vendor name passed as data (``DeviceRequest(vendor="NVIDIA")``, a default
``vendor: str = "NVIDIA"``, seed rows), docstrings and comments; exporter kinds
(``"hygon"``, ``"dcgm"``: telemetry's names of exporters, not vendor words).
"""

from __future__ import annotations

import ast
from pathlib import Path

from scheduling.devices.defaults import default_device_configs
from scheduling.devices.vendors import VENDOR_TRAITS, VENDOR_WORDS, vendor_traits
from scheduling.placement.vendors import VENDOR_PLUGINS

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("console", "core", "notifications", "scheduling", "telemetry", "tenants")
HOMES = ("scheduling/devices/", "scheduling/placement/vendors/")
VENDOR_NAMES = frozenset(VENDOR_WORDS) | {
    c.common_word for c in default_device_configs() if not c.chip
}
LOOKUPS = ("get", "pop", "setdefault")


def _name(node: ast.AST | None) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value in VENDOR_NAMES
    )


def _holds_name(node: ast.AST) -> bool:
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(_name(e) for e in node.elts)
    return _name(node)


def _names_only(node: ast.AST | None) -> bool:
    """A tuple / list / set literal (or ``frozenset`` / ``set`` / ``tuple`` of one) of vendor
    names only."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("frozenset", "set", "tuple")
        and len(node.args) == 1
    ):
        node = node.args[0]
    return (
        isinstance(node, ast.Tuple | ast.List | ast.Set)
        and bool(node.elts)
        and all(_name(e) for e in node.elts)
    )


def _why(node: ast.AST) -> str:
    """What kind of vendor-name comparison ``node`` is ("" = none)."""
    if isinstance(node, ast.Compare) and any(
        _holds_name(x) for x in (node.left, *node.comparators)
    ):
        return "comparison"
    if isinstance(node, ast.Subscript) and _name(node.slice):
        return "lookup"
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in LOOKUPS
        and node.args
        and _name(node.args[0])
    ):
        return "lookup"
    if isinstance(node, ast.Dict) and any(_name(k) for k in node.keys):
        return "per-vendor table"
    if isinstance(node, ast.MatchValue) and _name(node.value):
        return "match case"
    return ""


def _module_lists(tree: ast.Module) -> list[ast.AST]:
    """Module-level assignments of a literal list of vendor names only."""
    out: list[ast.AST] = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign | ast.AnnAssign) and _names_only(stmt.value):
            out.append(stmt)
    return out


def vendor_comparisons(root: Path, packages=PACKAGES) -> list[str]:
    """``path:line: kind: source`` of every vendor-name comparison (module docstring) in
    ``packages`` under ``root``, outside the two homes and migrations."""
    found = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if rel.startswith(HOMES) or "/migrations/" in rel:
                continue
            tree = ast.parse(path.read_text(), filename=rel)
            hits = [(n, _why(n)) for n in ast.walk(tree)]
            hits += [(n, "vendor list") for n in _module_lists(tree)]
            found += [
                f"{rel}:{n.lineno}: {why}: {ast.unparse(n)[:80]}"
                for n, why in sorted(hits, key=lambda h: getattr(h[0], "lineno", 0))
                if why
            ]
    return found


def test_no_module_outside_the_catalogue_and_the_plugins_compares_vendor_names():
    assert vendor_comparisons(ROOT) == []


def test_the_scan_finds_each_kind_of_vendor_comparison(tmp_path):
    module = tmp_path / "scheduling" / "kube" / "rogue.py"
    module.parent.mkdir(parents=True)
    module.write_text(
        'CHIPS = ("Ascend", "Iluvatar")\n'
        'IDS = {"Metax": "metax"}\n'
        "\n"
        "def rules(cfg, table, word):\n"
        '    if cfg.vendor == "DCU" or cfg.vendor in ("MetaxSGPU", "AMD"):\n'
        '        return table["NVIDIA"], table.get("MLU")\n'
        "    match word:\n"
        '        case "GCU":\n'
        "            return 1\n"
        '    return make(vendor="NVIDIA")  # data, not a rule\n'
    )
    migration = tmp_path / "scheduling" / "migrations" / "0001_initial.py"
    migration.parent.mkdir(parents=True)
    migration.write_text('CHOICES = ("NVIDIA", "MLU")\n')
    home = tmp_path / "scheduling" / "devices" / "vendors.py"
    home.parent.mkdir(parents=True)
    home.write_text('def f(v):\n    return v == "DCU"\n')
    assert [h.split(": ")[:2] for h in vendor_comparisons(tmp_path, ("scheduling",))] == [
        ["scheduling/kube/rogue.py:1", "vendor list"],
        ["scheduling/kube/rogue.py:2", "per-vendor table"],
        ["scheduling/kube/rogue.py:5", "comparison"],
        ["scheduling/kube/rogue.py:5", "comparison"],
        ["scheduling/kube/rogue.py:6", "lookup"],
        ["scheduling/kube/rogue.py:6", "lookup"],
        ["scheduling/kube/rogue.py:8", "match case"],
    ]


def test_the_catalogue_the_plugins_and_the_descriptors_name_the_same_vendors():
    catalogue = {c.vendor for c in default_device_configs()}
    assert set(VENDOR_WORDS) == set(VENDOR_TRAITS) == set(VENDOR_PLUGINS) == catalogue
    assert len(VENDOR_WORDS) == 16


def test_a_vendor_the_descriptors_do_not_name_is_the_generic_backend():
    traits = vendor_traits("NewVendor")
    assert traits.word == "NewVendor"
    assert (traits.per_chip, traits.mig, traits.serial_identity) == (False, False, False)
    assert traits.hami_reads_type_annotations is True
    assert traits.id_word == "newvendor"
