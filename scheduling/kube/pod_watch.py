"""The pod watch protocol: resume points, bookmarks, 410 Expired and relists.

:func:`watch_pod_events` drives one watch session over two callables the gateway supplies
(:meth:`~scheduling.kube.gateway.KubernetesGateway.watch_pods`): ``open_stream`` opens one
HTTP watch stream from a resourceVersion and ``relist`` lists the pods again. The rules are
the API server's watch contract (``kubernetes/client-go`` ``tools/cache/reflector.go``):

* a watch starts at a resourceVersion; without one the pods are listed first and the list's
  resourceVersion is the start;
* every event's ``metadata.resourceVersion`` is the next resume point; ``BOOKMARK`` events
  only advance it (asked for with ``allowWatchBookmarks``) and are not yielded;
* 410 Expired - as the HTTP status of the open, or as a watch ``ERROR`` event - means the
  events in between are gone: the pods are listed again (a ``RELISTED`` event that replaces
  the caller's view) and the watch resumes from that list;
* a transport error mid-stream resumes from the last resourceVersion seen; a Permanent error
  (an ``ERROR`` event other than 410 and 429/5xx) ends the session by raising.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kubernetes.watch.watch import iter_resp_lines

from scheduling.kube.errors import Expired, KubeError, Permanent, Retryable, classify

__all__ = ["WatchEvent", "watch_pod_events"]


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One change seen by :meth:`~scheduling.kube.gateway.KubeGateway.watch_pods`.

    Attributes:
        type: ``"ADDED"`` | ``"MODIFIED"`` | ``"DELETED"`` | ``"RELISTED"``. ``RELISTED``
            follows a 410 Expired: ``objects`` is the complete current list and replaces
            whatever the caller had (events in between were lost).
        object: the object (None for RELISTED).
        resource_version: resume point for the next watch.
        objects: the full list (RELISTED only).
    """

    type: str
    object: dict | None
    resource_version: str
    objects: list[dict] = field(default_factory=list)


@dataclass(slots=True)
class _Position:
    """Where one stream got to: the last resourceVersion seen, and whether it ended on 410."""

    resource_version: str
    expired: bool = False


def watch_pod_events(
    open_stream: Callable[[str, int], Any],
    relist: Callable[[], WatchEvent],
    *,
    resource_version: str | None,
    timeout_s: int,
) -> Iterator[WatchEvent]:
    """Stream pod changes for about ``timeout_s`` seconds (see the module docstring).

    Args:
        open_stream: ``(resourceVersion, seconds) -> response`` opens one watch stream of that
            many seconds (raises :class:`~scheduling.kube.errors.Expired` on 410).
        relist: lists the pods again and returns the ``RELISTED`` event.
        resource_version: where to start (None: relist first).
        timeout_s: length of the session; streams are reopened until it has passed.

    Raises:
        Permanent / Retryable: as classified (after the caller's retries for opening).
    """
    deadline = time.monotonic() + timeout_s
    rv = resource_version
    if rv is None:
        yield (relisted := relist())
        rv = relisted.resource_version
    while (remaining := deadline - time.monotonic()) > 0:
        try:
            resp = open_stream(rv, max(1, math.ceil(remaining)))
        except Expired:
            expired = True
        else:
            position = _Position(rv)
            yield from _stream_events(resp, position)
            rv, expired = position.resource_version, position.expired
        if expired:
            yield (relisted := relist())
            rv = relisted.resource_version


def _stream_events(resp: Any, position: _Position) -> Iterator[WatchEvent]:
    """The events of one open stream, ``position`` following them; a retryable transport
    error ends the stream quietly (the caller resumes from ``position``). The response is
    closed and its connection released however the stream ends."""
    try:
        for line in iter_resp_lines(resp):
            if not line.strip():
                continue
            event = json.loads(line)
            etype, obj = event.get("type"), event.get("object") or {}
            if etype == "ERROR":
                _raise_watch_error(obj)  # returns only for 410 Expired
                position.expired = True
                return
            meta = obj.get("metadata") or {}
            position.resource_version = str(
                meta.get("resourceVersion") or position.resource_version
            )
            if etype == "BOOKMARK":
                continue
            yield WatchEvent(str(etype), obj, position.resource_version)
    except Exception as exc:  # noqa: BLE001 - transport errors mid-stream
        err = classify(exc)
        if err is None:
            raise
        if not isinstance(err, Retryable):
            raise err from exc
        # stream broke: the caller resumes from the last resourceVersion seen
    finally:
        resp.close()
        resp.release_conn()


def _raise_watch_error(obj: dict) -> None:
    """A watch ``ERROR`` event's Status: return for 410 Expired (the caller relists), raise
    Retryable for 429/5xx, Permanent otherwise."""
    err = KubeError(
        int(obj.get("code") or 0), str(obj.get("reason", "")), str(obj.get("message", ""))
    )
    if err.status == 410:
        return
    if err.status in (429, 500, 503, 504):
        raise Retryable(err.status, err.reason, err.message)
    raise Permanent(err.status, err.reason, err.message)
