"""Incremental node selection for the general Filter/Score loop (every request shape).

``runner.schedule_pod`` runs PreFilter, then Filter and Score on every node, then keeps the best
node (highest or lowest weighted score, ties to the first node in the node order). Between two
pods of the same *request shape* (``request_shape``: everything of a pod a node-local plugin may
read) only the nodes that changed in between can answer differently, so
:class:`IncrementalNodeSelection` keeps, per snapshot and per shape:

- each node's last outcome: its :class:`NodeFit` and weighted score, or the reason of the first
  Filter that rejected it;
- a heap of the feasible nodes ordered exactly like the loop: ``(-score, position)`` when the
  highest score wins, ``(score, position)`` when the lowest does (``position``: the node's place
  in the node order, the loop's tie rule);
- how far it has read the selector's change journal.

On each call it re-evaluates (Filter + Score, the same plugin calls as the loop) only the nodes
changed since the shape last looked, pushes their new entries and drops stale ones lazily when
they reach the top. The answer is the loop's: same node, grants and score; when nothing fits,
every node's reason (the "0/N nodes fit: ..." summaries are built from them); and the scores of
all feasible nodes (``PodResult.scores``, handed out as a read-only :class:`NodeScores` view).

What counts as a change of node ``i`` (the selector's own journal of node positions):

- the snapshot's change journal :attr:`ClusterSnapshot.changed` (``reserve``/``unreserve``,
  the temporary bookings of ``place``, :meth:`ClusterSnapshot.touch`);
- a moved :attr:`NodeInfo.version` (:meth:`NodeInfo.touch` without the snapshot's journal, as
  the database snapshot builders do), read for every node on each call (one attribute read per
  node, no plugin call);
- safety net for direct edits without any touch: the node's ``usage_stamp`` (every field code
  edits in place) is compared with the one recorded when the node was last evaluated, for every
  node evaluated and for the node about to be chosen; a difference journals the node. An edit
  without touch of a node that is neither evaluated nor chosen is not seen until then (the
  contract of :class:`NodeInfo`: direct edits call ``touch``).

The node set itself (names, node objects, their order) is checked on each call; any difference
rebuilds the snapshot's state.

Which profiles it serves (decided when the :class:`~scheduling.placement.profile.Framework` is
built; otherwise ``schedule`` answers None and the runner runs the full loop):

- every PreFilter and Filter plugin declares ``node_local = True`` (its answer depends only on the
  pod, the node and the cycle state);
- every Score plugin declares ``node_local = True``, or exposes ``score_epoch`` (any comparable
  value, read after PreFilter) that changes whenever the cluster-wide figures its scores read
  change (as ``FragGuardPolicy.score_epoch`` versions its model pressures for ``LazySelector``).
  A moved epoch re-evaluates every node for the shape.

A NaN score (which the loop's ``>``/``<`` comparisons order differently from a heap) makes the
selector decline that shape for the rest of the snapshot's life.

Memory is bounded: per snapshot at most ``max_keys`` shapes (least recently used dropped), fewer
on large clusters (at most ``max_outcomes`` node outcomes per snapshot), a journal of at most 16
entries per node (shapes that fell further behind are dropped), and the states of at most
``1 + parked`` snapshots (an admission cycle alternates between its cluster and the empty copy
it estimates on; older snapshots' states are dropped).

Not thread-safe (a Framework belongs to one worker thread, as the runner's node cache does).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Mapping
from heapq import heapify, heappop, heappush
from operator import attrgetter, is_
from typing import Any

from scheduling.placement.framework import CycleState, NodeFit
from scheduling.placement.plugins.device_fit import FITS
from scheduling.placement.types import ClusterSnapshot, NodeInfo, PodRequest

__all__ = ["Choice", "IncrementalNodeSelection", "NodeScores", "request_shape", "usage_stamp"]

_version = attrgetter("version")


def usage_stamp(node: NodeInfo) -> tuple:
    """What a cached per-node result is valid for: ``NodeInfo.version`` plus every field that
    code edits in place (node CPU/memory capacity and use, cordon, error, labels,
    annotations; per device slots, memory, cores, health, cordon, MIG instance count, error,
    used counters).
    Direct edits that forget :meth:`ClusterSnapshot.touch` therefore still invalidate the
    cache; edits of device capacity, device models or topology must call ``touch``.
    """
    out: list[Any] = [
        node.version,
        node.used_cpu_milli,
        node.used_memory_mib,
        node.schedulable,
        node.error,
        node.cpu_milli,
        node.memory_mib,
        tuple(node.labels.items()),
        tuple(node.annotations.items()),
    ]
    for d in node.devices:
        out += (
            d.used_slots,
            d.used_memory_mib,
            d.used_cores_percent,
            d.healthy,
            d.cordoned,
            len(d.mig_instances),
            d.error,
            d.missing,
        )
        if d.used_counters:
            out.append(tuple(sorted(d.used_counters.items())))
    return tuple(out)


def request_shape(pod: PodRequest) -> tuple:
    """Hashable request shape: everything of the pod a node-local plugin may read (not the pod's
    or its containers' names: grants are named after the current pod's containers)."""
    return (
        tuple((c.devices, c.init) for c in pod.containers),
        pod.cpu_milli,
        pod.memory_mib,
        tuple(sorted(pod.node_selector.items())),
        pod.node_policy,
        pod.device_policy,
        pod.device_scoring_weights,
        pod.namespace,
    )


class NodeScores(Mapping[str, float]):
    """Read-only ``{node name: weighted score}`` of the feasible nodes, in node order, built on
    first use from the outcome lists of one selection (the selector never edits lists it has
    handed out: it copies them before its next change)."""

    __slots__ = ("_names", "_fits", "_vals", "_dict")

    def __init__(self, names: list[str], fits: list[NodeFit | None], vals: list[Any]) -> None:
        self._names = names
        self._fits = fits
        self._vals = vals
        self._dict: dict[str, float] | None = None

    def _built(self) -> dict[str, float]:
        d = self._dict
        if d is None:
            names, vals = self._names, self._vals
            d = {names[i]: vals[i] for i, f in enumerate(self._fits) if f is not None}
            self._dict = d
        return d

    def __getitem__(self, name: str) -> float:
        return self._built()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._built())

    def __len__(self) -> int:
        return len(self._built())

    def __repr__(self) -> str:
        return repr(self._built())


class Choice:
    """One selection: ``node`` (name) with its ``fit`` and ``score``, or ``node`` None with
    ``reasons`` (``{node name: reason}`` for every node, node order); ``scores`` of the feasible
    nodes (empty when nothing fits)."""

    __slots__ = ("node", "fit", "score", "reasons", "scores")

    def __init__(
        self,
        node: str | None,
        fit: NodeFit | None = None,
        score: float = 0.0,
        reasons: dict[str, str] | None = None,
        scores: Mapping[str, float] | None = None,
    ) -> None:
        self.node = node
        self.fit = fit
        self.score = score
        self.reasons = reasons if reasons is not None else {}
        self.scores = scores if scores is not None else {}


class _Key:
    """One request shape's outcomes on one snapshot (module docstring).

    ``fits[i]``: NodeFit of node position ``i`` (None: rejected, or never evaluated); ``vals[i]``:
    weighted score (feasible) or reason (rejected); ``cur[i]``: node ``i``'s live heap entry or
    None; ``pos``: position in the view's journal read up to; ``shared``: ``fits``/``vals`` were
    handed out in a :class:`NodeScores` (copy before changing them); ``failure``: the reasons
    answer while nothing changed since it was built."""

    __slots__ = ("fits", "vals", "cur", "heap", "pos", "epoch", "shared", "failure")

    def __init__(self, n: int, epoch: tuple) -> None:
        self.fits: list[NodeFit | None] = [None] * n
        self.vals: list[Any] = [""] * n
        self.cur: list[tuple | None] = [None] * n
        self.heap: list[tuple] = []
        self.pos = 0
        self.epoch = epoch
        self.shared = False
        self.failure: dict[str, str] | None = None

    def writable(self) -> None:
        """Copy the outcome lists if a :class:`NodeScores` still reads them."""
        if self.shared:
            self.fits = list(self.fits)
            self.vals = list(self.vals)
            self.shared = False
        self.failure = None


class _View:
    """The selector's state for one snapshot: node order, node objects, the change journal
    (node positions) and the shapes' :class:`_Key` s (least recently used first)."""

    __slots__ = (
        "snapshot",
        "names",
        "given",
        "index",
        "nodes",
        "dict_nodes",
        "versions",
        "changed_pos",
        "journal",
        "stamps",
        "keys",
        "declined",
    )

    def __init__(self, snapshot: ClusterSnapshot, names: list[str], given: list[str] | None):
        self.snapshot = snapshot
        self.names = names
        self.given = given
        self.index = {name: i for i, name in enumerate(names)}
        self.nodes = [snapshot.nodes[name] for name in names]
        self.dict_nodes = list(snapshot.nodes.values())
        self.versions = list(map(_version, self.nodes))
        self.changed_pos = len(snapshot.changed)
        self.journal: list[int] = []
        self.stamps: list[tuple | None] = [None] * len(names)
        self.keys: OrderedDict[tuple, _Key] = OrderedDict()
        self.declined: set[tuple] = set()

    def same_nodes(self, snapshot: ClusterSnapshot) -> bool:
        """The snapshot still holds exactly these node objects (same dict order)."""
        current = snapshot.nodes
        return len(current) == len(self.dict_nodes) and all(
            map(is_, current.values(), self.dict_nodes)
        )

    def mark(self, i: int) -> None:
        """Journal node position ``i`` (every shape re-evaluates it)."""
        self.journal.append(i)
        self.stamps[i] = None

    def catch_up(self) -> bool:
        """Read the snapshot's journal and the node versions; False when a journalled name is
        not in the view or the journal shrank (the caller rebuilds)."""
        changed = self.snapshot.changed
        if len(changed) < self.changed_pos:
            return False
        versions = list(map(_version, self.nodes))
        seen = self.versions
        if len(changed) > self.changed_pos:
            index = self.index
            for name in dict.fromkeys(changed[self.changed_pos :]):
                i = index.get(name)
                if i is None:
                    return False
                self.mark(i)
                seen[i] = versions[i]
            self.changed_pos = len(changed)
        if versions != seen:  # NodeInfo.touch without the journal (rare): find the nodes
            for i, (a, b) in enumerate(zip(versions, seen, strict=True)):
                if a != b:
                    self.mark(i)
        self.versions = versions
        self.compact()
        return True

    def compact(self, keep_per_node: int = 8) -> None:
        """Bound the journal: past ``keep_per_node`` entries per node, drop the oldest down to
        that; shapes that had not read the dropped entries are forgotten (rebuilt on use)."""
        journal = self.journal
        limit = keep_per_node * max(1, len(self.names))
        if len(journal) <= 2 * limit:
            return
        cut = len(journal) - limit
        del journal[:cut]
        for shape in [s for s, k in self.keys.items() if k.pos < cut]:
            del self.keys[shape]
        for key in self.keys.values():
            key.pos -= cut


