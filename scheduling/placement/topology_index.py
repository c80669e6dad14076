"""Topology domains and their free capacity, for topology-aware placement (issue 31).

Terms are Kueue Topology-Aware Scheduling's (KEP-2724, ``keps/2724-topology-aware-scheduling``):
a *topology* is an ordered list of node-label keys, widest level first and the node level
last; a *domain* of level ``l`` is one combination of values of the first ``l + 1`` keys (a
rack is identified by its zone, block and rack values, so two blocks may both have a "rack-1",
as Kueue allows); a node missing any level's label is in no domain. Volcano calls the same
thing HyperNode tiers; here level 0 is the widest.

Free capacity of a domain (Kueue "Capacity calculation") is counted in pods of the request's
shape: per node, how many copies of the pod fit one after the other, summed over the domain's
nodes. Two ways to count a node:

- trace-shaped pods under a trace policy's fast path (``TracePolicyPlugin.table_for``):
  from the policy's node mirror (free CPU, host memory, free milli per device), exactly its
  ``NodeTable.fits`` rule applied repeatedly;
- any other pod: the profile's PreFilter and Filter plugins on a copy of the node, booking
  each fit on the copy (``count_on_copy`` of the runner), at most :data:`COUNT_CAP` pods.

:class:`DomainIndex` keeps, per snapshot, the domains of each topology and, per request shape,
every node's count and every domain's sum. Between calls only the nodes named in the
snapshot's change journal (``ClusterSnapshot.changed``) since the shape last looked are
recounted (for the general count also any node whose ``NodeInfo.version`` moved), so a gang
on a 10,000-node cluster costs a recount of the few nodes that changed, not a scan.

Stdlib only.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from itertools import compress
from operator import attrgetter, itemgetter, sub

from scheduling.placement.topology_names import level_word
from scheduling.placement.types import ClusterSnapshot, NodeInfo, TopologyRequest

__all__ = [
    "COUNT_CAP",
    "HOSTNAME",
    "TOPOLOGY_FAILED",
    "TOPOLOGY_INVALID",
    "DomainIndex",
    "Domains",
    "ShapeCounts",
    "TopologyInvalid",
    "domain_of",
    "level_word",
    "validate_topology",
]

#: Reason prefix of a topology request that cannot be met now (the job stays pending).
TOPOLOGY_FAILED = "TopologyPlacementFailed"
#: Reason prefix of a malformed topology request (the API answers 400 before it gets here).
TOPOLOGY_INVALID = "TopologyInvalid"
#: The node level's usual key (Kueue's recommended lowest level).
HOSTNAME = "kubernetes.io/hostname"
#: Most pods of one shape counted on one node by the general count.
COUNT_CAP = 64

_version = attrgetter("version")


class TopologyInvalid(ValueError):
    """A topology request that cannot be evaluated (message says why; reason prefix
    :data:`TOPOLOGY_INVALID`)."""


def domain_of(labels: Mapping[str, str], levels: tuple[str, ...], level: str) -> str | None:
    """The name of the domain of ``level`` a node with ``labels`` is in: its values of the
    levels down to ``level`` joined with ``/`` (``"zone-a/block-1/rack-3"``; the values of the
    wider levels make a rack name unique, as :class:`Domains` keys do), or None when a label
    is missing. For placers answering ``victim_domains`` (``admission/topology_victims.py``)
    and for pages.

    Raises:
        ValueError: ``level`` is not one of ``levels``.
    """
    values = [labels.get(k) for k in levels[: levels.index(level) + 1]]
    if any(v is None for v in values):
        return None
    return "/".join(v for v in values if v is not None)


def validate_topology(req: TopologyRequest, count: int) -> None:
    """Check a pod set's topology request (Kueue's annotation validation, KEP-2724
    "Validation" and "PodSet Slice size validation").

    Args:
        req: the request.
        count: pods in the pod set (a group: all its sets).

    Raises:
        TopologyInvalid: no levels or a repeated level; more than one of required /
            preferred / unconstrained; a level not in ``levels`` (the message names the
            levels); a negative slice size, a slice size without a slice level or the reverse;
            a slice level wider than the required / preferred level; a pod count that is not a
            multiple of the slice size.
    """
    levels = req.levels
    if not levels:
        raise TopologyInvalid("the topology has no levels")
    if len(set(levels)) != len(levels):
        raise TopologyInvalid(f"a level is repeated in {', '.join(levels)}")
    modes = [m for m in ("required", "preferred") if getattr(req, m)]
    if req.unconstrained:
        modes.append("unconstrained")
    if len(modes) > 1:
        raise TopologyInvalid(f"{' and '.join(modes)} are exclusive")
    for name in ("required", "preferred", "slice_level"):
        value = getattr(req, name)
        if value and value not in levels:
            raise TopologyInvalid(f"{name} level {value!r} is not one of {', '.join(levels)}")
    if req.slice_size < 0:
        raise TopologyInvalid(f"slice_size {req.slice_size} is negative")
    if bool(req.slice_size) != bool(req.slice_level):
        raise TopologyInvalid("slice_size and slice_level go together")
    if req.slice_size:
        outer = req.required or req.preferred
        if outer and levels.index(req.slice_level) < levels.index(outer):
            raise TopologyInvalid(
                f"slice level {req.slice_level!r} is wider than {outer!r}; it must be the "
                "same level or a narrower one"
            )
        if count % req.slice_size:
            raise TopologyInvalid(f"{count} pods are not a multiple of slice_size {req.slice_size}")


class Domains:
    """The domains of one topology on one snapshot.

    Attributes:
        levels: the label keys, widest first.
        path: ``{node name: its values, widest first}`` for every node carrying all levels.
        names: those nodes in domain order (by path, then name).
        members: per level, ``{domain key: node names in domain order}``; a domain key of
            level ``l`` is the first ``l + 1`` values of its nodes' paths.
        children: per level but the last, ``{domain key: child keys, in domain order}``.
        complete: every node of the snapshot carries every level.
        stop: the level whose domains the per-pod placement chooses nodes in: the level above
            the node level when the last key is :data:`HOSTNAME`, else the last level.
    """

    __slots__ = ("levels", "path", "keys", "names", "members", "children", "complete", "stop")

    def __init__(self, snapshot: ClusterSnapshot, levels: tuple[str, ...]) -> None:
        self.levels = levels
        path: dict[str, tuple[str, ...]] = {}
        for name, node in snapshot.nodes.items():
            labels = node.labels
            values = tuple(labels.get(k) for k in levels)
            if None not in values:
                path[name] = values  # type: ignore[assignment]  # no None in it
        self.path = path
        #: per node, its domain key at every level (widest first)
        self.keys = {n: tuple(p[: lvl + 1] for lvl in range(len(levels))) for n, p in path.items()}
        self.names = sorted(path, key=lambda n: (path[n], n))
        self.complete = len(path) == len(snapshot.nodes)
        depth = len(levels)
        self.members: list[dict[tuple[str, ...], list[str]]] = [{} for _ in range(depth)]
        self.children: list[dict[tuple[str, ...], list[tuple[str, ...]]]] = [
            {} for _ in range(depth)
        ]
        for name in self.names:
            p = path[name]
            for lvl in range(depth):
                key = p[: lvl + 1]
                group = self.members[lvl].get(key)
                if group is None:
                    group = self.members[lvl][key] = []
                    if lvl:
                        self.children[lvl - 1].setdefault(key[:-1], []).append(key)
                group.append(name)
        self.stop = depth - 2 if depth > 1 and levels[-1] == HOSTNAME else depth - 1


#: counts one node for a shape: (node name, node) -> pods that fit
Counter = Callable[[str, NodeInfo], int]


class ShapeCounts:
    """Per node and per domain, the pods of one request shape that fit (module docstring).

    Attributes:
        node: ``{node name: count}`` over :attr:`Domains.names`.
        sums: per level, ``{domain key: sum of its nodes' counts}`` (None for the node level
            of a topology ending in hostnames until :meth:`level_sums` asks for it).
        by_count: per level, ``{count: {domain key: None}}`` (the domains holding exactly that
            many pods; insertion-ordered, so answers do not depend on hashing), kept with
            ``sums`` so a best fit looks at a few counts, not at every domain.
    """

    __slots__ = (
        "domains",
        "node",
        "sums",
        "by_count",
        "pos",
        "versions",
        "counter",
        "watch_versions",
    )

    def __init__(
        self, snapshot: ClusterSnapshot, domains: Domains, counter: Counter, watch_versions: bool
    ) -> None:
        self.domains = domains
        self.counter = counter
        self.watch_versions = watch_versions
        nodes = snapshot.nodes
        names = domains.names
        many = getattr(counter, "many", None)
        if many is not None:
            self.node = dict(zip(names, many(names), strict=True))
        else:
            self.node = {n: counter(n, nodes[n]) for n in names}
        depth = len(domains.levels)
        # the node level of a topology ending in hostnames is built only when asked for
        top = depth - 2 if depth > 1 and domains.levels[-1] == HOSTNAME else depth - 1
        get = self.node.__getitem__
        acc = {k: sum(map(get, ns)) for k, ns in domains.members[top].items()}
        sums: list[dict[tuple[str, ...], int] | None] = [None] * depth
        sums[top] = acc
        below = acc
        for lvl in range(top - 1, -1, -1):  # bottom-up over the children
            below = {k: sum(below[c] for c in kids) for k, kids in domains.children[lvl].items()}
            sums[lvl] = below
        self.sums = sums
        self.by_count: list[dict[int, dict[tuple[str, ...], None]] | None] = [
            None if level_sums is None else _buckets(level_sums) for level_sums in sums
        ]
        self.pos = len(snapshot.changed)
        self.versions = {n: nodes[n].version for n in names} if watch_versions else {}

    def refresh(self, snapshot: ClusterSnapshot, counter: Counter) -> None:
        """Recount the nodes changed since the last call (module docstring)."""
        self.counter = counter
        journal = snapshot.changed
        nodes = snapshot.nodes
        changed = set(journal[self.pos :])
        self.pos = len(journal)
        if self.watch_versions:
            versions = self.versions
            changed.update(n for n, v in versions.items() if nodes[n].version != v)
            for n in changed:
                if n in versions:
                    versions[n] = nodes[n].version
        counts = self.node
        names = list(filter(counts.__contains__, changed))
        if not names:
            return
        many = getattr(counter, "many", None)
        fresh = many(names) if many is not None else [counter(n, nodes[n]) for n in names]
        moves = list(map(sub, fresh, map(counts.__getitem__, names)))
        if not any(moves):
            return
        counts.update(zip(names, fresh, strict=True))
        moved = list(compress(names, moves))
        moves = list(compress(moves, moves))
        paths = list(map(self.domains.keys.__getitem__, moved))
        # per kept level: (level, sums, buckets, per domain the sum of its nodes' moves)
        levels: list[tuple[int, dict, dict, dict[tuple[str, ...], int]]] = [
            (lvl, sums, buckets, {})
            for lvl, (sums, buckets) in enumerate(zip(self.sums, self.by_count, strict=True))
            if sums is not None and buckets is not None
        ]
        for lvl, _sums, _buckets, delta in levels:
            get = delta.get
            for key, d in zip(map(itemgetter(lvl), paths), moves, strict=True):
                delta[key] = get(key, 0) + d
        for _lvl, sums, buckets, delta in levels:
            for key, d in delta.items():
                if not d:
                    continue
                was = sums[key]
                now = sums[key] = was + d
                bucket = buckets[was]
                del bucket[key]
                if not bucket:
                    del buckets[was]
                buckets.setdefault(now, {})[key] = None

    def level_sums(self, level: int) -> dict[tuple[str, ...], int]:
        """``{domain key: count}`` of ``level`` (the node level built on first use)."""
        sums = self.sums[level]
        if sums is None:
            keys = self.domains.keys
            sums = {keys[n][level]: c for n, c in self.node.items()}
            self.sums[level] = sums
            self.by_count[level] = _buckets(sums)
        return sums

    def buckets(self, level: int) -> dict[int, dict[tuple[str, ...], None]]:
        """``{count: domains}`` of ``level`` (see :attr:`by_count`)."""
        self.level_sums(level)
        return self.by_count[level] or {}

    def at_least(self, level: int, count: int) -> list[tuple[int, dict[tuple[str, ...], None]]]:
        """``(count, domains)`` of ``level`` holding at least ``count`` pods, fewest first."""
        buckets = self.buckets(level)
        return [(c, buckets[c]) for c in sorted(c for c in buckets if c >= count)]


def _buckets(sums: dict[tuple[str, ...], int]) -> dict[int, dict[tuple[str, ...], None]]:
    """``{count: {domain key: None}}`` of per-domain counts, in domain order per count."""
    out: dict[int, dict[tuple[str, ...], None]] = {}
    for k, c in sums.items():
        out.setdefault(c, {})[k] = None
    return out


class DomainIndex:
    """Domains and shape counts per snapshot, kept on a built Framework (``fw.topology``).

    Keeps the state of the last two snapshots (an admission cycle alternates between its
    cluster and the empty copy it estimates on) and at most ``max_shapes`` shapes each (least
    recently used dropped). A changed node set rebuilds the snapshot's state; label edits
    need a new snapshot (or a changed node set), as for the trace policies' mirrors.
    """

    __slots__ = ("_states", "max_shapes")

    def __init__(self, max_shapes: int = 64) -> None:
        self._states: OrderedDict[int, tuple[ClusterSnapshot, int, dict, OrderedDict]] = (
            OrderedDict()
        )
        self.max_shapes = max_shapes

    def _state(self, snapshot: ClusterSnapshot) -> tuple[dict, OrderedDict]:
        key = id(snapshot)
        st = self._states.get(key)
        if st is None or st[0] is not snapshot or st[1] != len(snapshot.nodes):
            st = (snapshot, len(snapshot.nodes), {}, OrderedDict())
            self._states[key] = st
        self._states.move_to_end(key)
        while len(self._states) > 2:
            self._states.popitem(last=False)
        return st[2], st[3]

    def domains(self, snapshot: ClusterSnapshot, levels: tuple[str, ...]) -> Domains:
        """The domains of ``levels`` on ``snapshot`` (built once per snapshot)."""
        doms, _ = self._state(snapshot)
        d = doms.get(levels)
        if d is None:
            d = doms[levels] = Domains(snapshot, levels)
        return d

    def counts(
        self,
        snapshot: ClusterSnapshot,
        levels: tuple[str, ...],
        shape: tuple,
        counter: Counter,
        watch_versions: bool,
    ) -> ShapeCounts:
        """Current counts of request ``shape`` on the domains of ``levels``; ``counter``
        counts one node; ``watch_versions``: also recount nodes whose version moved."""
        _, shapes = self._state(snapshot)
        key = (levels, shape, watch_versions)
        sc = shapes.get(key)
        if sc is None:
            sc = ShapeCounts(snapshot, self.domains(snapshot, levels), counter, watch_versions)
            shapes[key] = sc
            while len(shapes) > self.max_shapes:
                shapes.popitem(last=False)
        else:
            sc.refresh(snapshot, counter)
            shapes.move_to_end(key)
        return sc
