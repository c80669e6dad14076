"""OpenID Connect sign-in against a stub identity provider: a real HTTP server on 127.0.0.1
serving the discovery document, token, userinfo and JWKS endpoints, signing id tokens with its
own RSA key. The
authorization step is the browser's redirect: the test reads ``state`` and ``nonce`` from the
console's redirect and comes back to the callback with a code, as the provider would."""

from __future__ import annotations

import json
import logging
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlparse

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured

from console.oidc import grants_for, parse_group_map
from tenants.models import Membership, Tenant

pytestmark = pytest.mark.django_db

CLIENT_ID, CLIENT_SECRET = "console", secrets.token_urlsafe(24)  # no secret in the code
GROUP_MAP = {
    "gpu-team-a": "team-a:member",
    "team-a-leads": "team-a:tenant_admin",
    "ml-viewers": "team-b:viewer",
    "ops": "platform-admin",
}


@dataclass
class Provider:
    """The stub's state: the next login's claims, the nonce to put in the id token, the key."""

    url: str = ""
    claims: dict = field(default_factory=dict)
    nonce: str = ""
    key: rsa.RSAPrivateKey = field(
        default_factory=lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048)
    )
    signing_key: rsa.RSAPrivateKey | None = None  # a different key: a forged token
    token_requests: list[dict] = field(default_factory=list)
    token_status: int = 200  # 503: the token endpoint is down
    discovery_requests: int = 0
    id_tokens: list[str] = field(default_factory=list)  # issued, in order

    def discovery(self) -> dict:
        return {
            "issuer": self.url,
            "authorization_endpoint": self.url + "/authorize",
            "token_endpoint": self.url + "/token",
            "userinfo_endpoint": self.url + "/userinfo",
            "jwks_uri": self.url + "/jwks",
            "end_session_endpoint": self.url + "/logout",
        }

    def id_token(self) -> str:
        now = int(time.time())
        payload = {
            "iss": self.url,
            "aud": CLIENT_ID,
            "sub": self.claims["sub"],
            "iat": now,
            "exp": now + 300,
            "nonce": self.nonce,
        }
        token = jwt.encode(
            payload, self.signing_key or self.key, algorithm="RS256", headers={"kid": "stub-1"}
        )
        self.id_tokens.append(token)
        return token


@pytest.fixture
def provider() -> Iterator[Provider]:
    state = Provider()

    class Handler(BaseHTTPRequestHandler):
        def _json(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):  # noqa: N802 (http.server's name)
            form = parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
            state.token_requests.append(form)
            if state.token_status != 200:
                self._json(state.token_status, {"error": "temporarily_unavailable"})
            elif (form.get("client_id"), form.get("client_secret"), form.get("code")) != (
                [CLIENT_ID],
                [CLIENT_SECRET],
                ["the-code"],
            ):
                self._json(400, {"error": "invalid_grant"})
            else:
                self._json(
                    200,
                    {
                        "id_token": state.id_token(),
                        "access_token": "at-1",
                        "token_type": "Bearer",
                        "expires_in": 300,
                    },
                )

        def do_GET(self):  # noqa: N802
            if self.path == "/.well-known/openid-configuration":
                state.discovery_requests += 1
                self._json(200, state.discovery())
            elif self.path == "/jwks":
                jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(state.key.public_key()))
                self._json(200, {"keys": [{**jwk, "kid": "stub-1", "alg": "RS256", "use": "sig"}]})
            elif self.path == "/userinfo" and self.headers.get("Authorization") == "Bearer at-1":
                self._json(200, state.claims)
            else:
                self._json(401, {"error": "invalid_token"})

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    server.shutdown()


@pytest.fixture
def sso(settings, provider):
    settings.OIDC_RP_CLIENT_ID = CLIENT_ID
    settings.OIDC_RP_CLIENT_SECRET = CLIENT_SECRET
    settings.OIDC_OP_AUTHORIZATION_ENDPOINT = provider.url + "/authorize"
    settings.OIDC_OP_TOKEN_ENDPOINT = provider.url + "/token"
    settings.OIDC_OP_USER_ENDPOINT = provider.url + "/userinfo"
    settings.OIDC_OP_JWKS_ENDPOINT = provider.url + "/jwks"
    settings.OIDC_PROVIDER_NAME = "Stub IdP"
    settings.CONSOLE_OIDC_GROUP_MAP = json.dumps(GROUP_MAP)
    for name in ("team-a", "team-b", "team-c"):
        Tenant.objects.get_or_create(name=name)
    return provider


