"""Login throttling (issue 15, django-axes): 40 wrong passwords, then the right one is refused
for the cool-off on the login page and the admin login; the API takes no passwords at all."""

from __future__ import annotations

import base64
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.test import Client
from django.utils import timezone

pytestmark = pytest.mark.django_db


def _login(client, path, password, username="alice"):
    return client.post(path, {"username": username, "password": password})


@pytest.mark.parametrize("path", ["/accounts/login/", "/admin/login/"])
def test_forty_wrong_passwords_then_the_right_one_is_refused(world, path):
    user = world["alice"]
    user.is_staff = True  # the admin login only admits staff
    user.save()
    client = Client()
    answers = {_login(client, path, f"wrong-{i}").status_code for i in range(40)}
    assert answers <= {200, 429}
    right = _login(client, path, "pw-alice")
    assert right.status_code == 429
    text = right.content.decode()
    assert "Too many failed logins" in text and "alice" in text
    assert "try again in 15 min" in text and "even with the right password" in text
    assert "_auth_user_id" not in client.session


def test_the_fifth_failure_locks_and_the_cool_off_ends_it(world):
    client = Client()
    for i in range(4):
        assert _login(client, "/accounts/login/", f"wrong-{i}").status_code == 200
    assert _login(client, "/accounts/login/", "wrong-4").status_code == 429
    assert _login(client, "/accounts/login/", "pw-alice").status_code == 429
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=16))
    response = _login(client, "/accounts/login/", "pw-alice")
    assert response.status_code == 302 and response["Location"] == "/"


def test_a_success_before_the_limit_resets_the_count(world):
    client = Client()
    for i in range(4):
        _login(client, "/accounts/login/", f"wrong-{i}")
    assert _login(client, "/accounts/login/", "pw-alice").status_code == 302
    client.post("/accounts/logout/")
    for i in range(4):
        assert _login(client, "/accounts/login/", f"again-{i}").status_code == 200


def test_the_lockout_is_per_username_and_address(world):
    attacker = Client(REMOTE_ADDR="203.0.113.9")
    for i in range(6):
        _login(attacker, "/accounts/login/", f"wrong-{i}")
    assert _login(attacker, "/accounts/login/", "pw-alice").status_code == 429
    # forging X-Forwarded-For does not give the attacker a fresh address
    forged = Client(REMOTE_ADDR="203.0.113.9", HTTP_X_FORWARDED_FOR="198.51.100.1")
    assert _login(forged, "/accounts/login/", "pw-alice").status_code == 429
    # alice at her own desk is not locked out by the attacker, nor is bob
    assert (
        _login(Client(REMOTE_ADDR="192.0.2.10"), "/accounts/login/", "pw-alice").status_code == 302
    )
    assert _login(attacker, "/accounts/login/", "pw-bob", username="bob").status_code == 302


def test_the_api_accepts_no_password(world):
    client = Client()
    basic = base64.b64encode(b"alice:pw-alice").decode()
    response = client.get("/api/jobs/", HTTP_AUTHORIZATION=f"Basic {basic}")
    assert response.status_code == 401
