"""Probes of the device catalogue API (issue 13): bad input is a 400 naming the field and
writes nothing; tenants read but never write."""

from __future__ import annotations

import pytest

from scheduling.models import DeviceModel
from tests.adversarial.helpers import client_for, text

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "X1", "vendor": "NVIDIA", "config": {"memory_mib": -1}}, "config"),
        ({"name": "X1", "vendor": "NVIDIA", "config": {"memory_mib": 10**30}}, "config"),
        ({"name": "X1", "vendor": "NVIDIA", "config": {"memory_mib": "lots"}}, "config"),
        ({"name": "X1", "vendor": "NVIDIA", "config": {"split_count": 10**12}}, "config"),
        ({"name": "X1", "vendor": "NVIDIA", "config": {"nonsense": 1}}, "config"),
        ({"name": "X1", "vendor": "NVIDIA", "config": {"memory_mib": 1, "k\x00": 1}}, "config"),
        ({"name": "X1", "vendor": "NVIDIA", "config": ["memory_mib"]}, "config"),
        ({"name": "X\x001", "vendor": "NVIDIA"}, "name"),
        ({"name": "x" * 1000, "vendor": "NVIDIA"}, "name"),
        ({"name": "X1", "vendor": ""}, "vendor"),
    ],
)
def test_bad_device_model_input_is_a_field_error_and_writes_nothing(world, body, field):
    before = DeviceModel.objects.count()
    response = client_for(world["root"]).post("/api/device-models/", body, format="json")
    assert response.status_code == 400, (response.status_code, text(response)[:400])
    fields = response.json()["error"]["fields"]
    assert any(f == field or f.startswith(f"{field}.") for f in fields), fields
    assert DeviceModel.objects.count() == before


@pytest.mark.parametrize("who", ["alice", "ada", "victor", "bob"])
def test_tenants_read_the_catalogue_but_never_write_it(world, who):
    client = client_for(world[who])
    model = DeviceModel.objects.first()
    assert client.get("/api/device-models/").status_code == 200
    assert (
        client.post(
            "/api/device-models/", {"name": "X", "vendor": "NVIDIA"}, format="json"
        ).status_code
        == 403
    )
    assert (
        client.patch(f"/api/device-models/{model.pk}/", {"config": {}}, format="json").status_code
        == 403
    )
    assert client.delete(f"/api/device-models/{model.pk}/").status_code == 403