def _sign_in(client, provider, claims) -> object:
    """The code flow: the console redirects to the provider, which comes back with a code."""
    provider.claims = claims
    start = client.get("/oidc/authenticate/")
    assert start.status_code == 302
    location = urlparse(start["Location"])
    assert f"{location.scheme}://{location.netloc}{location.path}" == provider.url + "/authorize"
    query = parse_qs(location.query)
    assert query["client_id"] == [CLIENT_ID] and "openid" in query["scope"][0].split()
    provider.nonce = query["nonce"][0]
    return client.get("/oidc/callback/", {"code": "the-code", "state": query["state"][0]})


def _roles(user) -> dict[str, str]:
    return dict(Membership.objects.filter(user=user).values_list("tenant__name", "role"))


def test_first_sign_in_creates_user_with_mapped_roles(client, sso):
    assert "Sign in with Stub IdP" in client.get("/accounts/login/").content.decode()
    response = _sign_in(
        client,
        sso,
        {
            "sub": "u-1",
            "preferred_username": "carol",
            "email": "carol@example.org",
            "groups": ["gpu-team-a", "team-a-leads", "ml-viewers", "unmapped"],
        },
    )
    assert response.status_code == 302 and response["Location"] == "/"
    carol = get_user_model().objects.get(username="carol")
    assert not carol.has_usable_password() and carol.email == "carol@example.org"
    assert _roles(carol) == {"team-a": "tenant_admin", "team-b": "viewer"}  # highest role wins
    assert not carol.is_superuser
    assert client.get("/").status_code == 200  # signed in
    assert sso.token_requests[0]["redirect_uri"] == ["http://testserver/oidc/callback/"]


def test_groups_rule_memberships_at_every_sign_in(client, sso):
    _sign_in(
        client,
        sso,
        {"sub": "u-1", "preferred_username": "carol", "groups": ["gpu-team-a", "ml-viewers"]},
    )
    carol = get_user_model().objects.get(username="carol")
    # a tenant admin adds carol to team-c, which no IdP group names: SSO leaves it alone
    Membership.objects.create(user=carol, tenant=Tenant.objects.get(name="team-c"), role="member")
    client.logout()
    _sign_in(client, sso, {"sub": "u-1", "preferred_username": "carol", "groups": ["ops"]})
    carol.refresh_from_db()
    assert _roles(carol) == {"team-c": "member"}
    assert carol.is_superuser and carol.is_staff
    client.logout()
    _sign_in(client, sso, {"sub": "u-1", "preferred_username": "carol", "groups": []})
    carol.refresh_from_db()
    assert not carol.is_superuser


def test_local_account_is_not_taken_over(client, sso):
    alice = get_user_model().objects.create_user("alice", password="pw-alice")
    response = _sign_in(client, sso, {"sub": "x", "preferred_username": "alice", "groups": ["ops"]})
    assert response.status_code == 302
    alice.refresh_from_db()
    assert not alice.is_superuser and alice.has_usable_password()
    assert "_auth_user_id" not in client.session
    # the local login still works (through the login page: django-axes needs the request)
    local = client.post("/accounts/login/", {"username": "alice", "password": "pw-alice"})
    assert local.status_code == 302 and client.session["_auth_user_id"] == str(alice.pk)


def test_forged_token_is_refused(client, sso):
    sso.signing_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _sign_in(client, sso, {"sub": "u-2", "preferred_username": "mallory", "groups": ["ops"]})
    assert not get_user_model().objects.filter(username="mallory").exists()
    assert "_auth_user_id" not in client.session


def test_sso_off_without_client_id(client, settings):
    settings.OIDC_RP_CLIENT_ID = ""
    assert client.get("/oidc/authenticate/").status_code == 404
    assert "Sign in with" not in client.get("/accounts/login/").content.decode()


def test_group_map_rules():
    mapping = parse_group_map(json.dumps(GROUP_MAP))
    assert grants_for(["gpu-team-a", "team-a-leads"], mapping) == (
        {"team-a": "tenant_admin"},
        False,
    )
    assert grants_for(["ops", "nope"], mapping) == ({}, True)
    for bad in ("[1]", "{not json", '{"g": "team-a:owner"}', '{"g": "no-role"}'):
        with pytest.raises(ImproperlyConfigured):
            parse_group_map(bad)


@pytest.fixture
def sso_by_issuer(sso, settings):
    """SSO configured with the issuer only: every endpoint comes from discovery."""
    settings.OIDC_ISSUER = sso.url
    for name in (
        "OIDC_OP_AUTHORIZATION_ENDPOINT",
        "OIDC_OP_TOKEN_ENDPOINT",
        "OIDC_OP_USER_ENDPOINT",
        "OIDC_OP_JWKS_ENDPOINT",
        "OIDC_OP_LOGOUT_ENDPOINT",
    ):
        setattr(settings, name, "")
    return sso


