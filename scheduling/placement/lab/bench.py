"""Replay benchmark of GPU-sharing placement policies on the Alibaba v2023 trace (FGD method).

Usage::

    python -m scheduling.placement.lab.bench --nodes NODE_CSV --pods POD_CSV \\
        --policy NAME[,NAME...|all] --seeds 42-51 [--tune 1.3] [--json] [--list-policies] \\
        [--departures] [--scale K] [--coverage 0.95]

Method (shared/docs/fgd.md §2, simulator ``SortClusterPods`` / ``TunePodsByNodeTotalResource``):
per seed, the pod list is shuffled with the seed; pods drawn uniformly with replacement from the
original list are appended until the next draw would push the submitted GPU request past
``tune`` x GPU capacity (a list already above it loses random pods until it fits). Every task is
placed once on arrival through the placement core's ``place()`` (the policy's profile) and
booked with ``reserve()``; a task that fits nowhere is counted as failed and dropped.

Metrics (fgd.md §2 "Metrics"): after each task, arrived % = submitted GPU request / capacity,
allocation % = booked GPU milli / capacity, fragmentation % = FGD fragment / idle milli. Each is
reported at 50/80/90/95/100/110/120/130 % arrived as the mean over the tasks whose rounded arrived
% equals the bucket (window +-1 when empty), then mean and sd over seeds.

``--departures``: tasks arrive in ``creation_time`` order and leave at ``deletion_time``; a task
that does not fit waits in a FIFO queue (retried, head first, whenever something leaves). Reports
the time-averaged allocation % and the queueing delay of tasks that waited.

``--scale K``: the node list is replicated K times and the tuning target scales with it.

Speed: placements/s = placement attempts / CPU seconds of this process (``time.process_time``)
spent in the replay loop (placing, booking and the metrics), so a busy machine does not
distort it; one process is one core.
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import random
import resource
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from scheduling.placement.fragmentation import TargetWorkload
from scheduling.placement.lab.bench_consolidation import DEFAULT_MAX_MOVES, Consolidator
from scheduling.placement.types import Decision, PodRequest
from scheduling.placement.whatif.policies import POLICY_NAMES
from scheduling.placement.whatif.replay import Replay
from scheduling.placement.whatif.trace import (
    NodeRecord,
    PodRecord,
    TraceError,
    build_snapshot,
    pod_request,
    read_nodes,
    read_pods,
    task_classes,
)

__all__ = ["BUCKETS", "RunResult", "inflate", "parse_seeds", "bucket_means", "task_classes", "main"]

#: Arrived-workload percentages reported.
BUCKETS = (50, 80, 90, 95, 100, 110, 120, 130)


def parse_seeds(text: str) -> list[int]:
    """Seeds from "42-51", "42,44,50" or "42". Raises ValueError on bad input."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part[1:]:
            a, b = part.split("-", 1) if not part.startswith("-") else (part, "")
            lo, hi = int(a), int(b)
            if hi < lo:
                raise ValueError(f"empty seed range {part!r}")
            out.extend(range(lo, hi + 1))
        else:
            out.append(int(part))
    if not out:
        raise ValueError(f"no seeds in {text!r}")
    return out


def inflate(
    pods: Sequence[PodRecord], capacity_milli: int, tune: float, seed: int
) -> list[PodRecord]:
    """Shuffle ``pods`` with ``seed`` then tune the list to ``tune`` x ``capacity_milli``.

    Up: append uniform draws (with replacement, from the original list) while the draw keeps
    the submitted GPU request <= target (the simulator stops at the first draw that would
    exceed it; copies are named "<name>-tuned-<i>"). Down: remove uniformly random pods while
    the total exceeds the target. ``tune`` <= 0 only shuffles.

    Returns:
        The arrival order.
    """
    rng = random.Random(seed)
    order = sorted(pods, key=lambda p: p.name)
    rng.shuffle(order)
    if tune <= 0:
        return order
    target = tune * capacity_milli
    total = sum(p.total_gpu_milli for p in order)
    if total > target:
        while total > target and order:
            p = order.pop(rng.randrange(len(order)))
            total -= p.total_gpu_milli
        return order
    i = 0
    n = len(pods)
    while True:
        src = pods[rng.randrange(n)]
        if total + src.gpu_milli > target:  # the simulator compares the per-GPU share here
            break
        total += src.total_gpu_milli
        order.append(
            PodRecord(
                f"{src.name}-tuned-{i}",
                src.cpu_milli,
                src.memory_mib,
                src.num_gpu,
                src.gpu_milli,
                src.gpu_spec,
                src.qos,
                src.pod_phase,
                src.creation_time,
                src.deletion_time,
                src.scheduled_time,
                src.line,
            )
        )
        i += 1
    return order


