"""The consolidation preview of a gang under a ``required`` rack (issue 31): before anything
moves it names the rack the cycle would empty and the move, and the cycle then does exactly
that."""

import pytest

from scheduling.api.serializers.consolidation import ConsolidationPlanSerializer
from scheduling.models import ConsolidationMove, JobEvent
from scheduling.selectors.placement_profile import forget_workloads
from scheduling.selectors.topology import TopologySpec
from scheduling.services.consolidation_preview import preview_consolidation, shown_to
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.jobs import enqueue_job
from tests.scheduling.test_consolidation_topology import _booked, _spec
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


def test_the_preview_names_the_rack_and_the_move_the_cycle_then_makes(tw):
    mover = enqueue_job(tw["queue_b"], _spec("mover", 1, 1, allow_consolidation=True))
    assert mover.pk in run_admission_cycle(tw["group"].pk).admitted
    (mover_at,) = _booked(mover)
    its_rack = mover_at.node.labels[RACK]
    other = "rack-1" if its_rack == "rack-0" else "rack-0"
    enqueue_job(tw["queue_b"], _spec("fixed", 1, 2, node_selector={HOST: f"tc-r{other[-1]}-n0"}))
    gang = enqueue_job(
        tw["queue_a"], _spec("gang", 8, 1, topology=TopologySpec(mode="required", level=RACK))
    )

    preview = preview_consolidation(gang)

    domain = f"zone-a/block-0/{its_rack}"
    assert (preview.plannable, preview.level, preview.domain) == (True, RACK, domain)
    assert [(m.job_id, m.from_node) for m in preview.moves] == [(mover.pk, mover_at.node.name)]
    assert preview.moves[0].to_node.startswith(f"tc-r{other[-1]}-n")
    assert (ConsolidationMove.objects.count(), JobEvent.objects.filter(kind="moved").count()) == (
        0,
        0,
    )
    shown = shown_to(preview, {})  # a viewer who may not read the mover
    assert ConsolidationPlanSerializer(shown).data["target"] == {"level": RACK, "domain": domain}
    assert shown.sentence() == (
        f"Consolidation would move: 1 job of other tenants to make room in rack {domain}"
    )
    assert run_admission_cycle(tw["group"].pk).moved == [mover.pk]
    assert ConsolidationMove.objects.get().target.startswith(preview.moves[0].to_node)
