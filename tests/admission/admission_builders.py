"""Small builders for admission-core tests (no Django)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from scheduling.admission import (
    AdmissionSnapshot,
    AggregateCap,
    CycleConfig,
    Dimension,
    Flavor,
    GroupKind,
    PendingWorkload,
    Queue,
    QueueingStrategy,
    Quota,
    ResourceGroup,
    RunningWorkload,
    Tenant,
)
from scheduling.admission.fake import PodShape, PoolPlacer
from scheduling.placement.types import Device

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


def group(kind: GroupKind = GroupKind.SHARED, name: str = "a100-shared") -> ResourceGroup:
    return ResourceGroup(name=name, kind=kind, flavors=(
        Flavor("a100", (A100,)), Flavor("t4", (T4,)),
    ))


def a100s(nodes: int, per_node: int = 4) -> list[Device]:
    return [
        Device(uuid=f"n{n}-gpu{i}", node=f"n{n}", index=i, type=A100, vendor="NVIDIA",
               memory_mib=A100_MIB)
        for n in range(1, nodes + 1) for i in range(per_node)
    ]


def ids(result) -> list[str]:
    """Ids of the admitted workloads, in admission order."""
    return [a.workload_id for a in result.admitted]


def verdicts(result) -> dict[str, tuple]:
    """``{workload id: (code, reason, position, details)}`` of the pending verdicts."""
    return {v.workload_id: (v.code, v.reason, v.position, v.details) for v in result.pending}


def quota(tenant: str, nominal: int, dim: Dimension = DEV, flavor: str = "a100",
          borrowing_limit: int | None = None, lending_limit: int | None = None) -> Quota:
    return Quota(tenant, flavor, dim, nominal, borrowing_limit, lending_limit)


class World:
    """A resource group, its tenants and quotas, a pool placer and the workloads."""

    def __init__(self, devices: list[Device], kind: GroupKind = GroupKind.SHARED,
                 tenants: tuple[Tenant, ...] = (Tenant("team-a"), Tenant("team-b")),
                 quotas: tuple[Quota, ...] = (),
                 strategy: QueueingStrategy = QueueingStrategy.BEST_EFFORT_FIFO,
                 caps: tuple[AggregateCap, ...] = ()) -> None:
        self.group = group(kind)
        self.tenants = tenants
        self.quotas = quotas
        self.caps = caps
        self.placer = PoolPlacer(self.group, devices)
        self.queues = tuple(Queue(f"q-{t.name}", t.name, strategy) for t in tenants)
        self.pending: list[PendingWorkload] = []
        self.running: list[RunningWorkload] = []

    def submit(self, wid: str, tenant: str, shape: PodShape = WHOLE, pods: int = 1,
               priority: int = 0, created: float = 60.0, queue: str | None = None,
               **kw: object) -> PendingWorkload:
        entry = PendingWorkload(id=wid, tenant=tenant, queue=queue or f"q-{tenant}",
                                priority=priority, created_at=ago(created), pod_count=pods,
                                request=shape, **kw)  # type: ignore[arg-type]
        self.pending.append(entry)
        return entry

    def run(self, wid: str, tenant: str, shape: PodShape = WHOLE, pods: int = 1,
            priority: int = 0, started: float = 3600.0, **kw: object) -> RunningWorkload:
        probe = PendingWorkload(id=wid, tenant=tenant, queue="", priority=priority,
                                created_at=NOW, pod_count=pods, request=shape)
        outcome = self.placer.try_place(probe, pods)
        assert outcome.placed, outcome.reason
        self.placer.reserve(probe, outcome)
        workload = RunningWorkload(id=wid, tenant=tenant, priority=priority,
                                   started_at=ago(started), charges=dict(outcome.charges),
                                   **kw)  # type: ignore[arg-type]
        self.running.append(workload)
        return workload

    def snapshot(self, **overrides: object) -> AdmissionSnapshot:
        snap = AdmissionSnapshot(
            group=self.group, tenants=self.tenants, quotas=self.quotas, queues=self.queues,
            pending=tuple(self.pending), running=tuple(self.running), now=NOW,
            caps=self.caps,
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