def bucket_means(
    arrived: Sequence[float], values: Sequence[float], buckets: Sequence[int] = BUCKETS
) -> dict[int, float | None]:
    """Mean of ``values`` over tasks whose rounded ``arrived`` % equals each bucket.

    When no task falls in bucket X the window X-1..X+1 is used; None when that is empty too.
    """
    by: dict[int, list[float]] = {}
    for a, v in zip(arrived, values, strict=False):
        by.setdefault(int(math.floor(a + 0.5)), []).append(v)
    out: dict[int, float | None] = {}
    for b in buckets:
        vals = by.get(b)
        if not vals:
            vals = by.get(b - 1, []) + by.get(b + 1, [])
        out[b] = sum(vals) / len(vals) if vals else None
    return out


@dataclass(slots=True)
class RunResult:
    """One replay (one policy, one seed)."""

    policy: str
    seed: int
    tasks: int = 0
    failed: int = 0
    seconds: float = 0.0
    allocation: dict[int, float | None] = field(default_factory=dict)
    fragmentation: dict[int, float | None] = field(default_factory=dict)
    failed_by_kind: dict[str, int] = field(default_factory=dict)
    # departures mode
    time_avg_allocation: float | None = None
    waited: int = 0
    mean_wait_s: float | None = None
    p95_wait_s: float | None = None
    never_placed: int = 0
    # consolidation (moves in all, by 100 % arrived, tasks placed thanks to moves, sets tried)
    moves: int | None = None
    moves_by_100: int = 0
    rescued: int = 0
    tries: int = 0


def _kind(p: PodRecord) -> str:
    if not p.num_gpu:
        return "cpu"
    return "share" if p.is_gpu_share else f"{p.num_gpu}gpu"


def run_arrivals(
    name: str,
    nodes: Sequence[NodeRecord],
    pods: Sequence[PodRecord],
    seed: int,
    tune: float,
    scale: int,
    workload: TargetWorkload,
    measure: TargetWorkload,
    move_budget: int | None = -1,
    max_moves: int = DEFAULT_MAX_MOVES,
) -> RunResult:
    """One saturation replay (the paper's method) of policy ``name`` with ``seed``;
    ``move_budget`` >= 0 or None (unbounded): with consolidation (:mod:`.bench_consolidation`)."""
    snap = build_snapshot(nodes, replicas=scale)
    rp = Replay(name, snap, workload, measure, seed)
    cons = None
    if move_budget is None or move_budget >= 0:
        cons = Consolidator(rp, move_budget, max_moves)
    order = inflate(pods, rp.cap, tune, seed)
    res = RunResult(name, seed, tasks=len(order))
    arrived: list[float] = []
    alloc: list[float] = []
    frag: list[float] = []
    submitted = 0
    t0 = time.process_time()
    for p in order:
        submitted += p.total_gpu_milli
        req = pod_request(p)
        dec = rp.place(req, p.total_gpu_milli)
        if cons is not None:
            dec = dec if dec.schedulable else cons.rescue(req, p.num_gpu, p.total_gpu_milli) or dec
            if dec.schedulable:
                cons.placed(req, dec, p.is_gpu_share, p.total_gpu_milli)
        if not dec.schedulable:
            res.failed += 1
            k = _kind(p)
            res.failed_by_kind[k] = res.failed_by_kind.get(k, 0) + 1
        arrived.append(100 * submitted / rp.cap)
        alloc.append(100 * rp.allocated / rp.cap)
        frag.append(rp.frag_rate)
        if cons is not None and arrived[-1] < 100.5:
            res.moves_by_100 = cons.moves
    res.seconds = time.process_time() - t0
    if cons is not None:
        res.moves, res.rescued, res.tries = cons.moves, cons.rescued, cons.tries
    res.allocation = bucket_means(arrived, alloc)
    res.fragmentation = bucket_means(arrived, frag)
    return res


