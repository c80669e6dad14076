"""``GET /api/`` lists every endpoint of the API, not only one router's (issue 30)."""

import pytest
from django.urls import resolve

from tests.api.test_api_directory import as_user

pytestmark = pytest.mark.django_db

#: Every route under /api/ that takes no parameter (a detail route needs an id).
ENDPOINTS = {
    "jobs",
    "jobs/batch",
    "queues",
    "priority-classes",
    "nodes",
    "devices",
    "device-models",
    "clusters",
    "placements",
    "dry-run",
    "quotas/dry-run",
    "usage",
    "fragmentation",
    "topologies",
    "tenants",
    "members",
    "resource-groups",
    "quotas",
    "invitations",
    "invitations/accept-token",
    "telemetry/targets",
    "telemetry/prices",
    "telemetry/efficiency",
    "telemetry/idle-jobs",
    "telemetry/cost",
    "telemetry/cost/csv",
    "telemetry/alerts",
    "notifications/subscriptions",
    "notifications/deliveries",
    "schema",
    "docs",
}


def test_the_api_root_lists_every_endpoint(api, world):
    response = as_user(api, world["alice"]).get("/api/")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == ENDPOINTS
    for key, url in body.items():
        assert url == f"http://testserver/api/{key}/", key
        resolve(f"/api/{key}/")  # a real route
