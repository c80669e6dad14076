"""One placement cycle per pod over a snapshot (kube-scheduler ``schedule_one.go`` shape).

For each pod of a :class:`PlacementRequest`, in order:
PreFilter (once) -> Filter on every node, in node-name order (the first failing filter is
the node's reason) -> Score on feasible nodes (weighted sum) -> pick the best node ->
book the pod in the snapshot so later pods of the same request see it.
The snapshot is restored before returning: ``place`` never leaves usage behind; call
:func:`reserve` to book a decision.

Tie rule (deterministic): among nodes with equal total score the lexicographically
smallest node name wins. Device ties: see ``vendors.base``.

Fast path (``SUPPORTS_SELECT``): when the profile has exactly one Score plugin and that
plugin has a ``select(state, snapshot, pod)`` method (:class:`SelectPlugin`), the runner asks
it first, after PreFilter. A non-None answer (``node``, ``containers``, ``score``,
``reasons``) is the pod's result; None means "not for this pod" and the Filter/Score loop runs
as usual. A plugin answering ``select`` takes responsibility for the profile's filters for
the pods it answers (the trace policies check registration errors, cordon, CPU, memory,
device health/capacity and models themselves, and decline pods with node selectors or other
constraints they do not model) and for its own tie rule. Such plugins usually mirror the
snapshot and refresh it from ``ClusterSnapshot.changed`` (the change journal).

Incremental node selection: for the pods the fast path declines (or profiles without one), a
framework built with ``cache=True`` whose plugins are node-local (or epoch-versioned Score
plugins) answers through
:class:`~scheduling.placement.node_selection.IncrementalNodeSelection`, which re-evaluates only
the nodes changed since the same request shape last looked and returns the loop's answer
exactly (node, grants, score, per-node reasons, feasible nodes' scores).
Gang rule: with ``min_pods`` set, pods that do not fit are skipped and the request is
schedulable when at least ``min_pods`` pods were placed; without it every pod must fit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from scheduling.placement.booking import apply_assignment
from scheduling.placement.framework import CycleState, NodeFit
from scheduling.placement.node_selection import request_shape, usage_stamp
from scheduling.placement.plugins.device_fit import FITS, PREPARED
from scheduling.placement.profile import NODE_POLICIES, Framework, Profile
from scheduling.placement.topology import RULES, TopologyOps, place_topology
from scheduling.placement.topology_index import COUNT_CAP, DomainIndex
from scheduling.placement.types import (
    ClusterSnapshot,
    ContainerAssignment,
    Decision,
    NodeInfo,
    PlacementRequest,
    PodAssignment,
    PodRequest,
)

__all__ = [
    "place",
    "reserve",
    "unreserve",
    "schedule_pod",
    "schedule_within",
    "count_on_copy",
    "PodResult",
    "SelectPlugin",
    "SUPPORTS_SELECT",
]

#: The runner consults a Score plugin's ``select`` fast path (see module doc).
SUPPORTS_SELECT = True


@runtime_checkable
class SelectPlugin(Protocol):
    """A Score plugin that can choose the node for some pods itself (the fast path).

    ``select`` returns None (run the normal loop) or an object with ``node`` (str, or None
    when nothing fits), ``containers`` (tuple of :class:`ContainerAssignment`, pod order),
    ``score`` (float) and ``reasons`` (``{node or "*": reason}`` when ``node`` is None).
    """

    name: str

    def select(self, state: CycleState, snapshot: ClusterSnapshot, pod: PodRequest) -> Any: ...


_DEFAULT: Framework | None = None


def _framework(profile: Profile | Framework | None) -> Framework:
    global _DEFAULT
    if profile is None:
        if _DEFAULT is None:
            # ad-hoc calls (tools, tests) edit snapshots freely between calls: the default
            # framework keeps the node cache's full usage-stamp check instead of the selector
            _DEFAULT = Profile().build(incremental=False)
        return _DEFAULT
    if isinstance(profile, Framework):
        return profile
    return profile.build()


class PodResult:
    """Outcome of one pod's cycle: ``assignment`` or per-node ``reasons``; ``scores``: the
    weighted score of every feasible node (a read-only :class:`NodeScores` view when the
    incremental node selection answered; ``{node: score}`` of the chosen node on the fast path)."""

    __slots__ = ("assignment", "reasons", "scores")

    def __init__(
        self, assignment: PodAssignment | None, reasons: dict[str, str], scores: Mapping[str, float]
    ) -> None:
        self.assignment = assignment
        self.reasons = reasons
        self.scores = scores


def schedule_pod(
    snapshot: ClusterSnapshot, pod: PodRequest, fw: Framework, node_names: list[str] | None = None
) -> PodResult:
    """Run one cycle for ``pod``; does not change the snapshot.

    After PreFilter and the select hook, the framework's incremental node selection
    (:mod:`scheduling.placement.node_selection`, identical answers) chooses the node when the
    profile allows it; otherwise (or when it declines) the Filter/Score loop runs on every node.

    Args:
        snapshot: cluster state.
        pod: the pod.
        fw: built profile.
        node_names: nodes in tie order (default: sorted names, computed only when needed).
    """
    state = CycleState()
    early = _pre_filter_and_select(snapshot, pod, fw, state, node_names)
    if early is not None:
        return early
    policy = pod.node_policy or fw.profile.node_policy
    if policy not in NODE_POLICIES:
        names = node_names if node_names is not None else sorted(snapshot.nodes)
        msg = f"pod {pod.name}: unknown node policy {policy!r}"
        return PodResult(None, dict.fromkeys(names, msg) or {"*": msg}, {})
    maximize = fw.maximize if not pod.node_policy else policy == "binpack"
    selector = fw.selector
    if selector is not None:
        choice = selector.schedule(snapshot, pod, state, node_names, maximize)
        if choice is not None:
            if choice.node is None or choice.fit is None:
                return PodResult(None, choice.reasons, {})
            pa = _assignment(state, pod, choice.node, choice.fit, choice.score)
            return PodResult(pa, {}, choice.scores)
    names = node_names if node_names is not None else sorted(snapshot.nodes)
    return _full_loop(snapshot, pod, fw, state, names, maximize)


def _full_loop(
    snapshot: ClusterSnapshot,
    pod: PodRequest,
    fw: Framework,
    state: CycleState,
    names: list[str],
    maximize: bool,
) -> PodResult:
    """Filter and score every node of ``names`` (the per-shape node cache saves the Filter and
    Score calls of unchanged nodes) and keep the best (ties: first in ``names``)."""
    nodes = snapshot.nodes
    fits = state.get(FITS)
    empty = NodeFit([() for _ in pod.containers])
    cache = fw.node_cache(request_shape(pod)) if fw.cache else None
    reasons: dict[str, str] = {}
    scores: dict[str, float] = {}
    best = None
    best_fit = empty
    best_score = 0.0
    for name in names:
        node = nodes[name]
        fit, outcome = _evaluate(state, pod, name, node, fw, fits, empty, cache)
        if fit is None:
            reasons[name] = outcome
            continue
        scores[name] = outcome
        if best is None or (outcome > best_score if maximize else outcome < best_score):
            best, best_score, best_fit = node, outcome, fit
    if best is None:
        return PodResult(None, reasons or {"*": "no nodes in the cluster"}, {})
    return PodResult(_assignment(state, pod, best.name, best_fit, best_score), {}, scores)


def _evaluate(
    state: CycleState,
    pod: PodRequest,
    name: str,
    node: NodeInfo,
    fw: Framework,
    fits: dict | None,
    empty: NodeFit,
    cache: dict | None,
) -> tuple[NodeFit | None, Any]:
    """Filter, then score one node: ``(None, reason)`` when a Filter rejects it, else
    ``(fit, weighted score)``. A node whose usage stamp matches the per-shape cache reuses
    the cached outcome (the cache is refreshed otherwise)."""
    stamp = None
    if cache is not None:
        stamp = usage_stamp(node)
        hit = cache.get(name)
        if hit is not None and hit[0] is node and hit[1] == stamp:
            return hit[2], hit[3]
    for f in fw.filters:
        st = f.filter(state, pod, node)
        if not st.ok:
            if cache is not None:
                cache[name] = (node, stamp, None, st.reason)
            return None, st.reason
    fit = fits.get(name, empty) if fits is not None else empty  # written by the Filters
    total = 0.0
    for plugin, weight in fw.scores:
        total += weight * plugin.score(state, pod, node, fit)
    if cache is not None:
        cache[name] = (node, stamp, fit, total)
    return fit, total


def _pre_filter_and_select(
    snapshot: ClusterSnapshot,
    pod: PodRequest,
    fw: Framework,
    state: CycleState,
    node_names: list[str] | None,
) -> PodResult | None:
    """PreFilter, then the profile's select hook; a result when either decides the pod
    (rejected by a PreFilter, or placed / refused by the hook), None to filter and score."""
    for p in fw.pre_filters:
        st = p.pre_filter(state, pod, snapshot)
        if not st.ok:
            msg = st.reason or f"rejected by {st.plugin}"
            names = node_names if node_names is not None else sorted(snapshot.nodes)
            return PodResult(None, dict.fromkeys(names, msg) or {"*": msg}, {})
    sel = fw.select_plugin
    if sel is None:
        return None
    fs = sel.select(state, snapshot, pod)  # type: ignore[attr-defined]  # a SelectHook
    if fs is None:
        return None
    if fs.node is None:
        return PodResult(None, dict(fs.reasons) or {"*": "no node fits"}, {})
    pa = PodAssignment(
        pod.name, fs.node, tuple(fs.containers), pod.cpu_milli, pod.memory_mib, fs.score
    )
    return PodResult(pa, {}, {fs.node: fs.score})


def _assignment(
    state: CycleState, pod: PodRequest, node: str, fit: NodeFit, score: float
) -> PodAssignment:
    """The chosen node's grants per container (in the PreFilter's prepared order)."""
    prepared = state.get(PREPARED)
    containers = (
        prepared.containers if prepared is not None else [(c, c.devices) for c in pod.containers]
    )
    return PodAssignment(
        pod.name,
        node,
        tuple(
            ContainerAssignment(c.name, tuple(g), c.init)
            for (c, _), g in zip(containers, fit.containers, strict=False)
        ),
        pod.cpu_milli,
        pod.memory_mib,
        score,
    )


#: kept under its old name (the per-shape key of the node cache and the selector)
_shape = request_shape


def schedule_within(
    snapshot: ClusterSnapshot, pod: PodRequest, fw: Framework, names: Sequence[str]
) -> PodResult:
    """Like :func:`schedule_pod` on the nodes ``names`` only (a topology domain, domain
    order): PreFilter, then the fast-path plugin's ``select_within`` when it has one and
    answers, else Filter and Score on those nodes (ties to the first in ``names``)."""
    state = CycleState()
    for p in fw.pre_filters:
        st = p.pre_filter(state, pod, snapshot)
        if not st.ok:
            msg = st.reason or f"rejected by {st.plugin}"
            return PodResult(None, dict.fromkeys(names, msg) or {"*": msg}, {})
    within = getattr(fw.select_plugin, "select_within", None)
    if within is not None:
        fs = within(state, snapshot, pod, names)
        if fs is not None:
            if fs.node is None:
                return PodResult(None, dict(fs.reasons) or {"*": "no node fits"}, {})
            pa = PodAssignment(
                pod.name, fs.node, tuple(fs.containers), pod.cpu_milli, pod.memory_mib, fs.score
            )
            return PodResult(pa, {}, {fs.node: fs.score})
    policy = pod.node_policy or fw.profile.node_policy
    if policy not in NODE_POLICIES:
        msg = f"pod {pod.name}: unknown node policy {policy!r}"
        return PodResult(None, dict.fromkeys(names, msg) or {"*": msg}, {})
    maximize = fw.maximize if not pod.node_policy else policy == "binpack"
    return _full_loop(snapshot, pod, fw, state, list(names), maximize)


def count_on_copy(fw: Framework, pod: PodRequest, node: NodeInfo, cap: int = COUNT_CAP) -> int:
    """How many copies of ``pod`` fit on ``node`` one after the other (at most ``cap``): the
    profile's PreFilter and Filter plugins on a copy of the node, each fit booked on the copy
    (the general count of topology capacity, ``placement/topology_index.py``)."""
    copy = node.clone()
    scratch = ClusterSnapshot({copy.name: copy})
    empty = NodeFit([() for _ in pod.containers])
    n = 0
    while n < cap:
        state = CycleState()
        if not all(p.pre_filter(state, pod, scratch).ok for p in fw.pre_filters):
            break
        if not all(f.filter(state, pod, copy).ok for f in fw.filters):
            break
        fits = state.get(FITS)
        fit = fits.get(copy.name, empty) if fits is not None else empty
        apply_assignment(scratch, _assignment(state, pod, copy.name, fit, 0.0), +1)
        n += 1
    return n


def _topology_ops(fw: Framework) -> TopologyOps:
    """The runner's operations lent to :func:`place_topology` (its index kept on ``fw``)."""
    if fw.topology is None:
        fw.topology = DomainIndex()

    def schedule(snapshot: ClusterSnapshot, pod: PodRequest, names: Sequence[str] | None) -> Any:
        if names is None:
            return schedule_pod(snapshot, pod, fw)
        return schedule_within(snapshot, pod, fw, names)

    def counter(snapshot: ClusterSnapshot, pod: PodRequest) -> tuple[Any, bool]:
        make = getattr(fw.select_plugin, "fit_counter", None)
        fast = make(snapshot, pod) if make is not None else None
        if fast is not None:
            return fast, False
        return (lambda _name, node: count_on_copy(fw, pod, node)), True

    return TopologyOps(schedule, counter, fw.topology)