#: A timed arrival of a departures replay: ``(creation_time, replica, position, pod,
#: duration_s)``; the duration is ``deletion_time - creation_time``.
_Arrival = tuple[int, int, int, PodRecord, int]
#: A running pod of a departures replay: ``(end time, start number, request, decision, GPU
#: milli)``, kept in a heap (the start number breaks ties before the request is compared).
_Running = tuple[int, int, PodRequest, Decision, int]
#: A waiting pod of a departures replay: ``(arrival time, pod name, pod, duration_s)``.
_Waiting = tuple[int, str, PodRecord, int]


def run_departures(
    name: str,
    nodes: Sequence[NodeRecord],
    pods: Sequence[PodRecord],
    seed: int,
    scale: int,
    workload: TargetWorkload,
    measure: TargetWorkload,
) -> RunResult:
    """Time-based replay: arrive at creation_time, leave at deletion_time, FIFO wait queue.

    Pods without both timestamps are skipped. A waiting task starts when it fits (queue head
    first, retried after every departure) and then runs its original duration.
    """
    arrivals = _arrivals(pods, scale)
    rp = Replay(name, build_snapshot(nodes, replicas=scale), workload, measure, seed)
    res = RunResult(name, seed, tasks=len(arrivals))
    leave: list[_Running] = []  # a heap
    queue: list[_Waiting] = []  # FIFO
    waits: list[int] = []
    area, last_t, seq = 0.0, arrivals[0][0], 0

    def start(now: int, arr_t: int, tag: str, p: PodRecord, duration_s: int) -> bool:
        nonlocal seq
        req = pod_request(p, name=tag)
        dec = rp.place(req, p.total_gpu_milli)
        if not dec.schedulable:
            return False
        if now > arr_t:
            waits.append(now - arr_t)
        seq += 1
        heapq.heappush(leave, (now + duration_s, seq, req, dec, p.total_gpu_milli))
        return True

    def drain_queue(now: int) -> None:
        while queue and start(now, *queue[0]):
            queue.pop(0)

    t0, ai = time.process_time(), 0
    while ai < len(arrivals) or leave:
        # the next event: a departure first when it is not later than the next arrival
        departing = bool(leave) and (ai == len(arrivals) or leave[0][0] <= arrivals[ai][0])
        now = leave[0][0] if departing else arrivals[ai][0]
        area += rp.allocated * (now - last_t)
        last_t = now
        if departing:
            _t, _s, req, dec, milli = heapq.heappop(leave)
            rp.release(req, dec, milli)
            drain_queue(now)
            continue
        t_arr, r, _k, p, duration_s = arrivals[ai]
        ai += 1
        tag = p.name if r == 0 else f"{p.name}-r{r}"
        if queue or not start(now, t_arr, tag, p, duration_s):
            queue.append((t_arr, tag, p, duration_s))
    res.seconds = time.process_time() - t0
    span = last_t - arrivals[0][0]
    res.time_avg_allocation = 100 * area / (span * rp.cap) if span > 0 else None
    _wait_figures(res, waits, never_placed=len(queue))
    return res


def _arrivals(pods: Sequence[PodRecord], scale: int) -> list[_Arrival]:
    """Every timed pod × ``scale`` as an :data:`_Arrival`, in (creation_time, replica,
    position) order.

    Raises:
        ValueError: no pod has both timestamps.
    """
    timed = [
        (p.creation_time, p.deletion_time - p.creation_time, p)
        for p in pods
        if p.creation_time is not None and p.deletion_time is not None
    ]
    if not timed:
        raise ValueError("no pod has creation_time and deletion_time; --departures needs them")
    return sorted(
        (
            (created, r, k, p, duration)
            for r in range(scale)
            for k, (created, duration, p) in enumerate(timed)
        ),
        key=lambda x: (x[0], x[1], x[2]),
    )


