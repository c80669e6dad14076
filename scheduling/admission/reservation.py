"""Starvation protection: a reservation for a long-waiting head, and backfill around it.

Kueue has no reservation (its starvation tools are StrictFIFO, priority and preemption).
The rule here is EASY backfill as in Slurm ``sched/backfill`` and LSF ``RESOURCE_RESERVE`` /
``BACKFILL`` (one reservation per group by default, Volcano's wait threshold to elect it),
with quota awareness:

1. **Elect.** A job that is not admitted (waiting for quota or unschedulable, not above its
   maximum) and has waited ``reservation_after_s`` since submission becomes *reserving*, while
   the group holds fewer than ``max_reservations``. The reservation is kept across cycles
   (``PendingWorkload.reserving_since``) and dropped for one cycle after
   ``max_reservation_hold_s`` (LSF ``MAX_RESERVE_TIME``).
2. **Shadow time.** On the cycle's state, running jobs are released in order of expected end
   (``started_at + max_runtime_s``; a terminating job at ``evict_by``; no bound = +inf; ties
   by id) until the reserving job fits by quota and placement. ``T_R`` is the expected end
   of the last release needed.
3. **Backfill.** Any other job of the group with a priority not above the reserving job's may
   be admitted only if it ends before ``T_R`` (``now + max_runtime_s <= T_R``) or does not
   delay the reservation: with the job held forever, the reserving job still starts by
   ``T_R`` (no more releases needed when ``T_R`` is +inf). A job that would preempt must end
   before ``T_R``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from scheduling.admission.cycle_state import CycleState
from scheduling.admission.outcomes import PendingCode, Reservation
from scheduling.admission.placer import FlavorChoice, PlacementOutcome
from scheduling.admission.types import Charges, PendingWorkload

ELECTABLE = frozenset({PendingCode.WAITING_FOR_QUOTA, PendingCode.UNSCHEDULABLE})


@dataclass(frozen=True, slots=True)
class Holder:
    """Something that holds quota and devices and will end: a running job or an admission of
    this cycle. ``end_s``: expected end in seconds from now (``math.inf`` = unbounded)."""

    id: str
    tenant: str
    charges: Charges
    end_s: float


@dataclass(frozen=True, slots=True)
class Shadow:
    """When a reserving job can start: ``start_s`` seconds from now (``math.inf`` = only
    after an unbounded job ends) once ``releases`` holders are gone."""

    start_s: float
    releases: int

    def key(self) -> tuple[float, int]:
        """Compare starts: by time, and by releases when the time is unbounded."""
        return (self.start_s, self.releases if math.isinf(self.start_s) else 0)


@dataclass(slots=True)
class Active:
    """A reservation held in this cycle."""

    entry: PendingWorkload
    since: datetime
    shadow: Shadow


def expected_end_s(
    started_at: datetime,
    max_runtime_s: float | None,
    now: datetime,
    evict_by: datetime | None = None,
) -> float:
    """Seconds from ``now`` until a job is expected to end (never negative)."""
    if evict_by is not None:
        return max(0.0, (evict_by - now).total_seconds())
    if max_runtime_s is None:
        return math.inf
    end = started_at + timedelta(seconds=max_runtime_s)
    return max(0.0, (end - now).total_seconds())


class Reservations:
    """The reservations of one cycle (see the module docstring)."""

    def __init__(self, cycle: CycleState) -> None:
        self.cycle = cycle
        self.options = cycle.snapshot.options
        self.active: dict[str, Active] = {}
        self.expired: list[str] = []

    def start(self) -> None:
        """Load the reservations kept from earlier cycles (expired ones are dropped)."""
        hold = self.options.max_reservation_hold_s
        for entry in sorted(self.cycle.snapshot.pending, key=lambda e: e.id):
            if entry.reserving_since is None:
                continue
            held = (self.cycle.now - entry.reserving_since).total_seconds()
            if self.options.reservation_after_s is None or (hold is not None and held > hold):
                self.expired.append(entry.id)
                continue
            if len(self.active) >= self.options.max_reservations:
                continue
            shadow = self.shadow(entry)
            if shadow is not None:
                self.active[entry.id] = Active(entry, entry.reserving_since, shadow)

    def _flavors(self, entry: PendingWorkload) -> FlavorChoice:
        names = tuple(self.cycle.queues[entry.queue].flavors)
        return tuple(names for _ in entry.sets()) if names else None

    def _fits(self, entry: PendingWorkload) -> bool:
        cycle = self.cycle
        outcome = cycle.placer.try_place(entry, entry.pod_count, self._flavors(entry))
        return outcome.placed and not cycle.tree.check_fit(
            entry.tenant, outcome.charges, allow_borrowing=cycle.effective_preemptible(entry)
        )

    def shadow(self, entry: PendingWorkload) -> Shadow | None:
        """Release holders by expected end until ``entry`` fits (state restored after)."""
        cycle = self.cycle
        undo = []
        try:
            if self._fits(entry):
                return Shadow(0.0, 0)
            ordered = sorted(cycle.holders.values(), key=lambda h: (h.end_s, h.id))
            for count, holder in enumerate(ordered, start=1):
                undo.append((holder, cycle.placer.remove(holder.id)))
                cycle.tree.remove(holder.tenant, holder.charges)
                if self._fits(entry):
                    return Shadow(holder.end_s, count)
            return None
        finally:
            for holder, restore in reversed(undo):
                restore()
                cycle.tree.add(holder.tenant, holder.charges)

    def elect(self, entry: PendingWorkload, code: PendingCode) -> Active | None:
        """Make (or keep) ``entry`` reserving after it was not admitted; None when it does
        not qualify (the reservation, if it had one, ends)."""
        known = self.active.pop(entry.id, None)
        if (
            self.options.reservation_after_s is None
            or entry.id in self.expired
            or code not in ELECTABLE
        ):
            return None
        waited = (self.cycle.now - entry.created_at).total_seconds()
        if known is None and (
            waited < self.options.reservation_after_s
            or len(self.active) >= self.options.max_reservations
        ):
            return None
        shadow = self.shadow(entry)
        if shadow is None:
            return None
        active = Active(entry, known.since if known else self.cycle.now, shadow)
        self.active[entry.id] = active
        return active

    def admitted(self, entry: PendingWorkload) -> None:
        """``entry`` was admitted: its reservation ends."""
        self.active.pop(entry.id, None)

    def blocking(self, entry: PendingWorkload, outcome: PlacementOutcome | None) -> str | None:
        """Why admitting ``entry`` with ``outcome`` (None = it would preempt) would delay a
        reservation, or None."""
        cycle = self.cycle
        for active in list(self.active.values()):
            if active.entry.id == entry.id or entry.priority > active.entry.priority:
                continue
            limit = active.shadow.start_s
            if entry.max_runtime_s is not None and entry.max_runtime_s <= limit:
                continue
            if outcome is not None:
                undo = cycle.placer.reserve(entry, outcome)
                cycle.tree.add(entry.tenant, outcome.charges)
                try:
                    shadow = self.shadow(active.entry)
                finally:
                    cycle.tree.remove(entry.tenant, outcome.charges)
                    undo()
                if shadow is not None and shadow.key() <= active.shadow.key():
                    continue
            ends = (
                "has no runtime bound"
                if entry.max_runtime_s is None
                else f"would end at {self._at(entry.max_runtime_s)}"
            )
            return (
                f"backfill: it {ends}, after the start of a reservation in group "
                f"{cycle.snapshot.group.name} ({self._at(limit)})"
            )
        return None

    def _at(self, seconds: float) -> str:
        if math.isinf(seconds):
            return "when jobs without a runtime bound end"
        return (self.cycle.now + timedelta(seconds=seconds)).isoformat()

    def verdict(self, active: Active) -> str:
        """The reserving job's reason."""
        return (
            f"reserved: expected start {self._at(active.shadow.start_s)} (waiting for "
            f"{active.shadow.releases} running job(s) to end)"
        )

    def results(self) -> tuple[tuple[Reservation, ...], tuple[str, ...]]:
        """The reservations held after the cycle and the expired ones."""
        held = tuple(
            Reservation(
                workload_id=a.entry.id,
                tenant=a.entry.tenant,
                since=a.since,
                expected_start=None
                if math.isinf(a.shadow.start_s)
                else self.cycle.now + timedelta(seconds=a.shadow.start_s),
                releases=a.shadow.releases,
            )
            for a in sorted(self.active.values(), key=lambda a: a.entry.id)
        )
        return held, tuple(self.expired)
