"""Device models as data: the shipped fixture, per-model configuration of the placement core,
validation on every write, and a bad stored config that flags its model, not the cycle."""

import json

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command

from scheduling.devices import units_for
from scheduling.models import DeviceModel
from scheduling.selectors.device_models import get_catalogue

pytestmark = pytest.mark.django_db

VENDORS = {
    "NVIDIA",
    "Ascend",
    "MLU",
    "DCU",
    "Metax",
    "Iluvatar",
    "Enflame",
    "Mthreads",
    "Kunlun",
    "AMD",
}


def _config(vendor, chip):
    return next(c for c in get_catalogue().configs if (c.vendor, c.chip) == (vendor, chip))


def test_fixture_covers_every_vendor_and_is_idempotent():
    call_command("loaddata", "device_models", verbosity=0)
    call_command("loaddata", "device_models", verbosity=0)
    assert set(DeviceModel.objects.values_list("vendor", flat=True)) == VENDORS
    assert DeviceModel.objects.filter(name__in=["MLU370-X8", "MLU590"]).count() == 2
    assert DeviceModel.objects.filter(name__startswith="Ascend910B").count() == 5
    assert DeviceModel.objects.get(name="Ascend910B4").resolved().memory_mib == 32768
    assert get_catalogue().errors == {}
    assert not DeviceModel.objects.exclude(error="").exists()


def test_two_models_of_one_vendor_are_configured_separately():
    call_command("loaddata", "device_models", verbosity=0)
    mlu370 = _config("MLU", "MLU370-X8")
    mlu590 = _config("MLU", "MLU590")
    assert (mlu370.memory_factor, mlu370.memory_mib) == (256, 24576)
    # unit 0: 1 % granularity of the configured allocatable memory
    assert (mlu590.memory_factor, mlu590.memory_mib) == (0, 79872)
    assert mlu590.resource_count == "cambricon.com/vmlu"
    # per-model resource names (the plugin's --enable-device-type names) and units
    assert (mlu370.resource_memory, mlu590.resource_memory) == (
        "cambricon.com/mlu370.smlu.vmemory",
        "cambricon.com/mlu590.smlu.vmemory",
    )
    assert (units_for(mlu370, 4096), units_for(mlu590, 4096)) == (16, 6)
    # Ascend chips keep their own templates (HAMi chart defaults)
    assert [t.name for t in _config("Ascend", "Ascend910B4").templates] != []
    assert _config("Ascend", "Ascend910B4").memory_mib == 32768
    assert _config("Ascend", "Ascend910B4-1").memory_mib == 65536
    assert _config("Ascend", "Ascend910B3").split_count == 4
    # H20 and H200 are distinct models with their own MIG profiles
    h20, h200 = _config("NVIDIA", "NVIDIA-H20"), _config("NVIDIA", "NVIDIA-H200")
    assert h20.templates[0].name == "1g.12gb" and h200.templates == ()
    assert _config("DCU", "K100_AI").memory_mib == 65520


def test_every_write_validates_the_config():
    with pytest.raises(ValidationError) as err:
        DeviceModel.objects.create(name="MLU-X", vendor="MLU", config={"units": 3})
    assert err.value.message_dict == {"config": ["units: unknown key"]}
    with pytest.raises(ValidationError, match="memory_factor"):
        DeviceModel.objects.create(name="MLU-Y", vendor="MLU", config={"memory_factor": -1})
    assert not DeviceModel.objects.filter(name__in=["MLU-X", "MLU-Y"]).exists()


def test_loaddata_refuses_an_invalid_fixture(tmp_path):
    fixture = tmp_path / "bad_models.json"
    fixture.write_text(
        json.dumps(
            [
                {
                    "model": "scheduling.devicemodel",
                    "fields": {"name": "MLU-Z", "vendor": "MLU", "config": {"bogus_key": 1}},
                }
            ]
        )
    )
    with pytest.raises(ValidationError, match="bogus_key: unknown key"):
        call_command("loaddata", str(fixture), verbosity=0)
    assert not DeviceModel.objects.filter(name="MLU-Z").exists()


def test_a_stored_bad_config_names_the_row_and_leaves_the_others():
    call_command("loaddata", "device_models", verbosity=0)
    # written before validation existed, or by SQL: no save() runs
    DeviceModel.objects.filter(name="MLU590").update(config={"units": 3})
    catalogue = get_catalogue()
    assert catalogue.errors == {"MLU590": "device model MLU590: config: units: unknown key"}
    assert catalogue.is_flagged("MLU", "MLU590")
    assert catalogue.for_device("MLU", "MLU370-X8").chip == "MLU370-X8"
    assert DeviceModel.objects.get(name="MLU590").slicing_mode == "fractional"


def test_the_admin_form_names_the_bad_key(client):
    from django.urls import reverse

    from tests.builders import make_user

    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    url = reverse("admin:scheduling_devicemodel_add")
    bad = client.post(
        url, {"name": "MLU-A", "vendor": "MLU", "family": "", "config": '{"bogus_key": 1}'}
    )
    assert bad.status_code == 200
    assert "bogus_key: unknown key" in bad.content.decode()
    assert not DeviceModel.objects.filter(name="MLU-A").exists()
    good = client.post(
        url,
        {
            "name": "MLU-A",
            "vendor": "MLU",
            "family": "",
            "config": '{"memory_factor": 0, "memory_mib": 79872}',
        },
    )
    assert good.status_code == 302
    assert DeviceModel.objects.get(name="MLU-A").resolved().memory_factor == 0
