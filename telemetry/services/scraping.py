"""Scrapes: fetch a target's exposition over HTTP and record the outcome on the target.

A target's trouble (timeout, unreachable host, HTTP error, bad payload, processing error) is
recorded on its :class:`~telemetry.models.ScrapeTarget` row, never raised.
"""

from __future__ import annotations

import logging
import socket
import time as _time
import urllib.error
import urllib.request
from collections.abc import Callable
from datetime import datetime

from django.db.models import F
from django.utils import timezone

from telemetry.models import ScrapeStatus, ScrapeTarget
from telemetry.services.ingestion import ingest_payload

logger = logging.getLogger(__name__)

__all__ = ["FetchError", "http_fetch", "scrape_all", "scrape_target"]

MAX_PAYLOAD_BYTES = 32 * 1024 * 1024


class FetchError(Exception):
    """A scrape that got no payload; ``status`` is a :class:`ScrapeStatus` value."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def http_fetch(url: str, timeout_s: float) -> str:
    """GET ``url`` and return the decoded body.

    Raises:
        FetchError: not an http(s) URL, timeout, unreachable host, HTTP error status,
            oversized or undecodable payload.
    """
    if not url.lower().startswith(("http://", "https://")):  # no file:, ftp: or custom schemes
        raise FetchError(ScrapeStatus.UNREACHABLE, f"not an http(s) URL: {url[:100]!r}")
    request = urllib.request.Request(  # noqa: S310 - scheme checked above
        url, headers={"Accept": "text/plain;version=0.0.4"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310 - http(s)
            body = response.read(MAX_PAYLOAD_BYTES + 1)
            charset = response.headers.get_content_charset() or "utf-8"
    except urllib.error.HTTPError as exc:
        raise FetchError(ScrapeStatus.HTTP_ERROR, f"HTTP {exc.code} {exc.reason}") from exc
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError | socket.timeout):
            raise FetchError(ScrapeStatus.TIMEOUT, f"timed out after {timeout_s:g} s") from exc
        raise FetchError(ScrapeStatus.UNREACHABLE, f"unreachable: {exc.reason}") from exc
    except TimeoutError as exc:
        raise FetchError(ScrapeStatus.TIMEOUT, f"timed out after {timeout_s:g} s") from exc
    except (ConnectionError, OSError) as exc:
        raise FetchError(ScrapeStatus.UNREACHABLE, f"unreachable: {exc}") from exc
    if len(body) > MAX_PAYLOAD_BYTES:
        raise FetchError(ScrapeStatus.BAD_PAYLOAD, f"payload over {MAX_PAYLOAD_BYTES} bytes")
    try:
        return body.decode(charset)
    except (UnicodeDecodeError, LookupError) as exc:
        raise FetchError(ScrapeStatus.BAD_PAYLOAD, f"undecodable payload: {exc}") from exc


def scrape_target(
    target_id: int, *, now: datetime | None = None, fetch: Callable[[str, float], str] = http_fetch
) -> str:
    """Scrape one target and record the outcome on it; never raises for target trouble.

    Returns:
        The target's new ``last_status``.
    """
    target = ScrapeTarget.objects.select_related("cluster").get(pk=target_id)
    now = now or timezone.now()
    started = _time.monotonic()
    fields: dict = {"last_scrape_at": now}
    try:
        text = fetch(target.url, target.timeout_s)
        parsed, normalised, result = ingest_payload(
            target.kind, text, cluster_id=target.cluster_id, target=target, now=now
        )
    except FetchError as exc:
        fields.update(last_status=exc.status, last_error=exc.message, last_samples=0)
    except Exception as exc:  # noqa: BLE001 - one target's failure is recorded, never fatal
        logger.exception("processing scrape of target %s failed", target_id)
        fields.update(last_status=ScrapeStatus.ERROR, last_error=f"processing error: {exc}"[:500])
    else:
        if parsed.empty and parsed.rejected_lines:
            status = ScrapeStatus.BAD_PAYLOAD
        elif parsed.rejected_lines:
            status = ScrapeStatus.PARTIAL
        else:
            status = ScrapeStatus.OK
        fields.update(
            last_status=status,
            last_error=parsed.first_error,
            last_samples=len(parsed.samples),
            last_rejected_lines=parsed.rejected_lines,
            last_ignored=normalised.ignored,
            last_attributed=result.attributed,
            last_unattributed=dict(sorted(result.unattributed.items())),
            last_conflicts=result.conflicts,
            last_node_mismatches=result.node_mismatches,
        )
    fields["last_duration_ms"] = int((_time.monotonic() - started) * 1000)
    if fields["last_status"] in (ScrapeStatus.OK, ScrapeStatus.PARTIAL):
        fields.update(last_success_at=now, consecutive_failures=0)
    else:
        fields["consecutive_failures"] = F("consecutive_failures") + 1
    ScrapeTarget.objects.filter(pk=target.pk).update(**fields)
    return fields["last_status"]


def scrape_all(*, now: datetime | None = None, fetch=http_fetch) -> dict[int, str]:
    """Scrape every enabled target; one target's failure never stops the others."""
    out = {}
    for target_id in ScrapeTarget.objects.filter(enabled=True).values_list("pk", flat=True):
        out[target_id] = scrape_target(target_id, now=now, fetch=fetch)
    return out