class IncrementalNodeSelection:
    """The loop's choice, computed incrementally (module docstring).

    Args:
        filters: the profile's Filter plugins, in order.
        scores: ``(Score plugin, weight)`` in order.
        max_keys: most request shapes kept per snapshot.
        max_outcomes: most node outcomes kept per snapshot (shapes x nodes; at least 2 shapes).
        parked: states of other snapshots kept besides the current one.

    Raises:
        ValueError: a plugin is neither node-local nor (Score plugins) epoch-versioned; use
            :meth:`supports` first.
    """

    __slots__ = ("filters", "scores", "_epochs", "max_keys", "max_outcomes", "parked", "_views")

    def __init__(
        self,
        filters: list[Any],
        scores: list[tuple[Any, float]],
        max_keys: int = 64,
        max_outcomes: int = 400_000,
        parked: int = 2,
    ) -> None:
        if not self.supports([], filters, scores):
            raise ValueError("every Filter must be node-local and every Score node-local or epoch")
        self.filters = filters
        self.scores = scores
        #: Score plugins whose scores read cluster-wide figures (versioned by score_epoch).
        self._epochs = [p for p, _ in scores if not getattr(p, "node_local", False)]
        self.max_keys = max_keys
        self.max_outcomes = max_outcomes
        self.parked = parked
        self._views: OrderedDict[int, _View] = OrderedDict()

    @staticmethod
    def supports(
        pre_filters: list[Any], filters: list[Any], scores: list[tuple[Any, float]]
    ) -> bool:
        """Whether a profile with these plugins can be served (module docstring)."""
        if not all(getattr(p, "node_local", False) for p in [*pre_filters, *filters]):
            return False
        return all(getattr(p, "node_local", False) or hasattr(p, "score_epoch") for p, _ in scores)

    def forget(self) -> None:
        """Drop every snapshot's state."""
        self._views.clear()

    # -- the snapshot's state ----------------------------------------------------------------------

    def _view(self, snapshot: ClusterSnapshot, node_names: list[str] | None) -> _View | None:
        """The up-to-date state of ``snapshot`` in ``node_names`` order (None: sorted names);
        None when ``node_names`` is not an order of all the snapshot's nodes."""
        views = self._views
        view = views.get(id(snapshot))
        if view is not None and view.snapshot is not snapshot:
            view = None
        if view is not None:
            views.move_to_end(id(snapshot))
            if node_names is None:
                order_ok = view.given is None
            else:
                order_ok = node_names is view.given or node_names == view.names
            if order_ok and view.same_nodes(snapshot) and view.catch_up():
                return view
        if node_names is None:
            names = sorted(snapshot.nodes)
        elif len(node_names) != len(snapshot.nodes) or set(node_names) != snapshot.nodes.keys():
            return None
        else:
            names = list(node_names)
        view = _View(snapshot, names, node_names)
        views[id(snapshot)] = view
        views.move_to_end(id(snapshot))
        while len(views) > 1 + self.parked:
            views.popitem(last=False)
        return view

    def _key(self, view: _View, shape: tuple, epoch: tuple) -> tuple[_Key, bool]:
        """The shape's :class:`_Key` (fresh when new, its epoch moved, its heap overgrew or more
        than half the nodes changed since) and whether it must be evaluated from scratch."""
        keys = view.keys
        n = len(view.names)
        key = keys.get(shape)
        if key is not None:
            keys.move_to_end(shape)
            behind = len(view.journal) - key.pos
            if 2 * behind > n:  # entries repeat nodes (binpack keeps changing the same ones)
                behind = len(set(view.journal[key.pos :]))
            if key.epoch == epoch and 2 * behind <= n:
                if len(key.heap) > 4 * n + 64:
                    key.heap = [e for e in key.cur if e is not None]
                    heapify(key.heap)
                return key, False
        key = _Key(n, epoch)
        keys[shape] = key
        keys.move_to_end(shape)
        cap = max(2, min(self.max_keys, self.max_outcomes // max(1, n)))
        while len(keys) > cap:
            keys.popitem(last=False)
        return key, True

    # -- evaluation --------------------------------------------------------------------------------

    def _evaluate(
        self,
        view: _View,
        key: _Key,
        i: int,
        state: CycleState,
        pod: PodRequest,
        maximize: bool,
        fits: dict | None,
        empty: NodeFit,
    ) -> tuple | None:
        """Filter and score node position ``i`` (the loop's plugin calls), record the outcome in
        ``key`` and return its new heap entry (None when rejected). Raises ``_Nan``."""
        node = view.nodes[i]
        stamp = usage_stamp(node)
        seen = view.stamps[i]
        if seen is None:
            view.stamps[i] = stamp
        elif seen != stamp:  # edited without touch since last seen: other shapes re-evaluate
            view.mark(i)
            view.stamps[i] = stamp
        for f in self.filters:
            st = f.filter(state, pod, node)
            if not st.ok:
                key.fits[i] = None
                key.vals[i] = st.reason
                key.cur[i] = None
                return None
        fit = fits.get(view.names[i], empty) if fits is not None else empty
        total = 0.0
        for plugin, weight in self.scores:
            total += weight * plugin.score(state, pod, node, fit)
        if total != total:
            raise _Nan
        key.fits[i] = fit
        key.vals[i] = total
        e = key.cur[i] = (-total if maximize else total, i)
        return e

    def _refresh(
        self,
        view: _View,
        key: _Key,
        fresh: bool,
        state: CycleState,
        pod: PodRequest,
        maximize: bool,
    ) -> None:
        """Evaluate every node (``fresh``) or the nodes journalled since the key last looked."""
        fits = state.get(FITS)
        empty = NodeFit([() for _ in pod.containers])
        if fresh:
            key.writable()
            heap = [
                e
                for i in range(len(view.names))
                if (e := self._evaluate(view, key, i, state, pod, maximize, fits, empty))
            ]
            heapify(heap)
            key.heap = heap
        elif key.pos < len(view.journal):
            key.writable()
            heap = key.heap
            for i in dict.fromkeys(view.journal[key.pos :]):
                e = self._evaluate(view, key, i, state, pod, maximize, fits, empty)
                if e is not None:
                    heappush(heap, e)
        key.pos = len(view.journal)

    def _top(
        self, view: _View, key: _Key, state: CycleState, pod: PodRequest, maximize: bool
    ) -> int | None:
        """Position of the best live heap entry (stale entries dropped; a node whose usage stamp
        moved without touch is re-evaluated first), or None when no node fits."""
        heap, cur = key.heap, key.cur
        while heap:
            e = heap[0]
            i = e[1]
            if cur[i] is not e:
                heappop(heap)
                continue
            if usage_stamp(view.nodes[i]) == view.stamps[i]:
                return i
            heappop(heap)
            view.mark(i)
            key.writable()
            fresh = self._evaluate(
                view,
                key,
                i,
                state,
                pod,
                maximize,
                state.get(FITS),
                NodeFit([() for _ in pod.containers]),
            )
            if fresh is not None:
                heappush(heap, fresh)
            key.pos = len(view.journal)
        return None

    # -- the answer --------------------------------------------------------------------------------

    def schedule(
        self,
        snapshot: ClusterSnapshot,
        pod: PodRequest,
        state: CycleState,
        node_names: list[str] | None,
        maximize: bool,
    ) -> Choice | None:
        """The loop's choice for ``pod`` (PreFilter already run into ``state``).

        Args:
            snapshot: cluster state (read only).
            pod: the pod.
            state: the pod's cycle state after PreFilter.
            node_names: every node of the snapshot in tie order (None: sorted names); a list
                passed again is recognised by identity, so do not edit it in place.
            maximize: the highest score wins (else the lowest).

        Returns:
            A :class:`Choice`, or None when the selector cannot answer (``node_names`` is not
            an order of all nodes; a NaN score for this shape): run the full loop.
        """
        view = self._view(snapshot, node_names)
        if view is None:
            return None
        if not view.names:
            return Choice(None, reasons={"*": "no nodes in the cluster"})
        shape = (request_shape(pod), maximize)
        if shape in view.declined:
            return None
        key, fresh = self._key(view, shape, tuple(p.score_epoch for p in self._epochs))
        try:
            self._refresh(view, key, fresh, state, pod, maximize)
            i = self._top(view, key, state, pod, maximize)
        except _Nan:
            view.keys.pop(shape, None)
            if len(view.declined) >= self.max_keys:
                view.declined.clear()
            view.declined.add(shape)
            return None
        if i is None:
            if key.failure is None:
                key.failure = dict(zip(view.names, key.vals, strict=True))
            return Choice(None, reasons=dict(key.failure))
        key.shared = True
        scores = NodeScores(view.names, key.fits, key.vals)
        return Choice(view.names[i], key.fits[i], key.vals[i], scores=scores)


class _Nan(Exception):
    """A Score plugin answered NaN (the selector declines the shape)."""
