"""``GET /metrics`` is not public (issue 29): its series name tenants, queues and users.

With ``METRICS_TOKEN`` set, Prometheus reads it with the token as a bearer token
(``authorization: credentials:`` / ``bearer_token_file``) or as the HTTP basic password; a
platform admin's session reads it too. Without the token configured only a platform admin's
session does. Everything else is a 401 with ``WWW-Authenticate`` and no series at all.
"""

from __future__ import annotations

import base64

import pytest
from django.core.exceptions import ImproperlyConfigured

from console.settings.security import metrics_token
from tests.builders import gpu_job, make_group, make_tenant, make_user

pytestmark = pytest.mark.django_db

TOKEN = "s3cret-metrics-token-0123456789"


@pytest.fixture
def queued(db):
    """A queued job of tenant ``team-secret``: a name the series carry."""
    group = make_group("g-secret")
    _tenant, queue = make_tenant("team-secret", group, devices_milli=1000)
    gpu_job(queue, "hidden-job", count=1)
    return queue


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def _refused(response) -> None:
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer realm=")
    body = response.content.decode()
    assert "team-secret" not in body
    assert "console_queue_depth" not in body


def _served(response) -> str:
    assert response.status_code == 200, response.content[:200]
    assert response["Cache-Control"] == "no-store"
    text = response.content.decode()
    assert 'console_queue_depth{resource_group="g-secret",tenant="team-secret"} 1.0' in text
    return text


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "Bearer wrong-token-0123456789",
        "Bearer " + TOKEN[:-1],
        "Bearer " + TOKEN + "x",
        "Token " + TOKEN,  # the API's scheme is not the metrics one
        _basic("prometheus", "wrong"),
        "Basic not-base64!",
        "Bearer",
    ],
)
def test_without_the_token_metrics_is_401(client, settings, queued, authorization):
    settings.METRICS_TOKEN = TOKEN
    headers = {"HTTP_AUTHORIZATION": authorization} if authorization else {}
    response = client.get("/metrics", **headers)
    _refused(response)
    assert "Basic" in response["WWW-Authenticate"]


@pytest.mark.parametrize(
    "authorization",
    [
        "Bearer " + TOKEN,
        "bearer  " + TOKEN + " ",  # the scheme in any case, spaces around the token
        _basic("prometheus", TOKEN),
        _basic("", TOKEN),
    ],
)
def test_the_token_reads_metrics_with_tenant_series(client, settings, queued, authorization):
    settings.METRICS_TOKEN = TOKEN
    _served(client.get("/metrics", HTTP_AUTHORIZATION=authorization))


def test_without_a_configured_token_only_a_platform_admin_session_reads_it(
    client, settings, queued
):
    settings.METRICS_TOKEN = ""
    _refused(client.get("/metrics"))
    # no token configured: no bearer value opens it, not even an empty one
    _refused(client.get("/metrics", HTTP_AUTHORIZATION="Bearer "))
    _refused(client.get("/metrics", HTTP_AUTHORIZATION=_basic("admin", "")))
    member = make_user("member-m", queued.tenant, "tenant_admin")
    client.force_login(member)
    _refused(client.get("/metrics"))
    client.force_login(make_user("root-m", is_superuser=True, is_staff=True))
    _served(client.get("/metrics"))


def test_a_platform_admin_session_reads_it_with_a_token_configured(client, settings, queued):
    settings.METRICS_TOKEN = TOKEN
    client.force_login(make_user("root-t", is_superuser=True, is_staff=True))
    _served(client.get("/metrics"))


def test_metrics_only_answers_get_and_head(client, settings, queued):
    settings.METRICS_TOKEN = TOKEN
    assert client.post("/metrics", HTTP_AUTHORIZATION="Bearer " + TOKEN).status_code == 405
    assert client.head("/metrics", HTTP_AUTHORIZATION="Bearer " + TOKEN).status_code == 200


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("short", "at least 16"),
        ("has a space in it 0123", "printable ASCII"),
        ("tökén-0123456789abcdef", "printable ASCII"),
    ],
)
def test_a_weak_or_unsendable_token_stops_start_up(value, message):
    with pytest.raises(ImproperlyConfigured, match=message) as exc:
        metrics_token(value)
    assert "METRICS_TOKEN" in str(exc.value)


def test_unset_or_good_tokens_pass_the_start_up_check():
    assert metrics_token("") == ""
    assert metrics_token(TOKEN) == TOKEN
