"""Consolidation: move a few running, movable jobs so that a request blocked only by
fragmentation can be placed (pure core: stdlib and the placement core only).

Semantics (beyond HAMi and FGD; shaped after KAI scheduler's ``consolidation`` action, which
relocates running pods only when every relocated pod is placed again in the same statement,
and Volcano's ``reclaim`` victim ordering):

1. **Only fragmentation.** The request must not fit now and its total device demand must fit
   in the free share of the devices that could serve it (:func:`fragmented`); a request short
   of capacity is preemption's business, never consolidation's.
2. **Candidate sets.** Subsets of the movable jobs booked on one device (a request for one
   device: a whole device is freed) or on one node (other requests), at most ``max_moves``
   jobs, kept only when the freed share could hold the request's largest pod on that node
   (:func:`_could_fit`).
3. **Order** (fewest moves, then least disruption): number of moves, then the sum of the
   moved jobs' priorities, then their running seconds (youngest first: least work lost),
   then their ids (deterministic).
4. **Try** a set: unbook its jobs, place the request (the caller's profile), book it, then
   place each moved job again (same device models as now, so its quota charges per flavor
   do not change; never on a device it held, which is fenced - cordoned in the working
   snapshot - while it is placed: it restarts *elsewhere*). The first set where
   everything lands is the plan; the snapshot is restored after every try.

5. **A domain** (topology-aware gangs, issue 31): a request whose pods must all land inside one
   domain of a level (Kueue ``required`` topology, ``PlacementRequest.topology``) that fits
   the free capacity in aggregate but no single domain gets its candidate sets per domain
   instead (:mod:`scheduling.placement.consolidation_domains`): subsets of the movable jobs
   with a pod in the domain, ordered as in step 3 over every domain (so the domain needing
   the fewest, least disruptive moves wins); the request is placed inside that domain only
   and every moved job is placed again outside it (its nodes fenced as well). The plan names
   the domain (:attr:`ConsolidationPlan.domain`).

Every step goes through :func:`~scheduling.placement.runner.place` /
:func:`~scheduling.placement.runner.reserve` / :func:`~scheduling.placement.runner.unreserve`,
so a plan never overbooks a device, a node's CPU/memory or a MIG layout, and every job keeps
its pod count (all pods of a moved job move together). Jobs holding MIG instances or DRA
counters are never movable (their grants cannot be re-expressed exactly).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from itertools import combinations

from scheduling.devices.matching import any_type_matches, type_excluded
from scheduling.placement.consolidation_domains import (
    TargetDomain,
    domain_candidate_sets,
    fits_in_aggregate,
    required_domain_level,
)
from scheduling.placement.fragmentation import device_free_milli
from scheduling.placement.profile import Framework, Profile
from scheduling.placement.runner import place, reserve, unreserve
from scheduling.placement.topology_names import level_word
from scheduling.placement.types import (
    ClusterSnapshot,
    Decision,
    DeviceRequest,
    DeviceUsage,
    PlacementRequest,
    PodRequest,
)

__all__ = [
    "ConsolidationPlan",
    "ConsolidationResult",
    "Move",
    "MovableJob",
    "apply_plan",
    "fragmented",
    "plan_consolidation",
]

#: Candidate sets tried per request at most (each try is 1 + moves placements).
DEFAULT_MAX_TRIES = 48

#: Movable jobs considered per node (the least disruptive ones).
MAX_CANDIDATES_PER_NODE = 8


@dataclass(frozen=True, slots=True)
class MovableJob:
    """A running job that may be moved (preemptible, opted in, past its minimum runtime).

    Attributes:
        id: job id (opaque to the core).
        request: its pods, as placed now (re-placed as a whole; same pod names).
        booking: where it is booked in the snapshot now (a schedulable Decision whose pods
            are exactly what :func:`~scheduling.placement.runner.reserve` booked).
        priority: its priority (higher = more important; lower ones are moved first).
        running_s: seconds since it started (shorter = less work lost by a restart).
    """

    id: str
    request: PlacementRequest
    booking: Decision
    priority: int = 0
    running_s: float = 0.0
    grants: tuple[tuple[str, str, str, int], ...] = field(init=False, repr=False, compare=False)
    """``((node, uuid, model, milli-share), ...)``: one entry per device grant of the booking
    (a grant takes one slot and its cores share); derived from ``booking``."""

    def __post_init__(self) -> None:
        grants = tuple(
            (pod.node, g.uuid, g.model, 10 * g.cores_percent)
            for pod in self.booking.pods
            for c in pod.containers
            for g in c.devices
        )
        object.__setattr__(self, "grants", grants)


@dataclass(frozen=True, slots=True)
class Move:
    """One job moved: from ``source`` (its old booking) to ``target`` (its new placement)."""

    job_id: str
    source: Decision
    target: Decision


@dataclass(frozen=True, slots=True)
class ConsolidationPlan:
    """The moves, in order, and the request's placement once they are done; for a request
    under a ``required`` topology (module doc, step 5) the domain the moves empty: ``level``
    its label key and ``domain`` its values down to that level joined with ``/``
    (``"zone-a/block-0/rack-1"``, as :func:`~scheduling.placement.topology_index.domain_of`
    names it); both "" otherwise."""

    moves: tuple[Move, ...]
    placement: Decision
    level: str = ""
    domain: str = ""


@dataclass(frozen=True, slots=True)
class ConsolidationResult:
    """Outcome of :func:`plan_consolidation`.

    Attributes:
        plan: the plan, or None.
        reason: why there is no plan ("" when there is one).
        tries: candidate sets tried (each one placement of the request at least).
    """

    plan: ConsolidationPlan | None
    reason: str = ""
    tries: int = 0


def _device_requests(request: PlacementRequest) -> list[tuple[PodRequest, DeviceRequest]]:
    return [
        (pod, dr) for pod in request.pods for c in pod.containers if not c.init for dr in c.devices
    ]


def _serves(device: DeviceUsage, dr: DeviceRequest, model_only: bool = False) -> bool:
    """True when ``device`` could serve request ``dr`` (vendor, models and, unless
    ``model_only``, health)."""
    if device.vendor != dr.vendor:
        return False
    if not model_only and (device.error or not device.healthy or device.cordoned):
        return False
    if dr.types_include and not any_type_matches(device.type, dr.types_include):
        return False
    return not type_excluded(device.type, dr.types_exclude)


def _share_milli(dr: DeviceRequest, device: DeviceUsage) -> int:
    """Share of ``device`` one unit of ``dr`` takes, in milli-device (cores or memory,
    whichever is larger; an unset amount books the whole device, as HAMi does)."""
    if dr.memory_mib:
        mem = 1000 * dr.memory_mib // max(1, device.memory_mib)
    elif dr.memory_percent is not None:
        mem = 10 * dr.memory_percent
    else:
        mem = 1000
    return min(1000, max(mem, 10 * min(100, dr.cores_percent)))


def fragmented(cluster: ClusterSnapshot, request: PlacementRequest) -> bool:
    """True when the request's total demand fits the free capacity in aggregate: for every
    device request, the free milli-share (:func:`~scheduling.placement.fragmentation.
    device_free_milli`) summed over the schedulable devices that could serve it covers
    ``count`` x its share, and the nodes' free CPU covers the pods' CPU. A request that
    fails this test lacks capacity, not contiguity."""
    devices = [
        d for n in cluster.nodes.values() if n.schedulable and not n.error for d in n.devices
    ]
    for _pod, dr in _device_requests(request):
        serving = [d for d in devices if _serves(d, dr)]
        free = sum(device_free_milli(d) for d in serving)
        need = dr.count * max((_share_milli(dr, d) for d in serving), default=1000)
        if not serving or free < need:
            return False
    free_cpu = sum(n.cpu_milli - n.used_cpu_milli for n in cluster.nodes.values() if n.schedulable)
    return free_cpu >= sum(p.cpu_milli for p in request.pods)


def _raw_free_milli(d: DeviceUsage) -> int:
    """Free share of ``d`` in milli-device, ignoring slots (min of cores and memory)."""
    if d.cores_percent <= 0 or d.memory_mib <= 0:
        return 0
    cores = (d.cores_percent - d.used_cores_percent) * 1000 // d.cores_percent
    return min(cores, (d.memory_mib - d.used_memory_mib) * 1000 // d.memory_mib)


class _Room:
    """What the cheap tests read, computed once per :func:`plan_consolidation` call: each
    schedulable device's free share (milli) and free slots, the request's share on every
    device that could serve each of its device requests, how many devices per node fit each
    device request now, and per device model its devices' free shares (with a slot) with the
    free CPU and host memory of their nodes."""

    def __init__(self, cluster: ClusterSnapshot, request: PlacementRequest) -> None:
        self.cluster = cluster
        self.requests = [dr for _pod, dr in _device_requests(request)]
        self.cpu_need = max((p.cpu_milli for p in request.pods), default=0)
        self.mem_need = max((p.memory_mib for p in request.pods), default=0)
        self.free: dict[str, tuple[int, int]] = {}
        self.free_nodes: list[str] = []  # the nodes whose devices ``free`` holds
        self.share: list[dict[str, int]] = [{} for _ in self.requests]
        self.base: list[dict[str, int]] = [{} for _ in self.requests]
        best: dict[str, list[tuple[int, int, int]]] = {}
        shares: dict[tuple[int, str, str, int], int | None] = {}  # per (request, model, size)
        for node in cluster.nodes.values():
            if not node.schedulable or node.error or node.unmatched_bookings():
                continue
            self.free_nodes.append(node.name)
            for d in node.devices:
                free, slots = _raw_free_milli(d), d.split_count - d.used_slots
                self.free[d.uuid] = (free, slots)
                usable = d.healthy and not d.cordoned and not d.error
                for i, dr in enumerate(self.requests):
                    key = (i, d.type, d.vendor, d.memory_mib)
                    if key not in shares:
                        shares[key] = _share_milli(dr, d) if _serves(d, dr, True) else None
                    share = shares[key]
                    if share is not None and usable:
                        self.share[i][d.uuid] = share
                        if slots > 0 and free >= share:
                            self.base[i][node.name] = self.base[i].get(node.name, 0) + 1
                if slots > 0 and usable:
                    host = (
                        node.cpu_milli - node.used_cpu_milli,
                        node.memory_mib - node.used_memory_mib,
                    )
                    best.setdefault(d.type, []).append((free, *host))
        # per model: (free share, free CPU, free host memory) of its devices, largest share first
        self.rows = {model: sorted(rows, reverse=True) for model, rows in best.items()}
        self._fits: dict[tuple[str, int, int, int], bool] = {}

    def fragmented(self, request: PlacementRequest) -> bool:
        """:func:`fragmented` from the cached free shares."""
        for i, dr in enumerate(self.requests):
            share = self.share[i]
            free = sum(self.free[u][0] for u in share if self.free[u][1] > 0)
            if not share or free < dr.count * max(share.values()):
                return False
        nodes = self.cluster.nodes.values()
        free_cpu = sum(n.cpu_milli - n.used_cpu_milli for n in nodes if n.schedulable)
        return free_cpu >= sum(p.cpu_milli for p in request.pods)

    def could_fit(self, node_name: str, jobs: Sequence[MovableJob]) -> bool:
        """Necessary test: with ``jobs`` gone, node ``node_name`` has the CPU and the host
        memory of the request's largest pod and, for each device request, ``count`` serving
        devices with a free slot and enough free share."""
        node = self.cluster.nodes[node_name]
        freed: dict[str, tuple[int, int]] = {}
        cpu = node.cpu_milli - node.used_cpu_milli
        mem = node.memory_mib - node.used_memory_mib
        for job in jobs:
            for where, uuid, _model, milli in job.grants:
                if where == node_name:
                    m0, s0 = freed.get(uuid, (0, 0))
                    freed[uuid] = (m0 + milli, s0 + 1)
            cpu += sum(p.cpu_milli for p in job.booking.pods if p.node == node_name)
            mem += sum(p.memory_mib for p in job.booking.pods if p.node == node_name)
        if cpu < self.cpu_need or mem < self.mem_need:
            return False
        for i, dr in enumerate(self.requests):
            ok = self.base[i].get(node_name, 0)
            for uuid, (milli, slots) in freed.items():
                share = self.share[i].get(uuid)
                if share is None or uuid not in self.free:
                    continue
                free, free_slots = self.free[uuid]
                if not (free_slots > 0 and free >= share):  # not counted in base yet
                    ok += free_slots + slots > 0 and min(1000, free + milli) >= share
            if ok < dr.count:
                return False
        return True

    def may_move(self, job: MovableJob) -> bool:
        """Necessary test: every grant of ``job`` fits the free share of some device of the
        same model (with a free slot) on a node with the free CPU and host memory of the
        grant's pod (answers memoised per grant shape)."""
        pods = {p.node: p for p in job.booking.pods}
        for node, _uuid, model, milli in job.grants:
            pod = pods[node]
            key = (model, milli, pod.cpu_milli, pod.memory_mib)
            fits = self._fits.get(key)
            if fits is None:
                fits = self._fits[key] = self._room_for(*key)
            if not fits:
                return False
        return True

    def _room_for(self, model: str, milli: int, cpu_milli: int, memory_mib: int) -> bool:
        """Some device of ``model`` has ``milli`` free on a node with that CPU and memory."""
        for free, cpu, mem in self.rows.get(model, ()):
            if free < milli:
                return False
            if cpu >= cpu_milli and mem >= memory_mib:
                return True
        return False


