"""One log line per expected client error (``LOGGING``'s filter on the ``django.request``
logger).

Django logs every 4xx response on ``django.request`` at WARNING, and a raised ``Http404`` or
``PermissionDenied`` with its exception as ``exc_info``, so a routine "not yours" or "no such
job" wrote a full traceback (``django.utils.log.log_response``). This filter turns each record
of a response below 500 into one line, ``<method> <path> <status> user=<id|anonymous>
reason=<why>``, without the traceback; a 5xx record passes unchanged and keeps its traceback.
It is a logging filter (Django's documented hook, "Configuring logging": filters may alter a
record), not a change to Django's handlers.
"""

from __future__ import annotations

import logging

__all__ = ["ClientErrorLine"]


def _user_id(request) -> str:
    """The request's user id, ``anonymous`` without a logged-in user (DRF copies its
    authenticated user onto the Django request)."""
    user = getattr(request, "user", None)
    return str(user.pk) if user is not None and user.is_authenticated else "anonymous"


def _escaped(text: str) -> str:
    """``text`` with control characters escaped, as Django's ``log_response`` writes a path
    (CVE-2025-48432): a line break in a path or a message cannot forge a log line."""
    return text.encode("unicode_escape").decode("ascii")


def _reason(record: logging.LogRecord, escaped_path: str) -> str:
    """Django's message without the trailing path (``"Not Found"``, ``"Forbidden (Permission
    denied)"``), followed by the exception's own message when it has one (escaped)."""
    reason = record.getMessage().removesuffix(f": {escaped_path}")
    exc = record.exc_info[1] if record.exc_info else None
    detail = _escaped(str(exc.args[0])) if exc is not None and exc.args else ""
    return f"{reason}: {detail}" if detail else reason


class ClientErrorLine(logging.Filter):
    """Rewrite a ``django.request`` record of a 4xx response as one line with no traceback
    (module docstring); records of 5xx responses, and any without a status, pass as they
    are."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        request = getattr(record, "request", None)
        if status is None or status >= 500 or request is None:
            return True
        # Idempotent: ``logging.config.dictConfig`` adds a logger's filters again on every
        # call without removing the old ones (``common_logger_config``), and a second
        # ``django.setup()`` (Celery's loader, a test that configures logging) calls it again,
        # so one record may meet several instances of this filter.
        if getattr(record, "client_error_line", False):
            return True
        record.client_error_line = True
        path = _escaped(request.path)
        method = _escaped(request.method or "")
        args = (method, path, status, _user_id(request), _reason(record, path))
        record.msg, record.args = "%s %s %s user=%s reason=%s", args
        record.exc_info = None
        record.exc_text = None
        return True
