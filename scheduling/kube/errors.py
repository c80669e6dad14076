"""Classification of Kubernetes API and transport failures.

Every failure of a call to the API server is turned into one of:

* :class:`AlreadyExists` - 409 with reason ``AlreadyExists``: a create whose object is already
  there. For our deterministic object names this means a retried create succeeded before
  (STYLE.md §3: "a retried create returns AlreadyExists, which counts as success").
* :class:`Retryable` - worth trying again unchanged: 429 ``TooManyRequests``, 5xx, 409
  ``Conflict`` (optimistic-concurrency clash; re-read then retry), and transport failures
  (connection refused/reset, timeouts). ``retry_after_s`` carries the server's
  ``Retry-After`` header (or ``Status.details.retryAfterSeconds``) when given.
* :class:`Permanent` - any other 4xx: the request itself is wrong; retrying cannot help.
  ``message`` carries the server's Status message verbatim (e.g. ``Pod "x" is invalid:
  spec.containers: Required value``). :class:`NotFound` (404) and :class:`Expired` (410, a
  watch/list resourceVersion that is too old) are subclasses callers often handle apart.

Retry policy for 429/5xx follows client-go (``k8s.io/client-go/rest/with_retry.go``): honour
``Retry-After`` when present, otherwise back off.
"""

from __future__ import annotations

import email.utils
import json
import socket
import time
from typing import Any

import urllib3.exceptions
from kubernetes.client.exceptions import ApiException

__all__ = [
    "KubeError",
    "AlreadyExists",
    "Retryable",
    "Permanent",
    "NotFound",
    "Expired",
    "classify",
    "parse_retry_after",
]

RETRYABLE_STATUSES = frozenset({409, 429, 500, 502, 503, 504})
"""HTTP statuses retried unchanged (409 only when the reason is not AlreadyExists)."""


class KubeError(Exception):
    """Base of the classified failures.

    Attributes:
        status: HTTP status (0 for transport failures).
        reason: Kubernetes Status ``reason`` (e.g. ``"Invalid"``) or the exception class name.
        message: human-readable message; the server's Status ``message`` when there was one.
        retry_after_s: seconds the server asked us to wait (None when it did not say).
    """

    def __init__(
        self, status: int, reason: str, message: str, retry_after_s: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.message = message
        self.retry_after_s = retry_after_s

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.status}, {self.reason!r}, {self.message!r})"


class AlreadyExists(KubeError):
    """409 AlreadyExists: the object (same name) is already there; success for our creates."""


class Retryable(KubeError):
    """Transient failure (429, 5xx, 409 Conflict, timeout, connection error)."""


class Permanent(KubeError):
    """Request rejected for good (4xx other than 409/429); ``message`` is the server's."""


class NotFound(Permanent):
    """404: the object (or namespace, or API version) does not exist."""


class Expired(Permanent):
    """410 Gone/Expired: a resourceVersion too old to watch or continue from; relist."""


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header value.

    Args:
        value: delta-seconds (``"3"``) or an HTTP-date (RFC 9110 §10.2.3); None/"" = absent.
        now: current Unix time for HTTP-dates (default ``time.time()``).

    Returns:
        Seconds (>= 0), or None when absent or unparseable.
    """
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(int(value)))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _status_body(exc: ApiException) -> dict[str, Any]:
    body = exc.body
    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    if not body:
        return {}
    try:
        data = json.loads(body)
    except (TypeError, ValueError):
        return {"message": str(body).strip()}
    return data if isinstance(data, dict) else {}


def _from_api_exception(exc: ApiException) -> KubeError:
    status = int(exc.status or 0)
    body = _status_body(exc)
    reason = str(body.get("reason") or exc.reason or "")
    message = str(body.get("message") or exc.reason or f"HTTP {status}")
    headers = exc.headers or {}
    retry_after = parse_retry_after(headers.get("Retry-After") if hasattr(headers, "get") else None)
    if retry_after is None:
        details = body.get("details") or {}
        if isinstance(details, dict) and details.get("retryAfterSeconds") is not None:
            retry_after = float(details["retryAfterSeconds"])
    if status == 409 and reason == "AlreadyExists":
        return AlreadyExists(status, reason, message)
    if status == 0:
        # the client reports TLS failures as status 0: misconfiguration, not transient
        return Permanent(status, reason or "TransportError", message)
    if status in RETRYABLE_STATUSES or 500 <= status <= 599:
        return Retryable(status, reason or "ServerError", message, retry_after)
    if status == 404:
        return NotFound(status, reason or "NotFound", message)
    if status == 410:
        return Expired(status, reason or "Expired", message)
    return Permanent(status, reason or "Error", message)


def classify(exc: BaseException) -> KubeError | None:
    """Classify an exception raised by a ``kubernetes`` client call.

    Args:
        exc: an ``ApiException`` (any subclass), a urllib3 transport error (``MaxRetryError``,
            ``ProtocolError``, ``ReadTimeoutError``, ``NewConnectionError``, ...), a socket
            timeout/``ConnectionError``, or an already classified :class:`KubeError`.

    Returns:
        The :class:`KubeError` subclass instance, or None when ``exc`` is none of these
        (a programming error the caller should let propagate).
    """
    if isinstance(exc, KubeError):
        return exc
    if isinstance(exc, ApiException):
        return _from_api_exception(exc)
    if isinstance(exc, urllib3.exceptions.MaxRetryError) and exc.reason is not None:
        inner = classify(exc.reason)
        if inner is not None:
            return inner
        return Retryable(0, "MaxRetryError", str(exc))
    if isinstance(exc, urllib3.exceptions.SSLError):
        return Permanent(0, "SSLError", str(exc))
    if isinstance(exc, (urllib3.exceptions.TimeoutError, socket.timeout, TimeoutError)):
        return Retryable(0, "Timeout", str(exc) or type(exc).__name__)
    if isinstance(exc, (urllib3.exceptions.HTTPError, ConnectionError, OSError)):
        return Retryable(0, type(exc).__name__, str(exc) or type(exc).__name__)
    return None
