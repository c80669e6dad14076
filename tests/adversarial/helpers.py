"""Helpers of the adversarial API tests."""

from __future__ import annotations

from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient


def client_for(user) -> APIClient:
    """A token-authenticated client that answers a server error as a 500 response (instead of
    raising), so a test can assert the status the real server would send."""
    client = APIClient()
    client.raise_request_exception = False
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def assert_field_error(response, *fields: str) -> None:
    """400 in the project's error shape, naming exactly ``fields``."""
    assert response.status_code == 400, (response.status_code, response.content[:400])
    body = response.json()["error"]
    assert body["code"] == "invalid"
    assert set(body["fields"]) == set(fields), body


def text(response) -> str:
    return response.content.decode("utf-8", "replace")
