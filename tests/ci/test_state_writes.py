"""A job's life has one home: ``scheduling/services/job_life.py`` is the only module that
writes ``Job.state`` or ``Placement.state`` (issue 28). Everything else calls its moves.

What counts as writing a state (an AST scan of the app packages but that module, migrations
and the pure cores ``scheduling/{admission,placement,devices,kube}``, which cannot reach the
ORM: import-linter's ``pure-cores``, ``device-catalogue`` and ``kube-adapter`` contracts):

* ``<queryset>.update(state=...)``, also through ``**fields`` where ``fields`` is a dict
  literal holding a ``"state"`` key (or gets ``fields["state"] = ...``) in the same function,
  or ``**{"state": ...}``. A queryset of another model is told apart only by its root
  ``<Model>.objects`` (``SimulationRun.objects.filter(...).update(state=...)`` is fine); an
  ``update`` whose receiver the scan cannot name (``qs.filter(...)``, a plain dict) counts;
* an assignment to an attribute named ``state`` (``job.state = ...``; none of the scanned
  modules assigns another model's ``state``) or ``setattr(obj, "state", ...)``;
* ``bulk_update(rows, [..., "state", ...])`` and ``save(update_fields=[..., "state", ...])``;
* raw SQL: a string literal ``UPDATE scheduling_job|scheduling_placement ... SET ... state``.

Not counted: creating a row in its first state (``Job(state=...)``, ``objects.create``,
``bulk_create``): a job is born ``queued`` (an inference service ``running``), a placement
``reserved`` (the cycle's commit), and seed, trace and benchmark rows are born in the state
they model; the table of :mod:`scheduling.services.job_life` governs every later move.
Reading a state (filters, ``state__in=``) is not a write either.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("console", "core", "notifications", "scheduling", "telemetry", "tenants")
HOME = "scheduling/services/job_life.py"
SKIPPED = (
    "scheduling/admission/",
    "scheduling/placement/",
    "scheduling/devices/",
    "scheduling/kube/",
)
MODELS = frozenset({"Job", "Placement"})
RAW_UPDATE = re.compile(
    r"UPDATE\s+\"?scheduling_(job|placement)\"?\s.*\bSET\b.*\bstate\b", re.I | re.S
)


def _model_of(receiver: ast.AST) -> str | None:
    """The ``<Model>`` of a receiver rooted at ``<Model>.objects`` (None: not named)."""
    node = receiver
    while True:
        if isinstance(node, ast.Attribute):
            if node.attr == "objects" and isinstance(node.value, ast.Name):
                return node.value.id
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        else:
            return None


def _holds_state(node: ast.AST | None) -> bool:
    """A list / tuple / set literal holding ``"state"``."""
    return isinstance(node, ast.List | ast.Tuple | ast.Set) and any(
        isinstance(e, ast.Constant) and e.value == "state" for e in node.elts
    )


def _dict_with_state(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Dict) and any(
        isinstance(k, ast.Constant) and k.value == "state" for k in node.keys
    )


def _state_dicts(scope: ast.AST) -> set[str]:
    """Names in ``scope`` bound to a dict literal with a ``"state"`` key or given one by
    ``name["state"] = ...``."""
    names: set[str] = set()
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and _dict_with_state(node.value):
                    names.add(target.id)
                if (
                    isinstance(target, ast.Subscript)
                    and isinstance(target.value, ast.Name)
                    and isinstance(target.slice, ast.Constant)
                    and target.slice.value == "state"
                ):
                    names.add(target.value.id)
    return names


def _update_writes_state(call: ast.Call, state_dicts: set[str]) -> bool:
    for kw in call.keywords:
        if kw.arg == "state":
            return True
        if kw.arg is None and (
            _dict_with_state(kw.value)
            or (isinstance(kw.value, ast.Name) and kw.value.id in state_dicts)
        ):
            return True
    return False


def _why(node: ast.AST, state_dicts: set[str]) -> str:
    """What kind of state write ``node`` is ("" = none)."""
    if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(isinstance(t, ast.Attribute) and t.attr == "state" for t in targets):
            return "attribute assignment"
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return "raw SQL" if RAW_UPDATE.search(node.value) else ""
    if not isinstance(node, ast.Call):
        return ""
    func = node.func
    if isinstance(func, ast.Name) and func.id == "setattr":
        args = node.args
        named = len(args) > 1 and isinstance(args[1], ast.Constant) and args[1].value == "state"
        return "setattr" if named else ""
    if not isinstance(func, ast.Attribute):
        return ""
    if func.attr == "update" and _update_writes_state(node, state_dicts):
        model = _model_of(func.value)
        return "" if model is not None and model not in MODELS else "update(state=...)"
    if func.attr == "bulk_update" and (
        any(_holds_state(a) for a in node.args[1:])
        or any(kw.arg == "fields" and _holds_state(kw.value) for kw in node.keywords)
    ):
        return "bulk_update of state"
    if func.attr == "save" and any(
        kw.arg == "update_fields" and _holds_state(kw.value) for kw in node.keywords
    ):
        return "save(update_fields=[state])"
    return ""


def _scopes(tree: ast.Module) -> list[ast.AST]:
    """The module and each function (a ``**fields`` dict is looked up in its function)."""
    return [tree] + [
        n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
    ]


def state_writes(root: Path, packages=PACKAGES) -> list[str]:
    """``path:line: kind: source`` of every write of a job or placement state (module
    docstring) in ``packages`` under ``root``, outside :data:`HOME`."""
    found: set[tuple[str, int, str, str]] = set()
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if rel == HOME or rel.startswith(SKIPPED) or "/migrations/" in rel:
                continue
            tree = ast.parse(path.read_text(), filename=rel)
            for scope in _scopes(tree):
                dicts = _state_dicts(scope)
                for node in ast.walk(scope):
                    why = _why(node, dicts)
                    if why:
                        found.add((rel, node.lineno, why, ast.unparse(node)[:80]))
    return [f"{rel}:{line}: {why}: {src}" for rel, line, why, src in sorted(found)]


def test_no_module_but_job_life_writes_a_job_or_placement_state():
    assert state_writes(ROOT) == []


def test_the_scan_finds_each_kind_of_state_write(tmp_path):
    module = tmp_path / "scheduling" / "services" / "rogue.py"
    module.parent.mkdir(parents=True)
    module.write_text(
        "def rogue(job, qs, rows, pk):\n"
        '    Job.objects.filter(pk=pk).update(state="failed")\n'
        '    qs.filter(state="reserved").update(state="running", updated=1)\n'
        '    fields = {"state": "queued"}\n'
        "    Job.objects.filter(pk=pk).update(**fields)\n"
        '    job.state = "cancelled"\n'
        '    setattr(job, "state", "queued")\n'
        '    Job.objects.bulk_update(rows, ["state", "updated"])\n'
        '    job.save(update_fields=["state"])\n'
        "    return 'UPDATE scheduling_job SET state = %s WHERE id = %s'\n"
        "\n"
        "def fine(qs, pk, rows):\n"
        '    SimulationRun.objects.filter(pk=pk).update(state="running")\n'
        '    Job.objects.create(state="queued", name="born queued")\n'
        '    Placement.objects.bulk_create(Placement(state="reserved") for _ in rows)\n'
        '    return qs.filter(state="queued").update(pending_reason="")\n'
    )
    home = tmp_path / HOME
    home.write_text('def fail(qs):\n    return qs.update(state="failed")\n')
    migration = tmp_path / "scheduling" / "migrations" / "0001_initial.py"
    migration.parent.mkdir(parents=True)
    migration.write_text('def f(apps):\n    apps.get_model("x.Job").objects.update(state="q")\n')
    core = tmp_path / "scheduling" / "placement" / "engine.py"
    core.parent.mkdir(parents=True)
    core.write_text("class Engine:\n    def __init__(self):\n        self.state = []\n")
    assert [h.split(": ")[:2] for h in state_writes(tmp_path, ("scheduling",))] == [
        ["scheduling/services/rogue.py:2", "update(state=...)"],
        ["scheduling/services/rogue.py:3", "update(state=...)"],
        ["scheduling/services/rogue.py:5", "update(state=...)"],
        ["scheduling/services/rogue.py:6", "attribute assignment"],
        ["scheduling/services/rogue.py:7", "setattr"],
        ["scheduling/services/rogue.py:8", "bulk_update of state"],
        ["scheduling/services/rogue.py:9", "save(update_fields=[state])"],
        ["scheduling/services/rogue.py:10", "raw SQL"],
    ]


def test_the_architecture_doc_names_the_home_of_a_job_s_life():
    doc = (ROOT / "docs" / "architecture.md").read_text()
    assert f"`{HOME}`" in doc
    assert "`tests/ci/test_state_writes.py`" in doc
    assert (ROOT / HOME).is_file()
