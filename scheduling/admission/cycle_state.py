"""What the cycle's helpers (flavor assignment, head ordering, starvation reservations) read
from the running cycle.

A :class:`typing.Protocol` that :class:`scheduling.admission.cycle.AdmissionCycle` satisfies,
so those helpers type their ``cycle`` argument without importing the cycle module (which
imports them: no import circle).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol

from scheduling.admission.candidates import CycleView
from scheduling.admission.policy import FairSharingStrategy
from scheduling.admission.types import AdmissionSnapshot, PendingWorkload, QueueSpec


class CycleState(CycleView, Protocol):
    """The running cycle as its helpers see it (see the module docstring).

    Attributes (besides :class:`~scheduling.admission.candidates.CycleView`'s):
        snapshot: the cycle input.
        queues: ``{queue name: QueueSpec}``.
        fair_sharing: fair sharing on in this cohort.
        strategies: the fair-sharing preemption strategies, in order.
        penalties: Admission Fair Sharing entry penalties per tenant (whole devices).
        version: bumped on every admission (invalidates cached nominations).
        holders: running and admitted workloads' holds by id (starvation reservations).
    """

    snapshot: AdmissionSnapshot
    queues: dict[str, QueueSpec]
    fair_sharing: bool
    strategies: tuple[FairSharingStrategy, ...]
    penalties: dict[str, float]
    version: int
    holders: dict[str, Any]

    def effective_preemptible(self, entry: PendingWorkload) -> bool: ...  # noqa: D102

    def victims_removed(self) -> AbstractContextManager[None]: ...  # noqa: D102
