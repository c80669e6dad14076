"""A job's life in one place: the allowed moves of ``Job.state`` and ``Placement.state``, and
the one function per move that writes them (issue 28; Kueue keeps a workload's life in
``pkg/workload``: ``SetQuotaReservation``, ``SetAdmitted``, ``IsAdmitted`` ...).

No other module writes either state (``tests/ci/test_state_writes.py`` scans for it; a row is
*born* in its first state by whoever creates it: a job ``queued``, an inference service
``running``, a placement ``reserved``, and seed or benchmark rows in whatever state they
model). The table is the code's behaviour as it was when it moved here, not a new design.

Job moves (:data:`JOB_MOVES`; ``scheduling.choices.JobState``)::

    admit     queued                              -> admitted   the cycle's commit (bulk)
    start     admitted                            -> running    every live pod runs
    succeed   queued admitted running stopped     -> succeeded  all pods succeeded (queued /
                                                                stopped: only a job taken in
                                                                from a cluster whose object
                                                                completed, services.intake)
    fail      queued admitted running stopped     -> failed     a pod failed, a permanent
                                                                submission error, preempted
                                                                with on_preemption=fail, past
                                                                max runtime, drained, object
                                                                failed (queued / stopped: intake)
    cancel    queued admitted running stopped     -> cancelled  the user, a service scaled
                                                                down, object deleted
    requeue   admitted running                    -> queued     preempted (requeue), pod lost
                                                                or retried, drained, moved by
                                                                consolidation
    stop      queued admitted running             -> stopped    a notebook stopped / culled,
                                                                a taken-in object suspended
    resume    stopped                             -> queued     a notebook or object resumed

``succeeded``, ``failed`` and ``cancelled`` are final (``FINAL_JOB_STATES``): no move leaves
them.

Placement moves (:data:`PLACEMENT_MOVES`; ``scheduling.choices.PlacementState``)::

    submit     reserved                              -> submitted
    run        reserved submitted                    -> running
    terminate  reserved submitted running            -> terminating  (pods deleted with a grace
                                                                      period, devices still held)
    release    reserved submitted running terminating -> released    (given back: cancelled,
                                                                      stopped, drained, pods gone)
    succeed    reserved submitted running terminating -> succeeded
    fail       reserved submitted running terminating -> failed

The placements a job in each state may hold *active* (``ACTIVE_PLACEMENT_STATES``) are
:data:`ACTIVE_PLACEMENTS_OF`: none while queued (a requeued victim's old pods may still be
``terminating``), stopped or final; reserved / submitted / running while admitted; running
while running (an inference service itself holds none: its replicas are jobs).

Each move is one function. It runs ONE conditional ``UPDATE ... WHERE state IN (<from-states>)``
and returns how many rows moved, so a concurrent move loses cleanly (0) and the caller decides
what that means (a ``Conflict``, nothing to do). ``only_from`` narrows the from-states for a
caller that allows fewer (cancel of a live job but not a stopped one); a state outside the
move's from-states raises ``ValueError``. Rows are given as a queryset (its own filters kept),
a model instance, a primary key or primary keys. The move sets the timestamps that belong to
it (``admitted_at``, ``started_at``, ``finished_at``, ``stopped_at``; a placement's
``submitted_at``, ``started_at``, ``ended_at``, ``evict_by``); everything else a caller wrote
with the move (reasons, counters, messages, ``updated``) is passed through ``fields``. When the
rows moved, a job move writes the job's event (``event``: one row; ``events``: ``{job id:
message}``, one ``INSERT``) of the move's kind and, with ``audit``, the audit entry with the
before and after state, where the caller's code wrote them before. No move adds a query: one
``UPDATE`` per call, the event and audit ``INSERT`` only when asked (the cycle commit and the
reconcile keep their query counts, ``tests/admission`` and ``tests/kube``).

**Locks** (``core.locks.LOCK_ORDER``). A job ``UPDATE`` takes the job's row lock and a
placement ``UPDATE`` the placements'; a caller that moves a job and its placements in one
transaction holds the job first (``scheduling.services.locking.lock_jobs``, or the job's move
runs first), all of its jobs in one ascending round; node and device locks come after both.
The functions take no other lock, and do not check the caller's: PostgreSQL has no cheap
"do I hold this row lock" (a tuple lock shows in ``pg_locks`` only while someone waits on
it), and a check query per move would break the query counts above. The event and audit
entry of a move are written by the move itself (``event`` / ``events`` / ``event_kind`` /
``audit``), never beside it by the caller.

**Why no state-machine library.** django-fsm-2 (not a dependency of this project; none may be
added for this) puts a ``@transition`` on model methods: a move loads the instance, checks its
in-memory state and saves it (its ``ConcurrentTransitionMixin`` turns that save into one
conditional ``UPDATE`` per object). The hot paths here move many rows without loading them:
the cycle's commit admits a batch in one ``UPDATE`` and the reconciles and the simulated
backend move placements by queryset, often with ``F()`` expressions (``requeue_count + 1``) in
the same statement. Per-instance transitions would turn each of those into one query per row.
The table of moves is data, so a test walks it (``tests/scheduling/test_job_life.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Model, QuerySet

from core.audit import record as audit_record
from scheduling.choices import (
    ACTIVE_PLACEMENT_STATES,
    BOOKED_PLACEMENT_STATES,
    JobState,
    PlacementState,
)
from scheduling.models import Job, JobEvent, Placement


@dataclass(frozen=True)
class Move:
    """One allowed move: from any of ``sources`` to ``target``; ``event`` is the
    ``JobEvent.kind`` a job move records ("" for placement moves)."""

    name: str
    sources: tuple[str, ...]
    target: str
    event: str = ""

    def narrow(self, only_from: Iterable[str] | None) -> list[str]:
        """The from-states of one call: ``only_from`` (a subset of :attr:`sources`) or all.

        Raises:
            ValueError: ``only_from`` names a state this move does not leave from.
        """
        if only_from is None:
            return list(self.sources)
        wanted = [str(s) for s in only_from]
        outside = sorted(set(wanted) - set(self.sources))
        if outside:
            raise ValueError(f"{self.name} does not move from {', '.join(outside)}")
        return wanted


_J, _P = JobState, PlacementState
_LIVE = (_J.QUEUED, _J.ADMITTED, _J.RUNNING)
_ENDABLE = (*_LIVE, _J.STOPPED)

ADMIT = Move("admit", (_J.QUEUED,), _J.ADMITTED, "admitted")
START = Move("start", (_J.ADMITTED,), _J.RUNNING, "running")
SUCCEED = Move("succeed", _ENDABLE, _J.SUCCEEDED, "succeeded")
FAIL = Move("fail", _ENDABLE, _J.FAILED, "failed")
CANCEL = Move("cancel", _ENDABLE, _J.CANCELLED, "cancelled")
REQUEUE = Move("requeue", (_J.ADMITTED, _J.RUNNING), _J.QUEUED, "requeued")
STOP = Move("stop", _LIVE, _J.STOPPED, "stopped")
RESUME = Move("resume", (_J.STOPPED,), _J.QUEUED, "resumed")
JOB_MOVES = (ADMIT, START, SUCCEED, FAIL, CANCEL, REQUEUE, STOP, RESUME)
"""Every allowed move of ``Job.state`` (module docstring)."""

POD_SUBMIT = Move("submit", (_P.RESERVED,), _P.SUBMITTED)
POD_RUN = Move("run", (_P.RESERVED, _P.SUBMITTED), _P.RUNNING)
POD_TERMINATE = Move("terminate", ACTIVE_PLACEMENT_STATES, _P.TERMINATING)
POD_RELEASE = Move("release", BOOKED_PLACEMENT_STATES, _P.RELEASED)
POD_SUCCEED = Move("succeed", BOOKED_PLACEMENT_STATES, _P.SUCCEEDED)
POD_FAIL = Move("fail", BOOKED_PLACEMENT_STATES, _P.FAILED)
PLACEMENT_MOVES = (POD_SUBMIT, POD_RUN, POD_TERMINATE, POD_RELEASE, POD_SUCCEED, POD_FAIL)
"""Every allowed move of ``Placement.state`` (module docstring)."""

ACTIVE_PLACEMENTS_OF: dict[str, tuple[str, ...]] = {
    _J.QUEUED: (),
    _J.ADMITTED: ACTIVE_PLACEMENT_STATES,
    _J.RUNNING: (_P.RUNNING,),
    _J.STOPPED: (),
    _J.SUCCEEDED: (),
    _J.FAILED: (),
    _J.CANCELLED: (),
}
"""The active placement states a job in each state may hold (``terminating`` placements are
allowed in every state: the old pods of a preempted, stopped or failed job)."""

Rows = QuerySet | Model | int | Iterable[int]
"""The rows of a move: a queryset (its filters kept), an instance, a pk, or pks."""


def _queryset(model: type[Model], rows: Rows) -> QuerySet:
    if isinstance(rows, QuerySet):
        return rows
    if isinstance(rows, Model):
        return model.objects.filter(pk=rows.pk)  # type: ignore[attr-defined]
    if isinstance(rows, int):
        return model.objects.filter(pk=rows)  # type: ignore[attr-defined]
    return model.objects.filter(pk__in=list(rows))  # type: ignore[attr-defined]


def _single_id(rows: Rows) -> int:
    if isinstance(rows, Model):
        return int(rows.pk)
    if isinstance(rows, int):
        return rows
    raise TypeError("event / audit need one job (an instance or a pk)")


@dataclass(frozen=True)
class Audit:
    """The audit entry of a job move (``core.audit.record``): ``action`` (``"job.cancel"``),
    who did it, and the state before (default: the move's single from-state)."""

    action: str
    actor: Any = None
    before: str | None = None


def move_jobs(
    rows: Rows,
    move: Move,
    *,
    only_from: Iterable[str] | None = None,
    event: str | None = None,
    events: Mapping[int, str] | None = None,
    event_kind: str | None = None,
    audit: Audit | None = None,
    **fields: Any,
) -> int:
    """Move the jobs ``rows`` by ``move`` (one conditional ``UPDATE``) with ``fields``.

    When rows moved: ``event`` (one job) or ``events`` (``{job id: message}``) are written as
    ``JobEvent`` rows of ``event_kind`` (default ``move.event``; a move with a cause of its
    own names it: ``preempted``, ``drained``); ``audit`` writes the entry (``rows`` a
    ``Job``).

    Locks (``core.locks.LOCK_ORDER``): the ``UPDATE`` takes the moved jobs' row locks, the
    first table of the order; a caller that already holds placement, node or device locks in
    this transaction must hold these jobs' locks from before them
    (``scheduling.services.locking.lock_jobs``). Not asserted at run time: PostgreSQL shows a
    row lock only through the row itself (``pg_locks`` lists no tuple locks it has not waited
    on), so a check would cost a query per move.

    Returns:
        The number of jobs moved (0: none was in a from-state).

    Raises:
        ValueError: ``move`` is not a job move, or ``only_from`` outside its from-states.
    """
    if move not in JOB_MOVES:
        raise ValueError(f"{move.name} is not a job move")
    sources = move.narrow(only_from)
    moved = _queryset(Job, rows).filter(state__in=sources).update(state=move.target, **fields)
    if not moved:
        return 0
    kind = event_kind or move.event
    if event is not None:
        JobEvent.objects.create(job_id=_single_id(rows), kind=kind, message=event)
    if events:
        record_events(move, events, kind=kind)
    if audit is not None:
        job = rows if isinstance(rows, Job) else Job.objects.get(pk=_single_id(rows))
        audit_record(
            audit.action,
            job,
            actor=audit.actor,
            tenant_id=job.tenant_id,
            before={"state": str(audit.before or sources[0])},
            after={"state": str(move.target)},
        )
    return moved


def record_events(move: Move, messages: Mapping[int, str], *, kind: str | None = None) -> None:
    """The ``JobEvent`` rows of a bulk job move, one ``INSERT``: ``{job id: message}``, of
    ``kind`` (default ``move.event``; the cycle's commit writes them after its placements)."""
    JobEvent.objects.bulk_create(
        JobEvent(job_id=pk, kind=kind or move.event, message=text) for pk, text in messages.items()
    )


def move_placements(
    rows: Rows, move: Move, *, only_from: Iterable[str] | None = None, **fields: Any
) -> int:
    """Move the placements ``rows`` by ``move`` (one conditional ``UPDATE``) with ``fields``.

    Locks (``core.locks.LOCK_ORDER``): the ``UPDATE`` takes the placements' row locks, second
    in the order: the caller moves (or locks) their jobs first in the same transaction, and
    takes node and device locks only after this.

    Returns:
        The number of placements moved.

    Raises:
        ValueError: ``move`` is not a placement move, or ``only_from`` outside its
            from-states.
    """
    if move not in PLACEMENT_MOVES:
        raise ValueError(f"{move.name} is not a placement move")
    sources = move.narrow(only_from)
    return _queryset(Placement, rows).filter(state__in=sources).update(state=move.target, **fields)


# --- jobs: one function per move --------------------------------------------------------


def admit_jobs(rows: Rows, *, now: datetime, **kw: Any) -> int:
    """queued -> admitted (``admitted_at`` = now): the cycle's commit, in bulk."""
    return move_jobs(rows, ADMIT, admitted_at=now, **kw)


def start_jobs(rows: Rows, *, now: datetime, **kw: Any) -> int:
    """admitted -> running (``started_at`` = now): every live pod of the job runs."""
    return move_jobs(rows, START, started_at=now, **kw)


def succeed_jobs(rows: Rows, *, now: datetime, **kw: Any) -> int:
    """-> succeeded (``finished_at`` = now)."""
    return move_jobs(rows, SUCCEED, finished_at=now, **kw)


def fail_jobs(rows: Rows, *, now: datetime, **kw: Any) -> int:
    """-> failed (``finished_at`` = now)."""
    return move_jobs(rows, FAIL, finished_at=now, **kw)


def cancel_jobs(rows: Rows, *, now: datetime, **kw: Any) -> int:
    """-> cancelled (``finished_at`` = now)."""
    return move_jobs(rows, CANCEL, finished_at=now, **kw)


def requeue_jobs(rows: Rows, **kw: Any) -> int:
    """admitted / running -> queued, keeping its age (``admitted_at`` and ``started_at``
    cleared)."""
    return move_jobs(rows, REQUEUE, admitted_at=None, started_at=None, **kw)


def stop_jobs(rows: Rows, *, now: datetime, **kw: Any) -> int:
    """-> stopped (``stopped_at`` = now): holds nothing, not queued until resumed."""
    return move_jobs(rows, STOP, stopped_at=now, **kw)


def resume_jobs(rows: Rows, **kw: Any) -> int:
    """stopped -> queued (``admitted_at`` and ``started_at`` cleared)."""
    return move_jobs(rows, RESUME, admitted_at=None, started_at=None, **kw)


# --- placements: one function per move --------------------------------------------------


def submit_placements(rows: Rows, *, now: datetime, **kw: Any) -> int:
    """reserved -> submitted (``submitted_at`` = now): the pod or object exists."""
    return move_placements(rows, POD_SUBMIT, submitted_at=now, **kw)


def run_placements(rows: Rows, *, now: datetime, **kw: Any) -> int:
    """reserved / submitted -> running (``started_at`` = now)."""
    return move_placements(rows, POD_RUN, started_at=now, **kw)


def terminate_placements(rows: Rows, *, evict_by: datetime, **kw: Any) -> int:
    """active -> terminating until ``evict_by`` (devices and charge still held)."""
    return move_placements(rows, POD_TERMINATE, evict_by=evict_by, **kw)


def release_placements(rows: Rows, *, now: datetime, **kw: Any) -> int:
    """booked -> released (``ended_at`` = now): devices given back."""
    return move_placements(rows, POD_RELEASE, ended_at=now, **kw)


def succeed_placements(rows: Rows, *, now: datetime, **kw: Any) -> int:
    """booked -> succeeded (``ended_at`` = now)."""
    return move_placements(rows, POD_SUCCEED, ended_at=now, **kw)


def fail_placements(rows: Rows, *, now: datetime, **kw: Any) -> int:
    """booked -> failed (``ended_at`` = now)."""
    return move_placements(rows, POD_FAIL, ended_at=now, **kw)
