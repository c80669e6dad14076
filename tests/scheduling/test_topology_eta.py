"""A queued gang under a required topology is told when one rack frees its devices, not when
the group's device count does (issue 31): the start range the jobs pages and the API show
(:func:`scheduling.selectors.job_board.queue_slots`)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from scheduling.admission.eta import estimate_start_range
from scheduling.models import Job
from scheduling.selectors.job_board import queue_slots
from scheduling.selectors.topology import TopologySpec
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.jobs import ContainerSpec, JobSpec, enqueue_job
from tests.api.test_api_directory import as_user
from tests.topology_world import HOST, RACK, topology_world

pytestmark = pytest.mark.django_db


def _spec(name, pods, gpus, **fields):
    return JobSpec(
        name=name,
        pod_count=pods,
        cpu_milli=1000,
        host_memory_mib=1024,
        containers=[ContainerSpec(device_count=gpus)],
        **fields,
    )


def test_a_required_rack_gang_waits_for_one_rack_to_free_its_devices(db, api):
    tw = topology_world(racks=2, per_rack=1, gpus=4)  # two racks of one 4-GPU node
    held = {"a": (2, "tc-r0-n0", 600), "c": (1, "tc-r0-n0", 1800), "b": (2, "tc-r1-n0", 1200)}
    jobs = {
        name: enqueue_job(tw["queue_b"], _spec(name, 1, gpus, node_selector={HOST: node}))
        for name, (gpus, node, _s) in held.items()
    }
    assert sorted(run_admission_cycle(tw["group"].pk).admitted) == sorted(
        j.pk for j in jobs.values()
    )
    now = timezone.now()
    for name, (_g, _n, seconds) in held.items():
        Job.objects.filter(pk=jobs[name].pk).update(started_at=now, duration_s=seconds)
    rack = TopologySpec(mode="required", level=RACK)
    gang = enqueue_job(tw["queue_a"], _spec("gang", 4, 1, topology=rack), check_fit=False)

    slot = queue_slots([gang], now=now, fresh=True)[gang.pk]

    # by device count alone: 3 of 8 free, 2 more at 600 s -> it would be told 600 s
    at = [(now + timedelta(seconds=s), float(g)) for g, _n, s in held.values()]
    assert estimate_start_range(now, 8, at, [], 4).earliest == now + timedelta(seconds=600)
    # one rack: rack-0 has 1 free (3 at 600 s, 4 at 1800 s), rack-1 2 free (4 at 1200 s)
    assert (slot.eta.earliest, slot.eta.latest) == (
        now + timedelta(seconds=1200),
        now + timedelta(seconds=1200),
    )
    assert slot.estimate.earliest == now + timedelta(seconds=1200)
    # the API's job detail tells the same (computed at request time: the release is fixed)
    detail = as_user(api, tw["alice"]).get(f"/api/jobs/{gang.pk}/").json()
    assert detail["estimated_start"] == (now + timedelta(seconds=1200)).isoformat()


def test_a_gang_without_topology_keeps_the_device_count_estimate(db):
    tw = topology_world(racks=2, per_rack=1, gpus=4)
    a = enqueue_job(tw["queue_b"], _spec("a", 1, 2, node_selector={HOST: "tc-r0-n0"}))
    b = enqueue_job(tw["queue_b"], _spec("b", 1, 2, node_selector={HOST: "tc-r1-n0"}))
    run_admission_cycle(tw["group"].pk)
    now = timezone.now()
    Job.objects.filter(pk=a.pk).update(started_at=now, duration_s=600)
    Job.objects.filter(pk=b.pk).update(started_at=now, duration_s=1200)
    gang = enqueue_job(tw["queue_a"], _spec("gang", 4, 1), check_fit=False)
    slot = queue_slots([gang], now=now, fresh=True)[gang.pk]
    assert slot.eta.earliest == now  # 4 of 8 free now, spread over both racks
