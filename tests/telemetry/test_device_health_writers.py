"""Two folds of device health at once (two scrapes of one node, or a scrape beside the
simulated tick) on a device seen for the first time: both read "no record", both insert one,
and the second failed on ``telemetry_devicehealth_serial_key`` (found by ``make soak``). Now
folds run one at a time, and the second updates the first's record."""

from __future__ import annotations

import pytest

from scheduling.models import Device
from telemetry.exporters import TEMP
from telemetry.models import DeviceHealth
from telemetry.services.device_health import apply_health
from tests.builders import make_cluster
from tests.waits import replay_two_writers

pytestmark = pytest.mark.django_db(transaction=True)


def test_two_folds_of_a_new_device_keep_one_record():
    make_cluster("c1", nodes=1, gpus=1)
    device = Device.objects.get()
    errors = replay_two_writers(
        lambda: apply_health({device.pk: {TEMP: 40.0}}, source="soak"),
        "the second fold to wait for the first",
    )
    assert errors == []
    assert list(DeviceHealth.objects.values_list("serial", "healthy")) == [(device.uuid, True)]
