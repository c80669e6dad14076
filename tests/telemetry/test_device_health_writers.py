"""Two folds of device health at once (two scrapes of one node, or a scrape beside the
simulated tick) on a device seen for the first time: both read "no record", both insert one,
and the second failed on ``telemetry_devicehealth_serial_key`` (found by ``make soak``). Now
folds run one at a time, and the second updates the first's record."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from scheduling.models import Device
from telemetry.exporters import TEMP
from telemetry.models import DeviceHealth
from telemetry.services.device_health import apply_health
from tests.builders import make_cluster
from tests.waits import lock_waiters, until

pytestmark = pytest.mark.django_db(transaction=True)


def test_two_folds_of_a_new_device_keep_one_record():
    make_cluster("c1", nodes=1, gpus=1)
    device = Device.objects.get()
    first_wrote, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def first() -> None:
        try:
            with transaction.atomic():  # its record written, not committed yet
                apply_health({device.pk: {TEMP: 40.0}}, source="a")
                first_wrote.set()
                release.wait(20)
        finally:
            first_wrote.set()
            connection.close()

    def second() -> None:
        try:
            apply_health({device.pk: {TEMP: 41.0}}, source="b")
        except BaseException as exc:  # noqa: BLE001 - asserted below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    threads[0].start()
    assert first_wrote.wait(20)
    threads[1].start()
    until(lambda: lock_waiters() >= 1, "the second fold to wait for the first")
    release.set()
    for thread in threads:
        thread.join(20)
    assert errors == []
    assert list(DeviceHealth.objects.values_list("serial", "healthy")) == [(device.uuid, True)]
