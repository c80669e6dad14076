"""Consolidation for a domain (issue 31): the candidate sets of a request whose pods must all
land inside one domain of a topology level (Kueue ``required`` topology) - step 5 of
:mod:`scheduling.placement.consolidation`.

A gang that fits the free capacity in aggregate but no single domain (its Decision's
``topology_reason``, ``TopologyPlacementFailed: needs N pods in one rack; the best rack has
M free``) needs room made *inside one domain*: the movable jobs with a pod in a domain are
that domain's candidates; a set is kept when, with its jobs gone, the domain's free device
share and CPU could hold the whole request (a necessary test, no placement); sets of every
domain are ordered together as the node sets are (fewest moves, then the sum of priorities,
then running seconds, then ids, then the domain name), so the first plan found empties the
domain needing the fewest, least disruptive moves. Trying a set places the request with its
required pods limited to the domain (a node selector on the domain's label values) and every
moved job outside it (:class:`TargetDomain` ``nodes`` fenced).

Stdlib and the placement core only; imports nothing of the consolidation module at run time
(it imports this one).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import combinations
from typing import Protocol, TypeVar

from scheduling.placement.topology_index import domain_of
from scheduling.placement.types import ClusterSnapshot, Decision, PlacementRequest

__all__ = [
    "MAX_CANDIDATES_PER_DOMAIN",
    "TargetDomain",
    "domain_candidate_sets",
    "fits_in_aggregate",
    "required_domain_level",
]

#: Movable jobs considered per domain (the least disruptive ones).
MAX_CANDIDATES_PER_DOMAIN = 10


class _Job(Protocol):
    """What this module reads of the consolidation core's ``MovableJob``."""

    @property
    def id(self) -> str: ...
    @property
    def booking(self) -> Decision: ...
    @property
    def priority(self) -> int: ...
    @property
    def running_s(self) -> float: ...


MovableJob = TypeVar("MovableJob", bound=_Job)


class _RoomView(Protocol):
    """What this module reads of the consolidation core's ``_Room``: per device uuid its free
    share (milli) and free slots; per device request the share one unit takes per serving
    device uuid."""

    free: dict[str, tuple[int, int]]
    share: list[dict[str, int]]
    requests: list
    free_nodes: list[str]


@dataclass(frozen=True, slots=True)
class TargetDomain:
    """A domain a plan empties: ``level`` its label key, ``name`` its values joined with
    ``/``, ``nodes`` its node names, ``request`` the request with its required pods limited
    to it."""

    level: str
    name: str
    nodes: frozenset[str]
    request: PlacementRequest


def required_domain_level(request: PlacementRequest) -> tuple[tuple[str, ...], str] | None:
    """``(levels, level)`` of the request's ``required`` topology when its required pod
    sets are one placement unit (a single set, or sets sharing one non-empty ``group``, all
    under the same levels and level); None otherwise (no required set, or several sets each
    needing its own domain: those are left to the node-by-node sets)."""
    sets = [t for t in request.topology if t.request.required]
    if not sets:
        return None
    keys = {(t.request.levels, t.request.required, t.request.group) for t in sets}
    if len(keys) != 1 or (len(sets) > 1 and not sets[0].request.group):
        return None
    first = sets[0].request
    return first.levels, first.required


def _limited(request: PlacementRequest, labels: dict[str, str]) -> PlacementRequest:
    """``request`` with each pod of a required set also selecting ``labels``."""
    ranks = {
        i for t in request.topology if t.request.required for i in range(t.first, t.first + t.count)
    }
    pods = tuple(
        replace(p, node_selector={**p.node_selector, **labels}) if i in ranks else p
        for i, p in enumerate(request.pods)
    )
    return replace(request, pods=pods)


def _need(room: _RoomView, devices: Sequence[str], request: PlacementRequest) -> tuple[int, int]:
    """Device share (milli) and CPU (milli) the request needs at least in a domain with these
    device uuids: per device request ``count`` x its smallest share there."""
    milli = 0
    for i, dr in enumerate(room.requests):
        shares = [room.share[i][u] for u in devices if u in room.share[i]]
        if not shares:
            return -1, 0  # nothing in the domain serves it
        milli += dr.count * min(shares)
    return milli, sum(p.cpu_milli for p in request.pods)


def _serving(cluster: ClusterSnapshot, room: _RoomView, names: Sequence[str]) -> list[str]:
    """Uuids of the usable devices on ``names`` serving some device request of the room's."""
    return [
        d.uuid
        for n in names
        for d in cluster.nodes[n].devices
        if d.uuid in room.free and any(d.uuid in share for share in room.share)
    ]


