"""Benchmark of a nearly full cycle's tail: heads that do not fit over many running jobs.

``python -m scheduling.admission.bench_tail [--running 8000] [--heads 200] [--profile]``
prints one JSON object per scenario: the cycle's wall time, the time spent in the
preemption search (``flavors._oracle``: candidate collection, the search itself and the
rejections) and both per unplaceable head.

The world mimics the Alibaba trace's tail in the console (``make bench-e2e --phases trace``):
``running`` one-device jobs fill nodes of 8 devices completely, spread round-robin over 4
tenants whose nominal quota is the whole cluster (nobody borrows), all of priority 0, and
``heads`` pending jobs that ask for 2 devices on one node. Scenarios:

* ``fair``: fair sharing on (the console's default); every candidate is rejected (own jobs:
  ``withinClusterQueue LowerPriority``; other tenants: ``borrower within nominal``).
* ``classical``: the same with fair sharing off.
* ``mixed``: heads of priority 1 in a world where every node keeps one non-preemptible job
  and every other job is younger than its minimum runtime except a tenth: candidates exist,
  none helps (heads ask for 8 devices).

The placer is a counting placer (free devices per node, first fit by node name), so the
figures are the admission core's, not the placement core's.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from scheduling.admission import flavors
from scheduling.admission.cycle import AdmissionCycle
from scheduling.admission.placer import FlavorChoice, PlacementOutcome, Undo
from scheduling.admission.types import (
    AdmissionSnapshot,
    CycleConfig,
    Dimension,
    Flavor,
    FlavorResource,
    GroupKind,
    GroupSpec,
    PendingWorkload,
    QueueSpec,
    QuotaSpec,
    RunningWorkload,
    TenantSpec,
)

NOW = datetime(2026, 12, 1, tzinfo=UTC)
DEVICES_PER_NODE = 8
MEMORY_MIB = 81920
FLAVOR = "a100"


def charges(devices: int) -> dict[FlavorResource, int]:
    """Charges of ``devices`` whole A100s (milli-devices, MiB, cores percent)."""
    return {
        (FLAVOR, Dimension.DEVICES): 1000 * devices,
        (FLAVOR, Dimension.MEMORY_MIB): MEMORY_MIB * devices,
        (FLAVOR, Dimension.CORES_PERCENT): 100 * devices,
    }


class CountingPlacer:
    """Free whole devices per node; a job's pods (``request`` = devices per pod) go to the
    first nodes by name with room. Satisfies :class:`~scheduling.admission.placer.Placer`."""

    def __init__(self, nodes: int) -> None:
        self.names = [f"node-{n:05d}" for n in range(nodes)]
        self.free = dict.fromkeys(self.names, DEVICES_PER_NODE)
        self.held: dict[str, list[tuple[str, int]]] = {}

    def _fit(self, workload: PendingWorkload, pod_count: int, free: dict[str, int]) -> list:
        need = int(workload.request)  # type: ignore[call-overload]
        spare = dict(free)
        out = []
        for _ in range(pod_count):
            node = next((n for n in self.names if spare[n] >= need), None)
            if node is None:
                return []
            spare[node] -= need
            out.append((node, need))
        return out

    def try_place(
        self, workload: PendingWorkload, pod_count: int, flavors: FlavorChoice = None
    ) -> PlacementOutcome:
        """First fit on the current free devices."""
        pods = self._fit(workload, pod_count, self.free)
        if not pods:
            return PlacementOutcome(False, reason="no node has the free devices")
        return PlacementOutcome(True, pod_count, charges(sum(k for _, k in pods)), pods)

    def estimate(
        self, workload: PendingWorkload, pod_count: int, flavors: FlavorChoice = None
    ) -> PlacementOutcome:
        """First fit on the empty cluster."""
        pods = self._fit(workload, pod_count, dict.fromkeys(self.names, DEVICES_PER_NODE))
        if not pods:
            return PlacementOutcome(False, reason="larger than a node")
        return PlacementOutcome(True, pod_count, charges(sum(k for _, k in pods)), pods)

    def hold(self, workload_id: str, pods: list[tuple[str, int]]) -> Undo:
        """Book ``pods`` for ``workload_id``."""
        for node, count in pods:
            self.free[node] -= count
        self.held[workload_id] = pods

        def undo() -> None:
            for node, count in self.held.pop(workload_id):
                self.free[node] += count

        return undo

    def reserve(self, workload: PendingWorkload, outcome: PlacementOutcome) -> Undo:
        """Book a :meth:`try_place` outcome."""
        return self.hold(workload.id, list(outcome.token))  # type: ignore[call-overload]

    def remove(self, workload_id: str) -> Undo:
        """Free ``workload_id``'s devices until the undo is called."""
        pods = self.held.pop(workload_id)
        for node, count in pods:
            self.free[node] += count

        def undo() -> None:
            self.hold(workload_id, pods)

        return undo


