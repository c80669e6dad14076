"""Small builders for admission-core tests (no Django)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from scheduling.admission import (
    AdmissionSnapshot,
    AggregateCapSpec,
    CohortOptions,
    CycleConfig,
    Dimension,
    Flavor,
    GroupKind,
    GroupSpec,
    PendingWorkload,
    PriorityClassSpec,
    QueueingStrategy,
    QueueSpec,
    QuotaSpec,
    RunningWorkload,
    TenantSpec,
    run_cycle,
)
from scheduling.admission.fake import PodShape, PoolPlacer
from scheduling.placement.types import DeviceUsage

NOW = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)
A100 = "NVIDIA-A100-SXM4-80GB"
A100_MIB = 81920
T4 = "Tesla-T4"
T4_MIB = 15360
DEV = Dimension.DEVICES
MEM = Dimension.MEMORY_MIB
CORES = Dimension.CORES_PERCENT
WHOLE = PodShape(devices=1)
NO_FAIR = CycleConfig(fair_sharing=False)


def ago(seconds: float) -> datetime:
    return NOW - timedelta(seconds=seconds)


H100 = "NVIDIA-H100-80GB-HBM3"
H100_MIB = 81920


def group(kind: GroupKind = GroupKind.SHARED, name: str = "a100-shared") -> GroupSpec:
    return GroupSpec(
        name=name,
        kind=kind,
        flavors=(Flavor("a100", (A100,)), Flavor("h100", (H100,)), Flavor("t4", (T4,))),
    )


def a100s(
    nodes: int, per_node: int = 4, model: str = A100, prefix: str = "n", first: int = 1
) -> list[DeviceUsage]:
    return [
        DeviceUsage(
            uuid=f"{prefix}{n}-gpu{i}",
            node=f"{prefix}{n}",
            index=i,
            type=model,
            vendor="NVIDIA",
            memory_mib=A100_MIB,
        )
        for n in range(first, first + nodes)
        for i in range(per_node)
    ]


def h100s(nodes: int, per_node: int = 4) -> list[DeviceUsage]:
    return a100s(nodes, per_node, model=H100, prefix="h")


def ids(result) -> list[str]:
    """Ids of the admitted workloads, in admission order."""
    return [a.workload_id for a in result.admitted]


def verdicts(result) -> dict[str, tuple]:
    """``{workload id: (code, reason, position, details)}`` of the pending verdicts."""
    return {v.workload_id: (v.code, v.reason, v.position, v.details) for v in result.pending}


def quota(
    tenant: str,
    nominal: int,
    dim: Dimension = DEV,
    flavor: str = "a100",
    borrowing_limit: int | None = None,
    lending_limit: int | None = None,
) -> QuotaSpec:
    return QuotaSpec(tenant, flavor, dim, nominal, borrowing_limit, lending_limit)


def gpus(n: float) -> int:
    """Whole GPUs in milli-devices."""
    return int(n * 1000)


class World:
    """A resource group, its tenants and quotas, a pool placer and the workloads."""

    def __init__(
        self,
        devices: list[DeviceUsage],
        kind: GroupKind = GroupKind.SHARED,
        tenants: tuple[TenantSpec, ...] = (TenantSpec("team-a"), TenantSpec("team-b")),
        quotas: tuple[QuotaSpec, ...] = (),
        strategy: QueueingStrategy = QueueingStrategy.BEST_EFFORT_FIFO,
        caps: tuple[AggregateCapSpec, ...] = (),
        options: CohortOptions | None = None,
        classes: tuple[PriorityClassSpec, ...] = (),
        **queue: object,
    ) -> None:
        self.group = group(kind)
        self.tenants = tenants
        self.quotas = quotas
        self.caps = caps
        self.options = options or CohortOptions()
        self.classes = classes
        self.placer = PoolPlacer(self.group, devices)
        self.queues = tuple(
            QueueSpec(f"q-{t.name}", t.name, strategy, **queue)  # type: ignore[arg-type]
            for t in tenants
        )
        self.pending: list[PendingWorkload] = []
        self.running: list[RunningWorkload] = []

    def set_queue(self, tenant: str, **changes: object) -> None:
        """Change the queue of ``tenant`` (policies, flavors, classes)."""
        self.queues = tuple(
            replace(q, **changes) if q.tenant == tenant else q  # type: ignore[arg-type]
            for q in self.queues
        )

    def submit(
        self,
        wid: str,
        tenant: str,
        shape: PodShape = WHOLE,
        pods: int = 1,
        priority: int = 0,
        created: float = 60.0,
        queue: str | None = None,
        **kw: object,
    ) -> PendingWorkload:
        entry = PendingWorkload(
            id=wid,
            tenant=tenant,
            queue=queue or f"q-{tenant}",
            priority=priority,
            created_at=ago(created),
            pod_count=pods,
            request=shape,
            **kw,
        )  # type: ignore[arg-type]
        self.pending.append(entry)
        return entry

    def run(
        self,
        wid: str,
        tenant: str,
        shape: PodShape = WHOLE,
        pods: int = 1,
        priority: int = 0,
        started: float = 3600.0,
        **kw: object,
    ) -> RunningWorkload:
        probe = PendingWorkload(
            id=wid,
            tenant=tenant,
            queue="",
            priority=priority,
            created_at=NOW,
            pod_count=pods,
            request=shape,
        )
        outcome = self.placer.try_place(probe, pods)
        assert outcome.placed, outcome.reason
        self.placer.reserve(probe, outcome)
        workload = RunningWorkload(
            id=wid,
            tenant=tenant,
            priority=priority,
            started_at=ago(started),
            charges=dict(outcome.charges),
            **kw,
        )  # type: ignore[arg-type]
        self.running.append(workload)
        return workload

    def terminate(self, wid: str, grace_s: float = 30.0) -> None:
        """Mark running ``wid`` terminating (evicted, pods in their grace period)."""
        self.running = [
            replace(w, terminating=True, evict_by=NOW + timedelta(seconds=grace_s))
            if w.id == wid
            else w
            for w in self.running
        ]

    def finish(self, wid: str) -> None:
        """``wid``'s pods are gone: it releases its devices and quota."""
        self.placer.remove(wid)
        self.running = [w for w in self.running if w.id != wid]

    def admit(self, result, wid: str) -> None:
        """Turn the admission of ``wid`` in ``result`` into a running workload (the placer
        already holds it) and drop it from the pending jobs."""
        admission = next(a for a in result.admitted if a.workload_id == wid)
        entry = next(e for e in self.pending if e.id == wid)
        self.pending = [e for e in self.pending if e.id != wid]
        self.running.append(
            RunningWorkload(
                id=wid,
                tenant=entry.tenant,
                priority=entry.priority,
                started_at=NOW,
                charges=dict(admission.charges),
                created_at=entry.created_at,
                max_runtime_s=entry.max_runtime_s,
            )
        )

    def cycle(self, config: CycleConfig | None = None, **overrides: object):
        """Run one cycle and apply it as the database side would: admissions start running,
        victims start terminating (they keep their devices and quota)."""
        result = run_cycle(self.snapshot(**overrides), self.placer, config)
        for admission in result.admitted:
            self.admit(result, admission.workload_id)
        for preemption in result.preempted:
            self.terminate(preemption.victim_id)
        waiting = {v.workload_id for v in result.pending if v.waiting_for}
        self.pending = [replace(e, preempting=e.id in waiting) for e in self.pending]
        return result

    def snapshot(self, **overrides: object) -> AdmissionSnapshot:
        snap = AdmissionSnapshot(
            group=self.group,
            tenants=self.tenants,
            quotas=self.quotas,
            queues=self.queues,
            pending=tuple(self.pending),
            running=tuple(self.running),
            now=NOW,
            caps=self.caps,
            priority_classes=self.classes,
            options=self.options,
        )
        return replace(snap, **overrides)  # type: ignore[arg-type]


def reclaim_world(**b3: object) -> World:
    """8 devices, team-a nominal 4000 uses 2000, team-b nominal 4000 uses 6000 (borrows)."""
    w = World(a100s(2), quotas=(quota("team-a", 4000), quota("team-b", 4000)))
    w.run("a0", "team-a", pods=2)
    w.run("b1", "team-b", pods=2, started=3000)
    w.run("b2", "team-b", pods=2, started=2000)
    w.run("b3", "team-b", pods=2, started=1000, **b3)
    return w
