"""Estimated start time from observed drain rates (pure; time passed in).

The drain rate of a queue is how many jobs left it (were admitted) per second over a recent
window. A job at position ``k`` (1 = next) is expected to start after ``k`` more
departures: ``eta = now + k / rate``. This is a plain throughput estimate (Little's law),
not a simulation; it answers "about when", which no anchor offers (kueue#1300).

:func:`estimate_start_range` is what the pages and the API show: a range computed from the
running jobs' expected ends and the demand queued ahead (a drain-rate estimate ignores both and
was 3-4 times too optimistic on a long queue). :func:`honest_estimate` turns that range into
what a user is told (issue 30): a state (estimated / overdue / unknown with its reason) and a
confidence, the window widened for every time the job was passed over or preempted, and
"overdue" (never a window sliding with the clock) once the first window shown has passed.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from scheduling.admission.types import AdmissionInputError
from scheduling.admission.validation import require_aware


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
        AdmissionInputError: negative capacity or demand; a naive ``now`` or running end.
    """
    if capacity_devices < 0 or any(d < 0 for d, _ in queue):
        raise AdmissionInputError("capacity and demands must be >= 0")
    require_aware(now, "estimate_queue_starts", "now")
    for end, _ in running:
        require_aware(end, "estimate_queue_starts", "a running job's end")
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


# --- what the user is told: state, confidence, widening (issue 30) -------------------------


class EstimateState(StrEnum):
    """``estimated``: a window; ``overdue``: the first window shown has passed while the job
    still waits (the window shown is the current one, widened); ``unknown``: no window can
    be given (:class:`UnknownReason`)."""

    ESTIMATED = "estimated"
    OVERDUE = "overdue"
    UNKNOWN = "unknown"


class UnknownReason(StrEnum):
    """Why a job's start cannot be bounded."""

    WAITS_FOR_QUOTA = "waits_for_quota"
    """Its quota is used up and no running job of its tenant frees it (:func:`quota_unbounded`):
    only a quota change or another tenant's lending lets it start, which no job end bounds."""
    EXCEEDS_GROUP = "exceeds_group"
    """It asks more devices than its resource group has: it never starts as it is."""
    NOT_ESTIMATED = "not_estimated"
    """Queued since the estimates were last computed, or too far back in the queue."""


UNKNOWN_WORDS = {
    UnknownReason.WAITS_FOR_QUOTA: "unknown: waits for quota",
    UnknownReason.EXCEEDS_GROUP: "unknown: asks more than its group has",
    UnknownReason.NOT_ESTIMATED: "unknown: not estimated yet",
}


class Confidence(StrEnum):
    """How far a window can be trusted: ``high`` (never passed over nor preempted, not
    overdue), ``medium`` (passed over or preempted 1-2 times), ``low`` (3 times or more, or
    overdue). :data:`MEDIUM_SLIPS` / :data:`LOW_SLIPS` are the steps."""

    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


#: Seconds either side of a recorded window within which a start still counts as inside it
#: (calibration): the windows are recomputed every gauges run (``TELEMETRY_GAUGES_S``, 30 s).
START_SLACK_S = 30.0

#: Farthest a widened window's ``latest`` reaches beyond ``now`` (s, 100 years): further says
#: nothing a low confidence does not, and a year-wide window passed over thousands of times
#: went past ``datetime.max`` (OverflowError on every page showing the job).
MAX_WIDENED_S = 100 * 365 * 24 * 3600.0

#: Slips (times passed over + times preempted) from which confidence is medium, then low.
MEDIUM_SLIPS = 1
LOW_SLIPS = 3


@dataclass(frozen=True)
class WaitHistory:
    """What happened to a queued job while it waited.

    Attributes:
        preemptions: times the job was preempted (``Job.preemption_count``).
        passed_over: jobs of its group admitted after it reached the head of its queue while
            it stayed queued.
        promised: the first window shown for it (recorded once), or None.
        started_before: it was admitted once since that window (the promise was settled;
            a requeued job is not overdue on it).
    """

    preemptions: int = 0
    passed_over: int = 0
    promised: StartRange | None = None
    started_before: bool = False

    @property
    def slips(self) -> int:
        return max(0, self.preemptions) + max(0, self.passed_over)


@dataclass(frozen=True)
class HonestEstimate:
    """What a queued job is told about its start.

    Attributes:
        state: :class:`EstimateState`.
        earliest / latest: the window (aware datetimes), None when ``state`` is unknown.
        confidence: :class:`Confidence`, None when unknown.
        reason: :class:`UnknownReason` when unknown, else None.
        slips: times passed over plus times preempted (the widening steps applied).
        overdue_s: seconds since the first window's latest bound passed (overdue only).
        overdue_since: that bound (overdue only).
    """

    state: EstimateState
    earliest: datetime | None = None
    latest: datetime | None = None
    confidence: Confidence | None = None
    reason: UnknownReason | None = None
    slips: int = 0
    overdue_s: float | None = None
    overdue_since: datetime | None = None

    @property
    def words(self) -> str:
        """The unknown state in words (``"unknown: waits for quota"``), else ``""``."""
        return UNKNOWN_WORDS[self.reason] if self.reason is not None else ""


