"""Shared fixtures. Database tests run on real PostgreSQL (embedded unless DATABASE_URL is
set); see console/settings/test.py. Pure-core tests (``tests/placement``, the pure modules of
``tests/admission`` and ``tests/kube``) need none of this and also run with ``-p no:django``;
each of those folders holds the database tests of its concern too."""

from collections.abc import Iterator

import pytest


@pytest.fixture
def api():
    """A DRF test client (imported lazily so pure-core tests run without Django)."""
    from rest_framework.test import APIClient

    return APIClient()


@pytest.fixture
def world(db):
    """The two-tenant world of ``tests/console_world.py`` (cluster ``c1``, ``team-a`` and
    ``team-b``, their users and three jobs; see there) for the page, API, console and
    adversarial tests. A module that needs another world defines its own ``world``."""
    from tests.console_world import build_world

    return build_world()


@pytest.fixture
def cohort(db):
    """4 A100s (2 nodes x 2); team-a and team-b each have 2 whole devices nominal (the
    admission database tests and others).

    Returns:
        ``(group, (team_a, queue_a), (team_b, queue_b))``.
    """
    from tests.builders import two_team_cohort

    return two_team_cohort()


@pytest.fixture
def fake(request) -> Iterator:
    """A started fake Kubernetes API server (``tests/kube/fake_apiserver.py``; namespaces
    ``default`` and ``llmops``, watches without a client timeout end after 1 s) for the
    kubernetes-backend database tests; a module or test marked
    ``@pytest.mark.fake_apiserver(**options)`` overrides those options (e.g.
    ``namespaces=None``, ``device_taint_rules=True``). On teardown it stops and the process's
    cached cluster gateways are dropped (:func:`scheduling.backends.kubernetes.forget_gateways`).
    Imported lazily so pure-core tests run without Django."""
    from scheduling.backends.kubernetes import forget_gateways
    from tests.kube.fake_apiserver import FakeApiServer

    options: dict = {"namespaces": ("default", "llmops"), "watch_timeout_s": 1.0}
    marker = request.node.get_closest_marker("fake_apiserver")
    if marker is not None:
        options.update(marker.kwargs)
    server = FakeApiServer(**options)
    server.start()
    try:
        yield server
    finally:
        server.stop()
        forget_gateways()
