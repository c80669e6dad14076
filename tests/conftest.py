"""Shared fixtures. Database tests run on real PostgreSQL (embedded unless DATABASE_URL is
set); see console/settings/test.py. Pure-core tests (placement, admission) need none of this
and also run with ``-p no:django``."""

import pytest


@pytest.fixture
def api():
    """A DRF test client (imported lazily so pure-core tests run without Django)."""
    from rest_framework.test import APIClient

    return APIClient()