def _closed_port_url() -> str:
    """The URL of a port nothing listens on (connection refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_endpoints_discovered_from_issuer_and_cached(client, sso_by_issuer):
    response = _sign_in(
        client, sso_by_issuer, {"sub": "u-1", "preferred_username": "carol", "groups": ["ops"]}
    )
    assert response.status_code == 302 and response["Location"] == "/"
    assert get_user_model().objects.get(username="carol").is_superuser
    assert len(sso_by_issuer.token_requests) == 1  # the discovered token endpoint
    client.logout()
    _sign_in(client, sso_by_issuer, {"sub": "u-1", "preferred_username": "carol"})
    assert client.session["_auth_user_id"]
    assert sso_by_issuer.discovery_requests == 1  # two sign-ins, one discovery


def test_explicit_endpoint_overrides_discovery(client, sso_by_issuer, settings):
    settings.OIDC_OP_AUTHORIZATION_ENDPOINT = "https://login.example/oauth2/authorize"
    start = client.get("/oidc/authenticate/")
    assert start.status_code == 302
    assert start["Location"].startswith("https://login.example/oauth2/authorize?")


def test_logout_at_the_provider(client, sso_by_issuer):
    _sign_in(client, sso_by_issuer, {"sub": "u-1", "preferred_username": "carol"})
    id_token = sso_by_issuer.id_tokens[-1]
    response = client.post("/accounts/logout/")
    assert response.status_code == 302
    assert response["Location"] == sso_by_issuer.url + "/logout?" + urlencode(
        {"id_token_hint": id_token, "post_logout_redirect_uri": "http://testserver/accounts/login/"}
    )
    assert "_auth_user_id" not in client.session


def test_local_account_logout_stays_local(client, sso_by_issuer):
    get_user_model().objects.create_user("alice", password="pw-alice")
    client.post("/accounts/login/", {"username": "alice", "password": "pw-alice"})
    assert "_auth_user_id" in client.session
    response = client.post("/accounts/logout/")
    assert (response.status_code, response["Location"]) == (302, "/accounts/login/")
    assert "_auth_user_id" not in client.session
    assert sso_by_issuer.discovery_requests == 0  # the provider is not asked


def _assert_provider_down_page(response, caplog) -> None:
    assert response.status_code == 503
    page = response.content.decode()
    assert "Stub IdP (the identity provider) is unreachable right now" in page
    assert 'name="password"' in page  # the local login form is there
    assert "Traceback" not in page
    lines = [r.getMessage() for r in caplog.records if r.name == "console.urls"]
    assert len(lines) == 1 and "\n" not in lines[0]
    assert lines[0].startswith("Identity provider unavailable: ")


def test_discovery_unreachable_shows_login_page(client, sso_by_issuer, settings, caplog):
    settings.OIDC_ISSUER = _closed_port_url()
    with caplog.at_level(logging.WARNING):
        response = client.get("/oidc/authenticate/")
    _assert_provider_down_page(response, caplog)
    # local login still works
    get_user_model().objects.create_user("alice", password="pw-alice")
    local = client.post("/accounts/login/", {"username": "alice", "password": "pw-alice"})
    assert local.status_code == 302 and "_auth_user_id" in client.session


def test_token_endpoint_5xx_shows_login_page(client, sso_by_issuer, caplog):
    sso_by_issuer.token_status = 503
    with caplog.at_level(logging.WARNING):
        response = _sign_in(client, sso_by_issuer, {"sub": "u-1", "preferred_username": "carol"})
    _assert_provider_down_page(response, caplog)
    assert "_auth_user_id" not in client.session
    assert not get_user_model().objects.filter(username="carol").exists()


def test_logout_stays_local_when_provider_unreachable(client, sso_by_issuer, settings, caplog):
    _sign_in(client, sso_by_issuer, {"sub": "u-1", "preferred_username": "carol"})
    settings.OIDC_ISSUER = _closed_port_url()  # not discovered yet: logout needs discovery
    with caplog.at_level(logging.WARNING):
        response = client.post("/accounts/logout/")
    assert (response.status_code, response["Location"]) == (302, "/accounts/login/")
    assert "_auth_user_id" not in client.session
    lines = [r.getMessage() for r in caplog.records if r.name == "console.oidc_discovery"]
    assert len(lines) == 1 and lines[0].startswith("Logout at the identity provider skipped: ")
