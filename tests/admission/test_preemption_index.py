"""The preemption searches on the cycle's running index decide exactly as the scans did.

The reference functions below are the candidate collections as they were before the index
(``find_candidates`` / ``collect_classical`` scanning and sorting every running job, one
rejection record per job, the rejection lines counting ``RejectedCandidate.kind`` per job).
Randomized worlds (tenant trees with cohorts, quotas that borrow or not, priorities, every
preemption policy, protections, preemption delay, fair sharing on and off) compare the
candidate lists, their order and variants, the rejections, and whole cycle results.
"""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from scheduling.admission import bench_tail, candidates, cycle, fair_preemption, preemption
from scheduling.admission.candidates import (
    Ask,
    Candidate,
    CandidateLists,
    Search,
    Variant,
    _classify,
    eligible,
)
from scheduling.admission.cycle import AdmissionCycle
from scheduling.admission.placer import PlacementOutcome
from scheduling.admission.policy import (
    RECLAIM_WITHIN_COHORT_POLICIES,
    WITHIN_CLUSTER_QUEUE_POLICIES,
    BorrowWithinCohort,
    BorrowWithinCohortPolicy,
    PreemptionPolicy,
)
from scheduling.admission.running_index import RunningIndex
from scheduling.admission.types import (
    AdmissionSnapshot,
    CohortOptions,
    CycleConfig,
    Dimension,
    Flavor,
    GroupKind,
    GroupSpec,
    PendingWorkload,
    PriorityClassSpec,
    QueueSpec,
    QuotaSpec,
    RunningWorkload,
    TenantSpec,
)

NOW = datetime(2026, 12, 1, tzinfo=UTC)
FLAVORS = ("a100", "t4")
PER_NODE = 4

# -- reference: the collections before the running index ---------------------------------------


def ref_jobs_by_tenant(search: Search) -> dict[str, list[RunningWorkload]]:
    out: dict[str, list[RunningWorkload]] = {}
    for workload in sorted(search.cycle.running.values(), key=lambda w: w.id):
        if search.uses_needed(workload):
            out.setdefault(workload.tenant, []).append(workload)
    return out


def ref_find_candidates(search: Search) -> list[RunningWorkload]:
    tree, queue, node = search.tree, search.ask.queue, search.node
    out = []
    for tenant, jobs in ref_jobs_by_tenant(search).items():
        if tenant == node.name:
            policy, name = queue.within_cluster_queue, "withinClusterQueue"
        else:
            policy, name = queue.reclaim_within_cohort, "reclaimWithinCohort"
            if policy != PreemptionPolicy.NEVER and tree.within_nominal_in(
                tree.node(tenant), search.ask.frs
            ):
                for workload in jobs:
                    search.reject(workload, f"borrower within nominal: tenant {tenant}")
                continue
        for workload in jobs:
            if policy == PreemptionPolicy.NEVER:
                search.reject(workload, f"{name}: Never")
            elif eligible(search, workload, policy, name):
                out.append(workload)
    return sorted(out, key=search.order_key)


def ref_collect_classical(search: Search) -> CandidateLists:
    lists = CandidateLists()
    by_tenant = ref_jobs_by_tenant(search)
    queue, node = search.ask.queue, search.node
    for workload in by_tenant.get(node.name or "", []):
        if queue.within_cluster_queue == PreemptionPolicy.NEVER:
            search.reject(workload, "withinClusterQueue: Never")
        elif eligible(search, workload, queue.within_cluster_queue, "withinClusterQueue"):
            lists.same.append(Candidate(workload, Variant.WITHIN_TENANT))
    if queue.reclaim_within_cohort == PreemptionPolicy.NEVER:
        for name, jobs in by_tenant.items():
            for workload in jobs if name != node.name else ():
                search.reject(workload, "reclaimWithinCohort: Never")
        return lists
    tree = search.tree
    advantage, remaining = tree.fits_in_quota(node, search.ask.requests)
    _ref_subtree(search, by_tenant, node, None, node, advantage, lists)
    previous = node
    for ancestor in node.path_to_root():
        _ref_subtree(search, by_tenant, ancestor, previous, ancestor, advantage, lists)
        fits, remaining = tree.fits_in_quota(ancestor, remaining)
        advantage = advantage or fits
        previous = ancestor
    return lists


