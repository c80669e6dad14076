"""The fake API server fixture of the kubernetes-backend database tests
(``tests/scheduling/test_kube_*.py``), loaded there with
``pytest_plugins = ("tests.kube.db_fixtures",)``.

Not used by the Django-free tests of this folder (they use ``conftest.fake_apiserver``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from scheduling.backends.kubernetes import forget_gateways
from tests.kube.fake_apiserver import FakeApiServer


@pytest.fixture
def fake() -> Iterator[FakeApiServer]:
    """A started fake API server (namespaces ``default`` and ``llmops``, watches without a
    client timeout end after 1 s); on teardown it stops and the process's cached cluster
    gateways are dropped (:func:`scheduling.backends.kubernetes.forget_gateways`)."""
    server = FakeApiServer(namespaces=("default", "llmops"), watch_timeout_s=1.0)
    server.start()
    try:
        yield server
    finally:
        server.stop()
        forget_gateways()