def _units(
    request: PlacementRequest, movable: Sequence[MovableJob]
) -> dict[tuple[str, str], list[MovableJob]]:
    """Movable jobs grouped by the unit a set frees: ``(node, uuid)`` per device when the
    request asks one device in all (a whole device is freed), else ``(node, "")`` per node."""
    per_device = [dr.count for _pod, dr in _device_requests(request)] == [1]
    units: dict[tuple[str, str], list[MovableJob]] = {}
    for job in movable:
        keys = {(node, uuid if per_device else "") for node, uuid, _m, _s in job.grants} or {
            (p.node, "") for p in job.booking.pods
        }
        for key in keys:
            units.setdefault(key, []).append(job)
    return units


def _candidate_sets(
    cluster: ClusterSnapshot,
    room: _Room,
    request: PlacementRequest,
    movable: Sequence[MovableJob],
    max_moves: int,
) -> list[tuple[MovableJob, ...]]:
    """Every candidate set (module doc, steps 2-3), best first. A job that fits no other
    device of its model is left out; a unit (device or node) is skipped at once when even all
    of its movable jobs gone would not make room."""
    movable = [j for j in movable if room.may_move(j)]
    sets: dict[tuple[str, ...], tuple[MovableJob, ...]] = {}
    for (node, _uuid), jobs in sorted(_units(request, movable).items()):
        if node not in cluster.nodes:
            continue
        jobs = sorted(jobs, key=_disruption)[:MAX_CANDIDATES_PER_NODE]
        if not room.could_fit(node, jobs):
            continue
        for k in range(1, min(max_moves, len(jobs)) + 1):
            for combo in combinations(jobs, k):
                key = tuple(sorted(j.id for j in combo))
                if key not in sets and room.could_fit(node, combo):
                    sets[key] = combo
    return sorted(
        sets.values(),
        key=lambda s: (
            len(s),
            sum(j.priority for j in s),
            sum(j.running_s for j in s),
            tuple(sorted(j.id for j in s)),
        ),
    )


