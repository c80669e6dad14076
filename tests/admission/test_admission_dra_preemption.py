"""Issue 29: a preemption that frees a DRA partitionable device is found.

A DRA ResourceSlice declares ``sharedCounters`` (a counter set per card) and each partition
``consumesCounters`` from it (KEP-4815, partitionable devices); allocating a partition uses
counters its sibling partitions share. Taking a victim out of the cluster snapshot in the
preemption search must give its counters back exactly as the database release does
(:meth:`scheduling.selectors.snapshot.ClusterState.apply`), else the preemptor never fits
(no Django: the admission core over :class:`~scheduling.selectors.db_placer.DbPlacer`)."""

from __future__ import annotations

from dataclasses import replace

from scheduling.admission import (
    AdmissionSnapshot,
    CycleConfig,
    Dimension,
    Flavor,
    GroupKind,
    GroupSpec,
    PendingWorkload,
    QueueingStrategy,
    QueueSpec,
    QuotaSpec,
    RunningWorkload,
    TenantSpec,
    charges_for,
    run_cycle,
)
from scheduling.devices import default_device_configs, resolve_model
from scheduling.placement import place
from scheduling.placement.booking import apply_device_usage
from scheduling.placement.profile import Profile
from scheduling.placement.types import (
    ClusterSnapshot,
    ContainerRequest,
    DeviceRequest,
    DeviceUsage,
    NodeInfo,
    PlacementRequest,
    PodRequest,
)
from scheduling.selectors.db_placer import DbPlacer, RunningBooking
from tests.admission.admission_builders import NOW, ago
from tests.placement.placement_builders import ASCEND_B3_TEMPLATES

B3 = resolve_model(
    "Ascend", "Ascend910B3", {"memory_mib": 65536, "templates": list(ASCEND_B3_TEMPLATES)}
)
PROFILE = Profile(
    device_configs=(*(c for c in default_device_configs() if c.chip != "Ascend910B3"), B3)
)
GROUP = GroupSpec("npu", GroupKind.SHARED, (Flavor("b3", ("Ascend910B3",)),))
PARTITION = DeviceRequest("Ascend", 1, memory_mib=30000, chip="Ascend910B3")  # vir10_3c_32g
HALF = PlacementRequest("half", (PodRequest("half", 0, 0, (ContainerRequest("c", (PARTITION,)),)),))


def _world() -> tuple[DbPlacer, DeviceUsage, RunningWorkload]:
    """One card of 20 aicore / 64 hbm-gib; a low-priority victim holds a ``vir10_3c_32g``
    partition (12 aicore, 32 hbm-gib) booked as the database stores it, so 8 aicore are left:
    another such partition fits its memory (32 of 64 GiB left) but not the counters."""
    card = DeviceUsage(
        "B0", "n1", 0, "Ascend910B3", "Ascend", 65536, 20, 4, counters={"aicore": 20, "hbm-gib": 64}
    )
    cluster = ClusterSnapshot.from_nodes([NodeInfo("n1", [card], 64000, 512000)])
    placer = DbPlacer(
        cluster,
        {"B0": card},
        GROUP,
        {"victim": RunningBooking(1, pods=[("n1", 0, 0, [("B0", 32768, 10, 1)])])},
        PROFILE.build(),
        configs={"B0": B3},
    )
    charges = charges_for(place(cluster, HALF, PROFILE.build()), {"B0": card}, GROUP)
    apply_device_usage(card, 32768, 10, 1, +1, B3)  # as the snapshot books a stored placement
    victim = RunningWorkload("victim", "team-a", priority=0, started_at=ago(3600), charges=charges)
    return placer, card, victim


def test_removing_a_victim_gives_back_its_shared_counters_and_undo_takes_them_again():
    placer, card, _victim = _world()
    assert card.used_counters == {"aicore": 12, "hbm-gib": 32}
    probe = _pending("probe", NOW)
    assert not placer.try_place(probe, 1).placed
    assert placer.estimate(probe, 1).placed  # an empty card: its counters are all free
    undo = placer.remove("victim")
    assert (card.used_memory_mib, card.used_counters) == (0, {"aicore": 0, "hbm-gib": 0})
    assert placer.try_place(probe, 1).placed
    undo()
    assert (card.used_memory_mib, card.used_counters) == (32768, {"aicore": 12, "hbm-gib": 32})


def test_a_preemption_that_frees_a_partitionable_device_is_found_and_admitted():
    placer, card, victim = _world()
    tenants = (TenantSpec("team-a"), TenantSpec("team-b"))
    queues = tuple(
        QueueSpec(f"q-{t.name}", t.name, QueueingStrategy.BEST_EFFORT_FIFO) for t in tenants
    )
    snapshot = AdmissionSnapshot(
        group=GROUP,
        tenants=tenants,
        quotas=tuple(QuotaSpec("team-a", "b3", d, 10**6) for d in Dimension),  # not the limit
        queues=queues,
        pending=(_pending("urgent", ago(60)),),
        running=(victim,),
        now=NOW,
    )
    config = CycleConfig(fair_sharing=False)
    result = run_cycle(snapshot, placer, config)
    assert [(p.victim_id, p.preemptor_id) for p in result.preempted] == [("victim", "urgent")]
    assert not result.admitted  # the preemptor waits until the victim's pods are gone
    placer.remove("victim")  # they are: the release gives the counters back for good
    result = run_cycle(replace(snapshot, running=()), placer, config)
    assert [a.workload_id for a in result.admitted] == ["urgent"]
    assert _card(placer).used_counters == {"aicore": 12, "hbm-gib": 32}


def _pending(wid: str, created_at) -> PendingWorkload:
    """A priority-100 job of team-a asking for one ``vir10_3c_32g`` partition."""
    return PendingWorkload(
        id=wid,
        tenant="team-a",
        queue="q-team-a",
        priority=100,
        created_at=created_at,
        pod_count=1,
        request=HALF,
    )


def _card(placer: DbPlacer) -> DeviceUsage:
    return placer.devices["B0"]
