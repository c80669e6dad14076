"""Incremental node selection for the trace-shaped placement policies (FGD, BestFit, ...).

The kube-scheduler shape (Filter + Score on every node for every pod) costs a Python call or
more per node; at 1,213 nodes that is above a millisecond per pod. The policies of ``frag.py``
(and the lab's ``lab/baselines.py``) score a node from its own state only, and only one node
changes per placement, so this module keeps:

- :class:`NodeTable`: a compact mirror of the snapshot (free CPU/memory, free milli per GPU,
  models), refreshed only for nodes reported changed (a journal of node indices);
- :class:`LazySelector`: per *task key* (the request fields a score depends on) a heap of the
  nodes by (score descending, tie rank). Before answering a key it scores only the nodes that
  changed since that key was last answered; entries that no longer hold are dropped when they
  reach the top. The answer is exactly ``argmax score, ties -> lowest tie rank`` over the
  feasible nodes, the same as a full scan.

A policy (:class:`TracePolicy`) supplies ``key(task)``, ``score(table, i, task) -> int | None``
(None = infeasible) and ``choose_gpus(table, i, task)``. Scores must depend only on the node's
mirrored state and the task (and on cluster-wide figures a policy refreshes in its optional
``prepare(table)``, touching the nodes whose scores they change), and must not depend on the
task's host memory: the key leaves
memory out and the selector skips (without dropping) nodes short of memory when it reads a
heap, so a score's feasibility test is :meth:`NodeTable.fits_but_memory`.

Score memo (opt-in, ``policy.state_scored = True``): many nodes share a state (same models,
same free CPU, same free GPU shares), and a node often returns to a state seen before, so the
selector memoises ``score`` per task key on :attr:`NodeTable.state` (see there). Valid only
for a policy whose score is a function of ``state[i]`` and ``key(task)``: not of the node's
name, rank, memory, GpuClustering ``tags``, randomness or anything that changes over time,
except figures the policy versions in ``score_epoch`` (the memo is dropped when it moves).

Tie rule: ``rank[i]`` is the node's position in name order, or in a seeded random permutation of
the name order (the FGD simulator prefixes node names with a seeded ``rand.Perm`` and breaks
ties on the smallest name, fgd.md §2 "Scheduler").
"""

from __future__ import annotations

import random
from collections.abc import Collection
from dataclasses import dataclass
from heapq import heapify, heappop, heappush
from typing import Protocol, runtime_checkable

from scheduling.placement.fragmentation import GPU_MILLI, device_free_milli
from scheduling.placement.types import ClusterSnapshot, NodeInfo, PodRequest

