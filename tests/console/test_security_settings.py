"""Production security settings from the environment (issue 15): CSP on every page, HSTS,
Secure/HttpOnly cookies, SSL redirect and the proxy header opt-in; ``manage.py check
--deploy`` is clean when the production variables are set."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = {
    "DEBUG": "false",
    "SECRET_KEY": "pr0d-" + "k7Qz!x9Lm#2vB$8nW@4rT%6yU^1iO&3pA*5sD(7fG)0hJ" * 2,
    "ALLOWED_HOSTS": "console.example.org",
    "CSRF_TRUSTED_ORIGINS": "https://console.example.org",
    "SECURE_SSL_REDIRECT": "true",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "true",
    "SECURE_HSTS_PRELOAD": "true",
    "SESSION_COOKIE_SECURE": "true",
    "CSRF_COOKIE_SECURE": "true",
    "SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto: https",
    "TRUSTED_PROXY_COUNT": "1",
}


def _check_deploy(extra: dict) -> subprocess.CompletedProcess:
    # DJANGO_ALLOW_ASYNC_UNSAFE is what the browser tests set in this process (Playwright
    # runs an event loop); a deployment never has it, and check --deploy refuses it
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in PRODUCTION
        and key != "DJANGO_ALLOW_ASYNC_UNSAFE"
        and not key.startswith(("CSP_", "LOGIN_"))
    }
    env.update(
        DJANGO_SETTINGS_MODULE="console.settings.base",
        DATABASE_URL=settings.DATABASE_URL,
        REDIS_URL=settings.REDIS_URL,
        **extra,
    )
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_is_clean_with_the_production_variables():
    result = _check_deploy(PRODUCTION)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_check_deploy_names_what_is_missing_without_them():
    result = _check_deploy({"DEBUG": "false", "SECRET_KEY": PRODUCTION["SECRET_KEY"]})
    assert result.returncode != 0
    found = set(re.findall(r"security\.W\d+", result.stdout + result.stderr))
    assert {"security.W004", "security.W008", "security.W012", "security.W016"} <= found


def _security_settings(monkeypatch, **env):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    import console.settings.security as module

    try:  # a copy: the module object itself is reloaded again below
        return SimpleNamespace(**vars(importlib.reload(module)))
    finally:
        for key in env:
            monkeypatch.delenv(key)
        importlib.reload(module)


def test_the_readers_parse_the_variables(monkeypatch):
    module = _security_settings(
        monkeypatch,
        **PRODUCTION,
        LOGIN_FAILURE_LIMIT="7",
        LOGIN_COOLOFF_MINUTES="30",
        CSP_REPORT_ONLY="true",
        CSP_REPORT_URI="https://csp.example.org/report",
    )
    assert module.SECURE_PROXY_SSL_HEADER == ("HTTP_X_FORWARDED_PROTO", "https")
    assert (module.SECURE_HSTS_SECONDS, module.SESSION_COOKIE_SECURE) == (31536000, True)
    assert (module.AXES_FAILURE_LIMIT, module.AXES_COOLOFF_TIME.total_seconds()) == (7, 1800)
    assert module.AXES_IPWARE_PROXY_COUNT == 1
    assert module.CONTENT_SECURITY_POLICY is None
    directives = module.CONTENT_SECURITY_POLICY_REPORT_ONLY["DIRECTIVES"]
    assert directives["report-uri"] == "https://csp.example.org/report"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SECURE_PROXY_SSL_HEADER", "X-Forwarded-Proto"),
        ("SECURE_HSTS_SECONDS", "a year"),
        ("SESSION_COOKIE_SECURE", "maybe"),
        ("LOGIN_LOCKOUT_PARAMETERS", "username+password"),
        ("LOGIN_FAILURE_LIMIT", "0"),
    ],
)
def test_a_bad_value_stops_start_up_naming_the_variable(monkeypatch, name, value):
    with pytest.raises(ImproperlyConfigured, match=name):
        _security_settings(monkeypatch, **{name: value})


@pytest.mark.django_db
def test_every_page_gets_a_strict_script_policy_and_httponly_cookies(world):
    client = Client()
    login = client.get("/accounts/login/")
    policy = login["Content-Security-Policy"]
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";"))
    assert directives["script-src"] == "'self'"
    assert directives["style-src"] == "'self'" and directives["object-src"] == "'none'"
    assert directives["frame-ancestors"] == "'none'"
    assert login.cookies["csrftoken"]["httponly"]
    response = client.post("/accounts/login/", {"username": "alice", "password": "pw-alice"})
    assert response.status_code == 302
    assert response.cookies["sessionid"]["httponly"]
    for path in ("/", "/jobs/", "/api/docs/", "/admin/login/"):
        assert "Content-Security-Policy" in client.get(path), path


@pytest.mark.django_db
def test_secure_settings_reach_the_responses(world, settings):
    settings.SECURE_HSTS_SECONDS = 31536000
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    settings.SECURE_SSL_REDIRECT = True
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    client = Client()
    plain = client.get("/accounts/login/")
    assert plain.status_code == 301 and plain["Location"].startswith("https://")
    proxied = client.get("/accounts/login/", HTTP_X_FORWARDED_PROTO="https")
    assert proxied.status_code == 200
    assert proxied["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains"
    assert proxied.cookies["csrftoken"]["secure"]


TEMPLATE_DIRS = [ROOT / "templates"]
INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.I)
HANDLER_ATTRIBUTE = re.compile(r"\son[a-z]+\s*=", re.I)
STYLE_ELEMENT = re.compile(r"<style\b", re.I)


def test_templates_have_no_inline_script_handler_or_style_element():
    """What the policy would block: inline <script>, on*= handlers, <style> elements."""
    offenders = []
    for folder in TEMPLATE_DIRS:
        for path in folder.rglob("*.html"):
            text = re.sub(
                r"{%\s*comment\s*%}.*?{%\s*endcomment\s*%}", "", path.read_text(), flags=re.S
            )
            for pattern in (INLINE_SCRIPT, HANDLER_ATTRIBUTE, STYLE_ELEMENT):
                offenders += [
                    f"{path.relative_to(ROOT)}: {m.group(0)}" for m in pattern.finditer(text)
                ]
    assert offenders == []