def place(
    snapshot: ClusterSnapshot,
    request: PlacementRequest,
    profile: Profile | Framework | None = None,
    *,
    topology_rule: str = RULES[0],
) -> Decision:
    """Place every pod of ``request`` (see module doc). The snapshot is left unchanged.

    Args:
        snapshot: cluster state (read; temporarily booked during the call).
        request: pods to place.
        profile: a Profile, a prebuilt Framework (fast path for loops), or None (default
            HAMi profile: node binpack, device spread).
        topology_rule: domain choice of a request with ``topology`` (``topology.RULES``).

    Returns:
        Decision with assignments, or per-node reasons of the first pod that did not fit. A
        request with ``topology`` is placed by :func:`~scheduling.placement.topology.
        place_topology` (ranks in domain order, ``domains``, ``topology_reason``).
    """
    fw = _framework(profile)
    if request.topology:
        return place_topology(snapshot, request, _topology_ops(fw), topology_rule)
    # sorted lazily: a fast-path or selector answer does not need the node list
    lazy = fw.select_plugin is not None or fw.selector is not None
    names: list[str] | None = None if lazy else sorted(snapshot.nodes)
    placed: list[PodAssignment] = []
    booked: list[PodAssignment] = []
    unplaced: list[str] = []
    reasons: dict[str, str] = {}
    scores: Mapping[str, float] = {}
    last = len(request.pods) - 1
    try:
        for k, pod in enumerate(request.pods):
            res = schedule_pod(snapshot, pod, fw, names)
            if res.assignment is None:
                unplaced.append(pod.name)
                if not reasons:
                    reasons = res.reasons
                if request.min_pods is None:
                    break
                continue
            placed.append(res.assignment)
            scores = res.scores
            if k < last:  # later pods of the request must see this one
                apply_assignment(snapshot, res.assignment, +1)
                booked.append(res.assignment)
    finally:
        for pa in reversed(booked):
            apply_assignment(snapshot, pa, -1)
    need = len(request.pods) if request.min_pods is None else request.min_pods
    if request.min_pods is None and unplaced:
        done = {p.pod for p in placed}
        unplaced = [p.name for p in request.pods if p.name not in done]
    if len(placed) >= need and (request.min_pods is not None or not unplaced):
        return Decision(True, tuple(placed), {}, scores, tuple(unplaced))
    return Decision(False, (), reasons, {}, tuple(unplaced))


def reserve(snapshot: ClusterSnapshot, decision: Decision) -> None:
    """Book every pod of a schedulable decision in the snapshot (all or nothing).

    Raises ValueError (snapshot unchanged) when a node/device of the decision is missing.
    """
    done: list[PodAssignment] = []
    try:
        for pa in decision.pods:
            apply_assignment(snapshot, pa, +1)
            done.append(pa)
    except Exception:
        for pa in reversed(done):
            apply_assignment(snapshot, pa, -1)
        raise


def unreserve(snapshot: ClusterSnapshot, decision: Decision) -> None:
    """Remove what :func:`reserve` booked (exact inverse; all or nothing).

    Raises ValueError (snapshot unchanged) when the usage to remove is not booked.
    """
    done: list[PodAssignment] = []
    try:
        for pa in decision.pods:
            apply_assignment(snapshot, pa, -1)
            done.append(pa)
    except Exception:
        for pa in reversed(done):
            apply_assignment(snapshot, pa, +1)
        raise
