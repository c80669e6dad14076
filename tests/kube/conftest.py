"""Fixtures for the Kubernetes tests: a running fake API server and clients for it.

This folder holds every Kubernetes test: the adapter's (``scheduling.kube``: gateway,
inventory, manifests, workloads, quantities, pod security), which need no Django, and the
database tests of the kubernetes backend and the services that drive it (``test_kube_*`` with
the ``fake`` fixture of ``tests/conftest.py`` and ``kube_helpers.py``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest
from kubernetes import client as k8s

sys.path.insert(0, os.path.dirname(__file__))

from fake_apiserver import FakeApiServer  # noqa: E402


@pytest.fixture
def fake_apiserver() -> Iterator[FakeApiServer]:
    """A started fake API server serving resource.k8s.io v1, v1beta2 and v1beta1."""
    server = FakeApiServer(namespaces=("default", "llmops"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def api_client_for(server: FakeApiServer) -> k8s.ApiClient:
    """An official ``kubernetes.client.ApiClient`` pointed at ``server`` (plain HTTP)."""
    cfg = k8s.Configuration(host=server.url)
    cfg.verify_ssl = False
    return k8s.ApiClient(cfg)


@pytest.fixture
def api_client(fake_apiserver: FakeApiServer) -> Iterator[k8s.ApiClient]:
    """ApiClient configured for the ``fake_apiserver`` fixture."""
    c = api_client_for(fake_apiserver)
    try:
        yield c
    finally:
        c.close()
