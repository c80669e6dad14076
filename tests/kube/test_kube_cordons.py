"""Device health written back, against the HTTP fake API server: an XID-marked device is
cordoned in the cluster (HAMi's ``hami.io/device-cordon``) and stays unhealthy across
inventory syncs; operator cordons drain jobs by policy; DRA devices get a DeviceTaintRule."""

from __future__ import annotations

from datetime import UTC, datetime

import kubernetes_validate
import pytest

from scheduling.choices import JobState, PlacementState
from scheduling.models import Device, Job, Node, Placement
from scheduling.services.cluster_submission import submit_to_cluster
from scheduling.services.cordons import (
    CONSOLE_CORDON_ANNOTATION,
    cordon_device,
    note_pod_failure,
    sync_device_cordons,
    taint_rule_name,
    uncordon_device,
)
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.inventory import sync_cluster_inventory
from scheduling.services.jobs import ContainerSpec, JobSpec, enqueue_job
from telemetry.exporters import XID
from telemetry.services.device_health import apply_health, clear_device_health
from tests.builders import make_group, make_tenant
from tests.kube.fake_apiserver import FakeApiServer
from tests.kube.kube_helpers import make_kube_cluster, nvidia_node

# the fake API server of tests/conftest.py's ``fake`` fixture, with these options
pytestmark = [
    pytest.mark.django_db,
    pytest.mark.fake_apiserver(namespaces=None, device_taint_rules=True),
]

A100 = "NVIDIA-A100-SXM4-80GB"
K8S = "1.34.0"
CORDON = "hami.io/device-cordon"
SYNC_AT = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def kube(fake, tmp_path, settings):
    settings.KUBE_RETRY_BASE_DELAY_S = 0.0
    cluster = make_kube_cluster(fake, tmp_path)
    fake.put(nvidia_node("gpu-1", ("GPU-aaaa", "GPU-bbbb")))
    sync_cluster_inventory(cluster.pk, now=SYNC_AT)
    group = make_group("g1", models=(A100,))
    _tenant, queue = make_tenant("team-a", group, devices_milli=4000)
    return cluster, group, queue


def _annotations(fake, node="gpu-1") -> dict:
    return fake.get("nodes", node)["metadata"].get("annotations") or {}


def test_xid_marked_device_is_cordoned_in_the_cluster_and_stays_unhealthy(fake, kube):
    cluster, _group, _queue = kube
    device = Device.objects.get(uuid="GPU-aaaa")
    apply_health({device.pk: {XID: 79.0}}, now=SYNC_AT)
    device.refresh_from_db()
    assert (device.healthy, device.console_unhealthy, device.cordoned) == (False, True, True)
    assert device.cordon_reason == "unhealthy: critical XID 79"

    report = sync_device_cordons(cluster.pk)
    assert report.nodes_patched == ["gpu-1"]
    ann = _annotations(fake)
    assert ann[CORDON] == "GPU-aaaa" and ann[CONSOLE_CORDON_ANNOTATION] == "GPU-aaaa"
    kubernetes_validate.validate(
        {**fake.get("nodes", "gpu-1"), "apiVersion": "v1", "kind": "Node"}, K8S, strict=True
    )

    # HAMi's registration still says health: true; the console's verdict stands
    for _ in range(2):
        sync_cluster_inventory(cluster.pk, now=SYNC_AT)
        device.refresh_from_db()
        assert (device.healthy, device.console_unhealthy, device.cordoned) == (False, True, True)
    assert Device.objects.get(uuid="GPU-bbbb").healthy is True
    assert sync_device_cordons(cluster.pk).nodes_patched == []  # idempotent


