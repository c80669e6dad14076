"""A job's state timeline (issue 30, the job page): its transitions with time and cause, read
from the history the services already keep (``JobEvent`` rows, one per state change and
notable event, and the ``Preemption`` rows beside them); nothing is stored twice.

Each ``JobEvent`` kind is either a ``JobState`` value (the state the job entered), one of
:data:`REQUEUE_KINDS` (the job went back to ``queued``), ``preempted`` (the job went back to
``queued`` or failed, per the outcome of the matching ``Preemption`` row: both are written
together by ``scheduling.services.eviction``, so the n-th ``preempted`` event is the n-th
preemption) or a note that changes no state (``scaled``, ``device-cordoned``,
``consolidation``, ``drained`` whose outcome is only in its text, ...), kept in the timeline
and marked as such.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from scheduling.choices import FINAL_JOB_STATES, JobState
from scheduling.models import Job

#: Event kinds after which the job is ``queued`` again: the cluster requeued it
#: (``services.kube_pod_state``), its user resumed it (``services.job_kinds``,
#: ``services.intake_hold``), consolidation moved it (``services.consolidation``).
REQUEUE_KINDS = frozenset({"requeued", "resumed", "moved"})
_PREEMPTION_OUTCOMES = {"requeued": JobState.QUEUED, "failed": JobState.FAILED}


@dataclass(frozen=True)
class TimelineEntry:
    """One entry: ``kind`` is the event kind (``queued``, ``admitted``, ``preempted``, ...),
    ``cause`` its recorded message, ``state`` the job's state after it (``None`` for a note
    that changes no state); ``lasted_s`` the seconds the job stayed in ``state`` (until the
    next transition, or until now for the current one, ``current`` then true; ``None`` for a
    note and for a final state)."""

    time: datetime
    kind: str
    cause: str
    state: str | None
    lasted_s: float | None
    current: bool = False


def _state_after(kind: str, outcomes: list[str]) -> str | None:
    if kind in JobState.values:
        return kind
    if kind in REQUEUE_KINDS:
        return JobState.QUEUED
    if kind == "preempted":
        outcome = outcomes.pop(0) if outcomes else ""
        return _PREEMPTION_OUTCOMES.get(outcome)
    return None


def job_timeline(job: Job, *, now: datetime | None = None) -> list[TimelineEntry]:
    """The timeline of ``job``, oldest first, from ``job.events`` and ``job.preemptions``
    (their prefetched rows when the caller prefetched them: then no query).

    A transition's ``lasted_s`` runs to the next transition; the last transition is
    ``current`` and lasts until ``now`` (default: the clock), unless its state is final
    (succeeded, failed, cancelled: ``lasted_s`` is ``None``).
    """
    now = now or timezone.now()
    outcomes = [p.outcome for p in job.preemptions.all()]  # Meta ordering: time, id
    raw = [(e, _state_after(e.kind, outcomes)) for e in job.events.all()]
    transitions = [i for i, (_e, state) in enumerate(raw) if state is not None]
    ends = dict(zip(transitions, transitions[1:], strict=False))
    entries = []
    for i, (event, state) in enumerate(raw):
        lasted, current = None, False
        if state is not None and i in ends:
            lasted = (raw[ends[i]][0].time - event.time).total_seconds()
        elif state is not None and state not in FINAL_JOB_STATES:
            lasted, current = (now - event.time).total_seconds(), True
        elif state is not None:
            current = True
        entries.append(TimelineEntry(event.time, event.kind, event.message, state, lasted, current))
    return entries


def polls_live(job: Job) -> bool:
    """Whether the job page keeps refreshing itself: the job may still change state (a
    final state does not change; ``stopped`` can be resumed)."""
    return job.state not in FINAL_JOB_STATES