def confidence_of(slips: int, overdue: bool) -> Confidence:
    """:class:`Confidence` after ``slips`` slips; an overdue window is low."""
    if overdue or slips >= LOW_SLIPS:
        return Confidence.LOW
    return Confidence.MEDIUM if slips >= MEDIUM_SLIPS else Confidence.HIGH


def quota_unbounded(cause: dict | None, tenant_holds_devices: bool) -> bool:
    """True when a queued job's blocking cause (``Job.pending_causes[0]``, the shape of
    ``PendingCause.as_dict``) is its quota with nothing free and nothing borrowable while no
    job of its tenant holds devices in the group: no job end frees its quota, so the
    device-based window bounds nothing ("unknown: waits for quota")."""
    if not cause or cause.get("kind") != "quota":
        return False
    free, borrowable = cause.get("free"), cause.get("borrowable")
    return (free or 0) <= 0 and (borrowable or 0) <= 0 and not tenant_holds_devices


def _check_estimate_inputs(
    now: datetime, computed: StartRange | None, history: WaitHistory, step_s: float
) -> None:
    """The checks of :func:`honest_estimate` (its ``Raises``)."""
    if not math.isfinite(step_s) or step_s <= 0:
        raise AdmissionInputError("step_s must be a finite number > 0")
    require_aware(now, "honest_estimate", "now")
    for name, given in (("computed", computed), ("history.promised", history.promised)):
        if given is not None:
            require_aware(given.earliest, "honest_estimate", f"{name}.earliest")
            require_aware(given.latest, "honest_estimate", f"{name}.latest")


def honest_estimate(
    now: datetime,
    computed: StartRange | None,
    history: WaitHistory,
    *,
    step_s: float,
    unknown: UnknownReason | None = None,
) -> HonestEstimate:
    """The estimate a user is told, from the computed window (:func:`estimate_queue_starts`).

    Rules:

    * no window (``computed`` None, or ``unknown`` given) -> ``unknown`` with the reason
      (``unknown`` or, when only ``computed`` is missing, :attr:`UnknownReason.EXCEEDS_GROUP`);
    * widening: each slip (a job of its group admitted ahead of it after it reached the head
      of its queue, or a preemption of it) moves ``latest`` later by one step,
      ``max(latest - earliest, step_s)`` (``step_s``: about how long devices stay held, the
      caller's mean declared run time of the group's running jobs); ``earliest`` stays;
    * overdue: when the first window shown (``history.promised``) ended before ``now`` and the
      job has not started since, the state is ``overdue`` and ``latest`` moves later by the
      overdue time too (the estimate missed by that much), so the page says "overdue" instead
      of "now" for ever;
    * the widened ``latest`` stays within :data:`MAX_WIDENED_S` of ``now`` (or the computed);
    * confidence: :func:`confidence_of`.

    Args:
        now: the current time (aware).
        computed: the current window, or None.
        history: :class:`WaitHistory`.
        step_s: widening step floor in seconds (finite, > 0: else a point window never widens).
        unknown: a reason the caller already knows the job cannot be bounded.

    Raises:
        AdmissionInputError: ``step_s`` not a finite number > 0; a naive ``now`` or window.
    """
    _check_estimate_inputs(now, computed, history, step_s)
    if unknown is not None or computed is None:
        reason = unknown or UnknownReason.EXCEEDS_GROUP
        return HonestEstimate(EstimateState.UNKNOWN, reason=reason, slips=history.slips)
    earliest, latest = max(computed.earliest, now), max(computed.latest, now)
    slips = history.slips
    step = max((latest - earliest).total_seconds(), step_s)
    widen_s = slips * step
    promised = history.promised
    overdue_s = None
    if promised is not None and not history.started_before and promised.latest < now:
        overdue_s = (now - promised.latest).total_seconds()
        widen_s += overdue_s
    ahead_s = (latest - now).total_seconds()
    latest = now + timedelta(seconds=round(min(ahead_s + widen_s, max(ahead_s, MAX_WIDENED_S))))
    return HonestEstimate(
        EstimateState.OVERDUE if overdue_s is not None else EstimateState.ESTIMATED,
        earliest,
        latest,
        confidence_of(slips, overdue_s is not None),
        slips=slips,
        overdue_s=overdue_s,
        overdue_since=promised.latest if promised is not None and overdue_s is not None else None,
    )
