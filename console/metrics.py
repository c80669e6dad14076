"""``GET /metrics``: django-prometheus's exposition, for Prometheus and platform admins only.

The console's series name tenants, queues and users (:mod:`telemetry.metrics`), so the page
is never public. A request is served when it carries

* the token ``METRICS_TOKEN`` (setting; unset = no token opens it), as Prometheus sends it:
  ``Authorization: Bearer <token>`` (scrape config ``authorization: {credentials: ...}`` or
  ``credentials_file``, the older ``bearer_token_file``), or HTTP basic with the token as the
  password and any user name (``basic_auth: {username: prometheus, password: ...}``).
  Compared in constant time (:func:`hmac.compare_digest`);
* or the session of a signed-in platform admin (an active superuser), with or without a
  token configured.

Anything else (no credentials, a wrong token, another scheme, a member's session) is
``401`` with ``WWW-Authenticate: Bearer realm="metrics", Basic realm="metrics"`` and a
one-line text body: no series. Only GET and HEAD are answered (405 otherwise). The answer is
``Cache-Control: no-store`` so no proxy keeps a copy.
"""

from __future__ import annotations

import base64
import binascii
import hmac

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_safe
from django_prometheus.exports import ExportToDjangoView

#: The challenge of a refused request (RFC 7235: a 401 names the schemes that would work).
CHALLENGE = 'Bearer realm="metrics", Basic realm="metrics"'


def _presented_secret(header: str) -> bytes | None:
    """The secret in an ``Authorization`` header: a bearer token, or a basic password.
    None for another scheme or a malformed value."""
    scheme, _, credentials = header.strip().partition(" ")
    credentials = credentials.strip()
    if not credentials:
        return None
    if scheme.lower() == "bearer":
        # WSGI hands header values over as latin-1 text: back to the bytes that were sent
        return credentials.encode("latin-1", "replace")
    if scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(credentials, validate=True)
        except (binascii.Error, ValueError):
            return None
        user, colon, password = decoded.partition(b":")
        return password if colon else None
    return None


def token_matches(request: HttpRequest) -> bool:
    """True when ``request`` presents ``METRICS_TOKEN`` (module docstring); False when no
    token is configured."""
    token = settings.METRICS_TOKEN
    if not token:
        return False
    secret = _presented_secret(request.META.get("HTTP_AUTHORIZATION", ""))
    return secret is not None and hmac.compare_digest(secret, token.encode("ascii"))


def _platform_admin(request: HttpRequest) -> bool:
    user = getattr(request, "user", None)
    return bool(user is not None and user.is_authenticated and user.is_active and user.is_superuser)


@require_safe
def metrics_view(request: HttpRequest) -> HttpResponse:
    """The Prometheus text exposition for an allowed caller, else 401 (module docstring)."""
    if token_matches(request) or _platform_admin(request):
        response = ExportToDjangoView(request)
    else:
        response = HttpResponse(
            "401 Unauthorized: /metrics needs the METRICS_TOKEN bearer token or a platform "
            "admin's session.\n",
            status=401,
            content_type="text/plain; charset=utf-8",
        )
        response["WWW-Authenticate"] = CHALLENGE
    response["Cache-Control"] = "no-store"
    return response
