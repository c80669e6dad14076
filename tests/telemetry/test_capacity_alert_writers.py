"""Two gauges runs at once (a slow beat tick overlapping the next, or two telemetry workers)
on a group short of its guarantees: both read "no open alert", both insert one, and the
second failed on ``capacityalert_one_open`` (found by the concurrency test's telemetry
writers). The alert step of two runs is replayed with the first's alert not committed yet:
the second waits for it and then opens none."""

from __future__ import annotations

import pytest
from django.utils import timezone

from telemetry.models import CapacityAlert
from telemetry.services.gauges import _update_alert
from tests.builders import make_cluster, make_group, make_tenant
from tests.waits import replay_two_writers

pytestmark = pytest.mark.django_db(transaction=True)


def test_two_gauges_runs_open_one_capacity_alert():
    make_cluster("c1", nodes=1, gpus=2)  # 2,000 milli-devices healthy
    group = make_group("pool", selector={"pool": "c1"})
    make_tenant("t1", group, devices_milli=3000)  # guaranteed 3,000: short
    now = timezone.now()
    errors = replay_two_writers(
        lambda: _update_alert(group, "*", 2000, 3000, now),
        "the second run to wait for the first's alert",
    )
    assert errors == []
    assert list(
        CapacityAlert.objects.filter(resource_group=group).values_list(
            "healthy_milli", "guaranteed_milli", "resolved_at"
        )
    ) == [(2000, 3000, None)]
