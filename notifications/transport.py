"""Sending one notification: a signed HTTP POST of JSON, or an e-mail through Django's mail
settings. No database access here; the services record what happened.

Outcomes (:class:`Outcome`): ``ok``; ``retry`` for what may pass later (timeouts,
connection errors, HTTP 408, 425, 429 and 5xx, SMTP and socket errors); otherwise a
permanent failure (other 4xx, a redirect: webhooks are not redirected).
"""

from __future__ import annotations

import smtplib
from dataclasses import dataclass

import requests
from django.core.mail import send_mail

from notifications.signing import SIGNATURE_HEADER, signature

USER_AGENT = "llmops-console-notifications/1"
RETRY_STATUSES = frozenset({408, 425, 429})


@dataclass(frozen=True)
class Outcome:
    """``ok``: delivered; ``retry``: worth another attempt; ``status``: the HTTP status
    (None without an answer or for e-mail); ``error``: why it failed ("" when ok)."""

    ok: bool
    retry: bool = False
    status: int | None = None
    error: str = ""


def post_webhook(
    url: str, body: bytes, *, event: str, delivery: str, secret: str, timeout_s: float
) -> Outcome:
    """POST ``body`` (JSON) to ``url`` with headers ``X-Console-Event``,
    ``X-Console-Delivery`` and, when ``secret`` is set, ``X-Console-Signature-256``.
    Timeout ``timeout_s`` seconds for connecting and for reading the answer."""
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-Console-Event": event,
        "X-Console-Delivery": delivery,
    }
    if secret:
        headers[SIGNATURE_HEADER] = signature(body, secret)
    try:
        response = requests.post(
            url, data=body, headers=headers, timeout=timeout_s, allow_redirects=False
        )
    except requests.Timeout:
        return Outcome(False, retry=True, error=f"timed out after {timeout_s:g} s")
    except requests.RequestException as exc:
        return Outcome(False, retry=True, error=f"{type(exc).__name__}: {exc}"[:1000])
    code = response.status_code
    if 200 <= code < 300:
        return Outcome(True, status=code)
    text = response.text[:300].strip()
    error = f"HTTP {code}" + (f": {text}" if text else "")
    return Outcome(False, retry=code >= 500 or code in RETRY_STATUSES, status=code, error=error)


def send_email(address: str, subject: str, text: str) -> Outcome:
    """One e-mail through Django's mail settings (``EMAIL_*``, ``DEFAULT_FROM_EMAIL``)."""
    try:
        send_mail(subject, text, None, [address], fail_silently=False)
    except (smtplib.SMTPException, OSError) as exc:
        permanent = isinstance(exc, smtplib.SMTPRecipientsRefused)
        return Outcome(False, retry=not permanent, error=f"{type(exc).__name__}: {exc}"[:1000])
    return Outcome(True)