def _disruption(job: MovableJob) -> tuple:
    return (job.priority, job.running_s, job.id)


def _same_models(job: MovableJob) -> PlacementRequest:
    """The job's request limited to the device models it holds now (same flavor, so the
    same quota charges)."""
    models = sorted({g.model for p in job.booking.pods for c in p.containers for g in c.devices})
    if not models or not all(models):
        return replace(job.request, min_pods=None)
    pods = tuple(
        replace(
            pod,
            containers=tuple(
                replace(
                    c, devices=tuple(replace(dr, types_include=tuple(models)) for dr in c.devices)
                )
                for c in pod.containers
            ),
        )
        for pod in job.request.pods
    )
    return replace(job.request, pods=pods, min_pods=None)


def _place_elsewhere(
    cluster: ClusterSnapshot,
    job: MovableJob,
    framework: Framework,
    avoid: frozenset[str] = frozenset(),
) -> Decision:
    """Place ``job`` again with the devices it holds fenced (cordoned in the snapshot for the
    call, so the placement core - fast path included - never offers them) and the nodes
    ``avoid`` names (a target domain's) unschedulable for the call."""
    held = {g.uuid for p in job.booking.pods for c in p.containers for g in c.devices}
    fenced = []
    for pod in job.booking.pods:
        node = cluster.nodes[pod.node]
        for d in node.devices:
            if d.uuid in held and not d.cordoned:
                d.cordoned = True
                fenced.append((node.name, d))
    closed = [cluster.nodes[n] for n in sorted(avoid) if cluster.nodes[n].schedulable]
    for node in closed:
        node.schedulable = False
    touched = {n for n, _ in fenced} | {node.name for node in closed}
    for name in touched:
        cluster.touch(name)
    try:
        return place(cluster, _same_models(job), framework)
    finally:
        for _, d in fenced:
            d.cordoned = False
        for node in closed:
            node.schedulable = True
        for name in touched:
            cluster.touch(name)


