"""Replay benchmark of GPU-sharing placement policies on the Alibaba v2023 trace (FGD method).

Usage::

    python -m scheduling.placement.bench --nodes NODE_CSV --pods POD_CSV \\
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
"""

from __future__ import annotations

import argparse
import json
import math
import random
import resource
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Sequence

from scheduling.placement.fragmentation import FragCalculator, TargetWorkload, TaskClass
from scheduling.placement.trace import GPU_MILLI, PodRecord, build_snapshot, read_nodes, read_pods

__all__ = [
    "BUCKETS",
    "RunResult",
    "inflate",
    "parse_seeds",
    "bucket_means",
    "task_classes",
    "main",
]

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


def task_classes(pods: Sequence[PodRecord]) -> list[TaskClass]:
    """One :class:`TaskClass` per pod (the FGD target-workload input)."""
    return [
        TaskClass(p.cpu_milli, p.gpu_milli if p.num_gpu else 0, p.num_gpu, p.gpu_spec)
        for p in pods
    ]


def inflate(pods: Sequence[PodRecord], capacity_milli: int, tune: float, seed: int) -> list[PodRecord]:
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
                f"{src.name}-tuned-{i}", src.cpu_milli, src.memory_mib, src.num_gpu,
                src.gpu_milli, src.gpu_spec, src.qos, src.pod_phase, src.creation_time,
                src.deletion_time, src.scheduled_time, src.line,
            )
        )
        i += 1
    return order


def bucket_means(arrived: Sequence[float], values: Sequence[float], buckets=BUCKETS) -> dict[int, float | None]:
    """Mean of ``values`` over tasks whose rounded ``arrived`` % equals each bucket.

    When no task falls in bucket X the window X-1..X+1 is used; None when that is empty too.
    """
    by: dict[int, list[float]] = {}
    for a, v in zip(arrived, values):
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
