"""What-if replay of a workload on a set of nodes under one placement policy and tenant quotas
(the simulation page, DESIGN.md §9). Pure: no Django; the service feeds it and stores the result.

Model (event driven, integer seconds):

* a pod arrives at ``arrival_s`` and, once started, runs ``duration_s``; it asks
  ``num_gpu x gpu_milli`` (trace shape, :class:`~scheduling.placement.whatif.trace.PodRecord`)
  and belongs to a ``tenant``;
* placement goes through the placement core (``place`` / ``reserve`` / ``unreserve``) with the
  policy's profile (:class:`~scheduling.placement.whatif.replay.Replay`), so a
  policy's packing decides what fits later;
* admission is Kueue's BestEffortFIFO over one queue: at every arrival and departure, the
  waiting pods are tried oldest first and each one that fits starts (a pod that does not fit
  does not block the ones behind it). With ``quotas`` (``{tenant: nominal milli-GPU}``), a pod
  also needs its tenant's running milli + its own milli <= the nominal (no borrowing); a tenant
  absent from ``quotas`` is not limited;
* a pod that could not start by the end (all departures done) never ran;
* a gang job (``SimPod.gang`` > 1, optionally with a topology request) starts all its pods
  at once through one ``place()`` or waits (issue 31).

Results: allocation % of the capacity over time (sampled at most :data:`MAX_POINTS` times),
queueing delay (mean, p50, p95) and per tenant: pods, mean wait, GPU-hours served and asked;
fairness is Jain's index over the tenants' served/asked GPU-hour ratios (1 = every tenant got
the same share of what it asked; Jain, Chiu & Hawe, DEC-TR-301, 1984).
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduling.placement.fragmentation import TargetWorkload
from scheduling.placement.types import (
    Decision,
    PlacementRequest,
    PodRequest,
    PodSetTopology,
    TopologyRequest,
)
from scheduling.placement.whatif.replay import Replay
from scheduling.placement.whatif.trace import (
    GPU_MILLI,
    NodeRecord,
    PodRecord,
    build_snapshot,
    task_classes,
)
from scheduling.placement.whatif.trace import pod_request as trace_pod_request

__all__ = ["SimPod", "TenantResult", "WhatIfResult", "replay_policy", "jain_index", "MAX_POINTS"]

#: Most allocation samples kept per run (the chart's points).
MAX_POINTS = 240


@dataclass(frozen=True, slots=True)
class SimPod:
    """One pod of the workload: its tenant, arrival and run time (s) and its trace shape.

    ``gang`` > 1: a job of that many copies of the pod, started all together or not at all
    (one placement through ``place()``), with ``topology`` its pod set's topology request
    (issue 31; the nodes need the topology's labels, ``replay_policy(node_labels=...)``).
    """

    tenant: str
    arrival_s: int
    duration_s: int
    pod: PodRecord
    gang: int = 1
    topology: TopologyRequest | None = None

    @property
    def gpu_milli(self) -> int:
        """GPU milli of the whole job (all its pods)."""
        return self.gang * self.pod.total_gpu_milli


@dataclass
class TenantResult:
    """One tenant's outcome: pods, started, mean wait (s), GPU-hours served and asked."""

    pods: int = 0
    started: int = 0
    wait_sum_s: float = 0.0
    gpu_hours: float = 0.0
    asked_gpu_hours: float = 0.0

    @property
    def mean_wait_s(self) -> float | None:
        return self.wait_sum_s / self.started if self.started else None

    @property
    def served_ratio(self) -> float:
        return self.gpu_hours / self.asked_gpu_hours if self.asked_gpu_hours else 1.0


@dataclass
class WhatIfResult:
    """Outcome of one policy (see the module docstring)."""

    policy: str
    pods: int = 0
    never_ran: int = 0
    capacity_milli: int = 0
    span_s: int = 0
    mean_allocation_pct: float = 0.0
    mean_wait_s: float = 0.0
    p50_wait_s: float = 0.0
    p95_wait_s: float = 0.0
    fairness: float = 1.0
    allocation: list[tuple[int, float]] = field(default_factory=list)
    tenants: dict[str, TenantResult] = field(default_factory=dict)

    def as_dict(self) -> dict:
        """JSON-ready form (stored on the run)."""
        return {
            "policy": self.policy,
            "pods": self.pods,
            "never_ran": self.never_ran,
            "capacity_gpus": self.capacity_milli / GPU_MILLI,
            "span_s": self.span_s,
            "mean_allocation_pct": round(self.mean_allocation_pct, 3),
            "mean_wait_s": round(self.mean_wait_s, 3),
            "p50_wait_s": self.p50_wait_s,
            "p95_wait_s": self.p95_wait_s,
            "fairness": round(self.fairness, 4),
            "allocation": [[t, round(v, 3)] for t, v in self.allocation],
            "tenants": {
                name: {
                    "pods": t.pods,
                    "started": t.started,
                    "mean_wait_s": None if t.mean_wait_s is None else round(t.mean_wait_s, 3),
                    "gpu_hours": round(t.gpu_hours, 4),
                    "asked_gpu_hours": round(t.asked_gpu_hours, 4),
                }
                for name, t in sorted(self.tenants.items())
            },
        }


def jain_index(values: Sequence[float]) -> float:
    """Jain's fairness index (sum x)^2 / (n sum x^2), 1 when all equal; 1 for no value."""
    if not values:
        return 1.0
    squares = sum(v * v for v in values)
    return (sum(values) ** 2) / (len(values) * squares) if squares else 1.0


def _percentile(sorted_values: list[int], q: float) -> float:
    if not sorted_values:
        return 0.0
    return float(sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))])


