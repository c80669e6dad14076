"""Incremental node selection for the trace-shaped placement policies (FGD, BestFit, ...).

The kube-scheduler shape (Filter + Score on every node for every pod) costs a Python call or
more per node; at 1,213 nodes that is above a millisecond per pod. The policies of
``baselines.py`` and ``frag.py`` score a node from its own state only, and only one node changes
per placement, so this module keeps:

- :class:`NodeTable`: a compact mirror of the snapshot (free CPU/memory, free milli per GPU,
  models, a version per node), refreshed only for nodes reported changed;
- :class:`LazySelector`: per *task key* (the request fields a score depends on) a max-heap of
  ``(-score, tie rank, node, version)``. Before answering a key it scores only the nodes that
  changed since that key was last answered; entries whose version is stale are dropped when
  they reach the top. The answer is exactly ``argmax score, ties -> lowest tie rank`` over the
  feasible nodes, the same as a full scan.

A policy (:class:`TracePolicy`) supplies ``key(task)``, ``score(table, i, task) -> int | None``
(None = infeasible) and ``choose_gpus(table, i, task)``. Scores must depend only on the node's
mirrored state and the task, and must not depend on the task's host memory: the key leaves
memory out and the selector skips (without dropping) nodes short of memory when it reads a
heap, so a score's feasibility test is :meth:`NodeTable.fits_but_memory`.

Tie rule: ``rank[i]`` is the node's position in name order, or in a seeded random permutation of
the name order (the FGD simulator prefixes node names with a seeded ``rand.Perm`` and breaks
ties on the smallest name, fgd.md §2 "Scheduler").
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from heapq import heapify, heappop, heappush
from typing import Protocol

from scheduling.placement.fragmentation import GPU_MILLI, device_free_milli
from scheduling.placement.types import ClusterSnapshot, Node, PodRequest

__all__ = [
    "TaskView",
    "NodeTable",
    "LazySelector",
    "TracePolicy",
    "task_view",
    "tie_ranks",
]


@dataclass(frozen=True, slots=True)
class TaskView:
    """A trace-shaped request: host resources plus ``num_gpu`` x ``gpu_milli`` of one vendor.

    Attributes:
        cpu_milli / memory_mib: host request.
        num_gpu: GPUs (0 = CPU-only).
        gpu_milli: per-GPU share, milli (1000 = whole GPU).
        gpu_types: allowed models (empty = any).
        vendor: device vendor word.
    """

    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int
    gpu_types: tuple[str, ...] = ()
    vendor: str = "NVIDIA"

    @property
    def key(self) -> tuple:
        """Fields every policy's score and feasibility depend on, except host memory (the
        selector checks memory when it reads a heap, so tasks differing only in memory share
        one heap)."""
        return (self.cpu_milli, self.num_gpu, self.gpu_milli, self.gpu_types, self.vendor)

    @property
    def total_gpu_milli(self) -> int:
        """num_gpu x gpu_milli."""
        return self.num_gpu * self.gpu_milli

    @property
    def is_share(self) -> bool:
        """A fractional task (one GPU, < 1000 milli)."""
        return self.num_gpu == 1 and self.gpu_milli < GPU_MILLI


def task_view(pod: PodRequest) -> TaskView | None:
    """The :class:`TaskView` of ``pod``, or None when the pod is not trace-shaped.

    Trace-shaped: at most one device request over all containers, asking ``cores_percent``
    p (1..100) and ``memory_percent`` p (or, for p = 100, memory unset), with no uuid filters,
    no excluded types, no NUMA binding, no modes, no chip and no node selector. Anything else
    is left to the core's general Filter/Score loop.
    """
    if pod.node_selector or pod.node_policy or pod.device_policy:
        return None
    reqs = [d for c in pod.containers for d in c.devices]
    if not reqs:
        return TaskView(pod.cpu_milli, pod.memory_mib, 0, 0)
    if len(reqs) != 1:
        return None
    r = reqs[0]
    if (
        r.uuids_include
        or r.uuids_exclude
        or r.types_exclude
        or r.numa_bind
        or r.modes
        or r.chip
        or r.soft_split
        or r.slices
        or r.memory_mib
        or r.count < 1
    ):
        return None
    pct = r.cores_percent
    if not 0 < pct <= 100:
        return None
    if r.memory_percent is None:
        if pct != 100:
            return None
    elif r.memory_percent != pct:
        return None
    if r.count > 1 and pct != 100:
        return None
    return TaskView(
        pod.cpu_milli, pod.memory_mib, r.count, pct * 10, tuple(r.types_include), r.vendor
    )


def tie_ranks(names: list[str], seed: int | None) -> list[int]:
    """Tie rank per node of ``names`` (sorted order): identity, or a seeded permutation."""
    n = len(names)
    if seed is None:
        return list(range(n))
    perm = list(range(n))
    random.Random(seed).shuffle(perm)
    return perm


class NodeTable:
    """Mirror of a snapshot's nodes in the compact form the trace policies read.

    Per node index ``i`` (nodes in name order): ``cpu[i]``, ``mem[i]`` free host resources,
    ``gpus[i]`` free milli per device (list, device order), ``types[i]`` device models,
    ``model[i]`` the single model or None when mixed, ``vendors[i]``, ``ver[i]`` a change
    counter, ``tags[i]`` a Counter of GPU task tags placed there (GpuClustering), ``rank[i]``
    the tie rank.
    """

    __slots__ = (
        "names",
        "index",
        "cpu",
        "mem",
        "gpus",
        "types",
        "model",
        "vendors",
        "ver",
        "rank",
        "tags",
        "journal",
        "cap_milli",
        "sg",
        "tot",
        "free_by_model",
        "free_total",
        "by_model",
    )

    def __init__(self, snapshot: ClusterSnapshot, seed: int | None = None) -> None:
        self.names = sorted(snapshot.nodes)
        self.index = {n: i for i, n in enumerate(self.names)}
        n = len(self.names)
        self.cpu = [0] * n
        self.mem = [0] * n
        self.gpus: list[list[int]] = [[] for _ in range(n)]
        self.types: list[tuple[str, ...]] = [() for _ in range(n)]
        self.model: list[str | None] = [None] * n
        self.vendors: list[tuple[str, ...]] = [() for _ in range(n)]
        self.ver = [0] * n
        self.rank = tie_ranks(self.names, seed)
        self.tags: list[dict[str, int]] = [{} for _ in range(n)]
        #: free milli per device sorted ascending, and their sum (kept with ``gpus``).
        self.sg: list[tuple[int, ...]] = [() for _ in range(n)]
        self.tot = [0] * n
        #: node indices in the order they changed (one entry per refresh).
        self.journal: list[int] = []
        #: free GPU milli of schedulable nodes, per device model and in all.
        self.free_by_model: dict[str, int] = {}
        self.free_total = 0
        self.cap_milli = 0
        for i, name in enumerate(self.names):
            self._load(i, snapshot.nodes[name])
            self.cap_milli += GPU_MILLI * len(self.gpus[i])
        #: node indices per device model (a mixed node is listed under each of its models).
        self.by_model: dict[str, list[int]] = {}
        for i, types in enumerate(self.types):
            for t in dict.fromkeys(types):
                self.by_model.setdefault(t, []).append(i)

    def _load(self, i: int, node: Node) -> None:
        self._count_free(i, -1)
        if not node.schedulable or node.error:
            self.cpu[i] = -1
            self.mem[i] = -1
        else:
            self.cpu[i] = node.cpu_milli - node.used_cpu_milli
            self.mem[i] = node.memory_mib - node.used_memory_mib
        g = [device_free_milli(d) for d in node.devices]
        self.gpus[i] = g
        self.sg[i] = tuple(sorted(g))
        self.tot[i] = sum(g)
        types = tuple(d.type for d in node.devices)
        self.types[i] = types
        self.vendors[i] = tuple(d.vendor for d in node.devices)
        self.model[i] = types[0] if types and all(t == types[0] for t in types) else None
        self._count_free(i, +1)

    def _count_free(self, i: int, sign: int) -> None:
        """Add (sign +1) or remove (-1) node ``i``'s free GPU milli in the per-model sums."""
        if self.cpu[i] < 0 or not self.tot[i]:
            return
        fm = self.free_by_model
        for x, t in zip(self.gpus[i], self.types[i], strict=False):
            fm[t] = fm.get(t, 0) + sign * x
        self.free_total += sign * self.tot[i]

    def refresh(self, snapshot: ClusterSnapshot, name: str) -> int:
        """Re-read node ``name`` from ``snapshot``, bump its version, journal it; its index."""
        i = self.index[name]
        self._load(i, snapshot.nodes[name])
        self.ver[i] += 1
        self.journal.append(i)
        return i

    def touch(self, i: int) -> None:
        """Mark node ``i`` changed without a new state (its scores changed for another reason),
        so every selector re-scores it."""
        self.ver[i] += 1
        self.journal.append(i)

    def usable(self, i: int, task: TaskView) -> list[int]:
        """Indices of the devices of node ``i`` that ``task``'s vendor/type filter accepts."""
        allowed = task.gpu_types
        vend = task.vendor
        out = []
        for j, (t, v) in enumerate(zip(self.types[i], self.vendors[i], strict=False)):
            if v == vend and (not allowed or t in allowed):
                out.append(j)
        return out

    def type_ok(self, i: int, task: TaskView) -> bool:
        """Fast check: every device of node ``i`` passes the vendor/type filter."""
        m = self.model[i]
        if m is None:
            return False
        if task.gpu_types and m not in task.gpu_types:
            return False
        return all(v == task.vendor for v in self.vendors[i])

    def fits(self, i: int, task: TaskView) -> bool:
        """Host resources and GPU capacity of node ``i`` admit ``task`` (simulator filters)."""
        if self.mem[i] < task.memory_mib:
            return False
        return self.fits_but_memory(i, task)

    def fits_but_memory(self, i: int, task: TaskView) -> bool:
        """:meth:`fits` without the host-memory check (the selector checks memory itself)."""
        if self.cpu[i] < task.cpu_milli:
            return False
        k = task.num_gpu
        if not k:
            return True
        d = task.gpu_milli
        g = self.gpus[i]
        if self.type_ok(i, task):
            sg = self.sg[i]
            return len(sg) >= k and sg[-k] >= d
        return sum(1 for j in self.usable(i, task) if g[j] >= d) >= k

    def fitting_gpus(self, i: int, task: TaskView) -> list[int]:
        """Device indices of node ``i`` with at least ``task.gpu_milli`` free, in index order."""
        d = task.gpu_milli
        g = self.gpus[i]
        if self.type_ok(i, task):
            return [j for j, x in enumerate(g) if x >= d]
        return [j for j in self.usable(i, task) if g[j] >= d]

    def whole_gpus(self, i: int, task: TaskView) -> tuple[int, ...]:
        """The lowest-numbered ``task.num_gpu`` fully free devices (``AllocateExclusiveGpuId``)."""
        return tuple(self.fitting_gpus(i, task)[: task.num_gpu])

    def best_fit_gpu(self, i: int, task: TaskView) -> int:
        """Least-free device that fits, lowest index on ties (``allocateGpuIdBasedOnBestFit``)."""
        g = self.gpus[i]
        best = -1
        for j in self.fitting_gpus(i, task):
            if best < 0 or g[j] < g[best]:
                best = j
        return best


