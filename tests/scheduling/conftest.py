"""Fixtures shared by the scheduling tests (database): the admission cohort and the fake
Kubernetes API server of the kubernetes-backend tests (``test_kube_*.py``)."""

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


@pytest.fixture
def cohort(db):
    """4 A100s (2 nodes x 2); team-a and team-b each have 2 whole devices nominal.

    Returns:
        ``(group, (team_a, queue_a), (team_b, queue_b))``.
    """
    from tests.builders import two_team_cohort

    return two_team_cohort()
