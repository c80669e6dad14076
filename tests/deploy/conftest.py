"""Fixtures for the deployment tests: the Kustomize renderer and rendered manifests.

Without a renderer the rendering tests skip with the reason, except on CI (``CI`` set), where
.ci/run installs one and its absence is a failure.
"""

from __future__ import annotations

import os
import subprocess

import pytest
import yaml

from tests.deploy.renderer import find_renderer
from tests.deploy.sources import ROOT

KUSTOMIZATIONS = ("deploy/base", "deploy/overlays/small", "deploy/overlays/ha")


@pytest.fixture(scope="session")
def renderer() -> list[str]:
    found = find_renderer()
    if isinstance(found, str):
        if os.environ.get("CI"):
            pytest.fail(f"CI must render deploy/: {found}")
        pytest.skip(found)
    return found


def render(renderer: list[str], folder: str) -> list[dict]:
    """The objects ``folder`` renders to.

    Raises:
        AssertionError: the renderer fails (its message included).
    """
    done = subprocess.run(
        [*renderer, str(ROOT / folder)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, f"{' '.join(renderer)} {folder} failed:\n{done.stderr}"
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


@pytest.fixture(scope="session")
def rendered(renderer: list[str]) -> dict[str, list[dict]]:
    """``{kustomization folder: objects}`` for the base and both overlays."""
    return {folder: render(renderer, folder) for folder in KUSTOMIZATIONS}
