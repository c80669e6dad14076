"""The fragmentation-aware policies (FragGuard, FGD) as placement-core plugins.

Each policy object (``frag.py``, or any ``frag_engine.TracePolicy`` such as the lab's
baselines, ``placement/lab/``) is wrapped in a :class:`TracePolicyPlugin` whose ``name`` is the
policy name. The plugin offers:

- ``select(state, snapshot, pod)``: the *fast path* (``runner`` module docstring): for a
  trace-shaped pod (``frag_engine.task_view``) it returns a :class:`FastSelection` with the node,
  the device grants and the score, computed incrementally by a :class:`LazySelector` over a
  :class:`NodeTable` mirror of the snapshot. Returns None for other pods (the runner then runs
  its normal Filter/Score loop).
- ``score(state, pod, node, fit)``: the policy's node score for the general loop (ScorePlugin).
- ``decide(snapshot, request)``: a full :class:`Decision` for a one-pod request from the fast
  path without the runner (tests; the benchmark goes through ``place()``).
- ``sync(snapshot, tags)``: GpuClustering tags of pods booked/released. Usage changes need no
  call: the plugin re-reads the nodes named in the snapshot's change journal
  (``ClusterSnapshot.changed``, written by ``reserve``/``unreserve``/``touch``).

Two optional policy attributes change how the plugin drives a policy: ``uses_tags = True``
(its scores read ``NodeTable.tags``, kept current through ``sync``) and a ``pick(table, task)``
method (the policy chooses the node itself: no :class:`LazySelector`, score 0 in the general
loop).

Registry names of the live policies (:data:`FRAG_POLICY_NAMES`, recommended first):
"FragGuard" (ours), "FGD".
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from itertools import repeat
from operator import floordiv, sub
from typing import Any

from scheduling.placement.fragmentation import GPU_MILLI, TargetWorkload
from scheduling.placement.plugins.frag import FgdPolicy, FragGuardPolicy
from scheduling.placement.plugins.frag_engine import (
    LazySelector,
    NodeTable,
    PickingPolicy,
    TaskView,
    TracePolicy,
    task_view,
)
from scheduling.placement.plugins.frag_within import FIT_COUNT_CAP, fit_count, select_among
from scheduling.placement.types import (
    ClusterSnapshot,
    ContainerAssignment,
    Decision,
    DeviceGrant,
    NodeInfo,
    PlacementRequest,
    PodAssignment,
    PodRequest,
)

__all__ = [
    "FRAG_POLICY_NAMES",
    "FastSelection",
    "FitCounter",
    "TracePolicyPlugin",
    "make_frag_policy",
    "register_frag_policies",
]

#: The live fragmentation-aware policies, our recommended policy first.
FRAG_POLICY_NAMES = ("FragGuard", "FGD")

#: Most grants a plugin keeps for reuse (the cache is emptied when it grows past this).
_GRANT_CACHE_LIMIT = 65536


def make_frag_policy(name: str, workload: TargetWorkload | None) -> FgdPolicy:
    """Build the policy ``name`` (one of :data:`FRAG_POLICY_NAMES`) for ``workload``.

    Raises:
        KeyError: unknown name. ValueError: no workload.
    """
    if name not in FRAG_POLICY_NAMES:
        raise KeyError(f"unknown policy {name!r} (known: {', '.join(FRAG_POLICY_NAMES)})")
    if workload is None:
        raise ValueError(f"policy {name!r} needs a target workload")
    return FragGuardPolicy(workload) if name == "FragGuard" else FgdPolicy(workload)


@dataclass(frozen=True, slots=True)
class FastSelection:
    """Fast-path answer for one pod.

    Attributes:
        node: chosen node name, or None when no node fits.
        containers: device grants per container (same order as the pod's containers).
        score: the policy score of the chosen node (integer, higher wins).
        reasons: when ``node`` is None, a summary ``{"*": "<n>/<total> nodes: ..."}``.
    """

    node: str | None
    containers: tuple[ContainerAssignment, ...] = ()
    score: float = 0.0
    reasons: dict[str, str] = field(default_factory=dict)


PARKED_MIRRORS = 2
"""Mirrors of other snapshots a :class:`TracePolicyPlugin` keeps besides the current one."""


class TracePolicyPlugin:
    """A trace placement policy as a core plugin (fast path + ScorePlugin).

    Args:
        name: the policy name; one of :data:`FRAG_POLICY_NAMES` unless ``policy`` is given.
        workload: target workload (FGD, FragGuard).
        tie_seed: seed of the tie order (the simulator's seeded node permutation); None = ties
            to the lowest node name.
        policy: the policy object to wrap (default: :func:`make_frag_policy` of ``name``).

    Raises:
        KeyError: no ``policy`` and ``name`` is not a live policy. ValueError: no workload.
    """

    def __init__(
        self,
        name: str,
        workload: TargetWorkload | None = None,
        tie_seed: int | None = None,
        *,
        policy: TracePolicy | PickingPolicy | None = None,
        **_: object,
    ) -> None:
        self.name = name
        self.policy: TracePolicy | PickingPolicy = (
            policy if policy is not None else make_frag_policy(name, workload)
        )
        self.tie_seed = tie_seed
        self._snap_id: int | None = None
        self._snapshot: ClusterSnapshot | None = None
        self._journal_pos = 0
        self.table: NodeTable | None = None
        self.selector: LazySelector | _PickingSelector | None = None
        #: whether the policy's scores read ``NodeTable.tags`` (GpuClustering).
        self.uses_tags = bool(getattr(self.policy, "uses_tags", False))
        #: the policy when it scores nodes; None when it picks them itself (Random).
        self._scorer = None if isinstance(self.policy, PickingPolicy) else self.policy
        #: frozen grants reused across pods, keyed on every value they are made of.
        self._grants: dict[tuple, DeviceGrant] = {}
        #: topology capacity: per (mirror, state numbering, task key without memory), the
        #: count of copies per node state number (``fit_counter``)
        self._fit_memos: dict[tuple, dict[int, int]] = {}
        #: mirrors of other snapshots, most recent last: ``(snapshot, table, selector,
        #: journal position)`` (an admission cycle alternates between its cluster and the
        #: empty copy it estimates on; each keeps its mirror instead of rebuilding it).
        self._parked: list[tuple[ClusterSnapshot, NodeTable, LazySelector | _PickingSelector, int]]
        self._parked = []

    # -- mirror upkeep -------------------------------------------------------------------------

    def _bind(self, snapshot: ClusterSnapshot) -> NodeTable:
        """The node table mirroring ``snapshot`` (see :meth:`_mirror`)."""
        return self._mirror(snapshot)[0]

    def _mirror(
        self, snapshot: ClusterSnapshot
    ) -> tuple[NodeTable, LazySelector | _PickingSelector]:
        """The node table mirroring ``snapshot`` and its selector: rebuilt for another
        snapshot, a changed node set or a journalled node the table does not know; otherwise
        the nodes journalled since the last call are refreshed."""
        if self._snapshot is not snapshot:
            self._switch(snapshot)
        table, selector = self.table, self.selector
        journal = snapshot.changed
        if (
            table is None
            or selector is None
            or self._snapshot is not snapshot
            or len(table.names) != len(snapshot.nodes)
            or any(n not in table.index for n in journal[self._journal_pos :])
        ):
            table = NodeTable(snapshot, self.tie_seed)
            self.table = table
            self._snapshot = snapshot
            selector = self._new_selector(table)
            self.selector = selector
            self._journal_pos = len(journal)
            return table, selector
        for name in dict.fromkeys(journal[self._journal_pos :]):
            table.refresh(snapshot, name)
        self._journal_pos = len(journal)
        return table, selector

    def _switch(self, snapshot: ClusterSnapshot) -> None:
        """Park the current mirror and take ``snapshot``'s parked one, if any (at most
        ``PARKED_MIRRORS`` are kept). Not for policies that read tags: :meth:`sync` updates
        only the current mirror's tags."""
        if self.uses_tags:
            return
        if self._snapshot is not None and self.table is not None and self.selector is not None:
            self._parked.append((self._snapshot, self.table, self.selector, self._journal_pos))
        found = next((i for i, p in enumerate(self._parked) if p[0] is snapshot), None)
        if found is None:
            self._snapshot, self.table, self.selector = None, None, None
        else:
            self._snapshot, self.table, self.selector, self._journal_pos = self._parked.pop(found)
        del self._parked[: max(0, len(self._parked) - PARKED_MIRRORS)]

    def _new_selector(self, table: NodeTable) -> LazySelector | _PickingSelector:
        """A :class:`LazySelector` for a scoring policy, the policy itself for a picking one."""
        policy = self.policy
        if isinstance(policy, PickingPolicy):
            return _PickingSelector(table, policy)
        return LazySelector(table, policy)

    def sync(self, snapshot: ClusterSnapshot, tags: Iterable[tuple[str, str, int]]) -> None:
        """Record GpuClustering tags of pods booked/released on ``snapshot``.

        Args:
            snapshot: the snapshot the plugin last worked on (others are ignored).
            tags: ``(node, GpuClustering tag, +1/-1)``; a tag change re-scores the node only
                when the policy reads tags.
        """
        table = self.table
        if table is None or self._snapshot is not snapshot:
            return
        for node, tag, delta in tags:
            if tag:
                i = table.index[node]
                t = table.tags[i]
                t[tag] = t.get(tag, 0) + delta
                if t[tag] <= 0:
                    del t[tag]
                if self.uses_tags:
                    table.touch(i)  # a tag change changes GpuClustering scores there

    # -- fast path -----------------------------------------------------------------------------

    def select(
        self, state: object, snapshot: ClusterSnapshot, pod: PodRequest
    ) -> FastSelection | None:
        """The policy's choice for a trace-shaped pod (None for other pods).

        The answer skips the profile's Filter plugins (the runner's fast path, module doc of
        :mod:`scheduling.placement.runner`): the :class:`NodeTable` mirror stands in for them
        (registration errors, cordons, CPU, memory, device health, capacity and models), and a
        pod with a constraint the mirror does not model gets None (``task_view``), so the
        Filter/Score loop decides it."""
        task = task_view(pod)
        if task is None:
            return None
        table, selector = self._mirror(snapshot)
        hit = selector.select(task)
        if hit is None:
            return FastSelection(
                None, reasons={"*": f"0/{len(table.names)} nodes fit {_describe(task)}"}
            )
        i, score = hit
        name = table.names[i]
        devs = self.policy.choose_gpus(table, i, task)
        if len(self._grants) > _GRANT_CACHE_LIMIT:
            self._grants.clear()
        return FastSelection(
            name, _grants(snapshot.nodes[name], pod, task, devs, self._grants), float(score)
        )

    def select_within(
        self, state: object, snapshot: ClusterSnapshot, pod: PodRequest, names: Iterable[str]
    ) -> FastSelection | None:
        """:meth:`select` among the nodes ``names`` only (a topology domain): the policy's
        choice of node and devices there, ties as :meth:`select`. None for pods that are not
        trace-shaped and for policies that pick nodes themselves (the runner then filters and
        scores those nodes)."""
        task = task_view(pod)
        if task is None:
            return None
        table, selector = self._mirror(snapshot)
        if not isinstance(selector, LazySelector):
            return None
        index = table.index
        hit = select_among(selector, task, [index[n] for n in names])
        if hit is None:
            return FastSelection(
                None, reasons={"*": f"no node of the domain fits {_describe(task)}"}
            )
        i, score = hit
        name = table.names[i]
        devs = self.policy.choose_gpus(table, i, task)
        return FastSelection(
            name, _grants(snapshot.nodes[name], pod, task, devs, self._grants), float(score)
        )

    def fit_counter(self, snapshot: ClusterSnapshot, pod: PodRequest) -> FitCounter | None:
        """For topology capacity (``placement/topology_index.py``): counts how many copies
        of ``pod`` fit on a node, one after the other, by the policy's own fit rule
        (:func:`~scheduling.placement.plugins.frag_within.fit_count` on the mirror refreshed
        now). None for pods that are not trace-shaped."""
        task = task_view(pod)
        if task is None:
            return None
        table = self._bind(snapshot)
        no_mem = replace(task, memory_mib=0)
        key = (id(table), table.state_epoch, no_mem.key)
        memos = self._fit_memos
        if sum(len(m) for m in memos.values()) > _GRANT_CACHE_LIMIT:
            memos.clear()
        return FitCounter(table, task, memos.setdefault(key, {}))

    def decide(self, snapshot: ClusterSnapshot, request: PlacementRequest) -> Decision:
        """A :class:`Decision` for a one-pod, trace-shaped request from the fast path.

        Raises:
            ValueError: the request has more than one pod or a pod that is not trace-shaped.
        """
        if len(request.pods) != 1:
            raise ValueError("the trace fast path places one pod per request")
        pod = request.pods[0]
        sel = self.select(None, snapshot, pod)
        if sel is None:
            raise ValueError(f"pod {pod.name!r} is not trace-shaped")
        if sel.node is None:
            return Decision(False, reasons=sel.reasons, unplaced=(pod.name,))
        pa = PodAssignment(
            pod.name, sel.node, sel.containers, pod.cpu_milli, pod.memory_mib, sel.score
        )
        return Decision(True, pods=(pa,), node_scores={sel.node: sel.score})

    # -- general loop (ScorePlugin) --------------------------------------------------------------

    def score(self, state: object, pod: PodRequest, node: NodeInfo, fit: object) -> float:
        """The policy's score of ``node`` for ``pod`` (0 for pods that are not trace-shaped)."""
        task = task_view(pod)
        scorer = self._scorer
        if task is None or scorer is None:
            return 0.0
        one = NodeTable(ClusterSnapshot({node.name: node}))
        s = scorer.score(one, 0, task)
        return float(s) if s is not None else 0.0


class FitCounter:
    """Copies of one trace task that fit per node (``TracePolicyPlugin.fit_counter``):
    ``counter(name, node)`` for one node, :meth:`many` for a list. The count without host
    memory is memoised per node state number (``NodeTable.state``: models, free CPU, free
    milli), host memory is applied on top."""

    __slots__ = ("table", "task", "no_mem", "memo", "direct")

    def __init__(self, table: NodeTable, task: TaskView, memo: dict[int, int]) -> None:
        self.table = table
        self.task = task
        self.no_mem = replace(task, memory_mib=0)
        self.memo = memo
        #: new states counted together (:meth:`_direct`) on nodes of one model of its vendor
        self.direct = bool(
            task.num_gpu
            and task.cpu_milli
            and (task.num_gpu > 1 or task.gpu_milli >= GPU_MILLI)
            and not task.gpu_types
        )

    def __call__(self, name: str, _node: NodeInfo | None = None) -> int:
        return self.many([name])[0]

    def many(self, names: Sequence[str]) -> list[int]:
        """The counts of the nodes ``names``, in order: each new state number counted once
        (:meth:`_counts`, all new states of the call together), the others read from the
        memo, host memory applied on top."""
        table = self.table
        idx = list(map(table.index.__getitem__, names))
        states = list(map(table.state.__getitem__, idx))
        memo = self.memo
        missing = set(states).difference(memo)
        if missing:  # one node of each new state counts for all of them
            some = dict(zip(states, idx, strict=True))
            new = [some[st] for st in missing]
            memo.update(zip(missing, self._counts(new), strict=True))
        out = list(map(memo.__getitem__, states))
        need = self.task.memory_mib
        if need:  # min(count, free memory // need), at least 0
            room = map(floordiv, map(table.mem.__getitem__, idx), repeat(need))
            out = list(map(min, out, room))
            if out and min(out) < 0:
                out = [max(n, 0) for n in out]
        return out

    def _counts(self, idx: list[int]) -> list[int]:
        """The counts without host memory of the nodes ``idx`` (:meth:`_fresh` each, or
        :meth:`_direct` for a whole-GPU task on the nodes of one model of its vendor)."""
        if not self.direct:
            return list(map(self._fresh, idx))
        vendor = self.task.vendor
        vendors = list(map(self.table.vendor.__getitem__, idx))
        out = self._direct(idx)
        if vendors.count(vendor) != len(vendors):  # other nodes: the general count
            for j, v in enumerate(vendors):
                if v != vendor:
                    out[j] = self._fresh(idx[j])
        return out

    def _direct(self, idx: list[int]) -> list[int]:
        """``min(free CPU // cpu, fully free devices // k, cap)`` (at least 0) of the nodes
        ``idx``: :meth:`_fresh`'s reading for nodes of one model of the task's vendor,
        computed for all of them at once."""
        table, task = self.table, self.task
        sgs = list(map(table.sg.__getitem__, idx))
        full = map(sub, map(len, sgs), map(bisect_left, sgs, repeat(task.gpu_milli)))
        cpu = map(floordiv, map(table.cpu.__getitem__, idx), repeat(task.cpu_milli))
        out = list(map(min, cpu, map(floordiv, full, repeat(task.num_gpu)), repeat(FIT_COUNT_CAP)))
        if out and min(out) < 0:
            out = [max(n, 0) for n in out]
        return out

    def _fresh(self, i: int) -> int:
        """Node ``i``'s count without host memory (:func:`fit_count`); for a whole-GPU task
        with a CPU request on a node of one model the vendor and types accept, read as
        ``min(free CPU // cpu, fully free devices // k)`` from the sorted free milli (what
        :func:`fit_count` computes there)."""
        table, task = self.table, self.no_mem
        k, d, c = task.num_gpu, task.gpu_milli, task.cpu_milli
        cpu = table.cpu[i]
        if (
            k
            and c
            and (k > 1 or d >= GPU_MILLI)
            and cpu >= 0
            and table.vendor[i] == task.vendor
            and (not task.gpu_types or table.model[i] in task.gpu_types)
        ):
            g = table.sg[i]
            return min(cpu // c, (len(g) - bisect_left(g, d)) // k, FIT_COUNT_CAP)
        return fit_count(table, i, task)


class _PickingSelector:
    """The selector of a policy that picks nodes itself (score 0), shaped as
    :meth:`LazySelector.select`."""

    __slots__ = ("table", "policy")

    def __init__(self, table: NodeTable, policy: PickingPolicy) -> None:
        self.table = table
        self.policy = policy

    def select(self, task: TaskView) -> tuple[int, int] | None:
        """(node index, 0) of the policy's pick, or None when it finds no node."""
        i = self.policy.pick(self.table, task)
        return None if i is None else (i, 0)


def _describe(task: TaskView) -> str:
    if not task.num_gpu:
        return f"cpu {task.cpu_milli}m, memory {task.memory_mib}Mi"
    return (
        f"cpu {task.cpu_milli}m, memory {task.memory_mib}Mi, {task.num_gpu} x {task.gpu_milli} "
        f"milli-GPU{' of ' + '|'.join(task.gpu_types) if task.gpu_types else ''}"
    )


def _grants(
    node: NodeInfo,
    pod: PodRequest,
    task: TaskView,
    devs: tuple[int, ...],
    cache: dict[tuple, DeviceGrant] | None = None,
) -> tuple[ContainerAssignment, ...]:
    """Per container, the grants of devices ``devs`` of ``node`` (``task.gpu_milli`` each).

    ``cache`` (optional) maps ``(uuid, vendor, memory_mib, cores_percent, index, model)`` to
    an equal :class:`DeviceGrant` made before (grants are frozen, so sharing one is safe).
    """
    pct = task.gpu_milli // 10
    grants_of_pod = []
    for j in devs:
        d = node.devices[j]
        key = (d.uuid, d.vendor, d.memory_mib, pct, d.index, d.type)
        g = cache.get(key) if cache is not None else None
        if g is None:
            g = DeviceGrant(
                uuid=d.uuid,
                type=d.vendor,
                memory_mib=d.memory_mib * pct // 100,
                cores_percent=pct,
                vendor=d.vendor,
                index=d.index,
                model=d.type,
            )
            if cache is not None:
                cache[key] = g
        grants_of_pod.append(g)
    out = []
    for c in pod.containers:
        grants: tuple[DeviceGrant, ...] = ()
        if c.devices:
            grants = tuple(grants_of_pod)
        out.append(ContainerAssignment(c.name, grants, c.init))
    return tuple(out)


def register_frag_policies(registry: Any) -> None:
    """Register FragGuard and FGD (:data:`FRAG_POLICY_NAMES`) in a core ``Registry``.

    Factories take ``workload`` and ``tie_seed`` keyword args.
    """
    for name in FRAG_POLICY_NAMES:
        registry.register(name, lambda _n=name, **args: TracePolicyPlugin(_n, **args))
