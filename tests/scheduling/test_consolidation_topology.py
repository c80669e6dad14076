"""Consolidation for a topology-aware gang through the admission cycle (issue 31): a gang
under ``required`` rack that fits the quota and the free GPUs but no rack gets room made
inside one rack by moving an opted-in job out of it; the waiting job's reason and event name
the rack and the moves before the gang takes it."""

import pytest

from scheduling.choices import BOOKED_PLACEMENT_STATES, JobState
from scheduling.models import Job, JobEvent, Placement
from scheduling.selectors.placement_profile import forget_workloads
from scheduling.selectors.topology import TopologySpec
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.jobs import ContainerSpec, JobSpec, enqueue_job
from tests.topology_world import HOST, RACK, topology_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def tw(db):
    forget_workloads()
    world = topology_world(racks=2, per_rack=2, gpus=4)
    world["group"].consolidation_enabled = True
    world["group"].save()
    yield world
    forget_workloads()


def _spec(name, pods, gpus, **fields):
    return JobSpec(
        name=name,
        pod_count=pods,
        cpu_milli=1000,
        host_memory_mib=1024,
        containers=[ContainerSpec(device_count=gpus)],
        **fields,
    )


def _booked(job):
    return list(
        Placement.objects.filter(job=job, state__in=BOOKED_PLACEMENT_STATES)
        .select_related("node")
        .order_by("pod_index")
    )


def test_a_gang_no_rack_holds_gets_one_rack_emptied_and_then_lands_in_it(tw):
    mover = enqueue_job(tw["queue_b"], _spec("mover", 1, 1, allow_consolidation=True))
    assert mover.pk in run_admission_cycle(tw["group"].pk).admitted
    (mover_at,) = _booked(mover)
    its_rack = mover_at.node.labels[RACK]
    other = "rack-1" if its_rack == "rack-0" else "rack-0"
    # two GPUs of the other rack taken by a job that may not move: 7 and 6 GPUs free
    fixed = enqueue_job(
        tw["queue_b"], _spec("fixed", 1, 2, node_selector={HOST: f"tc-r{other[-1]}-n0"})
    )
    gang_spec = _spec("gang", 8, 1, topology=TopologySpec(mode="required", level=RACK))
    gang = enqueue_job(tw["queue_a"], gang_spec)

    report = run_admission_cycle(tw["group"].pk)

    assert report.admitted == [fixed.pk]
    assert report.moved == [mover.pk]
    domain = f"zone-a/block-0/{its_rack}"
    gang.refresh_from_db()
    assert gang.state == JobState.QUEUED
    assert gang.pending_reason == (
        f"waiting for 1 job(s) moved by consolidation to make room in rack {domain}"
    )
    event = JobEvent.objects.get(job=gang, kind="consolidation")
    assert event.message.startswith(
        f"consolidation moved 1 job(s) to make room in rack {domain} on "
    )
    moves = event.message.split(" (moves: ", 1)[1]
    assert moves.startswith(f"{mover_at.node.name} (") and f" -> tc-r{other[-1]}-n" in moves
    moved = JobEvent.objects.get(job=mover, kind="moved").message
    assert f"to make room in rack {domain} for a job of another tenant" in moved

    report = run_admission_cycle(tw["group"].pk)

    assert sorted(report.admitted) == sorted([gang.pk, mover.pk])
    assert {p.node.labels[RACK] for p in _booked(gang)} == {its_rack}
    assert len(_booked(gang)) == 8
    assert {p.node.labels[RACK] for p in _booked(mover)} == {other}
    assert Job.objects.get(pk=mover.pk).state != JobState.QUEUED


def test_without_an_opted_in_job_the_gang_waits_with_the_topology_reason(tw):
    first = enqueue_job(tw["queue_b"], _spec("stays", 1, 1))
    assert first.pk in run_admission_cycle(tw["group"].pk).admitted
    (at,) = _booked(first)
    other = "1" if at.node.labels[RACK] == "rack-0" else "0"
    enqueue_job(tw["queue_b"], _spec("fixed", 1, 2, node_selector={HOST: f"tc-r{other}-n0"}))
    gang = enqueue_job(
        tw["queue_a"], _spec("gang", 8, 1, topology=TopologySpec(mode="required", level=RACK))
    )
    report = run_admission_cycle(tw["group"].pk)
    assert report.moved == []
    gang.refresh_from_db()
    lines = gang.pending_reason.splitlines()
    assert lines[0] == (
        "unschedulable: TopologyPlacementFailed: needs 8 pods in one rack; the best rack has 7 free"
    )
    assert lines[-1] == "consolidation: no running job may be moved"
