"""Bounded waits for tests: poll a condition with a deadline, never sleep a fixed time to
let another thread, process or server get somewhere."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def until(
    condition: Callable[[], T], what: str, timeout_s: float = 20.0, step_s: float = 0.02
) -> T:
    """Poll ``condition`` every ``step_s`` seconds until it returns a truthy value (returned).

    Raises:
        AssertionError: ``timeout_s`` passed first; the message names ``what``.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(step_s)


def lock_waiters() -> int:
    """Sessions of the test database waiting for a heavyweight lock (a row or advisory lock)
    at this instant (``pg_stat_activity``)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0]
