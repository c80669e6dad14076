"""The console's own Python modules, parsed: what the deployment tests read statically.

First-party code is every ``.py`` file under the repository root outside tests, migrations,
hidden folders and non-code folders, so modules that move between packages are still found.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_SKIP_DIRS = {
    "tests",
    "migrations",
    "docs",
    "deploy",
    "static",
    "templates",
    "staticfiles",
    "node_modules",
    "build",
    "dist",
    "__pycache__",
}


@dataclass(frozen=True)
class Module:
    """One parsed source file; ``rel`` is its path relative to the repository root."""

    rel: str
    tree: ast.Module


def _walk(folder: Path):
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith(".") or entry.name in _SKIP_DIRS:
            continue
        if entry.is_dir():
            yield from _walk(entry)
        elif entry.suffix == ".py":
            yield entry


@cache
def first_party_modules(root: Path = ROOT) -> tuple[Module, ...]:
    """Every first-party module under ``root``, parsed."""
    return tuple(
        Module(str(path.relative_to(root)), ast.parse(path.read_text(), str(path)))
        for path in _walk(root)
    )


def imports_module(tree: ast.Module, name: str) -> bool:
    """True when ``tree`` imports ``name`` or one of its submodules."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(
            a.name == name or a.name.startswith(name + ".") for a in node.names
        ):
            return True
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and (node.module == name or node.module.startswith(name + "."))
        ):
            return True
    return False


def string_constants(tree: ast.Module) -> dict[str, str]:
    """Module-level ``NAME = "text"`` assignments."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = node.value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                for target in targets:
                    if isinstance(target, ast.Name):
                        out[target.id] = value.value
    return out
