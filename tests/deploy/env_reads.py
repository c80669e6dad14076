"""The environment variables the console reads, found in its source.

A variable counts when first-party code passes its name as a literal to one of the strict
readers of ``core/env.py`` (``env_str``, ``env_int`` ...) or to
``os.environ.get`` / ``os.getenv`` / ``os.environ.setdefault`` / ``os.environ[...]``
(also through a name bound to ``os.environ``). A module that reads names it computes
(``env_int(variable, ...)``, e.g. the telemetry periods) counts with all its upper-case
string constants.
"""

from __future__ import annotations

import ast
import re
from functools import cache

from tests.deploy.sources import first_party_modules

READERS = {
    "env_str",
    "env_int",
    "env_float",
    "env_bool",
    "env_choice",
    "env_list",
    "env_url",
    "env_rate",
    "env_template",
    "getenv",
}
_ENVIRON_METHODS = {"get", "setdefault", "pop"}
_NAME = re.compile(r"[A-Z][A-Z0-9_]*[A-Z0-9]")


def _is_environ(node: ast.expr, aliases: set[str]) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr == "environ"
    return isinstance(node, ast.Name) and (node.id == "environ" or node.id in aliases)


def _environ_aliases(tree: ast.Module) -> set[str]:
    """Names bound to ``os.environ`` (``env = os.environ``)."""
    return {
        t.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and _is_environ(node.value, set())
        for t in node.targets
        if isinstance(t, ast.Name)
    }


def _read_name(node: ast.AST, aliases: set[str]) -> ast.expr | None:
    """The name expression of an environment read at ``node``, if it is one."""
    if isinstance(node, ast.Subscript) and _is_environ(node.value, aliases):
        return node.slice
    if not (isinstance(node, ast.Call) and node.args):
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if name in READERS:
        return node.args[0]
    if (
        isinstance(func, ast.Attribute)
        and func.attr in _ENVIRON_METHODS
        and _is_environ(func.value, aliases)
    ):
        return node.args[0]
    return None


@cache
def variables_read() -> frozenset[str]:
    """Every environment variable name the console's code reads."""
    found: set[str] = set()
    for module in first_party_modules():
        aliases = _environ_aliases(module.tree)
        computed = False
        for node in ast.walk(module.tree):
            expr = _read_name(node, aliases)
            if expr is None:
                continue
            if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
                found.add(expr.value)
            else:
                computed = True
        if computed:
            found.update(
                node.value
                for node in ast.walk(module.tree)
                if isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and _NAME.fullmatch(node.value)
            )
    return frozenset(found)
