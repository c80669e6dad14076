"""Estimated start time from observed drain rates (pure; time passed in).

The drain rate of a queue is how many jobs left it (were admitted) per second over a recent
window. A job at position ``k`` (1 = next) is expected to start after ``k`` more
departures: ``eta = now + k / rate``. This is a plain throughput estimate (Little's law),
not a simulation; it answers "about when", which no anchor offers (kueue#1300).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from scheduling.admission.types import AdmissionInputError


def drain_rate_per_s(
    departures: Iterable[datetime],
    now: datetime,
    window_s: float = 3600.0,
    min_events: int = 2,
) -> float | None:
    """Jobs per second that left the queue within ``window_s`` seconds before ``now``.

    The rate is ``count / (now - oldest departure in the window)``, so a queue that only
    started draining recently is not diluted by the empty part of the window.

    Args:
        departures: admission (or completion) times of past jobs, any order; events after
            ``now`` are ignored.
        now: the current time (timezone-aware).
        window_s: look-back window in seconds (> 0).
        min_events: fewer events in the window give None (no estimate).

    Returns:
        Jobs per second, or None when there is too little history.

    Raises:
        AdmissionInputError: ``window_s`` <= 0 or ``min_events`` < 1.
    """
    if window_s <= 0:
        raise AdmissionInputError("window_s must be > 0")
    if min_events < 1:
        raise AdmissionInputError("min_events must be >= 1")
    start = now - timedelta(seconds=window_s)
    recent = [t for t in departures if start <= t <= now]
    if len(recent) < min_events:
        return None
    span = (now - min(recent)).total_seconds()
    if span <= 0:
        return None
    return len(recent) / span


def estimate_start(
    position: int,
    departures: Iterable[datetime],
    now: datetime,
    window_s: float = 3600.0,
    min_events: int = 2,
) -> datetime | None:
    """Estimated start time of the job at 1-based queue ``position``.

    Args:
        position: 1 = next job of the queue.
        departures / now / window_s / min_events: see :func:`drain_rate_per_s`.

    Returns:
        ``now + position / rate`` (rounded to whole seconds), or None without enough history.

    Raises:
        AdmissionInputError: ``position`` < 1, or see :func:`drain_rate_per_s`.
    """
    if position < 1:
        raise AdmissionInputError("position must be >= 1")
    rate = drain_rate_per_s(departures, now, window_s, min_events)
    if rate is None:
        return None
    return now + timedelta(seconds=round(position / rate))
