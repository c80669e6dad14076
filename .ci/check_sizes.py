"""Size bounds of the code base (run by ``make lint``): no module over 600 lines, no function
over 60 lines.

Usage: ``python .ci/check_sizes.py [--max-module 600] [--max-function 60] [paths...]``
(default paths: the five packages). Exit status 1 and one line per violation
(``path:line: what``) when a bound is broken, 0 otherwise.

Data tables are exempt: a module-level assignment (``TABLE = {...}``) is not a function, and a
function whose body is a single ``return`` of a literal (a table builder) is not counted.
Migrations are generated and skipped. A function's length runs from its ``def`` (decorators
excluded) to its last line, docstring included: the docstring is part of what a reader reads.

Known violations waiting for a branch in flight are listed in ``.ci/size_exceptions.txt``
(``path`` for a module, ``path::function`` for a function, then ``#`` and why). The list can
only shrink: an entry that no longer matches a violation fails the check too.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from pathlib import Path

PACKAGES = ("console", "core", "scheduling", "telemetry", "tenants")
EXCEPTIONS = Path(__file__).with_name("size_exceptions.txt")
SKIP_PARTS = {"migrations", "__pycache__"}


def python_files(paths: list[str]) -> Iterator[Path]:
    """Every ``.py`` file under ``paths`` (files given directly are kept), migrations skipped."""
    for raw in paths:
        path = Path(raw)
        candidates = [path] if path.is_file() else sorted(path.rglob("*.py"))
        for p in candidates:
            if not SKIP_PARTS.intersection(p.parts):
                yield p


def _is_table(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    body = [
        s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
    ]
    return (
        len(body) == 1
        and isinstance(body[0], ast.Return)
        and isinstance(body[0].value, (ast.Dict, ast.List, ast.Tuple, ast.Set))
    )


def violations(path: Path, max_module: int, max_function: int) -> Iterator[tuple[str, str]]:
    """``(key, "path:line: message")`` for each bound ``path`` breaks; the key is ``path``
    or ``path::function`` (as in the exceptions file)."""
    text = path.read_text(encoding="utf-8")
    lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    key = path.as_posix()
    if lines > max_module:
        yield key, f"{key}:1: module has {lines} lines (max {max_module})"
    for node in ast.walk(ast.parse(text, filename=str(path))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _is_table(node):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > max_function:
                yield (
                    f"{key}::{node.name}",
                    f"{key}:{node.lineno}: function {node.name} has "
                    f"{length} lines (max {max_function})",
                )


def load_exceptions(path: Path) -> set[str]:
    """Keys listed in the exceptions file (comments and blank lines ignored)."""
    if not path.exists():
        return set()
    keys = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return {k for k in keys if k}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-module", type=int, default=600)
    parser.add_argument("--max-function", type=int, default=60)
    parser.add_argument("--exceptions", type=Path, default=EXCEPTIONS)
    parser.add_argument("paths", nargs="*", default=list(PACKAGES))
    args = parser.parse_args(argv)
    allowed = load_exceptions(args.exceptions)
    found = [
        v
        for p in python_files(args.paths)
        for v in violations(p, args.max_module, args.max_function)
    ]
    broken = [msg for key, msg in found if key not in allowed]
    checked = {p.as_posix() for p in python_files(args.paths)}
    stale = sorted(k for k in allowed - {key for key, _ in found} if k.split("::", 1)[0] in checked)
    broken += [
        f"{k}: listed in {args.exceptions} but within the bounds now; remove the entry"
        for k in stale
    ]
    for line in broken:
        print(line)
    if broken:
        print(f"{len(broken)} size bound(s) broken", file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