def _ref_subtree(search, by_tenant, current, skip, lca, advantage, lists) -> None:  # noqa: ANN001
    tree, frs = search.tree, search.ask.frs
    if current.name is not None and current is not search.node:
        _ref_take(search, by_tenant, current, lca, advantage, lists)
    for child in current.children:
        if child is skip or child is search.node:
            continue
        if tree.within_nominal_in(child, frs):
            rule = (
                f"subtree within quota: {child.name}"
                if child.children
                else f"borrower within nominal: tenant {child.name}"
            )
            for name in tree.descendants(child.name or ""):
                for workload in by_tenant.get(name, []):
                    search.reject(workload, rule)
            continue
        if child.children:
            _ref_subtree(search, by_tenant, child, None, lca, advantage, lists)
        else:
            _ref_take(search, by_tenant, child, lca, advantage, lists)


def _ref_take(search, by_tenant, node, lca, advantage, lists) -> None:  # noqa: ANN001
    jobs = by_tenant.get(node.name or "", [])
    if jobs and search.tree.within_nominal_in(node, search.ask.frs):
        for workload in jobs:
            search.reject(workload, f"borrower within nominal: tenant {node.name}")
        return
    for workload in jobs:
        if not eligible(
            search, workload, search.ask.queue.reclaim_within_cohort, "reclaimWithinCohort"
        ):
            continue
        variant = _classify(search, workload, advantage)
        target = lists.hierarchy if variant == Variant.HIERARCHICAL_RECLAIM else lists.priority
        target.append(Candidate(workload, variant, lca))


def ref_rejection_lines(tenant: str, rejected: tuple) -> list[str]:
    own = [
        f"preemption: {r.workload_id} rejected: {r.rule}" for r in rejected if r.tenant == tenant
    ]
    kinds = Counter(r.kind for r in rejected if r.tenant != tenant)
    lines = own[: cycle.MAX_DETAIL_LINES]
    if len(own) > cycle.MAX_DETAIL_LINES:
        lines.append(f"preemption: and {len(own) - cycle.MAX_DETAIL_LINES} more of tenant {tenant}")
    if kinds:
        parts = ", ".join(f"{kind} x{count}" for kind, count in sorted(kinds.items()))
        lines.append(f"preemption: {sum(kinds.values())} job(s) of other tenants rejected: {parts}")
    return lines


# -- randomized worlds --------------------------------------------------------------------------


def _charges(flavor: str, devices: int) -> dict:
    return {
        (flavor, Dimension.DEVICES): 1000 * devices,
        (flavor, Dimension.MEMORY_MIB): 1024 * devices,
        (flavor, Dimension.CORES_PERCENT): 100 * devices,
    }


