"""Probe endpoints (console/health.py): answered for a kubelet that probes the pod IP with no
credentials; readiness follows PostgreSQL, Redis is reported only."""

from __future__ import annotations

import json

import pytest
from django.db import OperationalError

from console import health

POD_HOST = "10.244.1.7:8000"  # what a kubelet sends: the pod IP, not an ALLOWED_HOSTS name


def test_liveness_answers_any_host_without_session_or_database(client):
    # No django_db mark: pytest-django makes any database access here an error.
    response = client.get("/healthz", HTTP_HOST=POD_HOST)
    assert response.status_code == 200
    assert json.loads(response.content) == {"status": "ok"}
    assert response["Cache-Control"] == "no-store"
    assert "Set-Cookie" not in response
    assert client.head("/healthz", HTTP_HOST=POD_HOST).status_code == 200


@pytest.mark.django_db
def test_readiness_ok_on_real_postgres_and_redis(client):
    response = client.get("/readyz", HTTP_HOST=POD_HOST)
    assert response.status_code == 200
    assert json.loads(response.content) == {
        "status": "ok",
        "checks": {"database": "ok", "redis": "ok"},
    }


@pytest.mark.django_db
def test_readiness_fails_when_postgres_fails_and_hides_the_cause(client, monkeypatch):
    def broken_cursor():
        raise OperationalError("connection to server at db-secret.internal failed")

    monkeypatch.setattr(health.connection, "cursor", broken_cursor)
    response = client.get("/readyz", HTTP_HOST=POD_HOST)
    assert response.status_code == 503
    assert json.loads(response.content) == {
        "status": "unavailable",
        "checks": {"database": "unavailable", "redis": "ok"},
    }
    assert b"db-secret" not in response.content


@pytest.mark.django_db
def test_readiness_reports_redis_down_but_stays_ready(client, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1: refused at once
    response = client.get("/readyz", HTTP_HOST=POD_HOST)
    assert response.status_code == 200
    assert json.loads(response.content) == {
        "status": "ok",
        "checks": {"database": "ok", "redis": "unavailable"},
    }


def test_probes_accept_only_get_and_head(client):
    response = client.post("/healthz", HTTP_HOST=POD_HOST)
    assert response.status_code == 405
    assert response["Allow"] == "GET, HEAD"


@pytest.mark.django_db
def test_other_paths_keep_host_validation_and_login(client):
    assert client.get("/healthz/", HTTP_HOST=POD_HOST).status_code == 400  # DisallowedHost
    assert client.get("/", HTTP_HOST=POD_HOST).status_code == 400
    assert client.get("/").status_code == 302  # an allowed host still goes to the login