def _try(
    cluster: ClusterSnapshot,
    request: PlacementRequest,
    combo: Sequence[MovableJob],
    framework: Framework,
    target: TargetDomain | None = None,
) -> ConsolidationPlan | None:
    """Try one candidate set (module doc, step 4; with ``target``, step 5: the request placed
    inside the domain, the moved jobs outside it); the snapshot is restored on return.

    Raises:
        ValueError: a booking does not match the snapshot (the snapshot is restored).
    """
    released: list[MovableJob] = []
    undo: list[Decision] = []  # decisions booked by this try (unbooked on return)
    try:
        for job in combo:
            unreserve(cluster, job.booking)
            released.append(job)
        inside = request if target is None else target.request
        placement = place(cluster, inside, framework)
        if not placement.schedulable:
            return None
        reserve(cluster, placement)
        undo.append(placement)
        moves = []
        for job in combo:
            avoid = frozenset() if target is None else target.nodes
            moved = _place_elsewhere(cluster, job, framework, avoid)
            if not moved.schedulable:
                return None
            reserve(cluster, moved)
            undo.append(moved)
            moves.append(Move(job.id, job.booking, moved))
        if target is None:
            return ConsolidationPlan(tuple(moves), placement)
        return ConsolidationPlan(tuple(moves), placement, target.level, target.name)
    finally:
        for decision in reversed(undo):
            unreserve(cluster, decision)
        for job in reversed(released):
            reserve(cluster, job.booking)


