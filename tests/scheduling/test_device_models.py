"""Device models as data: shipped fixture, per-model configuration of the placement core."""

import pytest
from django.core.management import call_command

from scheduling.models import DeviceModel
from scheduling.selectors.device_models import get_device_configs

pytestmark = pytest.mark.django_db

VENDORS = {"NVIDIA", "Ascend", "MLU", "DCU", "Metax", "Iluvatar", "Enflame", "Mthreads",
           "Kunlun", "AMD"}


def _config(vendor, chip):
    return next(c for c in get_device_configs() if (c.vendor, c.chip) == (vendor, chip))


def test_fixture_covers_every_vendor_and_is_idempotent():
    call_command("loaddata", "device_models", verbosity=0)
    call_command("loaddata", "device_models", verbosity=0)
    assert set(DeviceModel.objects.values_list("vendor", flat=True)) == VENDORS
    assert DeviceModel.objects.filter(name__in=["MLU370-X8", "MLU590"]).count() == 2
    assert DeviceModel.objects.filter(name__startswith="Ascend910B").count() == 5
    assert DeviceModel.objects.get(name="Ascend910B4").memory_mib == 32768


def test_two_models_of_one_vendor_are_configured_separately():
    call_command("loaddata", "device_models", verbosity=0)
    mlu370 = _config("MLU", "MLU370-X8")
    mlu590 = _config("MLU", "MLU590")
    assert (mlu370.memory_factor, mlu370.memory_mib) == (256, 0)
    # unit 0: 1 % granularity of the configured allocatable memory
    assert (mlu590.memory_factor, mlu590.memory_mib) == (0, 79872)
    assert mlu590.resource_count == "cambricon.com/vmlu"
    # Ascend chips keep their own templates (HAMi chart defaults)
    assert [t.name for t in _config("Ascend", "Ascend910B4").templates] != []
    assert _config("Ascend", "Ascend910B4").memory_mib == 32768
    assert _config("Ascend", "Ascend910B4-1").memory_mib == 65536


def test_a_bad_config_names_the_row():
    DeviceModel.objects.create(name="MLU-X", vendor="MLU", memory_mib=1, config={"units": 3})
    with pytest.raises(ValueError, match="device model MLU-X: config: .*units"):
        get_device_configs()
