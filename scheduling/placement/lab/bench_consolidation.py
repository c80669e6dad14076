"""The placement benchmark with consolidation (``bench --consolidation``): every GPU-sharing
task is preemptible and opted in, and a task that fails only because free GPU share is
fragmented may move running sharing tasks (:mod:`scheduling.placement.consolidation`).

Same method as :func:`scheduling.placement.lab.bench.run_arrivals` (seeded shuffle, tuned to
``tune`` x capacity, each task placed once on arrival through ``place()`` with the policy's
profile), plus: when a GPU task does not fit, :func:`plan_consolidation` is asked for at most
``max_moves`` moves (and what is left of ``budget`` moves for the whole run); the plan's moves
are booked (the moved tasks restart elsewhere at once, their GPU share unchanged) and then
the task. Movable: every placed sharing task (one device, less than a whole GPU); the
youngest (latest arrived) are moved first. Reported besides the allocation: moves in all,
moves made by 100 % arrived, tasks placed thanks to moves, candidate sets tried.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from scheduling.placement import PlacementRequest
from scheduling.placement.consolidation import MovableJob, plan_consolidation
from scheduling.placement.types import Decision, PodRequest
from scheduling.placement.whatif.replay import Replay

__all__ = ["Consolidator", "DEFAULT_MAX_MOVES"]

#: Moves allowed for one task.
DEFAULT_MAX_MOVES = 2


@dataclass(slots=True)
class _Running:
    job: MovableJob
    pod: PodRequest
    milli: int


class Consolidator:
    """Movable sharing tasks of one replay and the moves made (see the module doc).

    Args:
        replay: the benchmark's replay (snapshot, profile, allocation counters).
        budget: moves allowed for the whole run (None = unbounded).
        max_moves: moves allowed for one task.
    """

    def __init__(
        self, replay: Replay, budget: int | None, max_moves: int = DEFAULT_MAX_MOVES
    ) -> None:
        self.rp = replay
        self.budget = budget
        self.max_moves = max_moves
        self.running: dict[str, _Running] = {}
        self.seq = 0
        self.moves = 0
        self.rescued = 0
        self.tries = 0
        self.seconds = 0.0

    def placed(self, pod: PodRequest, decision: Decision, sharing: bool, milli: int) -> None:
        """Remember a placed task; sharing tasks (one GPU, less than whole) are movable."""
        self.seq += 1
        if sharing:
            request = PlacementRequest(pod.name, (pod,))
            # running_s = -arrival number: the latest arrived has the smallest (moved first)
            job = MovableJob(pod.name, request, decision, 0, float(-self.seq))
            self.running[pod.name] = _Running(job, pod, milli)

    def rescue(self, pod: PodRequest, num_gpu: int, milli: int) -> Decision | None:
        """Try to place a task that did not fit by moving movable tasks; the task's booked
        Decision, or None (nothing changed)."""
        left = (
            self.max_moves if self.budget is None else min(self.max_moves, self.budget - self.moves)
        )
        if not num_gpu or left <= 0 or not self.running:
            return None
        started = time.process_time()
        result = plan_consolidation(
            self.rp.snapshot,
            PlacementRequest(pod.name, (pod,)),
            [r.job for r in self.running.values()],
            max_moves=left,
            profile=self.rp.fw,
        )
        self.tries += result.tries
        plan = result.plan
        if plan is not None:
            for move in plan.moves:
                r = self.running[move.job_id]
                self.rp.release(r.pod, move.source, r.milli)
            self.rp.book(pod, plan.placement, milli)
            for move in plan.moves:
                r = self.running[move.job_id]
                self.rp.book(r.pod, move.target, r.milli)
                r.job = replace(r.job, booking=move.target)
            self.moves += len(plan.moves)
            self.rescued += 1
        self.seconds += time.process_time() - started
        return None if plan is None else plan.placement