def plan_consolidation(
    cluster: ClusterSnapshot,
    request: PlacementRequest,
    movable: Sequence[MovableJob],
    *,
    max_moves: int,
    profile: Profile | Framework | None = None,
    max_tries: int = DEFAULT_MAX_TRIES,
) -> ConsolidationResult:
    """Find the fewest, least disruptive moves that let ``request`` be placed (module doc).

    Args:
        cluster: the snapshot with every booking (movable jobs' included); left unchanged.
        request: the pending request (placed as a whole; ``min_pods`` is ignored).
        movable: the jobs that may move (the caller filters preemptible / opted in / same
            group / past minimum runtime / priority).
        max_moves: at most this many jobs move (the remaining move budget); 0 = none.
        profile: the placement profile used for the request and the moved jobs.
        max_tries: candidate sets tried at most.

    Returns:
        The plan (moves in order, the request's placement), or None with the reason.

    Raises:
        ValueError: a movable job's ``booking`` is not what the snapshot holds (the snapshot
            is left unchanged).
    """
    framework = profile if isinstance(profile, Framework) else (profile or Profile()).build()
    whole = replace(request, min_pods=None)
    if max_moves <= 0:
        return ConsolidationResult(None, "the move budget is spent")
    if not movable:
        return ConsolidationResult(None, "no running job may be moved")
    if place(cluster, whole, framework).schedulable:
        return ConsolidationResult(None, "the request fits without moves")
    room = _Room(cluster, whole)
    if not room.fragmented(whole):
        return ConsolidationResult(None, "not enough free capacity even if it were contiguous")
    required = required_domain_level(whole)
    if required is not None and not fits_in_aggregate(cluster, room, whole):
        return ConsolidationResult(None, "not enough free capacity even if it were contiguous")
    tries = 0
    sets: list[tuple[TargetDomain | None, tuple[MovableJob, ...]]]
    if required is None:
        sets = [(None, c) for c in _candidate_sets(cluster, room, whole, movable, max_moves)]
    else:
        sets = list(domain_candidate_sets(cluster, room, whole, movable, max_moves, *required))
    for target, combo in sets:
        if tries >= max_tries:
            break
        tries += 1
        plan = _try(cluster, whole, combo, framework, target)
        if plan is not None:
            return ConsolidationResult(plan, "", tries)
    where = "" if required is None else f" in one {level_word(required[1])}"
    return ConsolidationResult(
        None, f"no set of at most {max_moves} movable job(s) frees enough room{where}", tries
    )


def apply_plan(cluster: ClusterSnapshot, plan: ConsolidationPlan) -> None:
    """Book ``plan`` in ``cluster``: unbook each move's source, book its target and the
    request's placement (the snapshot ``plan_consolidation`` saw, or one in the same state).

    Raises:
        ValueError: a booking does not match the snapshot (nothing half-applied is left for
            the failing decision; earlier ones stay applied).
    """
    for move in plan.moves:
        unreserve(cluster, move.source)
    reserve(cluster, plan.placement)
    for move in plan.moves:
        reserve(cluster, move.target)
