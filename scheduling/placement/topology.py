"""Topology-aware placement of pod sets (issue 31; Kueue Topology-Aware Scheduling terms).

``runner.place()`` hands a request with ``PlacementRequest.topology`` here. Per pod set (pod
sets sharing a ``group`` are one set under the first one's request, Kueue
``podset-group-name``), in request order, the pods are placed and booked (temporarily, as
``place`` does) before the next set; pods outside every set are placed last, node by node as
without a topology. Free capacity per domain: :mod:`.topology_index`.

Modes (Kueue KEP-2724 "Computing the assignment"):

- ``required`` level ``L``: every pod (with ``min_pods``: at least the gang minimum) inside one
  domain of ``L``, or nothing; the reason names the level and the best domain's free count:
  ``TopologyPlacementFailed: needs 16 pods in one rack; the best rack has 12 free``.
- ``preferred`` level ``L``: one domain of ``L`` if one can hold the set, else one of the next
  wider level, and so on; when not even one widest domain can, several (most free first, the
  last one the best fit, as Kueue's BestFit).
- ``unconstrained``: any nodes of the topology, node by node as without a topology.
- slices (``slice_size`` pods in one domain of ``slice_level``): capacity is counted in whole
  slices per slice-level domain, and each slice-level domain gets whole slices.

Which domain (:data:`RULES`): among the domains of a level that can hold the set,

- ``"best-fit"`` (default, ours): the fewest free pods left after it (best fit, so large
  domains stay whole), ties to the domain whose parent domain has the least free capacity
  (a rack in a block already in use before a rack of an empty block: empty blocks stay whole
  for block-sized gangs), then domain order;
- ``"kueue"``: Kueue's default BestFit for one domain: the least free capacity that fits
  (KEP-2724: "optimizes the selection of the last domain at each level to minimize the
  remaining free resources"), ties in domain order.

Inside the chosen domain the set descends level by level the same way down to the placement
level (:attr:`Domains.stop`: the level above the node, or the slice level); there each pod
gets its node and devices from the profile itself, limited to that domain's nodes (the trace
policies' ``select_within``, else the Filter/Score loop on those nodes), so vendor rules and
FragGuard's choice of node and device inside the domain are as without a topology. When a
domain takes fewer pods than counted (a count is an upper bound for requests such as NUMA
binding), the rest may go anywhere in the required / chosen domain; up to
:data:`TRIED_DOMAINS` domains are tried before giving up.

Ranks: pods of one shape get the set's assignments in domain order (by the nodes' domain
values, then node name), so ``Decision.pods[i]`` is for ``request.pods[i]`` and neighbouring
ranks share a rack and a node; ``Decision.domains`` gives each placed pod's values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from heapq import nsmallest
from typing import Any

from scheduling.placement.booking import apply_assignment
from scheduling.placement.node_selection import request_shape
from scheduling.placement.topology_index import (
    TOPOLOGY_FAILED,
    TOPOLOGY_INVALID,
    DomainIndex,
    Domains,
    ShapeCounts,
    TopologyInvalid,
    level_word,
    validate_topology,
)
from scheduling.placement.types import (
    ClusterSnapshot,
    ContainerAssignment,
    Decision,
    NodeInfo,
    PlacementRequest,
    PodAssignment,
    PodRequest,
    TopologyRequest,
)

__all__ = ["RULES", "TRIED_DOMAINS", "TopologyOps", "pod_sets", "place_topology"]

#: Domain choice rules (module docstring); the first is the default.
RULES = ("best-fit", "kueue")
#: Domains of a level tried before the request is reported unplaceable at that level.
TRIED_DOMAINS = 3

Key = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TopologyOps:
    """What the runner lends this module.

    Attributes:
        schedule: ``(snapshot, pod, node names or None) -> PodResult`` (``assignment`` or
            ``reasons``), one pod on those nodes (None: any node).
        counter: ``(snapshot, pod) -> (count one node, watch versions)`` for capacity.
        index: the framework's :class:`DomainIndex`.
    """

    schedule: Callable[[ClusterSnapshot, PodRequest, Sequence[str] | None], Any]
    counter: Callable[[ClusterSnapshot, PodRequest], tuple[Callable[[str, NodeInfo], int], bool]]
    index: DomainIndex


def pod_sets(request: PlacementRequest) -> list[tuple[list[int], TopologyRequest]]:
    """The request's pod sets as ``(pod indices, topology request)``, sets of one group merged
    under the first one's request, in order of their first pod.

    Raises:
        TopologyInvalid: a set outside the pods, an empty set or two sets sharing a pod.
    """
    out: list[tuple[list[int], TopologyRequest]] = []
    by_group: dict[str, list[int]] = {}
    seen: set[int] = set()
    n = len(request.pods)
    for ps in sorted(request.topology, key=lambda s: s.first):
        if ps.count < 1 or ps.first < 0 or ps.first + ps.count > n:
            raise TopologyInvalid(
                f"pod set {ps.first}..{ps.first + ps.count - 1} is not in 0..{n - 1}"
            )
        idx = list(range(ps.first, ps.first + ps.count))
        if seen.intersection(idx):
            raise TopologyInvalid(f"pod set from {ps.first} overlaps another pod set")
        seen.update(idx)
        group = ps.request.group
        if group and group in by_group:
            by_group[group].extend(idx)
            continue
        out.append((idx, ps.request))
        if group:
            by_group[group] = idx
    return out


@dataclass(slots=True)
class _Run:
    """One ``place_topology`` call: the snapshot, the lent operations, the temporary bookings
    and the per-pod results."""

    snapshot: ClusterSnapshot
    ops: TopologyOps
    rule: str
    booked: list[PodAssignment] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)

    def book(self, pa: PodAssignment) -> None:
        apply_assignment(self.snapshot, pa, +1)
        self.booked.append(pa)

    def unbook_to(self, mark: int) -> None:
        while len(self.booked) > mark:
            apply_assignment(self.snapshot, self.booked.pop(), -1)

    def fill(self, pods: Sequence[PodRequest], names: Sequence[str] | None) -> list[PodAssignment]:
        """Place ``pods`` one by one on ``names``, booking each; the placed ones (in order)."""
        out = []
        for pod in pods:
            res = self.ops.schedule(self.snapshot, pod, names)
            if res.assignment is None:
                self.reasons = dict(res.reasons)
                continue
            self.book(res.assignment)
            out.append(res.assignment)
        return out


def place_topology(
    snapshot: ClusterSnapshot, request: PlacementRequest, ops: TopologyOps, rule: str = RULES[0]
) -> Decision:
    """Place ``request`` (which has ``topology``) as the module docstring says. The snapshot is
    left as it was.

    Returns:
        Decision with ``domains`` (per placed pod) when schedulable; else not schedulable with
        ``topology_reason`` (``TopologyPlacementFailed: ...`` or ``TopologyInvalid: ...``) and
        ``reasons`` ``{"*": that reason}`` (or the per-node reasons of a pod outside every set).

    Raises:
        ValueError: unknown ``rule``.
    """
    if rule not in RULES:
        raise ValueError(f"unknown topology rule {rule!r} (known: {', '.join(RULES)})")
    names = tuple(p.name for p in request.pods)
    try:
        sets = pod_sets(request)
        for idx, req in sets:
            validate_topology(req, len(idx))
    except TopologyInvalid as exc:
        reason = f"{TOPOLOGY_INVALID}: {exc}"
        return Decision(False, reasons={"*": reason}, unplaced=names, topology_reason=reason)
    run = _Run(snapshot, ops, rule)
    slack = len(names) - request.min_pods if request.min_pods is not None else 0
    got: dict[int, PodAssignment] = {}
    paths: dict[int, Key] = {}
    try:
        for idx, req in sets:
            pods = [request.pods[i] for i in idx]
            need = max(len(idx) - slack, 0)
            placed, doms, reason = _place_set(run, pods, req, need)
            if reason:
                return Decision(
                    False, reasons={"*": reason}, unplaced=names, topology_reason=reason
                )
            slack -= len(idx) - len(placed)
            _ranked(idx, pods, placed, doms, got, paths)
        if not _place_rest(run, request, sets, slack, got, paths):
            return Decision(False, reasons=run.reasons, unplaced=names)
    finally:
        run.unbook_to(0)
    order = sorted(got)
    unplaced = tuple(names[i] for i in range(len(names)) if i not in got)
    return Decision(
        True,
        tuple(got[i] for i in order),
        unplaced=unplaced,
        domains=tuple(paths[i] for i in order),
    )


def _place_rest(
    run: _Run,
    request: PlacementRequest,
    sets: list[tuple[list[int], TopologyRequest]],
    slack: int,
    got: dict[int, PodAssignment],
    paths: dict[int, Key],
) -> bool:
    """Place the pods outside every set node by node, as without a topology (domains under
    the first set's levels); False when one does not fit and the gang minimum is not met."""
    covered = {i for idx, _ in sets for i in idx}
    first = run.ops.index.domains(run.snapshot, sets[0][1].levels) if sets else None
    for i, pod in enumerate(request.pods):
        if i in covered:
            continue
        done = run.fill([pod], None)
        if done:
            got[i] = done[0]
            paths[i] = first.path.get(done[0].node, ()) if first is not None else ()
        elif slack > 0:
            slack -= 1
        else:
            return False
    return True


def _ranked(
    idx: list[int],
    pods: list[PodRequest],
    placed: list[PodAssignment],
    doms: Domains,
    got: dict[int, PodAssignment],
    paths: dict[int, Key],
) -> None:
    """Give the set's pods its assignments in domain order, shape by shape (an assignment only
    goes to a pod of the shape it was made for); pods of a shape left over stay unplaced."""
    by_shape: dict[tuple, list[PodAssignment]] = {}
    source = {p.name: p for p in pods}
    for pa in placed:
        by_shape.setdefault(request_shape(source[pa.pod]), []).append(pa)
    path = doms.path
    for lst in by_shape.values():
        lst.sort(key=lambda pa: (path.get(pa.node, ()), pa.node))
    for i, pod in zip(idx, pods, strict=True):
        todo = by_shape.get(request_shape(pod))
        if not todo:
            continue
        pa = todo.pop(0)
        got[i] = _renamed(pa, source[pa.pod], pod)
        paths[i] = path.get(pa.node, ())


def _renamed(pa: PodAssignment, src: PodRequest, dst: PodRequest) -> PodAssignment:
    """``pa`` (made for ``src``) for ``dst`` of the same shape: pod and container names."""
    if src is dst or src.name == dst.name and src.containers == dst.containers:
        return pa
    names = {a.name: b.name for a, b in zip(src.containers, dst.containers, strict=True)}
    if all(a == b for a, b in names.items()):  # same container names: the same grants
        return replace(pa, pod=dst.name)
    return replace(
        pa,
        pod=dst.name,
        containers=tuple(
            ContainerAssignment(names.get(c.name, c.name), c.devices, c.init) for c in pa.containers
        ),
    )


@dataclass(slots=True)
class _Set:
    """One pod set being placed: its domains, capacity and unit (pods per slice)."""

    doms: Domains
    counts: ShapeCounts
    unit: int
    slice_level: int | None
    rule: str
    caps: dict[int, dict[Key, int]] = field(default_factory=dict)

    def cap(self, level: int) -> dict[Key, int]:
        """Free capacity per domain of ``level`` in units (pods, or whole slices)."""
        got = self.caps.get(level)
        if got is not None:
            return got
        if self.slice_level is None:
            got = self.counts.level_sums(level)
        elif level >= self.slice_level:
            got = {k: v // self.unit for k, v in self.counts.level_sums(level).items()}
        else:
            got = {}
            for k, v in self.cap(self.slice_level).items():
                got[k[: level + 1]] = got.get(k[: level + 1], 0) + v
        self.caps[level] = got
        return got

    def rank(self, level: int, units: int) -> Callable[[Key], tuple]:
        """The rule's sort key of a domain of ``level`` holding ``units`` (lower = better)."""
        caps = self.cap(level)
        if self.rule == "kueue" or level == 0:
            return lambda k: (caps[k], k)
        parent = self.cap(level - 1)
        return lambda k: (caps[k] - units, parent.get(k[:-1], 0), k)

    def choose(self, level: int, keys: list[Key], units: int) -> list[Key]:
        """``keys`` (domains of ``level`` holding ``units``) best first, by the rule."""
        return sorted(keys, key=self.rank(level, units))

    def best(self, level: int, units: int, limit: int) -> list[Key]:
        """The ``limit`` best domains of ``level`` holding ``units`` (as :meth:`choose` on
        all of them), read from the count buckets when there are no slices."""
        if self.slice_level is not None:
            caps = self.cap(level)
            return self.choose(level, [k for k, c in caps.items() if c >= units], units)[:limit]
        out: list[Key] = []
        key = self.rank(level, units)
        for _count, bucket in self.counts.at_least(level, units):
            out += nsmallest(limit - len(out), bucket, key=key) if len(bucket) > 1 else list(bucket)
            if len(out) >= limit:
                break
        return out

    def plan(self, level: int, key: Key, units: int) -> list[tuple[Key, int]]:
        """Units per placement-level domain for ``units`` inside domain ``key`` of ``level``."""
        stop = self.slice_level if self.slice_level is not None else self.doms.stop
        if level >= stop:
            return [(key, units)]
        return self.spread(level + 1, self.doms.children[level].get(key, []), units)

    def spread(self, level: int, keys: list[Key], units: int) -> list[tuple[Key, int]]:
        """``units`` over the domains ``keys`` of ``level``: one best domain when one holds
        them all, else most free first with the last one the best fit (Kueue BestFit)."""
        caps = self.cap(level)
        whole = [k for k in keys if caps.get(k, 0) >= units]
        if whole:
            best = self.choose(level, whole, units)[0]
            return self.plan(level, best, units)
        out: list[tuple[Key, int]] = []
        left = sorted((k for k in keys if caps.get(k, 0) > 0), key=lambda k: (-caps[k], k))
        rem = units
        while rem > 0 and left:
            fits = [k for k in left if caps[k] >= rem]
            k = min(fits, key=lambda k: (caps[k], k)) if fits else left[0]
            take = min(caps[k], rem)
            left.remove(k)
            out += self.plan(level, k, take)
            rem -= take
        return out


def _place_set(
    run: _Run, pods: list[PodRequest], req: TopologyRequest, need: int
) -> tuple[list[PodAssignment], Domains, str]:
    """Place one set: (placed assignments, its domains, "" or the failure reason). On
    failure nothing of the set stays booked."""
    snapshot, ops = run.snapshot, run.ops
    doms = ops.index.domains(snapshot, req.levels)
    if not req.required and not req.preferred and not req.slice_size:  # unconstrained
        mark = len(run.booked)
        placed = run.fill(pods, None if doms.complete else doms.names)
        if len(placed) >= need:
            return placed, doms, ""
        run.unbook_to(mark)
        return [], doms, _shortfall(pods, need, len(placed), "", 0)
    counter, watch = ops.counter(snapshot, pods[0])
    counts = ops.index.counts(snapshot, req.levels, request_shape(pods[0]), counter, watch)
    slice_level = req.levels.index(req.slice_level) if req.slice_size else None
    st = _Set(doms, counts, req.slice_size or 1, slice_level, run.rule)
    if req.required:
        levels = [req.levels.index(req.required)]
    elif req.preferred:
        levels = list(range(req.levels.index(req.preferred), -1, -1))
    else:
        levels = []  # slices without a level: any domains
    for level in levels:
        inside = _try_level(run, st, pods, need, level)
        if inside is not None:
            return inside, doms, ""
    if req.required:
        level = levels[0]
        caps = st.counts.buckets(level) if st.slice_level is None else st.cap(level).values()
        best = max(caps, default=0) * st.unit
        return [], doms, _shortfall(pods, need, best, req.levels[level], st.unit, req)
    mark = len(run.booked)
    units = -(-len(pods) // st.unit)
    plan = st.spread(0, list(st.cap(0)), units)
    placed = _fill_plan(run, st, pods, plan, None if doms.complete else doms.names)
    if len(placed) >= need:
        return placed, doms, ""
    run.unbook_to(mark)
    total = sum(st.cap(0).values()) * st.unit
    return [], doms, _shortfall(pods, need, total, "", st.unit, req)


def _try_level(
    run: _Run, st: _Set, pods: list[PodRequest], need: int, level: int
) -> list[PodAssignment] | None:
    """The set inside one domain of ``level`` (up to :data:`TRIED_DOMAINS` tried), or None."""
    caps = st.cap(level)
    units = -(-len(pods) // st.unit)
    least = -(-need // st.unit)
    keys = st.best(level, units, TRIED_DOMAINS)
    if not keys and least < units:  # a gang minimum: the domain that holds the most
        keys = sorted((k for k, c in caps.items() if c >= least), key=lambda k: (-caps[k], k))
    for key in keys[:TRIED_DOMAINS]:
        mark = len(run.booked)
        plan = st.plan(level, key, min(units, caps[key]))
        placed = _fill_plan(run, st, pods, plan, st.doms.members[level][key])
        if len(placed) >= need:
            return placed
        run.unbook_to(mark)
    return None


def _fill_plan(
    run: _Run,
    st: _Set,
    pods: list[PodRequest],
    plan: list[tuple[Key, int]],
    fallback: Sequence[str] | None,
) -> list[PodAssignment]:
    """Place ``pods`` along ``plan`` (units per placement-level domain, in order); without
    slices, pods a domain did not take are tried on ``fallback`` (None: any node)."""
    stop = st.slice_level if st.slice_level is not None else st.doms.stop
    members = st.doms.members[stop]
    placed: list[PodAssignment] = []
    left: list[PodRequest] = []
    k = 0
    for key, units in plan:
        chunk = pods[k : k + units * st.unit]
        k += len(chunk)
        done = run.fill(chunk, members[key])
        if st.slice_level is not None and len(done) % st.unit:
            return placed  # a broken slice: the caller unbooks
        placed += done
        left += chunk[len(done) :]
    left += pods[k:]
    if left and st.slice_level is None:
        placed += run.fill(left, fallback)
    return placed


def _shortfall(
    pods: list[PodRequest],
    need: int,
    best: int,
    level_key: str,
    unit: int,
    req: TopologyRequest | None = None,
) -> str:
    """The ``TopologyPlacementFailed`` reason of a set that could not be placed."""
    n = len(pods)
    what = f"{need} of {n} pods" if need < n else f"{n} pods"
    if req is not None and req.slice_size:
        what += f" in slices of {unit} per {level_word(req.slice_level)}"
    if level_key:
        word = level_word(level_key)
        return f"{TOPOLOGY_FAILED}: needs {what} in one {word}; the best {word} has {best} free"
    return f"{TOPOLOGY_FAILED}: needs {what}; the topology's nodes have room for {best}"
