"""Every documentation path the code and docs name exists (run by ``make lint``).

A path ``docs/NAME.md`` is this repository's (``docs/``); ``shared/docs/NAME.md`` (or
``../shared/docs/NAME.md``) is the shared design notes beside the checkout; a path written
after ``'s `` (``HAMi's docs/develop/amd-vgpu.md``) is another project's and not checked.
Scans ``*.py``, ``*.md`` and ``*.toml`` outside ``.venv`` and the data folders. Exit status 1
and one line per missing path (``file:line: path``), 0 otherwise.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
SKIP = {".venv", ".git", ".console", "node_modules", "staticfiles", "__pycache__"}
PATH = re.compile(r"(?<![\w/.-])((?:\.\./)?(?:shared/)?docs/[\w./-]+?\.md)\b")


def missing(root: Path = ROOT, shared: Path = SHARED) -> list[str]:
    """``file:line: path`` of every named documentation path that does not exist."""
    out = []
    for path in sorted(root.rglob("*")):
        if path.suffix not in {".py", ".md", ".toml"} or SKIP & set(path.parts):
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for match in PATH.finditer(line):
                before = line[max(0, match.start() - 6) : match.start()].rstrip("` ")
                if before.endswith("'s") or "NAME" in match.group(1):
                    continue  # another project's file, or this docstring's placeholder
                name = match.group(1).removeprefix("../")
                target = (
                    shared / name.removeprefix("shared/")
                    if name.startswith("shared/")
                    else root / name
                )
                if not target.exists():
                    out.append(f"{path.relative_to(root)}:{number}: {match.group(1)}")
    return out


if __name__ == "__main__":
    problems = missing()
    for problem in problems:
        print(problem)
    sys.exit(1 if problems else 0)
