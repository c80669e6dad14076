"""Shared fixtures. Database tests run on real PostgreSQL (embedded unless DATABASE_URL is
set); see console/settings/test.py."""

import pytest
from rest_framework.test import APIClient


@pytest.fixture
def api():
    return APIClient()
