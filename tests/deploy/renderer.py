"""Find a Kustomize renderer for deploy/: ``kustomize build`` or ``kubectl kustomize``.

Looked for on PATH and next to the running Python (where .ci/install_kubectl.py puts one).
The manifests use Kustomize v5 fields (``labels``, ``replicas``, targeted ``patches``), so
an older renderer (Debian's kubectl 1.20 embeds kustomize v2.0.3) does not count.
Standard library only: .ci/install_kubectl.py imports it before the test dependencies exist.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

MIN_KUSTOMIZE = (5, 0)


def _which(name: str) -> str | None:
    beside_python = Path(sys.executable).parent / name
    if beside_python.is_file() and os.access(beside_python, os.X_OK):
        return str(beside_python)
    return shutil.which(name)


def _version(text: str) -> tuple[int, int] | None:
    match = re.search(r"v(\d+)\.(\d+)", text)
    return (int(match[1]), int(match[2])) if match else None


def _output(argv: list[str]) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    except OSError:
        return ""
    return done.stdout if done.returncode == 0 else ""


def find_renderer() -> list[str] | str:
    """The command prefix that renders a kustomization folder (append the folder), or a
    sentence saying why there is none."""
    seen = []
    kustomize = _which("kustomize")
    if kustomize:
        version = _version(_output([kustomize, "version"]))
        if version and version >= MIN_KUSTOMIZE:
            return [kustomize, "build"]
        seen.append(f"{kustomize} (kustomize {version})")
    kubectl = _which("kubectl")
    if kubectl:
        info = _output([kubectl, "version", "--client", "-o", "json"])
        version = _version(json.loads(info).get("kustomizeVersion", "")) if info else None
        if version and version >= MIN_KUSTOMIZE:
            return [kubectl, "kustomize"]
        seen.append(f"{kubectl} (embedded kustomize {version})")
    need = ".".join(map(str, MIN_KUSTOMIZE))
    return (
        f"no kustomize >= v{need} (as `kustomize` or in `kubectl`)"
        + (f"; found {', '.join(seen)}" if seen else "")
        + "; .ci/install_kubectl.py installs one"
    )
