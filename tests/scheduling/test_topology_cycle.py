"""Topology requests through the admission cycle on the database (issue 31): a gang under
``required`` lands inside one rack with its domains stored and ranks in domain order; one
that fits the quota but no rack waits with the core's ``TopologyPlacementFailed`` reason,
and one no rack can ever hold is refused at submission."""

import pytest

from core.exceptions import NeverFits
from scheduling.models import Job, Placement
from scheduling.selectors.topology import TopologySpec
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.jobs import ContainerSpec, JobSpec, enqueue_job
from tests.topology_world import RACK, topology_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def tw(db):
    return topology_world(racks=4, per_rack=2, gpus=4)


def _spec(name, pods, gpus, topology=None):
    return JobSpec(
        name=name,
        pod_count=pods,
        cpu_milli=1000,
        host_memory_mib=1024,
        containers=[ContainerSpec(device_count=gpus)],
        topology=topology or TopologySpec(),
    )


REQUIRED_RACK = TopologySpec(mode="required", level=RACK)


def test_a_required_gang_lands_in_one_rack_with_its_domains_in_rank_order(tw):
    # two 1-GPU pods on rack-0 first: the best fit rack for a 4-pod gang of 2 GPUs is
    # then another one (rack-0 has 6 GPUs free: 3 pods)
    filler = enqueue_job(tw["queue_b"], _spec("filler", 1, 2), check_fit=False)
    assert filler.pk in run_admission_cycle(tw["group"].pk).admitted
    gang = enqueue_job(tw["queue_a"], _spec("gang", 4, 2, REQUIRED_RACK), check_fit=False)
    assert gang.pk in run_admission_cycle(tw["group"].pk).admitted
    placements = list(Placement.objects.filter(job=gang).order_by("pod_index"))
    racks = {p.domains[2] for p in placements}
    assert len(racks) == 1
    for p in placements:
        assert p.domains == [
            p.node.labels[k] for k in tw["topology"].levels
        ]  # widest first, the node last
        assert p.domains[-1] == p.node.name
    nodes = [p.node.name for p in placements]
    assert len(set(nodes)) == 2 and nodes[0] == nodes[1] and nodes[2] == nodes[3]


def test_a_gang_that_fits_the_quota_but_no_rack_waits_with_the_topology_reason(tw):
    gang = enqueue_job(tw["queue_a"], _spec("too-big", 12, 1, REQUIRED_RACK), check_fit=False)
    assert run_admission_cycle(tw["group"].pk).admitted == []
    gang.refresh_from_db()
    assert gang.state == "queued"
    assert gang.pending_reason.splitlines()[0] == (
        "unschedulable: TopologyPlacementFailed: needs 12 pods in one rack; "
        "the best rack has 8 free"
    )


def test_submission_refuses_a_gang_no_rack_can_ever_hold(tw):
    with pytest.raises(NeverFits) as err:
        enqueue_job(tw["queue_a"], _spec("never", 12, 1, REQUIRED_RACK))
    assert "TopologyPlacementFailed: needs 12 pods in one rack" in str(err.value)
    assert not Job.objects.filter(name="never").exists()
