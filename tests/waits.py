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


def replay_two_writers(write, what: str, timeout_s: float = 20.0) -> list[BaseException]:
    """Run ``write()`` in two threads the way two concurrent writers race: the first writes
    inside a transaction it keeps open; the second starts then and must wait for a lock
    (``lock_waiters``, named ``what`` in a timeout); then the first commits.

    Returns:
        What the second writer raised (an empty list when it finished); the first writer's
        own errors propagate through its thread's failure to signal.
    """
    import threading

    from django.db import connection, transaction

    first_wrote, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def first() -> None:
        try:
            with transaction.atomic():  # its rows written, not committed yet
                write()
                first_wrote.set()
                release.wait(timeout_s)
        finally:
            first_wrote.set()
            connection.close()

    def second() -> None:
        try:
            write()
        except BaseException as exc:  # noqa: BLE001 - returned to the test
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    threads[0].start()
    assert first_wrote.wait(timeout_s)
    threads[1].start()
    until(lambda: lock_waiters() >= 1, what, timeout_s)
    release.set()
    for thread in threads:
        thread.join(timeout_s)
    return errors
