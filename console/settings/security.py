"""Security settings read from the environment (imported by ``base``; see README "Security").

Request bounds:

* ``MAX_REQUEST_BODY_BYTES`` (2,621,440 = Django's default): the largest request body a form
  or API request may carry (Django's ``DATA_UPLOAD_MAX_MEMORY_SIZE``; the API's parsers
  enforce it too).
* ``API_MAX_JSON_DEPTH`` (32): the deepest nesting of JSON arrays/objects the API parses.
"""

from __future__ import annotations

from datetime import timedelta

from django.core.exceptions import ImproperlyConfigured

from console.settings.env import env_float, env_int, env_list

DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("MAX_REQUEST_BODY_BYTES", 2_621_440, minimum=1024)
API_MAX_JSON_DEPTH = env_int("API_MAX_JSON_DEPTH", 32, minimum=4)

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
            "username, ip_address and user_agent")
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_HTTP_RESPONSE_CODE = 429
# Behind TRUSTED_PROXY_COUNT reverse proxies the client address is read from
# X-Forwarded-For (that many proxies from the right); without proxies only REMOTE_ADDR counts,
# so a client cannot choose its address by sending the header itself.
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0, minimum=0)
if TRUSTED_PROXY_COUNT:
    AXES_IPWARE_PROXY_COUNT = TRUSTED_PROXY_COUNT
    AXES_IPWARE_PROXY_ORDER = "right-most"
    AXES_IPWARE_META_PRECEDENCE_ORDER = ("HTTP_X_FORWARDED_FOR", "REMOTE_ADDR")