def _wait_figures(res: RunResult, waits: list[int], *, never_placed: int) -> None:
    """Waited / never placed counts and mean / p95 wait (seconds) of a departures replay."""
    res.waited = len(waits)
    res.never_placed = never_placed
    res.failed = never_placed
    if waits:
        waits.sort()
        res.mean_wait_s = sum(waits) / len(waits)
        res.p95_wait_s = float(waits[min(len(waits) - 1, int(0.95 * len(waits)))])


def _agg(values: list[float | None]) -> tuple[float | None, float | None]:
    vals = [v for v in values if v is not None]
    if not vals:
        return None, None
    return sum(vals) / len(vals), (statistics.stdev(vals) if len(vals) > 1 else 0.0)


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def summarise(name: str, runs: list[RunResult], departures: bool) -> dict[str, Any]:
    """The JSON object of one policy over its seeds."""
    tasks = sum(r.tasks for r in runs)
    secs = sum(r.seconds for r in runs)
    out: dict[str, Any] = {
        "policy": name,
        "seeds": [r.seed for r in runs],
        "failed": round(sum(r.failed for r in runs) / len(runs), 1),
        "placements_per_s": round(tasks / secs, 1) if secs else 0.0,
        "peak_rss_mib": round(_rss_mib(), 1),
    }
    if departures:
        m, sd = _agg([r.time_avg_allocation for r in runs])
        out["time_avg_allocation_pct"] = None if m is None else round(m, 2)
        out["waited"] = round(sum(r.waited for r in runs) / len(runs), 1)
        w, _ = _agg([r.mean_wait_s for r in runs])
        p95, _ = _agg([r.p95_wait_s for r in runs])
        out["mean_wait_s"] = None if w is None else round(w, 1)
        out["p95_wait_s"] = None if p95 is None else round(p95, 1)
        return out
    alloc, alloc_sd, frag = {}, {}, {}
    for b in BUCKETS:
        m, sd = _agg([r.allocation.get(b) for r in runs])
        alloc[str(b)] = None if m is None else round(m, 2)
        alloc_sd[str(b)] = None if sd is None else round(sd, 2)
        fm, _ = _agg([r.fragmentation.get(b) for r in runs])
        frag[str(b)] = None if fm is None else round(fm, 2)
    out["allocation_pct"] = alloc
    out["allocation_sd"] = alloc_sd
    out["fragmentation_pct"] = frag
    kinds: dict[str, float] = {}
    for r in runs:
        for k, v in r.failed_by_kind.items():
            kinds[k] = kinds.get(k, 0) + v / len(runs)
    out["failed_by_kind"] = {k: round(v, 1) for k, v in sorted(kinds.items())}
    if runs[0].moves is not None:
        for key in ("moves", "moves_by_100", "rescued", "tries"):
            out[key] = round(sum(getattr(r, key) for r in runs) / len(runs), 1)
    return out


def _print_text(summary: dict[str, Any], departures: bool, out: TextIO) -> None:
    name = summary["policy"]
    if departures:
        print(
            f"{name:14s} time-avg alloc {summary['time_avg_allocation_pct']}%  waited "
            f"{summary['waited']}  mean wait {summary['mean_wait_s']} s  "
            f"p95 {summary['p95_wait_s']} s  "
            f"never placed {summary['failed']}  {summary['placements_per_s']:.0f} placements/s  "
            f"peak RSS {summary['peak_rss_mib']:.0f} MiB",
            file=out,
        )
        return

    def cell(b: str) -> str:
        m, sd = summary["allocation_pct"][b], summary["allocation_sd"][b]
        return "    -     " if m is None else f"{m:6.2f}±{sd:<4.2f}"

    print(f"{name:14s} " + " ".join(cell(str(b)) for b in BUCKETS), file=out)
    frag = " ".join(
        "    -     "
        if summary["fragmentation_pct"][str(b)] is None
        else f"{summary['fragmentation_pct'][str(b)]:6.2f}    "
        for b in BUCKETS
    )
    print(f"{'  frag rate %':14s} {frag}", file=out)
    print(
        f"{'':14s} failed {summary['failed']} {summary['failed_by_kind']}  "
        f"{summary['placements_per_s']:.0f} placements/s  "
        f"peak RSS {summary['peak_rss_mib']:.0f} MiB",
        file=out,
    )
    if "moves" in summary:
        print(
            f"{'':14s} consolidation: {summary['moves']} moves ({summary['moves_by_100']} by "
            f"100 % arrived), {summary['rescued']} tasks placed thanks to moves",
            file=out,
        )