class FlavorPlacer:
    """Whole devices per node and flavor; ``request`` = ``(flavor, devices per pod)``; first
    fit by node name."""

    def __init__(self, nodes: dict[str, str]) -> None:
        self.flavor = nodes
        self.free = dict.fromkeys(nodes, PER_NODE)
        self.held: dict[str, list] = {}

    def _fit(self, workload, pod_count, flavors, free):  # noqa: ANN001, ANN202
        flavor, need = workload.request
        allowed = flavors[0] if flavors else None
        if allowed is not None and flavor not in allowed:
            return []
        spare, out = dict(free), []
        for _ in range(pod_count):
            node = next(
                (n for n in sorted(spare) if self.flavor[n] == flavor and spare[n] >= need), None
            )
            if node is None:
                return []
            spare[node] -= need
            out.append((node, need))
        return out

    def _outcome(self, workload, pods) -> PlacementOutcome:  # noqa: ANN001
        if not pods:
            return PlacementOutcome(False, reason="no room")
        flavor = workload.request[0]
        return PlacementOutcome(True, len(pods), _charges(flavor, sum(k for _, k in pods)), pods)

    def try_place(self, workload, pod_count, flavors=None) -> PlacementOutcome:  # noqa: ANN001
        return self._outcome(workload, self._fit(workload, pod_count, flavors, self.free))

    def estimate(self, workload, pod_count, flavors=None) -> PlacementOutcome:  # noqa: ANN001
        empty = dict.fromkeys(self.free, PER_NODE)
        return self._outcome(workload, self._fit(workload, pod_count, flavors, empty))

    def hold(self, workload_id: str, pods: list):  # noqa: ANN201
        for node, count in pods:
            self.free[node] -= count
        self.held[workload_id] = pods

        def undo() -> None:
            for node, count in self.held.pop(workload_id):
                self.free[node] += count

        return undo

    def reserve(self, workload, outcome):  # noqa: ANN001, ANN201
        return self.hold(workload.id, list(outcome.token))

    def remove(self, workload_id: str):  # noqa: ANN201
        pods = self.held.pop(workload_id)
        for node, count in pods:
            self.free[node] += count
        return lambda: self.hold(workload_id, pods)


def world(seed: int) -> tuple[AdmissionSnapshot, FlavorPlacer, CycleConfig]:
    rnd = random.Random(seed)
    tenants = [TenantSpec("dept"), TenantSpec("a", "dept"), TenantSpec("b", "dept")]
    tenants += [TenantSpec(f"t{i}") for i in range(rnd.randint(1, 3))]
    names = [t.name for t in tenants]
    leaves = [n for n in names if n != "dept"]
    nodes = {f"n{i:03d}": FLAVORS[i % 2 if rnd.random() < 0.8 else 0] for i in range(24)}
    placer = FlavorPlacer(nodes)
    quotas = []
    for tenant in names:
        for flavor in FLAVORS:
            if rnd.random() < 0.85:
                devices = rnd.randint(0, 24)
                limit = rnd.choice([None, None, rnd.randint(0, 8)])
                for fr, amount in _charges(flavor, devices).items():
                    quotas.append(QuotaSpec(tenant, flavor, fr[1], amount, borrowing_limit=limit))
    classes = (PriorityClassSpec("high", 5), PriorityClassSpec("frozen", 1, preemptible=False))
    running = []
    for i, (node, flavor) in enumerate(sorted(nodes.items())):
        for slot in range(rnd.randint(0, PER_NODE)):
            workload_id = f"r{rnd.randint(0, 10**6):07d}-{i}-{slot}"
            placer.hold(workload_id, [(node, 1)])
            created = NOW - timedelta(seconds=rnd.randint(10, 5000))
            running.append(
                RunningWorkload(
                    id=workload_id,
                    tenant=rnd.choice(leaves + ["dept"]),
                    priority=rnd.choice([0, 0, 1, 2, 5]),
                    started_at=created + timedelta(seconds=rnd.randint(0, 9)),
                    charges=_charges(flavor, 1),
                    min_runtime_s=rnd.choice([0.0, 0.0, 0.0, 3600.0]),
                    preemptible=rnd.random() < 0.9,
                    created_at=rnd.choice([created, None]),
                    priority_class=rnd.choice([None, None, "high", "frozen"]),
                    terminating=rnd.random() < 0.05,
                    evict_by=NOW + timedelta(seconds=30),
                )
            )
    queues = []
    for t in leaves:
        reclaim = rnd.choice(sorted(RECLAIM_WITHIN_COHORT_POLICIES))
        borrow = rnd.choice(
            [
                BorrowWithinCohort(),
                BorrowWithinCohort(BorrowWithinCohortPolicy.LOWER_PRIORITY),
                BorrowWithinCohort(BorrowWithinCohortPolicy.LOWER_PRIORITY, 1),
            ]
        )
        queues.append(
            QueueSpec(
                f"q-{t}",
                t,
                within_cluster_queue=rnd.choice(sorted(WITHIN_CLUSTER_QUEUE_POLICIES)),
                reclaim_within_cohort=reclaim,
                borrow_within_cohort=BorrowWithinCohort()
                if reclaim == PreemptionPolicy.NEVER
                else borrow,
                flavors=rnd.choice([(), FLAVORS, ("t4", "a100")]),
            )
        )
    pending = tuple(
        PendingWorkload(
            id=f"p{h:03d}",
            tenant=(tenant := rnd.choice(leaves)),
            queue=f"q-{tenant}",
            priority=rnd.choice([0, 1, 2, 5]),
            created_at=NOW - timedelta(seconds=rnd.randint(0, 6000)),
            pod_count=rnd.choice([1, 1, 2]),
            request=(rnd.choice(FLAVORS), rnd.choice([1, 1, 2, 4])),
            preemptible=rnd.random() < 0.9,
        )
        for h in range(rnd.randint(3, 14))
    )
    snapshot = AdmissionSnapshot(
        group=GroupSpec("g", GroupKind.SHARED, (Flavor("a100", ("A100",)), Flavor("t4", ("T4",)))),
        tenants=tuple(tenants),
        quotas=tuple(quotas),
        queues=tuple(queues),
        pending=pending,
        running=tuple(running),
        now=NOW,
        priority_classes=classes,
        options=CohortOptions(fair_sharing=rnd.choice([None, True, False])),
    )
    config = CycleConfig(
        preemption_delay_s=rnd.choice([0.0, 0.0, 1800.0]), fair_sharing=rnd.random() < 0.6
    )
    return snapshot, placer, config


