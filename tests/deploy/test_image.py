"""The Dockerfile builds an image the manifests can run: every package the project installs
reaches the build, and it runs as a numeric non-root user without writing to its root."""

from __future__ import annotations

import fnmatch
import re
import tomllib

from tests.deploy.sources import ROOT

DOCKERFILE = (ROOT / "Dockerfile").read_text()


def ignored(path: str, patterns: list[str]) -> bool:
    """Whether .dockerignore ``patterns`` leave out ``path`` or a folder above it (Docker's
    rules: patterns match from the context root, ``**`` any number of folders)."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for pattern in patterns:
        pattern = pattern.strip("/")
        candidates = [pattern, pattern.removeprefix("**/")] if "**/" in pattern else [pattern]
        if any(fnmatch.fnmatchcase(p, c) for p in prefixes for c in candidates):
            return True
    return False


def test_the_build_context_keeps_what_the_image_needs() -> None:
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert not any(p.startswith("!") for p in patterns)  # no re-includes to reason about
    include = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "packages"
    ]["find"]["include"]
    packages = [
        d.name
        for d in ROOT.iterdir()
        if (d / "__init__.py").exists() and any(fnmatch.fnmatchcase(d.name, p) for p in include)
    ]
    assert "console" in packages
    needed = [*packages, "manage.py", "pyproject.toml", "templates", "static"]
    assert [n for n in needed if ignored(n, patterns)] == []
    assert ignored("tests/deploy/test_image.py", patterns)
    assert ignored(".venv/bin/python", patterns) and ignored("console/__pycache__", patterns)
    assert re.search(r"^COPY \. \.$", DOCKERFILE, re.M)


def test_runs_as_a_numeric_non_root_user_on_a_read_only_root() -> None:
    (user,) = re.findall(r"^USER (\S+)$", DOCKERFILE, re.M)
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and gid.isdigit() and int(uid) > 0 and int(gid) > 0
    assert "PYTHONDONTWRITEBYTECODE=1" in DOCKERFILE
    assert "HOME=/tmp" in DOCKERFILE  # the only writable folder in the pods