def test_cordon_write_back_keeps_entries_someone_else_wrote(fake, kube):
    cluster, _group, _queue = kube
    node = fake.get("nodes", "gpu-1")
    node["metadata"]["annotations"][CORDON] = "GPU-bbbb"  # an operator's kubectl annotate
    fake.put({**node, "apiVersion": "v1", "kind": "Node"})
    device = Device.objects.get(uuid="GPU-aaaa")
    apply_health({device.pk: {XID: 48.0}}, now=SYNC_AT)
    sync_device_cordons(cluster.pk)
    assert _annotations(fake)[CORDON] == "GPU-aaaa,GPU-bbbb"

    clear_device_health("GPU-aaaa", now=SYNC_AT)  # recovered, sticky cleared
    apply_health({device.pk: {XID: 0.0}}, now=SYNC_AT)
    device.refresh_from_db()
    assert (device.healthy, device.console_unhealthy, device.cordon_reason) == (True, False, "")
    sync_device_cordons(cluster.pk)
    ann = _annotations(fake)
    assert ann[CORDON] == "GPU-bbbb" and CONSOLE_CORDON_ANNOTATION not in ann


def _running_job(kube, uuid_hint: str = "") -> Job:
    _cluster, group, queue = kube
    job = enqueue_job(
        queue,
        JobSpec(
            name="train",
            cpu_milli=1000,
            host_memory_mib=1024,
            containers=[
                ContainerSpec(
                    device_count=2,
                    device_memory_mib=0,
                    memory_percent=100,
                    cores_percent=100,
                    image="busybox:1.37",
                )
            ],
        ),
        enqueue=False,
    )
    assert run_admission_cycle(group.pk).admitted == [job.pk]
    submit_to_cluster(job.pk)
    return job


@pytest.mark.parametrize(
    ("policy", "state"),
    [("wait", JobState.ADMITTED), ("requeue", JobState.QUEUED), ("fail", JobState.FAILED)],
)
def test_operator_cordon_drains_jobs_by_policy(
    fake, kube, policy, state, django_capture_on_commit_callbacks
):
    cluster = kube[0]
    job = _running_job(kube)
    (placement,) = Placement.objects.filter(job=job)
    pod_name = placement.backend_ref.split("/")[1]
    device = Device.objects.get(uuid="GPU-aaaa")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        cordon_device(device, reason="fan replacement", policy=policy)
    for callback in callbacks:  # the drained pods are deleted after the commit, run just that
        if callback.__qualname__.startswith("delete_pods_on_commit."):
            callback()
    job.refresh_from_db()
    placement.refresh_from_db()
    assert job.state == state
    booked = placement.state in (PlacementState.SUBMITTED, PlacementState.RUNNING)
    assert booked is (policy == "wait")
    assert (fake.get("pods", pod_name, placement.backend_ref.split("/")[0]) is None) is (
        policy != "wait"
    )
    device.refresh_from_db()
    assert device.cordon_reason == "cordoned by operator: fan replacement"
    sync_device_cordons(cluster.pk)
    assert _annotations(fake)[CORDON] == "GPU-aaaa"
    uncordon_device(device)
    sync_device_cordons(cluster.pk)
    assert CORDON not in _annotations(fake)


def test_dra_device_gets_a_device_taint_rule(fake, kube):
    cluster = kube[0]
    node = Node.objects.get(name="gpu-1")
    device = Device.objects.create(
        uuid="GPU-dra-0",
        node=node,
        model=Device.objects.get(uuid="GPU-aaaa").model,
        memory_mib=81920,
        source="dra",
        dra_device="gpu.nvidia.com/gpu-1/gpu-0",
    )
    cordon_device(device, reason="bad NVLink", policy="wait")
    report = sync_device_cordons(cluster.pk)
    name = taint_rule_name("gpu.nvidia.com/gpu-1/gpu-0")
    assert report.rules_created == [name]
    rule = fake.get("devicetaintrules", name)
    assert rule["spec"]["deviceSelector"] == {
        "driver": "gpu.nvidia.com",
        "pool": "gpu-1",
        "device": "gpu-0",
    }
    assert rule["spec"]["taint"]["effect"] == "NoSchedule"
    kubernetes_validate.validate(
        {**rule, "apiVersion": "resource.k8s.io/v1alpha3", "kind": "DeviceTaintRule"},
        K8S,
        strict=True,
    )
    assert CORDON not in _annotations(fake)  # a DRA device is not HAMi's
    uncordon_device(device)
    assert sync_device_cordons(cluster.pk).rules_deleted == [name]
    assert fake.get("devicetaintrules", name) is None