def _asks(snapshot: AdmissionSnapshot, the_cycle: AdmissionCycle, rnd: random.Random) -> list:
    out = []
    queues = {q.name: q for q in snapshot.queues}
    for entry in snapshot.pending:
        flavor = entry.request[0]
        requests = _charges(flavor, entry.request[1] * entry.pod_count)
        frs = frozenset(
            rnd.sample(sorted(requests), rnd.randint(1, 3))
            if rnd.random() < 0.7
            else [(f, d) for f in FLAVORS for d in Dimension if d in {fr[1] for fr in requests}]
        )
        out.append(
            Ask(entry, queues[entry.queue], entry.pod_count, None, requests, frs, entry.preemptible)
        )
    return out


def _rejected(search: Search) -> dict:
    return {k: (r.tenant, r.rule) for k, r in search.rejected.items()}


def _lists(lists: CandidateLists, search: Search) -> list:
    return [
        (c.workload.id, c.variant, c.lca.name if c.lca is not None else None)
        for c in lists.ordered(search)
    ]


@pytest.mark.parametrize("seed", range(60))
def test_candidate_collections_match_the_scans(seed: int) -> None:
    snapshot, placer, config = world(seed)
    the_cycle = AdmissionCycle(snapshot, placer, config)
    rnd = random.Random(seed)
    compared = 0
    for ask in _asks(snapshot, the_cycle, rnd):
        new, old = Search(the_cycle, ask), Search(the_cycle, ask)
        assert [w.id for w in fair_preemption.find_candidates(new)] == [
            w.id for w in ref_find_candidates(old)
        ]
        assert _rejected(new) == _rejected(old)
        new, old = Search(the_cycle, ask), Search(the_cycle, ask)
        assert _lists(candidates.collect_classical(new), new) == _lists(
            ref_collect_classical(old), old
        )
        assert _rejected(new) == _rejected(old)
        compared += len(old.rejected)
    assert compared or not snapshot.running


