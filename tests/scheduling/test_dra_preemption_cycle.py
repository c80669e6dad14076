"""Issue 29, through the cycle service: a preemption that frees a DRA partitionable device's
shared counters is found. A low-priority vNPU partition holds 12 of the card's 20 aicore; a
high-priority one of the same template fits the card's memory but not its counters until
the victim's counters are given back (``sharedCounters`` / ``consumesCounters``)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from scheduling.choices import JobState, PlacementState
from scheduling.models import Job, Placement, PlacementDevice
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.kube_reconcile import reconcile_cluster
from tests.builders import make_group, make_tenant
from tests.scheduling.test_devices_end_to_end import _catalogue, _job, ascend_dra_card  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db


def test_a_victims_partition_is_preempted_for_a_higher_priority_one(fake, tmp_path):
    card = ascend_dra_card(fake, tmp_path)
    group = make_group("npu", models=("Ascend910B3",))
    _tenant, queue = make_tenant("team-a", group, devices_milli=10_000)
    low = _job(queue, group, vendor="Ascend", memory_mib=20000, types=[], name="low")
    assert run_admission_cycle(group.pk).admitted == [low.pk]
    Job.objects.filter(pk=low.pk).update(admitted_at=timezone.now() - timedelta(hours=1))
    high = _job(queue, group, vendor="Ascend", memory_mib=20000, types=[], name="high")
    Job.objects.filter(pk=high.pk).update(priority=100)

    report = run_admission_cycle(group.pk)
    assert (report.admitted, report.preempted) == ([], [low.pk])
    assert set(Placement.objects.filter(job=low).values_list("state", flat=True)) == {
        PlacementState.TERMINATING
    }
    # the reconcile finds no pod of the victim (deleted after the commit): its devices go back
    reconcile_cluster(card.node.cluster_id, watch_s=0)
    assert set(Placement.objects.filter(job=low).values_list("state", flat=True)) == {
        PlacementState.RELEASED
    }
    assert run_admission_cycle(group.pk).admitted == [high.pk]
    high.refresh_from_db()
    assert high.state == JobState.ADMITTED
    assert dict(
        PlacementDevice.objects.filter(
            device=card, placement__state=PlacementState.RESERVED
        ).values_list("placement__job_id", "memory_mib")
    ) == {high.pk: 32768}