@dataclass(frozen=True, slots=True)
class World:
    """A snapshot, its placer and the cycle config of one scenario."""

    snapshot: AdmissionSnapshot
    placer: CountingPlacer
    config: CycleConfig


def build(scenario: str, running: int, heads: int, tenants: int = 4) -> World:
    """The world of ``scenario`` (module docstring)."""
    nodes = -(-running // DEVICES_PER_NODE)
    placer = CountingPlacer(nodes)
    names = [f"team-{t}" for t in range(tenants)]
    capacity = charges(nodes * DEVICES_PER_NODE)
    quotas = tuple(
        QuotaSpec(t, fr[0], fr[1], amount) for t in names for fr, amount in capacity.items()
    )
    mixed = scenario == "mixed"
    jobs = []
    for i in range(running):
        node = placer.names[i // DEVICES_PER_NODE]
        workload_id = f"run-{i:06d}"
        placer.hold(workload_id, [(node, 1)])
        jobs.append(
            RunningWorkload(
                id=workload_id,
                tenant=names[i % tenants],
                priority=0,
                started_at=NOW - timedelta(seconds=60 + i),
                charges=charges(1),
                preemptible=not (mixed and i % DEVICES_PER_NODE == 0),
                min_runtime_s=3600.0 if mixed and i % 10 else 0.0,
            )
        )
    pending = tuple(
        PendingWorkload(
            id=f"head-{h:05d}",
            tenant=names[h % tenants],
            queue=f"q-{names[h % tenants]}",
            priority=1 if mixed else 0,
            created_at=NOW - timedelta(seconds=heads - h),
            request=DEVICES_PER_NODE if mixed else 2,
        )
        for h in range(heads)
    )
    snapshot = AdmissionSnapshot(
        group=GroupSpec("bench", GroupKind.SHARED, (Flavor(FLAVOR, ("A100",)),)),
        tenants=tuple(TenantSpec(t) for t in names),
        quotas=quotas,
        queues=tuple(QueueSpec(f"q-{t}", t) for t in names),
        pending=pending,
        running=tuple(jobs),
        now=NOW,
    )
    return World(snapshot, placer, CycleConfig(fair_sharing=scenario != "classical"))


def _timed(target: Callable, box: list[float]) -> Callable:
    def wrapper(*args: object, **kwargs: object) -> object:
        start = time.perf_counter()
        try:
            return target(*args, **kwargs)
        finally:
            box[0] += time.perf_counter() - start

    return wrapper


def measure(world: World, profile: bool = False) -> dict:
    """Run one cycle of ``world``; the figures of the module docstring."""
    box = [0.0]
    original = flavors._oracle
    flavors._oracle = _timed(original, box)
    profiler = cProfile.Profile() if profile else None
    try:
        start = time.perf_counter()
        if profiler is not None:
            profiler.enable()
        result = AdmissionCycle(world.snapshot, world.placer, world.config).run()
        if profiler is not None:
            profiler.disable()
        elapsed = time.perf_counter() - start
    finally:
        flavors._oracle = original
    heads = len(result.pending)
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
    return {
        "heads_not_admitted": heads,
        "admitted": len(result.admitted),
        "running": len(world.snapshot.running),
        "cycle_s": round(elapsed, 3),
        "search_s": round(box[0], 3),
        "cycle_ms_per_head": round(1000 * elapsed / max(1, heads), 2),
        "search_ms_per_head": round(1000 * box[0] / max(1, heads), 2),
    }


def main(argv: list[str] | None = None) -> None:
    """Command line: module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--running", type=int, default=8000)
    parser.add_argument("--heads", type=int, default=200)
    parser.add_argument("--scenarios", default="fair,classical,mixed")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)
    for scenario in args.scenarios.split(","):
        world = build(scenario, args.running, args.heads)
        figures = measure(world, args.profile)
        sys.stdout.write(json.dumps({"scenario": scenario, **figures}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
