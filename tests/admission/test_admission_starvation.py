"""Starvation protection (reservation + backfill, issue 16 S16) and the history-aware fair
share (S17)."""

from dataclasses import replace
from datetime import timedelta

import pytest

from scheduling.admission import (
    AdmissionInputError,
    CohortOptions,
    HistoryFairShare,
    PendingCode,
    QueueSpec,
    TenantSpec,
    UsageInterval,
    decayed_usage,
    entry_penalty,
    run_cycle,
)
from scheduling.admission.fake import PodShape
from tests.admission.admission_builders import DEV, NO_FAIR, NOW, T4, World, a100s, ids, quota

QUAD = PodShape(devices=4)
PAIR = PodShape(devices=2)
HOUR = 3600.0


def t4s(nodes: int):
    return a100s(nodes, per_node=2, model=T4, prefix="t")


def s16_world(**options):
    """2 nodes x 4 GPUs. J1 (n1, 4 GPUs) ends in 60 min, J3 (n2, 2 GPUs) in 30 min; R needs
    2 x 4 GPUs and has waited 2 h (reservation after 1 h)."""
    w = World(
        a100s(2),
        quotas=(quota("team-a", 8000), quota("team-b", 8000)),
        options=CohortOptions(reservation_after_s=HOUR, **options),
    )
    w.run("J1", "team-b", QUAD, started=0, max_runtime_s=HOUR)
    w.run("J3", "team-b", PAIR, started=0, max_runtime_s=HOUR / 2)
    w.submit("R", "team-a", QUAD, pods=2, created=2 * HOUR)
    return w


def test_s16_a_long_waiting_gang_gets_a_reservation():
    w = s16_world()
    result = run_cycle(w.snapshot(), w.placer, NO_FAIR)
    (reservation,) = result.reservations
    assert (
        reservation.workload_id,
        reservation.since,
        reservation.expected_start,
        reservation.releases,
    ) == ("R", NOW, NOW + timedelta(hours=1), 2)
    (verdict,) = result.pending
    assert (verdict.code, verdict.reason) == (
        PendingCode.RESERVED,
        "reserved: expected start 2025-01-01T13:00:00+00:00 (waiting for 2 running job(s) to end)",
    )
    assert verdict.details[0] == (
        "unschedulable: pod 1/2: no node has 4 free device(s) for the shape"
    )


@pytest.mark.parametrize(
    ("max_runtime_s", "admitted"),
    [
        (20 * 60, True),  # ends at t+20 <= t+60: backfilled
        (None, False),  # no runtime bound: would hold part of the reservation forever
        (90 * 60, False),  # ends after t+60
    ],
)
def test_s16_small_jobs_backfill_only_where_they_end_before_the_reservation(
    max_runtime_s, admitted
):
    w = s16_world()
    w.submit("S", "team-a", PAIR, created=60, max_runtime_s=max_runtime_s)
    result = run_cycle(w.snapshot(), w.placer, NO_FAIR)
    if admitted:
        assert ids(result) == ["S"] and result.admitted[0].backfill is True
        return
    assert ids(result) == []
    verdict = next(v for v in result.pending if v.workload_id == "S")
    ends = (
        "has no runtime bound"
        if max_runtime_s is None
        else "would end at 2025-01-01T13:30:00+00:00"
    )
    assert (verdict.code, verdict.reason) == (
        PendingCode.BACKFILL_BLOCKED,
        f"backfill: it {ends}, after the start of a reservation in group a100-shared "
        f"(2025-01-01T13:00:00+00:00)",
    )


def test_s16_a_job_that_does_not_delay_the_reservation_may_run_unbounded():
    w = World(
        a100s(2) + t4s(1),
        quotas=(quota("team-a", 8000), quota("team-b", 8000), quota("team-a", 2000, flavor="t4")),
        options=CohortOptions(reservation_after_s=HOUR),
    )
    w.run("J1", "team-b", QUAD, started=0, max_runtime_s=HOUR)
    w.run("J3", "team-b", PAIR, started=0, max_runtime_s=HOUR / 2)
    w.submit("R", "team-a", QUAD, pods=2, created=2 * HOUR)
    w.submit("S", "team-a", PodShape(devices=2, flavors=("t4",)), created=60)
    result = run_cycle(w.snapshot(), w.placer, NO_FAIR)
    # S takes no device and no quota R needs at its start: no runtime bound needed
    assert ids(result) == ["S"] and result.admitted[0].backfill is True
    assert [r.workload_id for r in result.reservations] == ["R"]


def test_s16_higher_priority_jobs_are_not_held_back_by_a_reservation():
    w = s16_world()
    w.submit("urgent", "team-a", PAIR, priority=10, created=60)
    assert ids(run_cycle(w.snapshot(), w.placer, NO_FAIR)) == ["urgent"]


