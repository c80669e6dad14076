"""Estimated start time from observed drain rates (pure; time passed in).

The drain rate of a queue is how many jobs left it (were admitted) per second over a recent
window. A job at position ``k`` (1 = next) is expected to start after ``k`` more
departures: ``eta = now + k / rate``. This is a plain throughput estimate (Little's law),
not a simulation; it answers "about when", which no anchor offers (kueue#1300).

:func:`estimate_start_range` is what the pages and the API show: a range computed from the
running jobs' expected ends and the demand queued ahead (a drain-rate estimate ignores both and
was 3-4 times too optimistic on a long queue).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from scheduling.admission.types import AdmissionInputError


def drain_rate_per_s(
    departures: Iterable[datetime], now: datetime, window_s: float = 3600.0, min_events: int = 2
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


# --- start range from the running jobs' ends and the queue ahead ----------------------------


@dataclass(frozen=True)
class StartRange:
    """Estimated start of a queued job: ``earliest`` .. ``latest`` (aware datetimes)."""

    earliest: datetime
    latest: datetime


def _fluid_starts(
    now_s: float,
    capacity: float,
    running: Sequence[tuple[float, float]],
    jobs: Sequence[tuple[float, float]],
    backfill: bool,
) -> list[float]:
    """Start time (s) of each of ``jobs`` (``(devices, duration_s)``, admission order) on a
    pool of ``capacity`` devices that ``running`` (``(end_s, devices)``) release as they end.
    ``backfill``: a job that fits starts even when one ahead of it waits (BestEffortFIFO);
    else strictly in order."""
    releases = [(max(now_s, end), d) for end, d in running]
    heapq.heapify(releases)
    free = capacity - sum(d for _, d in running)
    t = now_s
    starts: list[float | None] = [None] * len(jobs)
    pending = list(range(len(jobs)))
    while pending:
        for i in list(pending):
            need = jobs[i][0]
            if need <= free + 1e-9:
                starts[i] = t
                free -= need
                heapq.heappush(releases, (t + jobs[i][1], need))
                pending.remove(i)
            elif not backfill:
                break
        if pending:
            if not releases:
                break  # nothing left to release: the rest never starts in this model
            t, d = heapq.heappop(releases)
            free += d
    return [s if s is not None else float("inf") for s in starts]


def estimate_queue_starts(
    now: datetime,
    capacity_devices: float,
    running: Sequence[tuple[datetime, float]],
    queue: Sequence[tuple[float, float]],
) -> list[StartRange | None]:
    """Start range of every queued job of a resource group from the jobs holding devices.

    The group is a pool of ``capacity_devices``; each running job gives its devices back at
    its expected end (start + declared run time; an overdue job ends now); each queued job,
    once started, holds its devices for its declared run time. ``earliest``: the whole pool,
    and a job that fits may pass the ones ahead (Kueue's BestEffortFIFO). ``latest``: jobs
    start strictly in order (StrictFIFO) on a pool of what the running jobs hold now (at
    least the largest queued demand): the devices free while jobs wait are taken as
    fragments that stay unusable (placement, gangs needing whole nodes). Devices are
    otherwise divisible, so placement and quotas can still make reality later;
    docs/benchmarks.md has the measured spread (``manage.py eta_bench``).

    Args:
        now: the current time (aware).
        capacity_devices: usable devices of the group.
        running: ``(expected end, devices held)`` of the jobs holding devices.
        queue: ``(devices asked, declared run time in s)`` of the queued jobs in admission
            order.

    Returns:
        One entry per queued job: its range, or None when it asks more than the capacity
        (it never starts; the jobs behind it are estimated as if it were not there).

    Raises:
        AdmissionInputError: negative capacity or demand.
    """
    if capacity_devices < 0 or any(d < 0 for d, _ in queue):
        raise AdmissionInputError("capacity and demands must be >= 0")
    now_s = now.timestamp()
    run = [(end.timestamp(), d) for end, d in running]
    fits = [i for i, (d, _) in enumerate(queue) if d <= capacity_devices + 1e-9]
    jobs = [queue[i] for i in fits]
    early = _fluid_starts(now_s, capacity_devices, run, jobs, True)
    # latest: the pool is what the running jobs hold now (what is free while jobs wait is
    # taken as fragments), at least the largest job's demand so that every job can start
    held = sum(d for _, d in run)
    pool = min(capacity_devices, max([held, *(d for d, _ in jobs)]))
    late = _fluid_starts(now_s, pool, run, jobs, False)
    out: list[StartRange | None] = [None] * len(queue)
    for k, i in enumerate(fits):
        lo, hi = min(early[k], late[k]), max(early[k], late[k])
        if hi != float("inf"):
            out[i] = StartRange(
                now + timedelta(seconds=round(lo - now_s)),
                now + timedelta(seconds=round(hi - now_s)),
            )
    return out


def estimate_start_range(
    now: datetime,
    capacity_devices: float,
    running: Sequence[tuple[datetime, float]],
    ahead: Sequence[tuple[float, float]],
    own_devices: float,
) -> StartRange | None:
    """Start range of one queued job behind ``ahead`` (``(devices, run time s)``, admission
    order) asking ``own_devices`` (:func:`estimate_queue_starts`); None when it asks more than
    the capacity."""
    return estimate_queue_starts(now, capacity_devices, running, [*ahead, (own_devices, 0.0)])[-1]