def _run(snapshot: AdmissionSnapshot, placer: FlavorPlacer, config: CycleConfig, reference: bool):
    if not reference:
        return AdmissionCycle(snapshot, placer, config).run()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fair_preemption, "find_candidates", ref_find_candidates)
        patch.setattr(preemption, "collect_classical", ref_collect_classical)
        patch.setattr(cycle, "_rejection_lines", ref_rejection_lines)
        return AdmissionCycle(snapshot, placer, config).run()


@pytest.mark.parametrize("seed", range(60))
def test_cycle_results_match_the_scans(seed: int) -> None:
    snapshot, placer, config = world(seed)
    old = _run(snapshot, world(seed)[1], config, reference=True)
    new = _run(snapshot, placer, config, reference=False)
    assert new == old
    for verdict in new.pending:
        assert [r.workload_id for r in verdict.rejected] == sorted(
            r.workload_id for r in verdict.rejected
        )


def test_the_worlds_exercise_every_path() -> None:
    """The randomized worlds reach candidates, victims and every rejection kind."""
    kinds, preempted, admitted, capped = Counter(), 0, 0, 0
    for seed in range(60):
        snapshot, placer, config = world(seed)
        result = AdmissionCycle(snapshot, placer, config).run()
        preempted += len(result.preempted)
        admitted += len(result.admitted)
        kinds.update(r.kind.split(" ")[0] for v in result.pending for r in v.rejected)
        capped += sum("more of tenant" in d for v in result.pending for d in v.details)
    assert preempted >= 20
    assert admitted >= 20
    assert capped > 0  # the own-tenant lines past MAX_DETAIL_LINES are counted
    for kind in (
        "withinClusterQueue",
        "reclaimWithinCohort",
        "borrower",
        "non-preemptible",
        "minimum",
        "preemption",
    ):
        assert kinds[kind] > 0, kinds


def test_index_groups_and_shares_rejections() -> None:
    jobs = {
        w.id: w
        for w in (
            RunningWorkload("j3", "a", 1, NOW, _charges("a100", 1)),
            RunningWorkload("j1", "a", 0, NOW, _charges("t4", 1)),
            RunningWorkload("j2", "b", 0, NOW, _charges("a100", 1)),
            RunningWorkload("j0", "a", 0, NOW, _charges("a100", 1)),
        )
    }
    index = RunningIndex(jobs)
    a100 = frozenset({("a100", Dimension.DEVICES)})
    assert {t: [w.id for w in ws] for t, ws in index.by_tenant(a100).items()} == {
        "a": ["j0", "j3"],
        "b": ["j2"],
    }
    assert [(p, [w.id for w in ws]) for p, ws in index.by_priority(a100, "a")] == [
        (0, ["j0"]),
        (1, ["j3"]),
    ]
    first = index.rejections(("a",), index.by_tenant(a100)["a"], "rule")
    assert first is index.rejections(("a",), index.by_tenant(a100)["a"], "rule")
    assert [(r.workload_id, r.tenant, r.rule) for r in first.values()] == [
        ("j0", "a", "rule"),
        ("j3", "a", "rule"),
    ]


@pytest.mark.parametrize("scenario", ["fair", "classical", "mixed"])
def test_the_tail_benchmark_world_is_what_it_says(scenario: str) -> None:
    """``bench_tail``'s worlds: a full cluster, heads that do not fit, and (fair/classical)
    every running job rejected by the search; ``measure`` reports them all."""
    world = bench_tail.build(scenario, 80, 6)
    result = AdmissionCycle(world.snapshot, world.placer, world.config).run()
    assert result.admitted == () and result.preempted == ()
    assert len(result.pending) == 6
    if scenario != "mixed":
        assert all(len(v.rejected) == 80 for v in result.pending)
    else:  # lower-priority jobs past their minimum runtime are candidates that do not help
        assert any(len(v.rejected) < 80 for v in result.pending)
    figures = bench_tail.measure(bench_tail.build(scenario, 80, 6))
    assert (figures["heads_not_admitted"], figures["admitted"], figures["running"]) == (6, 0, 80)
