"""Two gauges runs at once (a slow beat tick overlapping the next, or two telemetry workers)
on a group short of its guarantees: both read "no open alert", both insert one, and the
second failed on ``capacityalert_one_open`` (found by the concurrency test's telemetry
writers). The alert step of two runs is replayed with the first's alert not committed yet:
the second waits for it and then opens none."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction
from django.utils import timezone

from telemetry.models import CapacityAlert
from telemetry.services.gauges import _update_alert
from tests.builders import make_cluster, make_group, make_tenant
from tests.waits import lock_waiters, until

pytestmark = pytest.mark.django_db(transaction=True)


def test_two_gauges_runs_open_one_capacity_alert():
    make_cluster("c1", nodes=1, gpus=2)  # 2,000 milli-devices healthy
    group = make_group("pool", selector={"pool": "c1"})
    make_tenant("t1", group, devices_milli=3000)  # guaranteed 3,000: short
    now = timezone.now()
    first_wrote, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def first() -> None:
        try:
            with transaction.atomic():  # its alert written, not committed yet
                _update_alert(group, "*", 2000, 3000, now)
                first_wrote.set()
                release.wait(20)
        finally:
            first_wrote.set()
            connection.close()

    def second() -> None:
        try:
            _update_alert(group, "*", 2000, 3000, now)
        except BaseException as exc:  # noqa: BLE001 - asserted below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    threads[0].start()
    assert first_wrote.wait(20)
    threads[1].start()
    until(lambda: lock_waiters() >= 1, "the second run to wait for the first's alert")
    release.set()
    for thread in threads:
        thread.join(20)
    assert errors == []
    assert list(
        CapacityAlert.objects.filter(resource_group=group).values_list(
            "healthy_milli", "guaranteed_milli", "resolved_at"
        )
    ) == [(2000, 3000, None)]