class _Run:
    """State of one replay."""

    def __init__(
        self,
        policy: str,
        nodes: Sequence[NodeRecord],
        pods: Sequence[SimPod],
        quotas: dict[str, int],
        node_labels: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        workload = TargetWorkload.from_classes(task_classes([p.pod for p in pods]) or [])
        snapshot = build_snapshot(list(nodes))
        for name, labels in (node_labels or {}).items():
            if name in snapshot.nodes:
                snapshot.nodes[name].labels = dict(labels)
                snapshot.touch(name)
        self.rp = Replay(policy, snapshot, workload, workload, 0)
        self.quotas = quotas
        self.used: dict[str, int] = defaultdict(int)
        self.waiting: list[tuple[int, int, SimPod]] = []  # (arrival, seq, pod)
        #: heap of (end time, start number, request, decision, GPU milli, tenant) of the
        #: running pods (the start number breaks ties before the request is compared)
        self.leave: list[tuple[int, int, PodRequest | PlacementRequest, Decision, int, str]] = []
        self.waits: list[int] = []
        self.res = WhatIfResult(policy, pods=len(pods), capacity_milli=self.rp.cap)
        self.seq = 0
        self.observer: Any = None

    def try_start(self, now: int, sp: SimPod) -> bool:
        milli = sp.gpu_milli
        limit = self.quotas.get(sp.tenant)
        if limit is not None and self.used[sp.tenant] + milli > limit:
            return False
        req: PodRequest | PlacementRequest
        if sp.gang > 1 or sp.topology is not None:
            req = _gang_request(sp, f"{sp.pod.name}-{self.seq}")
            dec = self.rp.place_gang(req, milli)
        else:
            req = trace_pod_request(sp.pod, name=f"{sp.pod.name}-{self.seq}")
            dec = self.rp.place(req, milli)
        if not dec.schedulable:
            return False
        self.seq += 1
        self.used[sp.tenant] += milli
        wait = now - sp.arrival_s
        self.waits.append(wait)
        t = self.res.tenants[sp.tenant]
        t.started += 1
        t.wait_sum_s += wait
        t.gpu_hours += milli / GPU_MILLI * sp.duration_s / 3600
        heapq.heappush(self.leave, (now + sp.duration_s, self.seq, req, dec, milli, sp.tenant))
        if self.observer is not None:
            self.observer.started(now, sp)
        return True

    def admit(self, now: int) -> None:
        """BestEffortFIFO pass over the waiting pods, oldest first."""
        keep = []
        for item in self.waiting:
            if not self.try_start(now, item[2]):
                keep.append(item)
        self.waiting = keep


def _gang_request(sp: SimPod, name: str) -> PlacementRequest:
    """The placement request of a gang job (pods ``<name>-<j>``, its topology if any)."""
    pods = tuple(trace_pod_request(sp.pod, name=f"{name}-{j}") for j in range(sp.gang))
    sets = () if sp.topology is None else (PodSetTopology(0, sp.gang, sp.topology),)
    return PlacementRequest(name, pods, topology=sets)


def replay_policy(
    policy: str,
    nodes: Sequence[NodeRecord],
    pods: Sequence[SimPod],
    *,
    quotas: dict[str, int] | None = None,
    progress: Callable[[int, int], None] | None = None,
    observer: Any = None,
    node_labels: Mapping[str, Mapping[str, str]] | None = None,
) -> WhatIfResult:
    """Replay ``pods`` on ``nodes`` with ``policy`` (module docstring).

    Args:
        policy: a name of :data:`scheduling.placement.whatif.policies.POLICY_NAMES`.
        nodes: the nodes (trace node rows; one GPU model per node).
        pods: the workload; GPU-less pods are placed too but count no GPU.
        quotas: ``{tenant: nominal milli-GPU}``; None = no quota.
        progress: called as ``progress(events done, events total)`` every 200 events.
        observer: optional; ``observer.arrived(now_s, pod, state)`` is called when a pod
            arrives, before the admission pass (``state.leave``: heap of ``(end_s, seq, req,
            decision, milli, tenant)`` of the running pods; ``state.waiting``: the queue,
            ``(arrival_s, seq, SimPod)`` oldest first, the new pod last; ``state.rp.cap``:
            capacity in milli-GPU) and ``observer.started(now_s, pod)`` when a pod starts
            (the ETA benchmark, ``manage.py eta_bench``).
        node_labels: ``{node name: labels}`` (topology levels for gangs with a topology).

    Raises:
        KeyError: unknown policy. ValueError: no node, no pod, a negative duration.
    """
    if not nodes or not pods:
        raise ValueError("a simulation needs at least one node and one pod")
    if any(p.duration_s < 0 for p in pods):
        raise ValueError("pod durations must be >= 0 s")
    run = _Run(policy, nodes, pods, dict(quotas or {}), node_labels)
    run.observer = observer
    arrivals = sorted(pods, key=lambda p: (p.arrival_s, p.pod.name))
    for sp in arrivals:
        t = run.res.tenants.setdefault(sp.tenant, TenantResult())
        t.pods += 1
        t.asked_gpu_hours += sp.gpu_milli / GPU_MILLI * sp.duration_s / 3600
    samples, area, span = _replay(run, arrivals, progress)
    res = run.res
    res.never_ran = len(run.waiting)
    res.span_s = span
    res.mean_allocation_pct = 100.0 * area / (span * run.rp.cap) if span and run.rp.cap else 0.0
    waits = sorted(run.waits)
    res.mean_wait_s = sum(waits) / len(waits) if waits else 0.0
    res.p50_wait_s, res.p95_wait_s = _percentile(waits, 0.5), _percentile(waits, 0.95)
    res.fairness = jain_index([t.served_ratio for t in res.tenants.values()])
    step = max(1, len(samples) // MAX_POINTS)
    res.allocation = samples[::step] + ([samples[-1]] if (len(samples) - 1) % step else [])
    if progress:
        progress(2 * len(arrivals), 2 * len(arrivals))
    return res


def _replay(
    run: _Run, arrivals: list[SimPod], progress: Callable[[int, int], None] | None
) -> tuple[list[tuple[int, float]], float, int]:
    """The event loop: ``(allocation samples, allocated milli x s, span s)``."""
    total = 2 * len(arrivals)
    start = last = arrivals[0].arrival_s
    area = 0.0
    samples: list[tuple[int, float]] = []
    done = ai = 0
    while ai < len(arrivals) or run.leave:
        departing = bool(run.leave) and (
            ai == len(arrivals) or run.leave[0][0] <= arrivals[ai].arrival_s
        )
        now = run.leave[0][0] if departing else arrivals[ai].arrival_s
        area += run.rp.allocated * (now - last)
        last = now
        if departing:
            _t, _s, req, dec, milli, tenant = heapq.heappop(run.leave)
            if isinstance(req, PlacementRequest):
                run.rp.release_gang(req, dec, milli)
            else:
                run.rp.release(req, dec, milli)
            run.used[tenant] -= milli
        else:
            sp = arrivals[ai]
            ai += 1
            run.waiting.append((sp.arrival_s, ai, sp))
            if run.observer is not None:
                run.observer.arrived(now, sp, run)
        run.admit(now)
        point = (now - start, 100.0 * run.rp.allocated / run.rp.cap if run.rp.cap else 0.0)
        if samples and samples[-1][0] == point[0]:
            samples[-1] = point  # one sample per instant: the state after its events
        else:
            samples.append(point)
        done += 1
        if progress and done % 200 == 0:
            progress(done, total)
    return samples, area, last - start