def fits_in_aggregate(cluster: ClusterSnapshot, room: _RoomView, request: PlacementRequest) -> bool:
    """Whether the request's whole demand - every pod's device share summed, not each device
    request alone - fits the free share of the cluster's serving devices with a free slot and
    its schedulable nodes' free CPU (the gang's "fits the cluster's total free capacity")."""
    nodes = frozenset(room.free_nodes)
    devices = _serving(cluster, room, sorted(nodes))
    need_milli, need_cpu = _need(room, devices, request)
    return need_milli >= 0 and _could_hold(cluster, room, nodes, devices, (), need_milli, need_cpu)


def domain_candidate_sets(
    cluster: ClusterSnapshot,
    room: _RoomView,
    request: PlacementRequest,
    movable: Sequence[MovableJob],
    max_moves: int,
    levels: tuple[str, ...],
    level: str,
) -> Iterator[tuple[TargetDomain, tuple[MovableJob, ...]]]:
    """Every ``(domain, candidate set)`` (module doc), best first.

    Args:
        cluster: the snapshot (unchanged).
        room: the consolidation core's free shares of ``cluster`` for ``request``.
        request: the whole request (``min_pods`` ignored by the caller).
        movable: the jobs that may move.
        max_moves: at most this many jobs per set.
        levels: the topology's keys, widest first; ``level`` the required one.
    """
    members: dict[str, list[str]] = {}
    for name, node in cluster.nodes.items():
        if node.schedulable and not node.error:
            key = domain_of(node.labels, levels, level)
            if key is not None:
                members.setdefault(key, []).append(name)
    on_node: dict[str, list[MovableJob]] = {}
    for job in movable:
        for node_name in {p.node for p in job.booking.pods}:
            on_node.setdefault(node_name, []).append(job)
    depth = levels.index(level) + 1
    found: list[tuple[tuple, TargetDomain, tuple[MovableJob, ...]]] = []
    for key, names in sorted(members.items()):
        nodes = frozenset(names)
        devices = _serving(cluster, room, names)
        need_milli, need_cpu = _need(room, devices, request)
        if need_milli < 0:
            continue
        jobs = {j.id: j for n in names for j in on_node.get(n, ())}
        ranked = sorted(jobs.values(), key=lambda j: (j.priority, j.running_s, j.id))
        ranked = ranked[:MAX_CANDIDATES_PER_DOMAIN]
        if not ranked or not _could_hold(
            cluster, room, nodes, devices, ranked, need_milli, need_cpu
        ):
            continue
        labels = dict(zip(levels[:depth], key.split("/"), strict=True))
        target = TargetDomain(level, key, nodes, _limited(request, labels))
        for k in range(1, min(max_moves, len(ranked)) + 1):
            for combo in combinations(ranked, k):
                if _could_hold(cluster, room, nodes, devices, combo, need_milli, need_cpu):
                    order = (
                        k,
                        sum(j.priority for j in combo),
                        sum(j.running_s for j in combo),
                        tuple(sorted(j.id for j in combo)),
                        key,
                    )
                    found.append((order, target, combo))
    found.sort(key=lambda row: row[0])
    for _order, target, combo in found:
        yield target, combo


def _could_hold(
    cluster: ClusterSnapshot,
    room: _RoomView,
    nodes: frozenset[str],
    devices: Sequence[str],
    jobs: Sequence[_Job],
    need_milli: int,
    need_cpu: int,
) -> bool:
    """Necessary test: with ``jobs`` gone, the domain's serving devices with a free slot hold
    ``need_milli`` in all (a device's free share: the smaller of its free cores and free
    memory, per mille of its totals, the jobs' grants given back) and its schedulable nodes
    ``need_cpu``."""
    freed: dict[str, tuple[int, int, int]] = {}  # uuid -> (cores %, memory MiB, slots)
    cpu = sum(cluster.nodes[n].cpu_milli - cluster.nodes[n].used_cpu_milli for n in nodes)
    for job in jobs:
        for pod in job.booking.pods:
            if pod.node not in nodes:
                continue
            cpu += pod.cpu_milli
            for c in pod.containers:
                for g in c.devices:
                    c0, m0, s0 = freed.get(g.uuid, (0, 0, 0))
                    freed[g.uuid] = (c0 + g.cores_percent, m0 + g.memory_mib, s0 + 1)
    if cpu < need_cpu:
        return False
    wanted = set(devices)
    free = 0
    for n in sorted(nodes):
        for d in cluster.nodes[n].devices:
            if d.uuid not in wanted or d.cores_percent <= 0 or d.memory_mib <= 0:
                continue
            cores, mem, slots = freed.get(d.uuid, (0, 0, 0))
            if d.split_count - d.used_slots + slots <= 0:
                continue
            cores += d.cores_percent - d.used_cores_percent
            mem += d.memory_mib - d.used_memory_mib
            free += min(1000, cores * 1000 // d.cores_percent, mem * 1000 // d.memory_mib)
    return free >= need_milli
