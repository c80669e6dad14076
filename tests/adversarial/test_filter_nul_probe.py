"""Probe: a NUL character in a list filter is a 400 (or no match), never a 500 (PostgreSQL
refuses NUL in a query parameter)."""

from __future__ import annotations

import pytest

from tests.adversarial.helpers import client_for, text

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("path", "param"),
    [
        ("/api/jobs/", "tenant"),
        ("/api/jobs/", "name"),
        ("/api/nodes/", "cluster"),
        ("/api/nodes/", "name"),
        ("/api/devices/", "node"),
        ("/api/devices/", "model"),
        ("/api/devices/", "vendor"),
        ("/api/placements/", "node"),
        ("/api/placements/", "tenant"),
        ("/api/placements/", "device"),
        ("/api/device-models/", "name"),
        ("/api/clusters/", "name"),
    ],
)
def test_a_nul_in_a_filter_is_not_a_server_error(world, path, param):
    response = client_for(world["alice"]).get(path, {param: "a\x00b"})
    assert response.status_code in (200, 400), (response.status_code, text(response)[:300])
    if response.status_code == 200:
        assert response.json()["results"] == []