def test_dra_cordon_without_taint_rules_is_reported(kube, tmp_path, settings):
    server = FakeApiServer()
    server.start()
    try:
        cluster = make_kube_cluster(server, tmp_path, name="k2")
        server.put(nvidia_node("gpu-9", ("GPU-9999",)))
        sync_cluster_inventory(cluster.pk, now=SYNC_AT)
        node = Node.objects.get(cluster=cluster)
        device = Device.objects.create(
            uuid="GPU-dra-9",
            node=node,
            model=Device.objects.get(uuid="GPU-9999").model,
            memory_mib=81920,
            source="dra",
            dra_device="gpu.nvidia.com/gpu-9/gpu-0",
        )
        cordon_device(device, reason="bad", policy="wait")
        report = sync_device_cordons(cluster.pk)
        assert "serves no DeviceTaintRule API" in report.errors[0]
    finally:
        from scheduling.backends.kubernetes import forget_gateways

        server.stop()
        forget_gateways()


def test_repeated_pod_failures_mark_the_device_unhealthy(fake, kube, settings):
    settings.DEVICE_FAILURE_THRESHOLD = 2
    job = _running_job(kube)
    (placement,) = Placement.objects.filter(job=job)
    Placement.objects.filter(pk=placement.pk).update(state=PlacementState.FAILED, ended_at=SYNC_AT)
    assert note_pod_failure(placement.pk, now=SYNC_AT) == []
    job2 = _running_job(kube)
    (p2,) = Placement.objects.filter(job=job2)
    Placement.objects.filter(pk=p2.pk).update(state=PlacementState.FAILED, ended_at=SYNC_AT)
    marked = note_pod_failure(p2.pk, now=SYNC_AT)
    assert sorted(Device.objects.filter(pk__in=marked).values_list("uuid", flat=True)) == [
        "GPU-aaaa",
        "GPU-bbbb",
    ]
    assert not Device.objects.get(uuid="GPU-aaaa").healthy


def test_operator_cordons_through_the_api_and_the_device_page(kube, client):
    from django.contrib.auth import get_user_model
    from rest_framework.test import APIClient

    from tests.builders import make_user

    device = Device.objects.get(uuid="GPU-aaaa")
    member = make_user("member", kube[2].tenant)
    api = APIClient()
    api.force_authenticate(member)
    url = f"/api/devices/{device.pk}/cordon/"
    assert api.post(url, {"reason": "x"}, format="json").status_code == 403
    admin = get_user_model().objects.create_superuser("root", password="pw-root")
    api.force_authenticate(admin)
    bad = api.post(url, {"drain": "evict"}, format="json")
    assert (
        bad.status_code == 400 and "drain" in bad.json()["errors"]
        if "errors" in bad.json()
        else "drain" in str(bad.json())
    )
    done = api.post(url, {"reason": "ECC storm", "drain": "wait"}, format="json")
    assert done.status_code == 200
    assert done.json()["cordon_reason"] == "cordoned by root: ECC storm"
    assert api.post(f"/api/devices/{device.pk}/uncordon/").json()["cordon_reason"] == ""

    client.force_login(admin)
    page = client.get(f"/devices/{device.uuid}/")
    assert b"Cordon in the cluster" in page.content
    resp = client.post(f"/devices/{device.uuid}/cordon/", {"reason": "swap", "drain": "wait"})
    assert resp.status_code == 302
    device.refresh_from_db()
    assert device.cordon_reason == "cordoned by root: swap" and device.cordoned
    assert b"Uncordon" in client.get(f"/devices/{device.uuid}/").content
    client.force_login(member)
    assert client.post(f"/devices/{device.uuid}/uncordon/").status_code == 403
