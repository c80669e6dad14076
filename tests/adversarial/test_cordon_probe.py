"""Probes of ``POST /api/devices/<id>/cordon/`` (issue 18): roles, bad input, repeats, and what
a tenant reads of a cordon and its drain."""

from __future__ import annotations

import pytest

from scheduling.models import Device, JobEvent, Placement
from tests.adversarial.helpers import assert_field_error, client_for, text

pytestmark = pytest.mark.django_db


def _device_of(job) -> Device:
    placement = Placement.objects.filter(job=job).first()
    return Device.objects.get(pk=placement.devices.first().device_id)


def _url(device_id) -> str:
    return f"/api/devices/{device_id}/cordon/"


@pytest.mark.parametrize("who", ["alice", "ada", "victor", "bob"])
def test_only_platform_admins_cordon_and_nothing_changes_otherwise(world, who):
    device = _device_of(world["a_train"])
    for action in ("cordon", "uncordon"):
        response = client_for(world[who]).post(
            f"/api/devices/{device.pk}/{action}/", {"reason": "x"}, format="json"
        )
        assert response.status_code == 403, (who, action, response.status_code)
    device.refresh_from_db()
    assert (device.cordoned, device.cordon_reason) == (False, "")


@pytest.mark.parametrize("device_id", ["999999", "abc", "1%00"])
def test_cordon_of_an_unknown_device_is_404(world, device_id):
    response = client_for(world["root"]).post(_url(device_id), {}, format="json")
    assert response.status_code == 404, (response.status_code, text(response)[:300])


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"drain": "evict"}, ["drain"]),
        ({"drain": ["wait"]}, ["drain"]),
        ({"reason": "a\x00b"}, ["reason"]),
        ({"reason": "x" * 201}, ["reason"]),
        ({"reason": {"a": 1}}, ["reason"]),
        ({"force": True}, ["force"]),
    ],
)
def test_bad_cordon_input_is_a_field_error_and_writes_nothing(world, body, fields):
    device = _device_of(world["a_train"])
    response = client_for(world["root"]).post(_url(device.pk), body, format="json")
    assert_field_error(response, *fields)
    device.refresh_from_db()
    assert (device.cordoned, device.cordon_reason) == (False, "")


def test_a_non_object_body_is_400_not_500(world):
    device = _device_of(world["a_train"])
    response = client_for(world["root"]).post(_url(device.pk), ["wait"], format="json")
    assert response.status_code == 400, (response.status_code, text(response)[:300])


def test_cordoning_twice_drains_once_and_keeps_one_event_per_job(world):
    job = world["a_train"]
    device = _device_of(job)
    client = client_for(world["root"])
    for _ in range(2):
        response = client.post(_url(device.pk), {"reason": "fan", "drain": "wait"}, format="json")
        assert response.status_code == 200, text(response)[:300]
        assert response.json()["cordoned"] is True
    assert JobEvent.objects.filter(job=job, kind="device-cordoned").count() == 1


def test_a_tenant_reads_why_its_job_was_requeued_by_a_cordon(world):
    job = world["a_train"]
    device = _device_of(job)
    client_for(world["root"]).post(
        _url(device.pk), {"reason": "fan", "drain": "requeue"}, format="json"
    )
    body = text(client_for(world["alice"]).get(f"/api/jobs/{job.pk}/events/"))
    body += text(client_for(world["alice"]).get(f"/api/jobs/{job.pk}/"))
    assert "fan" in body and "requeued" in body


def test_a_second_cordon_with_requeue_drains_what_the_first_let_run(world):
    job = world["a_train"]
    device = _device_of(job)
    client = client_for(world["root"])
    client.post(_url(device.pk), {"reason": "fan", "drain": "wait"}, format="json")
    job.refresh_from_db()
    assert job.state == "running"
    client.post(_url(device.pk), {"reason": "fan died", "drain": "requeue"}, format="json")
    job.refresh_from_db()
    device.refresh_from_db()
    assert job.state == "queued" and "fan died" in job.pending_reason
    assert device.cordon_reason == "cordoned by root: fan died"


def _page_client(user):
    from django.test import Client

    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


@pytest.mark.parametrize("reason", ["a\x00b", "x" * 5000])
def test_the_device_page_cordon_with_a_bad_reason_is_not_a_server_error(world, reason):
    device = _device_of(world["a_train"])
    response = _page_client(world["root"]).post(
        f"/devices/{device.uuid}/cordon/", {"reason": reason, "drain": "wait"}
    )
    assert response.status_code in (200, 302), response.status_code
    device.refresh_from_db()
    if "\x00" in reason:
        assert (device.cordoned, device.cordon_reason) == (False, "")


def test_the_device_page_cordon_of_an_unknown_uuid_is_404(world):
    client = _page_client(world["root"])
    assert client.post("/devices/GPU-nope/cordon/", {"drain": "wait"}).status_code == 404
    assert client.post("/devices/GPU-%00/cordon/", {"drain": "wait"}).status_code == 404


def test_the_device_page_with_a_nul_in_its_address_is_404(world):
    assert _page_client(world["alice"]).get("/devices/GPU-%00/").status_code == 404


def test_the_device_page_refuses_an_unknown_drain_policy_without_cordoning(world):
    device = _device_of(world["a_train"])
    response = _page_client(world["root"]).post(
        f"/devices/{device.uuid}/cordon/", {"reason": "r", "drain": "evict"}
    )
    assert response.status_code == 302
    device.refresh_from_db()
    assert (device.cordoned, device.cordon_reason) == (False, "")