__all__ = [
    "TaskView",
    "NodeTable",
    "LazySelector",
    "PickingPolicy",
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
    random.Random(seed).shuffle(perm)  # noqa: S311 - reproducible tie order, not security
    return perm


class NodeTable:
    """Mirror of a snapshot's nodes in the compact form the trace policies read.

    Per node index ``i`` (nodes in name order): ``cpu[i]``, ``mem[i]`` free host resources,
    ``gpus[i]`` free milli per device (list, device order), ``types[i]`` device models,
    ``model[i]`` the single model or None when mixed, ``vendors[i]``, ``vendor[i]`` the single
    vendor when every device has model ``model[i]`` and one vendor (else None), ``tags[i]`` a
    Counter of GPU task tags placed there (GpuClustering),
    ``rank[i]`` the tie rank.

    ``state[i]`` is the number of the node's *state*, everything a state-scored policy may
    read (see the module docstring): ``(shape, cpu[i], free milli)`` where ``shape`` numbers
    the node's (models, vendors) pair, and the free milli are sorted ascending (``sg[i]``) when
    ``vendor[i]`` is set (devices interchangeable: only the multiset matters) and in device
    order otherwise. Equal numbers mean equal states, so such a policy gives nodes with equal
    ``state`` equal scores. States are numbered in order of first sight; once more than
    ``state_limit`` are numbered the numbering restarts (current nodes renumbered) and
    ``state_epoch`` grows, which tells memo holders to drop what they keyed on the old numbers.
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
        "vendor",
        "state",
        "state_epoch",
        "state_limit",
        "_state_ids",
        "_shapes",
        "_shape",
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

    def __init__(
        self, snapshot: ClusterSnapshot, seed: int | None = None, state_limit: int = 200_000
    ) -> None:
        self.names = sorted(snapshot.nodes)
        self.index = {n: i for i, n in enumerate(self.names)}
        n = len(self.names)
        self.cpu = [0] * n
        self.mem = [0] * n
        self.gpus: list[list[int]] = [[] for _ in range(n)]
        self.types: list[tuple[str, ...]] = [() for _ in range(n)]
        self.model: list[str | None] = [None] * n
        self.vendors: list[tuple[str, ...]] = [() for _ in range(n)]
        self.vendor: list[str | None] = [None] * n
        self.state = [-1] * n
        self.state_epoch = 0
        self.state_limit = state_limit
        #: state tuple -> its number (``state``); (models, vendors) -> shape number.
        self._state_ids: dict[tuple, int] = {}
        self._shapes: dict[tuple, int] = {}
        self._shape = [0] * n
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

    def _load(self, i: int, node: NodeInfo) -> None:
        self._count_free(i, -1)
        if not node.schedulable or node.error or node.unmatched_bookings():
            self.cpu[i] = -1
            self.mem[i] = -1
        else:
            self.cpu[i] = node.cpu_milli - node.used_cpu_milli
            self.mem[i] = node.memory_mib - node.used_memory_mib
        devices = node.devices
        g = [device_free_milli(d) for d in devices]
        self.gpus[i] = g
        sg = tuple(sorted(g))
        self.sg[i] = sg
        self.tot[i] = sum(g)
        types = tuple([d.type for d in devices])
        vendors = tuple([d.vendor for d in devices])
        if types != self.types[i] or vendors != self.vendors[i] or self.state[i] < 0:
            self.types[i] = types
            self.vendors[i] = vendors
            model = types[0] if types and all(t == types[0] for t in types) else None
            self.model[i] = model
            one = model is not None and all(v == vendors[0] for v in vendors)
            self.vendor[i] = vendors[0] if one else None
            self._shape[i] = self._shapes.setdefault((types, vendors), len(self._shapes))
        self.state[i] = self._state_id(i)
        self._count_free(i, +1)

    def _count_free(self, i: int, sign: int) -> None:
        """Add (sign +1) or remove (-1) node ``i``'s free GPU milli in the per-model sums."""
        tot = self.tot[i]
        if self.cpu[i] < 0 or not tot:
            return
        fm = self.free_by_model
        model = self.model[i]
        if model is not None:
            fm[model] = fm.get(model, 0) + sign * tot
        else:
            for x, t in zip(self.gpus[i], self.types[i], strict=False):
                fm[t] = fm.get(t, 0) + sign * x
        self.free_total += sign * tot

    def _state_key(self, i: int) -> tuple:
        free = self.sg[i] if self.vendor[i] is not None else tuple(self.gpus[i])
        return (self._shape[i], self.cpu[i], free)

    def _state_id(self, i: int) -> int:
        """The number of node ``i``'s current state (see the class docstring)."""
        ids = self._state_ids
        key = self._state_key(i)
        sid = ids.get(key)
        if sid is None:
            if len(ids) >= self.state_limit:  # restart the numbering (bounded memory)
                ids.clear()
                self.state_epoch += 1
                for j, old in enumerate(self.state):
                    if old >= 0 and j != i:
                        self.state[j] = ids.setdefault(self._state_key(j), len(ids))
            sid = ids.setdefault(key, len(ids))
        return sid

    def refresh(self, snapshot: ClusterSnapshot, name: str) -> int:
        """Re-read node ``name`` from ``snapshot`` and journal it; its index."""
        i = self.index[name]
        self._load(i, snapshot.nodes[name])
        self.journal.append(i)
        return i

    def touch(self, i: int) -> None:
        """Mark node ``i`` changed without a new state (its scores changed for another reason),
        so every selector re-scores it."""
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
        v = self.vendor[i]  # None: mixed models or vendors, or no device
        if v is None or v != task.vendor:
            return False
        return not task.gpu_types or self.model[i] in task.gpu_types

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
        """Integer score of node ``i`` (higher wins); None exactly when
        :meth:`NodeTable.fits_but_memory` is False (the selector may skip such nodes itself)."""
        ...

    def choose_gpus(self, table: NodeTable, i: int, task: TaskView) -> tuple[int, ...]:
        """Device indices on node ``i`` for the task (empty for CPU-only tasks)."""
        ...

    # Optional: ``prepare(table)``, called before each selection. A policy whose scores also
    # depend on cluster-wide figures updates them there and calls ``table.touch(i)`` for every
    # node whose score that changed (see FragGuardPolicy.prepare).


@runtime_checkable
class PickingPolicy(Protocol):
    """A policy that chooses the node itself instead of scoring nodes (the lab's Random): no
    :class:`LazySelector`, score 0 in the general Filter/Score loop."""

    name: str

    def pick(self, table: NodeTable, task: TaskView) -> int | None:
        """Index of the chosen node for the task, or None when no node fits."""
        ...

    def choose_gpus(self, table: NodeTable, i: int, task: TaskView) -> tuple[int, ...]:
        """Device indices on node ``i`` for the task (empty for CPU-only tasks)."""
        ...


class LazySelector:
    """Exact ``argmax score, ties -> lowest rank`` over a :class:`NodeTable`, incrementally.

    Per task key it keeps a min-heap of integer entries ``rank[i] - score * n`` (``n`` nodes;
    scores are integers and ranks a permutation of ``0..n-1``, so the smallest entry is the
    highest score, ties to the lowest rank, and its node is the one of rank ``entry % n``),
    ``cur[i]`` the entry node ``i`` got when last scored for the key (None: infeasible), and
    the journal position it has caught up to. Before answering, the nodes journalled since
    are re-scored; an entry is live while it equals ``cur`` of its node, older ones are
    dropped when they reach the top. A heap is rebuilt from scratch when more than half of
    the nodes changed since the key was last answered, or when it has grown past four times
    the node count.

    When the policy sets ``state_scored = True`` the selector also memoises ``score`` per task
    key on the state number ``table.state[i]`` (module docstring: valid only when the score
    is a function of that state and the key). The memo is dropped whole once it holds more
    than ``memo_limit`` entries, the table renumbers its states (``state_epoch``) or the
    policy's ``score_epoch`` moves (a policy whose scores also read cluster-wide figures bumps
    it when they change, in ``prepare``), so memory stays bounded; answers never depend on it.
    """

    __slots__ = (
        "table",
        "policy",
        "_keys",
        "_by_rank",
        "_memo",
        "_memo_size",
        "_memo_epoch",
        "memo_limit",
        "evaluations",
    )

    def __init__(self, table: NodeTable, policy: TracePolicy, memo_limit: int = 500_000) -> None:
        self.table = table
        self.policy = policy
        #: task key -> [heap, cur, journal position].
        self._keys: dict[tuple, list] = {}
        #: node index of each tie rank.
        self._by_rank = [0] * len(table.rank)
        for i, r in enumerate(table.rank):
            self._by_rank[r] = i
        #: task key -> {node state number -> score or None}; None when the policy does not
        #: opt in.
        self._memo: dict[tuple, dict] | None = (
            {} if getattr(policy, "state_scored", False) else None
        )
        self._memo_size = 0
        self._memo_epoch = (table.state_epoch, getattr(policy, "score_epoch", 0))
        self.memo_limit = memo_limit
        #: number of nodes (re)scored so far, memo hits included (for benchmarks).
        self.evaluations = 0

    def _rescore(
        self,
        nodes: Collection[int],
        task: TaskView,
        key: tuple,
        cur: list[int | None],
        fresh: bool = False,
    ) -> list[int]:
        """Score ``nodes`` for ``task``: set ``cur[i]`` and return the new heap entries
        (``fresh``: ``cur`` is all None already). Nodes :meth:`_feasible` leaves out are marked
        infeasible without calling ``score`` (which would answer None)."""
        table = self.table
        fit = self._feasible(nodes, task)
        if not fresh and len(fit) < len(nodes):
            for i in nodes:
                cur[i] = None
        rank = table.rank
        n = len(rank)
        score = self.policy.score
        out = []
        memo_all = self._memo
        if memo_all is None:
            for i in fit:
                s = score(table, i, task)
                if s is None:
                    cur[i] = None
                else:
                    cur[i] = e = rank[i] - s * n
                    out.append(e)
            return out
        memo = self._key_memo(memo_all, key)
        state = table.state
        get = memo.get
        added = len(memo)
        for i in fit:
            st = state[i]
            s = get(st, memo)  # the memo dict itself marks "not seen" (None is a score)
            if s is memo:
                s = memo[st] = score(table, i, task)
            if s is None:
                cur[i] = None
            else:
                cur[i] = e = rank[i] - s * n
                out.append(e)
        self._memo_size += len(memo) - added
        return out

    def _feasible(self, nodes: Collection[int], task: TaskView) -> list[int]:
        """The nodes of ``nodes`` that may fit ``task``: those with less free CPU than the task
        asks, or fewer than ``num_gpu`` devices with ``gpu_milli`` free, fail
        :meth:`NodeTable.fits_but_memory` whatever their models and are left out."""
        table = self.table
        cpu = table.cpu
        sg = table.sg
        need_cpu = task.cpu_milli
        k = task.num_gpu
        d = task.gpu_milli
        if k:
            return [i for i in nodes if cpu[i] >= need_cpu and len(sg[i]) >= k and sg[i][-k] >= d]
        return [i for i in nodes if cpu[i] >= need_cpu]

    def _key_memo(self, memo_all: dict[tuple, dict], key: tuple) -> dict:
        """The score memo of task ``key`` (``{node state number: score or None}``), after
        dropping every key's memo when it holds more than ``memo_limit`` entries or the table's
        ``state_epoch`` or the policy's ``score_epoch`` moved."""
        epoch = (self.table.state_epoch, getattr(self.policy, "score_epoch", 0))
        if self._memo_size > self.memo_limit or self._memo_epoch != epoch:
            memo_all.clear()
            self._memo_size = 0
            self._memo_epoch = epoch
        memo = memo_all.get(key)
        if memo is None:
            memo = memo_all[key] = {}
        return memo

    def select(self, task: TaskView) -> tuple[int, int] | None:
        """(node index, score) of the best feasible node for ``task``, or None."""
        table = self.table
        policy = self.policy
        prepare = getattr(policy, "prepare", None)
        if prepare is not None:
            prepare(table)
        key = policy.key(task)
        journal = table.journal
        n = len(table.rank)
        entry = self._keys.get(key)
        changed: set[int] | None = None
        if entry is not None and len(entry[0]) <= 4 * n + 64:
            changed = set(journal[entry[2] :])
            if 2 * len(changed) > n:
                changed = None
        heap: list[int]
        cur: list[int | None]
        if entry is None or changed is None:  # no heap for the key yet, or one to rebuild
            cur = [None] * n
            heap = self._rescore(range(n), task, key, cur, fresh=True)
            heapify(heap)
            self._keys[key] = entry = [heap, cur, 0]
            self.evaluations += n
        else:
            heap, cur = entry[0], entry[1]
            for e in self._rescore(changed, task, key, cur):
                heappush(heap, e)
            self.evaluations += len(changed)
        entry[2] = len(journal)
        by_rank = self._by_rank
        mem = table.mem
        need = task.memory_mib
        skipped: list[int] = []
        found: tuple[int, int] | None = None
        while heap:
            e = heap[0]
            i = by_rank[e % n]
            if cur[i] != e:  # the node was re-scored (or became infeasible) since
                heappop(heap)
                continue
            if mem[i] < need:  # feasible for the key, not for this task's memory
                skipped.append(heappop(heap))
                continue
            found = (i, -(e // n))
            break
        for e in skipped:
            heappush(heap, e)
        return found
