"""Security settings read from the environment (imported by ``base``; see README "Security").

Request bounds:

* ``MAX_REQUEST_BODY_BYTES`` (2,621,440 = Django's default): the largest request body a form
  or API request may carry (Django's ``DATA_UPLOAD_MAX_MEMORY_SIZE``; the API's parsers
  enforce it too).
* ``API_MAX_JSON_DEPTH`` (32): the deepest nesting of JSON arrays/objects the API parses.
"""

from __future__ import annotations

from console.settings.env import env_int

DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("MAX_REQUEST_BODY_BYTES", 2_621_440, minimum=1024)
API_MAX_JSON_DEPTH = env_int("API_MAX_JSON_DEPTH", 32, minimum=4)

# --- Membership ------------------------------------------------------------------------------
#: Hours an invitation to a tenant stays valid (``INVITATION_TTL_HOURS``, default 7 days).
INVITATION_TTL_HOURS = env_int("INVITATION_TTL_HOURS", 168, minimum=1)