def _parser() -> argparse.ArgumentParser:
    """The CLI's arguments."""
    ap = argparse.ArgumentParser(
        prog="python -m scheduling.placement.lab.bench", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--nodes", help="node CSV (openb_node_list_gpu_node.csv)")
    ap.add_argument("--pods", help="pod CSV (openb_pod_list_*.csv)")
    ap.add_argument("--policy", default="all", help="NAME[,NAME...] or all")
    ap.add_argument("--seeds", default="42-51", help="e.g. 42-51 or 42,43")
    ap.add_argument("--tune", type=float, default=1.3, help="inflate to TUNE x GPU capacity")
    ap.add_argument("--coverage", type=float, default=0.95, help="FGD target-workload coverage")
    ap.add_argument("--scale", type=int, default=1, help="replicate the node list K times")
    ap.add_argument("--departures", action="store_true", help="time-based replay with departures")
    ap.add_argument("--consolidation", action="store_true", help="move sharing tasks to defrag")
    ap.add_argument("--move-budget", type=int, default=None, help="moves per run (default: any)")
    ap.add_argument("--max-moves", type=int, default=DEFAULT_MAX_MOVES, help="moves per task")
    ap.add_argument("--json", action="store_true", help="one JSON object per policy")
    ap.add_argument("--list-policies", action="store_true", help="print policy names and exit")
    return ap


def _print_header(
    args: argparse.Namespace, n_pods: int, n_nodes: int, seeds: list[int], workload: TargetWorkload
) -> None:
    """The text report's first lines (trace, mode, seeds, target workload, columns)."""
    mode = "departures" if args.departures else f"tune {args.tune}"
    print(
        f"# {args.pods}: {n_pods} pods; {n_nodes} nodes x{args.scale}; {mode}; seeds "
        f"{seeds[0]}..{seeds[-1]}; target workload {len(workload.classes)} classes "
        f"({100 * workload.coverage:.1f} % of tasks); path place()"
    )
    if not args.departures:
        print(
            f"{'policy':14s} "
            + " ".join(f"{str(b) + '%':>10s}" for b in BUCKETS)
            + "   (allocation % at arrived %)"
        )


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the exit status."""
    ap = _parser()
    args = ap.parse_args(argv)
    if args.list_policies:
        for n in POLICY_NAMES:
            print(n)
        return 0
    if not args.nodes or not args.pods:
        ap.error("--nodes and --pods are required")
    if args.scale < 1:
        ap.error("--scale must be >= 1")
    names = (
        list(POLICY_NAMES)
        if args.policy == "all"
        else [n.strip() for n in args.policy.split(",") if n.strip()]
    )
    unknown = [n for n in names if n not in POLICY_NAMES]
    if unknown:
        ap.error(f"unknown policy {unknown[0]!r} (known: {', '.join(POLICY_NAMES)})")
    try:
        seeds = parse_seeds(args.seeds)
        nodes = read_nodes(args.nodes)
        pods = read_pods(args.pods)
        workload = TargetWorkload.from_classes(task_classes(pods), args.coverage)
    except (TraceError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not args.json:
        _print_header(args, len(pods), len(nodes), seeds, workload)
    for name in names:
        runs = []
        for seed in seeds:
            if args.departures:
                runs.append(run_departures(name, nodes, pods, seed, args.scale, workload, workload))
            else:
                runs.append(
                    run_arrivals(
                        *(name, nodes, pods, seed, args.tune, args.scale, workload, workload),
                        args.move_budget if args.consolidation else -1,
                        args.max_moves,
                    )
                )
        summary = summarise(name, runs, args.departures)
        if args.json:
            print(json.dumps(summary), flush=True)
        else:
            _print_text(summary, args.departures, sys.stdout)
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