class TracePolicy(Protocol):
    """What :class:`LazySelector` needs from a policy."""

    name: str

    def key(self, task: TaskView) -> tuple:
        """Cache key: tasks with equal keys must get equal scores on equal node states."""
        ...

    def score(self, table: NodeTable, i: int, task: TaskView) -> int | None:
        """Integer score of node ``i`` (higher wins), None when the task does not fit."""
        ...

    def choose_gpus(self, table: NodeTable, i: int, task: TaskView) -> tuple[int, ...]:
        """Device indices on node ``i`` for the task (empty for CPU-only tasks)."""
        ...

    # Optional: ``prepare(table)``, called before each selection. A policy whose scores also
    # depend on cluster-wide figures updates them there and calls ``table.touch(i)`` for every
    # node whose score that changed (see FragGuardPolicy.prepare).


class LazySelector:
    """Exact ``argmax score, ties -> lowest rank`` over a :class:`NodeTable`, incrementally.

    Per task key it keeps a heap of ``(-score, rank, i, version)``; see the module docstring.
    A heap is rebuilt from scratch when more nodes changed than the table holds, or when it has
    grown past four times the node count.
    """

    __slots__ = ("table", "policy", "_heaps", "_pos", "evaluations")

    def __init__(self, table: NodeTable, policy: TracePolicy) -> None:
        self.table = table
        self.policy = policy
        self._heaps: dict[tuple, list] = {}
        self._pos: dict[tuple, int] = {}
        #: number of score calls so far (for benchmarks).
        self.evaluations = 0

    def select(self, task: TaskView) -> tuple[int, int] | None:
        """(node index, score) of the best feasible node for ``task``, or None."""
        table = self.table
        policy = self.policy
        prepare = getattr(policy, "prepare", None)
        if prepare is not None:
            prepare(table)
        key = policy.key(task)
        journal = table.journal
        heap = self._heaps.get(key)
        ver = table.ver
        rank = table.rank
        score = policy.score
        n = len(ver)
        if heap is None or len(journal) - self._pos[key] > n or len(heap) > 4 * n + 64:
            heap = []
            for i in range(n):
                s = score(table, i, task)
                if s is not None:
                    heap.append((-s, rank[i], i, ver[i]))
            self.evaluations += n
            heapify(heap)
            self._heaps[key] = heap
        else:
            changed = set(journal[self._pos[key] :])
            self.evaluations += len(changed)
            for i in changed:
                s = score(table, i, task)
                if s is not None:
                    heappush(heap, (-s, rank[i], i, ver[i]))
        self._pos[key] = len(journal)
        mem = table.mem
        need = task.memory_mib
        skipped = []
        found = None
        while heap:
            top = heap[0]
            i = top[2]
            if ver[i] != top[3]:
                heappop(heap)
                continue
            if mem[i] < need:  # feasible for the key, not for this task's memory
                skipped.append(heappop(heap))
                continue
            found = (i, -top[0])
            break
        for e in skipped:
            heappush(heap, e)
        return found

    def reset(self) -> None:
        """Forget every heap (call after changing scores globally, e.g. a new workload)."""
        self._heaps.clear()
        self._pos.clear()
