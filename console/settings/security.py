"""Security settings read from the environment (imported by ``base``; see README "Security").

Request bounds:

* ``MAX_REQUEST_BODY_BYTES`` (2,621,440 = Django's default): the largest request body a form
  or API request may carry (Django's ``DATA_UPLOAD_MAX_MEMORY_SIZE``; the API's parsers
  enforce it too).
* ``API_MAX_JSON_DEPTH`` (32): the deepest nesting of JSON arrays/objects the API parses.

Metrics: ``METRICS_TOKEN`` (unset): the token Prometheus presents to read ``/metrics``
(:mod:`console.metrics`); unset, only a platform admin's session reads it.
"""

from __future__ import annotations

from datetime import timedelta

from csp.constants import NONE, SELF, UNSAFE_INLINE
from django.core.exceptions import ImproperlyConfigured

from core.env import env_bool, env_float, env_int, env_list, env_str

DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("MAX_REQUEST_BODY_BYTES", 2_621_440, minimum=1024)
API_MAX_JSON_DEPTH = env_int("API_MAX_JSON_DEPTH", 32, minimum=4)

# --- /metrics (console.metrics) ------------------------------------------------------------------
#: Fewest characters of ``METRICS_TOKEN`` (a guessable token would open every tenant's series).
METRICS_TOKEN_MIN_LENGTH = 16


def metrics_token(value: str) -> str:
    """``value`` when it is usable as the ``/metrics`` token ("" = none configured).

    Raises:
        ImproperlyConfigured: shorter than :data:`METRICS_TOKEN_MIN_LENGTH`, or not printable
            ASCII without spaces (what an ``Authorization`` header carries unchanged).
    """
    if not value:
        return ""
    if not all("!" <= ch <= "~" for ch in value):
        raise ImproperlyConfigured(
            "METRICS_TOKEN must be printable ASCII without spaces (e.g. "
            "python3 -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )
    if len(value) < METRICS_TOKEN_MIN_LENGTH:
        raise ImproperlyConfigured(
            f"METRICS_TOKEN must be at least {METRICS_TOKEN_MIN_LENGTH} characters long"
        )
    return value


METRICS_TOKEN = metrics_token(env_str("METRICS_TOKEN"))

# --- Membership ------------------------------------------------------------------------------
#: Hours an invitation to a tenant stays valid (``INVITATION_TTL_HOURS``, default 7 days).
INVITATION_TTL_HOURS = env_int("INVITATION_TTL_HOURS", 168, minimum=1)

# --- Login throttling (django-axes) ------------------------------------------------------------
# Every password check (login page, admin login, DRF session/basic auth) goes through
# django.contrib.auth.authenticate with the request, where axes counts failures per
# LOGIN_LOCKOUT_PARAMETERS within LOGIN_COOLOFF_MINUTES and, after LOGIN_FAILURE_LIMIT of
# them, refuses even the right password until the cool-off has passed (HTTP 429). Failures
# are stored in PostgreSQL (axes' database handler), so throttling holds with Redis down.
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_float("LOGIN_COOLOFF_MINUTES", 15.0, minimum=0.1))
AXES_LOCKOUT_PARAMETERS = [
    [part.strip() for part in combo.split("+")]
    for combo in env_list("LOGIN_LOCKOUT_PARAMETERS", ["username+ip_address"])
]
for _combo in AXES_LOCKOUT_PARAMETERS:
    if not set(_combo) <= {"username", "ip_address", "user_agent"}:
        raise ImproperlyConfigured(
            f"LOGIN_LOCKOUT_PARAMETERS: {'+'.join(_combo)!r} is not a combination of "
            "username, ip_address and user_agent"
        )
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_HTTP_RESPONSE_CODE = 429
# No "AXES: BEGIN version ..." INFO line at every process start (every manage.py call);
# lockout and failure lines still log, naming the lockout parameters (axes' AXES_VERBOSE).
AXES_VERBOSE = False
# Behind TRUSTED_PROXY_COUNT reverse proxies the client address is read from
# X-Forwarded-For (that many proxies from the right); without proxies only REMOTE_ADDR counts,
# so a client cannot choose its address by sending the header itself.
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0, minimum=0)
if TRUSTED_PROXY_COUNT:
    AXES_IPWARE_PROXY_COUNT = TRUSTED_PROXY_COUNT
    AXES_IPWARE_PROXY_ORDER = "right-most"
    AXES_IPWARE_META_PRECEDENCE_ORDER = ("HTTP_X_FORWARDED_FOR", "REMOTE_ADDR")

# --- HTTPS, HSTS, cookies (Django's settings, named as Django names them) ----------------------
# All off by default (``make run`` serves plain HTTP on 127.0.0.1); a production deployment
# behind TLS turns them on (``manage.py check --deploy`` is then clean, see README).
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", False)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", False)
SESSION_COOKIE_HTTPONLY = True
# No script of the console reads the CSRF cookie (forms carry the token, the API docs get it
# from their page), so it is HttpOnly too.
CSRF_COOKIE_HTTPONLY = env_bool("CSRF_COOKIE_HTTPONLY", True)
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"


def _proxy_ssl_header(value: str) -> tuple[str, str] | None:
    """``"X-Forwarded-Proto: https"`` -> ``("HTTP_X_FORWARDED_PROTO", "https")``."""
    if not value:
        return None
    name, sep, expected = value.partition(":")
    if not sep or not name.strip() or not expected.strip():
        raise ImproperlyConfigured(
            f"SECURE_PROXY_SSL_HEADER={value!r}: use '<Header-Name>: <value>', e.g. "
            "'X-Forwarded-Proto: https'"
        )
    return "HTTP_" + name.strip().upper().replace("-", "_"), expected.strip()


# Opt-in, only behind a proxy that sets (and strips incoming) this header.
SECURE_PROXY_SSL_HEADER = _proxy_ssl_header(env_str("SECURE_PROXY_SSL_HEADER"))

# --- Content Security Policy (django-csp) ------------------------------------------------------
# The pages load scripts and stylesheets from 'self' only (no inline <script>/<style>, no
# event-handler attributes); style *attributes* stay allowed (style-src-attr) because bars and
# tenant colours are data-driven widths and colours, and they cannot run code.
# CSP_REPORT_ONLY=true sends the policy as Content-Security-Policy-Report-Only;
# CSP_REPORT_URI names where browsers report violations.
_CSP_DIRECTIVES = {
    "default-src": [SELF],
    "script-src": [SELF],
    "style-src": [SELF],
    "style-src-attr": [UNSAFE_INLINE],
    "img-src": [SELF, "data:"],
    "font-src": [SELF, "data:"],
    "connect-src": [SELF],
    "object-src": [NONE],
    "base-uri": [SELF],
    "frame-ancestors": [NONE],
    "form-action": [SELF],
}
if env_str("CSP_REPORT_URI"):
    _CSP_DIRECTIVES["report-uri"] = env_str("CSP_REPORT_URI")
if env_bool("CSP_REPORT_ONLY", False):
    CONTENT_SECURITY_POLICY = None
    CONTENT_SECURITY_POLICY_REPORT_ONLY = {"DIRECTIVES": _CSP_DIRECTIVES}
else:
    CONTENT_SECURITY_POLICY = {"DIRECTIVES": _CSP_DIRECTIVES}
