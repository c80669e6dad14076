"""``manage.py eta_bench``: how close the estimated start is to the actual start.

The "reality" is the what-if replay (:func:`scheduling.placement.whatif.run.replay_policy`): pods
of an Alibaba trace arrive at their creation time (times ``--arrival-scale``, to make a queue
on fewer nodes), are placed by the placement core under a policy and wait in one BestEffortFIFO
queue. When a pod arrives, two estimates of its start are taken from what the console would
know at that moment:

* the range (:func:`scheduling.admission.eta.estimate_queue_starts`): the running pods'
  ends, the queue ahead (devices, declared run time), the GPU count;
* the former drain-rate estimate (:func:`scheduling.admission.eta.estimate_start`): position
  in the queue / starts per second over the last hour.

When the pod starts, its actual wait is compared with both. Printed (pods that waited at
least 60 s): how many started inside the range, before it, after it; the median and p90 of
actual wait / estimated wait for the range's ends and the drain-rate estimate (1 = exact,
above 1 = the estimate was optimistic). Pure computation, no database.
"""

from __future__ import annotations

import statistics
from bisect import bisect_left
from datetime import UTC, datetime, timedelta

from django.core.management.base import BaseCommand, CommandError

from scheduling.admission.eta import estimate_queue_starts, estimate_start
from scheduling.placement.whatif.run import SimPod, replay_policy
from scheduling.placement.whatif.trace import TraceError, read_nodes, read_pods

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
MIN_WAIT_S = 60


class _Observer:
    """Estimates at arrival, actual waits at start (see the module docstring)."""

    def __init__(self) -> None:
        self.estimates: dict[str, tuple[int, float, float, float | None]] = {}
        self.starts: list[int] = []
        self.waits: dict[str, int] = {}

    def arrived(self, now: int, sp: SimPod, state) -> None:
        at = EPOCH + timedelta(seconds=now)
        running = [
            (EPOCH + timedelta(seconds=end), milli / 1000)
            for end, _s, _r, _d, milli, _t in state.leave
        ]
        queue = [(w[2].pod.total_gpu_milli / 1000, w[2].duration_s) for w in state.waiting]
        ranges = estimate_queue_starts(at, state.rp.cap / 1000, running, queue)
        mine = ranges[-1]
        recent = [
            EPOCH + timedelta(seconds=s)
            for s in self.starts[bisect_left(self.starts, now - 3600) :]
        ]
        drain = estimate_start(len(queue), recent, at) if queue else None
        self.estimates[sp.pod.name] = (
            now,
            (mine.earliest - at).total_seconds() if mine else float("nan"),
            (mine.latest - at).total_seconds() if mine else float("nan"),
            (drain - at).total_seconds() if drain else None,
        )

    def started(self, now: int, sp: SimPod) -> None:
        self.starts.append(now)
        self.waits[sp.pod.name] = now - self.estimates[sp.pod.name][0]


def _ratio(actual: float, estimate: float) -> float:
    return actual / max(estimate, 1.0)


class Command(BaseCommand):
    help = "Estimated start range vs the actual start in a trace replay (see docs/benchmarks.md)."

    def add_arguments(self, parser):
        parser.add_argument("--nodes", required=True, help="openb_node_list CSV")
        parser.add_argument("--pods", required=True, help="openb_pod_list CSV")
        parser.add_argument("--node-count", type=int, default=40)
        parser.add_argument("--pod-count", type=int, default=3000)
        parser.add_argument(
            "--arrival-scale",
            type=float,
            default=0.02,
            help="multiply inter-arrival times (< 1 packs arrivals)",
        )
        parser.add_argument("--policy", default="FragGuard")

    def handle(self, *args, **opts):
        try:
            nodes = [n for n in read_nodes(opts["nodes"]) if n.gpu_count][: opts["node_count"]]
            pods = [
                p
                for p in read_pods(opts["pods"])
                if p.num_gpu and p.creation_time is not None and p.deletion_time is not None
            ]
        except TraceError as exc:
            raise CommandError(str(exc)) from None
        pods = sorted(pods, key=lambda p: p.creation_time)[: opts["pod_count"]]
        if not nodes or not pods:
            raise CommandError("no GPU node or no timed GPU pod in the files")
        t0 = pods[0].creation_time
        work = [
            SimPod(
                p.qos or "default",
                int((p.creation_time - t0) * opts["arrival_scale"]),
                max(1, p.deletion_time - p.creation_time),
                p,
            )
            for p in pods
        ]
        obs = _Observer()
        result = replay_policy(opts["policy"], nodes, work, observer=obs)
        self._report(obs, result, opts)

    def _report(self, obs: _Observer, result, opts) -> None:
        inside = before = after = 0
        lo_r, hi_r, drain_r = [], [], []
        for name, wait in obs.waits.items():
            _t, lo, hi, drain = obs.estimates[name]
            if wait < MIN_WAIT_S or lo != lo:  # NaN: no range
                continue
            inside += lo - 1 <= wait <= hi + 1
            before += wait < lo - 1
            after += wait > hi + 1
            lo_r.append(_ratio(wait, lo))
            hi_r.append(_ratio(wait, hi))
            if drain is not None:
                drain_r.append(_ratio(wait, drain))
        n = inside + before + after
        w = self.stdout.write
        w(
            f"policy {opts['policy']}, {result.pods} pods on "
            f"{opts['node_count']} nodes ({result.capacity_milli // 1000} GPUs), arrival scale "
            f"{opts['arrival_scale']}; mean wait {result.mean_wait_s:.0f} s, p95 "
            f"{result.p95_wait_s:.0f} s"
        )
        if not n:
            w("no pod waited 60 s or more: nothing to compare")
            return
        w(
            f"pods that waited >= {MIN_WAIT_S} s: {n}; started inside the range {inside} "
            f"({100 * inside / n:.1f} %), before {before} ({100 * before / n:.1f} %), after "
            f"{after} ({100 * after / n:.1f} %)"
        )

        def q(values, p):
            return statistics.quantiles(values, n=10)[p] if len(values) >= 10 else float("nan")

        for label, values in (
            ("range earliest", lo_r),
            ("range latest", hi_r),
            ("drain rate (old)", drain_r),
        ):
            if values:
                w(
                    f"actual / estimated wait, {label}: median {statistics.median(values):.2f}, "
                    f"p10 {q(values, 0):.2f}, p90 {q(values, 8):.2f} ({len(values)} pods)"
                )
