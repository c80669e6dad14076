"""Shared fixtures. Database tests run on real PostgreSQL (embedded unless DATABASE_URL is
set); see console/settings/test.py. Pure-core tests (placement, admission) need none of this
and also run with ``-p no:django``."""

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
