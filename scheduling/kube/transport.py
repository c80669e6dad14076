"""One request to the API server: retries with backoff, and the answer as plain JSON.

:func:`call_with_retry` runs one client call (a zero-argument callable) and:

* retries :class:`~scheduling.kube.errors.Retryable` failures (429, 5xx, 409 Conflict,
  timeouts, connection errors) up to ``RetryPolicy.max_attempts`` times, sleeping the
  server's ``Retry-After`` when given, else ``base_delay_s * 2**attempt`` capped at
  ``max_delay_s`` (no jitter: deterministic; client-go's ``DefaultBackoff`` shape without its
  jitter);
* raises :class:`~scheduling.kube.errors.Permanent` (with the server's message) at once, and
  the other classified errors (AlreadyExists, NotFound, Expired) for the caller to handle;
* re-raises an exception :func:`~scheduling.kube.errors.classify` does not know unchanged.

Calls are made with ``_preload_content=False`` (:func:`read_json` decodes the body), so the
gateway returns the API's JSON as dicts and never the client's model objects.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from scheduling.kube.errors import KubeError, Retryable, classify

__all__ = ["RetryPolicy", "ObjectList", "as_body", "call_with_retry", "read_json"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Backoff for Retryable failures.

    Attributes:
        max_attempts: total tries per call (>= 1).
        base_delay_s / max_delay_s: delay before retry n (0-based) is
            ``min(max_delay_s, base_delay_s * 2**n)`` unless the server sent Retry-After.
        max_retry_after_s: a longer Retry-After is capped to this.
    """

    max_attempts: int = 5
    base_delay_s: float = 0.2
    max_delay_s: float = 10.0
    max_retry_after_s: float = 60.0

    def delay(self, attempt: int, err: KubeError) -> float:
        """Seconds to sleep before retry number ``attempt`` (0-based) after ``err``."""
        if err.retry_after_s is not None:
            return min(err.retry_after_s, self.max_retry_after_s)
        return min(self.max_delay_s, self.base_delay_s * (2**attempt))


@dataclass(frozen=True, slots=True)
class ObjectList:
    """A list answer: the items and the list's resourceVersion (to start a watch from)."""

    items: list[dict]
    resource_version: str


def call_with_retry(fn: Callable[[], T], retry: RetryPolicy, sleep: Callable[[float], None]) -> T:
    """Run ``fn`` with retries (see the module docstring).

    Args:
        fn: one client call.
        retry: the backoff policy.
        sleep: called with the seconds to wait before each retry.

    Raises:
        KubeError: the classified failure (Retryable after ``retry.max_attempts`` tries).
        Exception: what ``fn`` raised, when it is not an API or transport error.
    """
    attempt = 0
    while True:
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - classified, unknowns re-raised
            err = classify(exc)
            if err is None:
                raise
            if isinstance(err, Retryable) and attempt + 1 < retry.max_attempts:
                sleep(retry.delay(attempt, err))
                attempt += 1
                continue
            raise err from exc


def read_json(resp: Any) -> Any:
    """The decoded JSON body of an unpreloaded response (``{}`` when empty); the connection
    goes back to the pool either way."""
    try:
        data = resp.data if hasattr(resp, "data") else resp.read()
        return json.loads(data) if data else {}
    finally:
        close = getattr(resp, "release_conn", None)
        if close is not None:
            close()


def as_body(obj: Mapping[str, Any]) -> Any:
    """A manifest or patch dict as a request body.

    The client's type hints ask for its model classes (``V1Pod``, ``V1DeleteOptions``...),
    but its serializer (``ApiClient.sanitize_for_serialization``) sends a dict as it is, and
    the console keeps every object as the API's JSON (dicts) end to end. This is the one
    place that tells the type checker so; it changes nothing at run time.
    """
    return obj
