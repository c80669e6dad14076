"""The placement port of the admission cycle.

The admission core does not pick nodes or devices itself; the cycle asks an injected
:class:`Placer` where a job would land, because the exact quota charge depends on it
(see :mod:`scheduling.admission.charges`). The Django side wires the real placement core
(``scheduling.placement.place`` on a cloned ``ClusterSnapshot``) into this protocol;
:class:`scheduling.admission.fake.PoolPlacer` is a small in-memory implementation for tests.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from scheduling.admission.types import FlavorResource, PendingWorkload

FlavorChoice = tuple[tuple[str, ...] | None, ...] | None
"""Allowed flavor names per pod set (None = no restriction)."""

Undo = Callable[[], None]
"""Reverts one tentative change. Undo callables of different workloads must commute (each
adds or removes one workload's booked usage), like Kueue's ``SimulateWorkloadRemoval``."""


@dataclass(frozen=True, slots=True)
class PlacementOutcome:
    """Where a job would land on the placer's current state.

    Attributes:
        placed: True when ``pod_count`` pods were all placed.
        pod_count: pods placed (0 when not placed).
        charges: exact charges per ``(flavor, dimension)`` (empty when not placed).
        token: opaque placement handed back in ``Admission.placement`` (the placement
            ``Decision`` on the Django side).
        reason: why it could not be placed (empty when placed), e.g. the placement core's
            per-node reasons joined.
    """

    placed: bool
    pod_count: int = 0
    charges: Mapping[FlavorResource, int] = field(default_factory=dict)
    token: object = None
    reason: str = ""


class Placer(Protocol):
    """Tentative placement on a working copy of the cluster, owned by the caller.

    The cycle calls these methods only; it never reads the cluster itself. All methods are
    deterministic for a given state.
    """

    def try_place(
        self, workload: PendingWorkload, pod_count: int, flavors: FlavorChoice = None
    ) -> PlacementOutcome:
        """Where the first ``pod_count`` pods of ``workload`` would go, all or none.

        Pods are taken in pod-set order (``workload.sets()``); ``flavors[i]``, when given,
        restricts pod set ``i`` to the devices of those flavors (a pod set past the end of
        ``flavors``, or a None entry, is not restricted). Must not change the placer's state.
        """
        ...

    def estimate(
        self, workload: PendingWorkload, pod_count: int, flavors: FlavorChoice = None
    ) -> PlacementOutcome:
        """Like :meth:`try_place` on the same cluster with nothing booked: the charges the
        job would have if capacity were free (used when it cannot be placed now, to judge
        quota and preemption). Not placed = it can never be placed there.
        """
        ...

    def reserve(self, workload: PendingWorkload, outcome: PlacementOutcome) -> Undo:
        """Book ``outcome`` (from :meth:`try_place` on the current state) for ``workload``.

        Returns:
            An undo callable releasing exactly this booking.
        """
        ...

    def remove(self, workload_id: str) -> Undo:
        """Tentatively free the devices of a running workload, or of one reserved in this
        cycle (a preemption victim, a release in a starvation shadow).

        Returns:
            An undo callable booking them again.

        Raises:
            KeyError: the placer does not know ``workload_id``.
        """
        ...
