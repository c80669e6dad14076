"""Probe endpoints for Kubernetes and Compose: ``/healthz`` (liveness), ``/readyz`` (readiness).

Answered by :class:`HealthProbeMiddleware`, first in ``MIDDLEWARE``: before host validation
(a kubelet probes the pod IP, which is no ``ALLOWED_HOSTS`` name), sessions, authentication,
CSRF, content-security headers and the request metrics, none of which a probe needs.

- ``GET /healthz``: 200 ``{"status": "ok"}`` while the process serves requests. It touches
  no database or broker, so an outage of either does not make Kubernetes restart every web pod
  (liveness must not depend on other services).
- ``GET /readyz``: 200 when PostgreSQL answers ``SELECT 1``, else 503; the body names each
  check, ``{"status": "ok"|"unavailable", "checks": {"database": "ok"|"unavailable",
  "redis": "ok"|"unavailable"}}``. Redis (broker and cache) is reported but optional: pages
  and the API read PostgreSQL, so a Redis outage keeps the web in the Service. Failure details
  go to the log, never into the answer (the paths are reachable without credentials).

Other methods than GET and HEAD answer 405; every other path goes down the middleware chain.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import redis
from django.conf import settings
from django.db import Error as DbError
from django.db import connection
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, JsonResponse

log = logging.getLogger(__name__)

LIVENESS_PATH = "/healthz"
READINESS_PATH = "/readyz"
#: Seconds the Redis check may take (connect and answer); keep below the probe's timeout.
REDIS_TIMEOUT_S = 1.0


def _database_ok() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            return cursor.fetchone() == (1,)
    except DbError:
        log.warning("readiness: PostgreSQL unavailable", exc_info=True)
        return False


def _redis_ok() -> bool:
    client = redis.Redis.from_url(
        settings.REDIS_URL, socket_connect_timeout=REDIS_TIMEOUT_S, socket_timeout=REDIS_TIMEOUT_S
    )
    try:
        return bool(client.ping())
    except (redis.RedisError, OSError):
        log.warning("readiness: Redis unavailable", exc_info=True)
        return False
    finally:
        client.close()


def readiness() -> tuple[bool, dict[str, str]]:
    """``(ready, {check: "ok" | "unavailable"})``; ready means PostgreSQL answers."""
    database, redis_up = _database_ok(), _redis_ok()
    checks = {
        "database": "ok" if database else "unavailable",
        "redis": "ok" if redis_up else "unavailable",
    }
    return database, checks


class HealthProbeMiddleware:
    """Answer :data:`LIVENESS_PATH` and :data:`READINESS_PATH`; pass every other request on."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path_info not in (LIVENESS_PATH, READINESS_PATH):
            return self.get_response(request)
        if request.method not in ("GET", "HEAD"):
            return HttpResponseNotAllowed(["GET", "HEAD"])
        if request.path_info == LIVENESS_PATH:
            response = JsonResponse({"status": "ok"})
        else:
            ready, checks = readiness()
            response = JsonResponse(
                {"status": "ok" if ready else "unavailable", "checks": checks},
                status=200 if ready else 503,
            )
        response["Cache-Control"] = "no-store"
        return response
