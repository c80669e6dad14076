"""Benchmark of topology-aware gang placement on the Alibaba GPU-sharing trace (issue 31).

Usage::

    python -m scheduling.placement.lab.bench_topology --nodes NODE_CSV --pods POD_CSV \\
        [--seeds 42] [--tune 1.3] [--rack-nodes 8] [--block-racks 16] [--gang-sizes 2,4,8] \\
        [--required-share 0.5] [--large-nodes 10000] [--large-seeds 1] [--json-only]

Cluster: the trace's nodes in file order, ``--rack-nodes`` nodes a rack and ``--block-racks``
racks a block (the synthetic layout a trace import gives, ``topology_names.synthetic_rack_labels``;
the levels used are ``cloud.provider.com/topology-block``, ``cloud.provider.com/topology-rack``,
``kubernetes.io/hostname``; the trace has no layout of its own); the large run cycles the
node list to ``--large-nodes`` nodes (copy r of node n is "n-r<r>") with the same layout.

Workload (per seed): every pod of the trace is a unit; a multi-GPU pod (``num_gpu`` >= 2, the
trace's multi-GPU jobs) becomes a gang of k copies of itself, k drawn from ``--gang-sizes``;
the units are shuffled and inflated to ``--tune`` x GPU capacity with uniform draws, as
:func:`~scheduling.placement.lab.bench.inflate` does for pods. A gang asks, with probability
``--required-share``, ``required`` rack when it asks at most 32 GPUs and ``required`` block
otherwise, else ``preferred`` rack. Every unit is placed once on arrival through ``place()``
and booked with ``reserve()``; a unit that does not fit is dropped.

Variants (each on the same arrival list):

- ``topology`` (ours): FragGuard, gangs with their topology request, domain rule
  ``best-fit`` (``placement/topology.py``);
- ``kueue_least_free``: the same with Kueue's BestFit domain rule (the least free capacity
  that fits, ``topology_rule="kueue"``);
- ``best_fit_no_topology``: the lab's BestFit policy, gangs as plain gangs (all or nothing,
  node by node, no topology);
- ``fragguard_no_topology``: FragGuard, gangs as plain gangs: today's placement, whose
  allocation is ``fragguard_allocation_pct_100``.

Figures: ``preferred_one_rack_pct`` = preferred gangs placed inside one rack among those
placed while some rack could hold them (counted before placing, on the cluster state of that
moment); ``preferred_one_block_pct`` likewise for blocks; ``required_placed_pct`` = required
gangs placed inside one domain of their level (a baseline without topology counts a gang
that happens to land in one domain); ``allocation_pct_100`` = booked GPU share of capacity at
100 % arrived (bucket mean, as the placement benchmark); ``placements_per_s_N`` = gang
placement attempts per CPU second spent in ``place()`` and ``reserve()`` for gangs, on N
nodes; ``gang_stream_per_s_10000`` the same for the gangs alone placed back to back on a
fresh large cluster (no single pods between two gangs: the topology machinery's own cost;
in the replay each gang also pays for re-reading the nodes the single pods changed since
a gang of its shape last looked). The last line printed is one JSON object. CPU time
(``time.process_time``): a busy machine does not distort it; run it under ``nice -n 19`` on
a shared machine.

Garbage collector: each replay runs as the console's long-running worker does
(``core/gc_tuning.py``): the thresholds ``--gc-thresholds`` (default the console's
``PYTHON_GC_THRESHOLDS``, ``console/settings/base.py``) and the objects alive once the cluster
is built moved to the permanent generation (``gc.freeze``), so a full collection does not walk
the 10,000-node cluster inside a timed call; undone after the replay.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from scheduling.placement import PlacementRequest, place, reserve
from scheduling.placement.fragmentation import TargetWorkload
from scheduling.placement.lab.bench import bucket_means, parse_seeds, task_classes
from scheduling.placement.node_selection import request_shape
from scheduling.placement.topology_index import DomainIndex
from scheduling.placement.topology_names import (
    BLOCK_LABEL,
    HOSTNAME_LABEL,
    RACK_LABEL,
    synthetic_rack_labels,
)
from scheduling.placement.types import ClusterSnapshot, Decision, PodSetTopology, TopologyRequest
from scheduling.placement.whatif.replay import Replay
from scheduling.placement.whatif.trace import (
    NodeRecord,
    PodRecord,
    TraceError,
    build_snapshot,
    pod_request,
    read_nodes,
    read_pods,
)

__all__ = ["BLOCK", "RACK", "HOST", "LEVELS", "Unit", "label_racks", "make_units", "main"]

BLOCK = BLOCK_LABEL
RACK = RACK_LABEL
HOST = HOSTNAME_LABEL
LEVELS = (BLOCK, RACK, HOST)
#: GPUs a gang may ask and still require one rack (more: one block).
RACK_GPUS = 32

#: variant -> (policy, with topology, domain rule)
VARIANTS = {
    "topology": ("FragGuard", True, "best-fit"),
    "kueue_least_free": ("FragGuard", True, "kueue"),
    "best_fit_no_topology": ("BestFit", False, "best-fit"),
    "fragguard_no_topology": ("FragGuard", False, "best-fit"),
}


@dataclass(frozen=True, slots=True)
class Unit:
    """One arrival: a pod (``k`` 1) or a gang of ``k`` copies of it; ``mode`` "" (a pod),
    "required" or "preferred"; ``level`` the label key of the request."""

    pod: PodRecord
    k: int = 1
    mode: str = ""
    level: str = ""

    @property
    def gpu_milli(self) -> int:
        return self.k * self.pod.total_gpu_milli


def label_racks(snapshot: ClusterSnapshot, rack_nodes: int, block_racks: int) -> None:
    """Give the snapshot's nodes, in insertion order, the synthetic rack layout's labels
    (:func:`~scheduling.placement.topology_names.synthetic_rack_labels`, as a trace import
    gives them; the benchmark's levels leave the one zone out)."""
    for i, name in enumerate(list(snapshot.nodes)):
        snapshot.nodes[name].labels = synthetic_rack_labels(i, name, rack_nodes, block_racks)
        snapshot.touch(name)


def make_units(
    pods: Sequence[PodRecord],
    capacity_milli: int,
    tune: float,
    seed: int,
    sizes: Sequence[int],
    required_share: float,
) -> list[Unit]:
    """The arrival list of one seed (module docstring)."""
    rng = random.Random(seed)

    def unit(p: PodRecord) -> Unit:
        if p.num_gpu < 2:
            return Unit(p)
        k = rng.choice(sizes)
        if rng.random() < required_share:
            level = RACK if k * p.num_gpu <= RACK_GPUS else BLOCK
            return Unit(p, k, "required", level)
        return Unit(p, k, "preferred", RACK)

    base = sorted(pods, key=lambda p: p.name)
    rng.shuffle(base)
    order = [unit(p) for p in base]
    target = tune * capacity_milli
    total = sum(u.gpu_milli for u in order)
    i = 0
    while total < target:
        src = base[rng.randrange(len(base))]
        u = unit(replace(src, name=f"{src.name}-tuned-{i}"))
        if total + u.gpu_milli > target:
            break
        order.append(u)
        total += u.gpu_milli
        i += 1
    return order


def gang_request(u: Unit, with_topology: bool) -> PlacementRequest:
    """The gang of ``u`` (pods ``<name>-<j>``), with its topology request or without."""
    pods = tuple(pod_request(u.pod, name=f"{u.pod.name}-{j}") for j in range(u.k))
    sets: tuple[PodSetTopology, ...] = ()
    if with_topology:
        req = (
            TopologyRequest(LEVELS, required=u.level)
            if u.mode == "required"
            else TopologyRequest(LEVELS, preferred=u.level)
        )
        sets = (PodSetTopology(0, u.k, req),)
    return PlacementRequest(u.pod.name, pods, topology=sets)


@dataclass(slots=True)
class Tally:
    """Counts of one replay."""

    gangs: int = 0
    gang_seconds: float = 0.0
    pref_could: int = 0
    pref_one_rack: int = 0
    pref_block_could: int = 0
    pref_one_block: int = 0
    required: int = 0
    required_met: int = 0
    arrived: list[float] = field(default_factory=list)
    alloc: list[float] = field(default_factory=list)


class Room:
    """Whether some rack / block could hold a gang now: the topology index's counts of the
    gang's shape (``fw.topology``), read before placing; not timed."""

    def __init__(self, rp: Replay, snapshot: ClusterSnapshot) -> None:
        self.rp = rp
        self.snapshot = snapshot
        self.index: Any = None

    def best(self, req: PlacementRequest) -> tuple[int, int]:
        """(most pods one rack holds, most one block holds) for the gang's shape."""
        if self.index is None:  # its own index: the timed placements do their own upkeep
            self.index = DomainIndex()
        pod = req.pods[0]
        counter = self.rp.plugin.fit_counter(self.snapshot, pod)
        counts = self.index.counts(self.snapshot, LEVELS, request_shape(pod), counter, False)
        return max(counts.buckets(1), default=0), max(counts.buckets(0), default=0)


def _one(dec: Decision, snapshot: ClusterSnapshot, key: str) -> bool:
    """All pods of the decision on nodes of one value of label ``key``."""
    return len({snapshot.nodes[p.node].labels.get(key) for p in dec.pods}) == 1


def replay(
    variant: str,
    snapshot: ClusterSnapshot,
    units: Sequence[Unit],
    workload: TargetWorkload,
    seed: int,
) -> Tally:
    """One variant over ``units`` on ``snapshot`` (fresh, labelled)."""
    policy, with_topology, rule = VARIANTS[variant]
    rp = Replay(policy, snapshot, workload, workload, seed)
    room = Room(rp, snapshot)
    t = Tally()
    submitted = 0
    for u in units:
        submitted += u.gpu_milli
        if u.k == 1:
            rp.place(pod_request(u.pod), u.pod.total_gpu_milli)
        else:
            _gang(rp, room, t, u, with_topology, rule)
        t.arrived.append(100 * submitted / rp.cap)
        t.alloc.append(100 * rp.allocated / rp.cap)
    return t


def stream(
    variant: str,
    snapshot: ClusterSnapshot,
    units: Sequence[Unit],
    workload: TargetWorkload,
    seed: int,
) -> Tally:
    """Only the gangs of ``units``, back to back on ``snapshot`` (fresh): the topology
    machinery's own speed, without the single pods' changes between two gangs."""
    policy, with_topology, rule = VARIANTS[variant]
    rp = Replay(policy, snapshot, workload, workload, seed)
    room = Room(rp, snapshot)
    t = Tally()
    for u in units:
        if u.k > 1:
            _gang(rp, room, t, u, with_topology, rule)
    return t


def _gang(rp: Replay, room: Room, t: Tally, u: Unit, with_topology: bool, rule: str) -> None:
    """Place and book one gang, timing ``place`` and ``reserve``; count the figures."""
    snapshot = rp.snapshot
    req = gang_request(u, with_topology)
    rack_room, block_room = room.best(req) if u.mode == "preferred" else (0, 0)
    t0 = time.process_time()
    dec = place(snapshot, req, rp.fw, topology_rule=rule)
    if dec.schedulable:
        reserve(snapshot, dec)
    t.gang_seconds += time.process_time() - t0
    t.gangs += 1
    if dec.schedulable:  # reserved above (timed): count it and update the metrics
        rp.allocated += u.gpu_milli
        rp.idle -= u.gpu_milli
        for pod, pa in zip(req.pods, dec.pods, strict=True):
            rp._touch(pa.node, pod, +1, pa)
    placed = dec.schedulable
    if u.mode == "required":
        t.required += 1
        t.required_met += placed and _one(dec, snapshot, u.level)
        return
    if rack_room >= u.k:
        t.pref_could += 1
        t.pref_one_rack += placed and _one(dec, snapshot, RACK)
    if block_room >= u.k:
        t.pref_block_could += 1
        t.pref_one_block += placed and _one(dec, snapshot, BLOCK)


def _pct(a: int, b: int) -> float | None:
    return round(100 * a / b, 2) if b else None


def figures(runs: list[Tally], large: list[Tally], streams: list[Tally]) -> dict[str, Any]:
    """The JSON figures of one variant over its seeds (``large``: the large-cluster runs,
    ``streams``: gangs only on the large cluster)."""
    alloc = [bucket_means(r.arrived, r.alloc).get(100) for r in runs]
    vals = [a for a in alloc if a is not None]

    def rate(rs: list[Tally]) -> float | None:
        secs = sum(r.gang_seconds for r in rs)
        return round(sum(r.gangs for r in rs) / secs, 1) if secs else None

    return {
        "preferred_one_rack_pct": _pct(
            sum(r.pref_one_rack for r in runs), sum(r.pref_could for r in runs)
        ),
        "preferred_one_block_pct": _pct(
            sum(r.pref_one_block for r in runs), sum(r.pref_block_could for r in runs)
        ),
        "required_placed_pct": _pct(
            sum(r.required_met for r in runs), sum(r.required for r in runs)
        ),
        "allocation_pct_100": round(sum(vals) / len(vals), 2) if vals else None,
        "placements_per_s_1213": rate(runs),
        "placements_per_s_10000": rate(large),
        "gang_stream_per_s_10000": rate(streams),
        "gangs": sum(r.gangs for r in runs),
        "preferred_rack_could": sum(r.pref_could for r in runs),
    }


def _cluster(
    nodes: Sequence[NodeRecord], count: int, rack_nodes: int, block_racks: int
) -> ClusterSnapshot:
    """``count`` nodes cycling the node list (copy r of node n is "n-r<r>"), labelled."""
    records = [
        replace(nodes[i % len(nodes)], name=_copy_name(nodes[i % len(nodes)].name, i // len(nodes)))
        for i in range(count)
    ]
    snap = build_snapshot(records)
    label_racks(snap, rack_nodes, block_racks)
    return snap


@contextmanager
def worker_gc(thresholds: Sequence[int]) -> Iterator[None]:
    """Run the body under a worker's collector settings (module docstring): collect, set
    ``thresholds`` (gen0, gen1, gen2), freeze the objects alive now; restore on exit."""
    old = gc.get_threshold()
    gc.collect()
    gc.set_threshold(*thresholds)
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*old)


def _copy_name(name: str, r: int) -> str:
    return name if r == 0 else f"{name}-r{r}"


def run(args: argparse.Namespace, nodes: list[NodeRecord], pods: list[PodRecord]) -> dict:
    """Every variant on every seed, at the trace's size and at ``--large-nodes``."""
    workload = TargetWorkload.from_classes(task_classes(pods), 0.95)
    sizes = [int(x) for x in args.gang_sizes.split(",")]
    seeds = parse_seeds(args.seeds)
    thresholds = [int(x) for x in args.gc_thresholds.split(",")]
    out: dict[str, Any] = {}
    for variant in VARIANTS:
        runs: list[Tally] = []
        large: list[Tally] = []
        streams: list[Tally] = []
        for n_seed, seed in enumerate(seeds):
            for count, acc in ((len(nodes), runs), (args.large_nodes, large)):
                if count <= 0 or (acc is large and n_seed >= args.large_seeds):
                    continue
                snap = _cluster(nodes, count, args.rack_nodes, args.block_racks)
                cap = sum(1000 * len(n.devices) for n in snap.nodes.values())
                units = make_units(pods, cap, args.tune, seed, sizes, args.required_share)
                with worker_gc(thresholds):
                    acc.append(replay(variant, snap, units, workload, seed))
                if acc is large:
                    snap = _cluster(nodes, count, args.rack_nodes, args.block_racks)
                    with worker_gc(thresholds):
                        streams.append(stream(variant, snap, units, workload, seed))
        out[variant] = figures(runs, large, streams)
        if not args.json_only:
            print(f"# {variant}: {json.dumps(out[variant])}", flush=True)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; prints the summary JSON as the last line."""
    ap = argparse.ArgumentParser(
        prog="python -m scheduling.placement.lab.bench_topology", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--nodes", required=True, help="node CSV (openb_node_list_gpu_node.csv)")
    ap.add_argument("--pods", required=True, help="pod CSV (openb_pod_list_default.csv)")
    ap.add_argument("--seeds", default="42")
    ap.add_argument("--tune", type=float, default=1.3)
    ap.add_argument("--rack-nodes", type=int, default=8)
    ap.add_argument("--block-racks", type=int, default=16)
    ap.add_argument("--gang-sizes", default="2,4,8")
    ap.add_argument("--required-share", type=float, default=0.5)
    ap.add_argument("--large-nodes", type=int, default=10000, help="0: skip the large run")
    ap.add_argument("--large-seeds", type=int, default=1, help="seeds also run on the large one")
    ap.add_argument(
        "--gc-thresholds",
        default="50000,20,100",
        help="gen0,gen1,gen2 during a replay (the console's PYTHON_GC_THRESHOLDS default)",
    )
    ap.add_argument("--json-only", action="store_true")
    args = ap.parse_args(argv)
    try:
        nodes = read_nodes(args.nodes)
        pods = read_pods(args.pods)
    except TraceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    res = run(args, nodes, pods)
    ours = dict(res["topology"])
    ours["fragguard_allocation_pct_100"] = res["fragguard_no_topology"]["allocation_pct_100"]
    ours["baselines"] = {
        name: {**res[name], "fragguard_allocation_pct_100": ours["fragguard_allocation_pct_100"]}
        for name in ("best_fit_no_topology", "kueue_least_free")
    }
    ours["config"] = {
        k: getattr(args, k)
        for k in (
            "seeds",
            "tune",
            "rack_nodes",
            "block_racks",
            "gang_sizes",
            "required_share",
            "large_nodes",
            "large_seeds",
            "gc_thresholds",
        )
    }
    print(json.dumps(ours), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
