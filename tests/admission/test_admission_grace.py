"""Victims stay charged (quota and devices) until their pods are gone; the preemptor waits
for them (Kueue: preempt now, admit after the victims are gone). Issue 16, scenario S1."""

from scheduling.admission import PendingCode, PreemptionReason, TenantSpec, run_cycle
from scheduling.admission.fake import PodShape
from tests.admission.admission_builders import NO_FAIR, World, a100s, ids, quota, verdicts

ONE = PodShape(devices=1)


def assert_no_device_overbooked(world: World) -> None:
    """Every device's bookings (terminating victims included) stay within its capacity."""
    for device in world.placer.devices.values():
        assert device.used_slots <= 1, device.uuid
        assert device.used_memory_mib <= device.memory_mib, device.uuid
        assert device.used_cores_percent <= device.cores_percent, device.uuid


def s1_world(third: bool = True) -> World:
    """2 nodes x 4 GPUs; A and B nominal 4 each; a-low (A, prio 0) on n1, b-1 on n2."""
    tenants = (TenantSpec("team-a"), TenantSpec("team-b"), TenantSpec("team-c"))
    w = World(
        a100s(2),
        tenants=tenants,
        quotas=(quota("team-a", 4000), quota("team-b", 4000), quota("team-c", 0)),
    )
    w.run("a-low", "team-a", ONE, pods=4, priority=0)
    w.run("b-1", "team-b", ONE, pods=4)
    w.submit("a-high", "team-a", ONE, pods=2, priority=10, created=60)
    w.submit("a-small", "team-a", ONE, pods=2, priority=5, created=30)
    if third:
        w.submit("c-any", "team-c", ONE, pods=2, priority=100, created=20)
    return w


def test_s1_nothing_is_admitted_onto_a_victim_during_its_grace_period():
    w = s1_world()
    first = w.cycle(NO_FAIR)
    assert ids(first) == []
    assert [(p.victim_id, p.preemptor_id, p.reason) for p in first.preempted] == [
        ("a-low", "a-high", PreemptionReason.IN_TENANT)
    ]
    found = verdicts(first)
    assert found["a-high"][0] == PendingCode.WAITING_FOR_PREEMPTED
    # a-small fits only onto a-low's devices: it waits for them too, no new preemption
    assert found["a-small"][:2] == (
        PendingCode.WAITING_FOR_PREEMPTED,
        "waiting for 1 preempted workload(s) to terminate (a-low); admitted once their pods "
        "are gone (grace until 2025-01-01T12:00:30+00:00)",
    )
    # a third tenant's job finds no free device and no quota (the victim is still charged)
    assert found["c-any"][:2] == (
        PendingCode.WAITING_FOR_QUOTA,
        "tenant team-c, group a100-shared, flavor a100, devices: needs 2000, free 0, "
        "borrowable 0 (bounded by cohort a100-shared)",
    )
    assert first.usage["team-a"] == {
        ("a100", "devices"): 4000,
        ("a100", "memory_mib"): 327680,
        ("a100", "cores_percent"): 400,
    }
    assert set(w.placer.held) == {"a-low", "b-1"}
    assert_no_device_overbooked(w)


def test_s1_victims_terminating_keep_everything_until_gone_then_the_preemptor_goes_first():
    w = s1_world(third=False)
    w.cycle(NO_FAIR)
    second = w.cycle(NO_FAIR)  # a-low still terminating
    assert (ids(second), second.preempted) == ([], ())
    assert {v.workload_id: v.waiting_for for v in second.pending if v.waiting_for} == {
        "a-high": ("a-low",),
        "a-small": ("a-low",),
    }
    assert_no_device_overbooked(w)
    w.finish("a-low")
    third = w.cycle(NO_FAIR)
    assert ids(third) == ["a-high", "a-small"]
    assert [pod.node for a in third.admitted for pod in a.placement.pods] == ["n1"] * 4
    assert_no_device_overbooked(w)


def test_a_terminating_job_is_a_candidate_first_and_never_preempted_twice():
    w = World(a100s(2), quotas=(quota("team-a", 4000), quota("team-b", 4000)))
    w.run("a0", "team-a", ONE, pods=2)
    for i, started in enumerate((300, 200, 100)):
        w.run(f"b{i}", "team-b", ONE, pods=2, started=started)
    w.terminate("b0")  # the oldest, evicted by an earlier cycle
    w.submit("a1", "team-a", ONE, pods=2)
    result = run_cycle(w.snapshot(), w.placer, NO_FAIR)
    # b0 is first in Kueue's order (already evicted) and enough: nothing new is issued
    assert result.preempted == ()
    assert {v.workload_id: v.waiting_for for v in result.pending} == {"a1": ("b0",)}
    assert verdicts(result)["a1"][1] == (
        "waiting for 1 preempted workload(s) to terminate (1 job(s) of other tenants); "
        "admitted once their pods are gone (grace until 2025-01-01T12:00:30+00:00)"
    )


def test_the_waiting_preemptor_heads_its_queue_before_a_higher_priority_newcomer():
    w = World(a100s(1), quotas=(quota("team-a", 4000), quota("team-b", 0)))
    w.run("low", "team-a", ONE, pods=4, priority=0)
    w.submit("mid", "team-a", ONE, pods=4, priority=10, created=60)
    first = w.cycle(NO_FAIR)
    assert [p.victim_id for p in first.preempted] == ["low"]
    w.submit("top", "team-a", ONE, pods=4, priority=50, created=10)
    w.finish("low")
    second = w.cycle(NO_FAIR)
    # Kueue's sticky preemptor head: mid is admitted onto the capacity it freed
    assert ids(second) == ["mid"]
    # mid, admitted in this very cycle, is no preemption candidate yet
    assert second.preempted == ()
    assert verdicts(second)["top"][0] == PendingCode.WAITING_FOR_QUOTA
    assert [p.victim_id for p in w.cycle(NO_FAIR).preempted] == ["mid"]