def test_s16_the_reservation_is_kept_across_cycles_and_dropped_after_its_hold():
    w = s16_world(max_reservation_hold_s=2 * HOUR)
    earlier = NOW - timedelta(hours=1)
    w.pending = [replace(e, reserving_since=earlier) for e in w.pending]
    result = run_cycle(w.snapshot(), w.placer, NO_FAIR)
    assert [(r.workload_id, r.since) for r in result.reservations] == [("R", earlier)]
    w.pending = [replace(e, reserving_since=NOW - timedelta(hours=3)) for e in w.pending]
    w.submit("S", "team-a", PAIR, created=60)
    result = run_cycle(w.snapshot(), w.placer, NO_FAIR)
    # expired: no reservation this cycle, so the unbounded job may run
    assert (result.reservations, result.expired_reservations) == ((), ("R",))
    assert ids(result) == ["S"]


def test_a_job_that_can_never_fit_never_reserves():
    w = s16_world()
    w.submit("huge", "team-a", QUAD, pods=3, created=3 * HOUR)  # 3 nodes' worth on 2 nodes
    result = run_cycle(w.snapshot(), w.placer, NO_FAIR)
    assert [r.workload_id for r in result.reservations] == ["R"]
    assert (
        next(v for v in result.pending if v.workload_id == "huge").code == PendingCode.UNSCHEDULABLE
    )


# -- history-aware fair share (S17) ----------------------------------------------------------


def test_s17_decayed_usage_over_the_ledger():
    half_life = 24 * HOUR
    yesterday = [UsageInterval(8, NOW - timedelta(hours=48), NOW - timedelta(hours=24))]
    assert decayed_usage(yesterday, NOW, half_life) == pytest.approx(2.0)
    ongoing = yesterday + [UsageInterval(4, NOW - timedelta(hours=12))]
    assert decayed_usage(ongoing, NOW, half_life) == pytest.approx(2.0 + 4 * (1 - 2**-0.5))
    assert decayed_usage([UsageInterval(4, NOW + timedelta(hours=1))], NOW, half_life) == 0
    # a 4-GPU admission adds Kueue's entry penalty at once: 4 x (1 - 0.5^(300/86400))
    assert entry_penalty({("a100", DEV): 4000}, {DEV: 0.001}, 300, half_life) == pytest.approx(
        4 * (1 - 0.5 ** (300 / 86400))
    )
    with pytest.raises(AdmissionInputError, match="half_life_s must be > 0"):
        decayed_usage(yesterday, NOW, 0)


def history_world(x_usage):
    tenants = (TenantSpec("team-x", history_usage=x_usage), TenantSpec("team-y"))
    w = World(
        a100s(1),
        tenants=tenants,
        quotas=(quota("team-x", 4000), quota("team-y", 4000)),
        options=CohortOptions(history=HistoryFairShare(half_life_s=24 * HOUR)),
    )
    w.run("hold", "team-x", PodShape(devices=1), pods=3)  # one device left
    w.submit("x1", "team-x", created=600, priority=5)
    w.submit("y1", "team-y", created=60, priority=0)
    return w


@pytest.mark.parametrize("config", [NO_FAIR, None], ids=["classical", "fair-sharing"])
def test_s17_the_tenant_that_used_a_lot_yields_to_the_one_that_used_nothing(config):
    w = history_world(2.0)
    assert ids(run_cycle(w.snapshot(), w.placer, config)) == ["y1"]
    w = history_world(0.0)
    assert ids(run_cycle(w.snapshot(), w.placer, config)) == ["x1"]


@pytest.mark.parametrize(
    ("history", "order"),
    [
        (True, ["xa1", "xb1", "y1", "y2", "xa2", "xb2"]),
        (False, ["xa1", "xb1", "y1", "xa2", "xb2", "y2"]),
    ],
)
def test_s17_the_entry_penalty_of_this_cycle_orders_the_next_round(history, order):
    tenants = (TenantSpec("team-x"), TenantSpec("team-y"))
    options = CohortOptions(history=HistoryFairShare(half_life_s=24 * HOUR) if history else None)
    w = World(
        a100s(2),
        tenants=tenants,
        quotas=(quota("team-x", 4000), quota("team-y", 4000)),
        options=options,
    )
    w.queues += (QueueSpec("q-team-x-2", "team-x"),)
    w.submit("xa1", "team-x", created=900)
    w.submit("xa2", "team-x", created=800)
    w.submit("xb1", "team-x", created=850, queue="q-team-x-2")
    w.submit("xb2", "team-x", created=700, queue="q-team-x-2")
    w.submit("y1", "team-y", created=600)
    w.submit("y2", "team-y", created=100)
    result = run_cycle(w.snapshot(), w.placer, NO_FAIR)
    # round 1 is in FIFO order; team-x's two admissions then weigh more than team-y's one
    assert ids(result) == order
