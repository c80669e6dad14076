"""Issue 29 item 4: HAMi registers NVIDIA types in its long form, ``"NVIDIA-" + the NVML
name`` (``NVIDIA-NVIDIA H20``). The catalogue normalises it once: the device joins the
``NVIDIA-H20`` row, ``device_types: ["H20"]`` finds it and ``device_types_exclude: ["H20"]``
keeps a job off it, and neither ever confuses H20 with H200. Driven from the Node objects
through the inventory sync and admission cycles on PostgreSQL."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from django.core.management import call_command

from scheduling.models import Device, PlacementDevice
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.inventory import sync_cluster_inventory
from scheduling.services.jobs import ContainerSpec, JobSpec, enqueue_job
from tests.builders import make_group, make_tenant
from tests.kube.kube_helpers import NOW_TEXT, make_kube_cluster, node_json

pytestmark = pytest.mark.django_db

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)


def _node(name: str, uuid: str, gpu_type: str, devmem: int) -> dict:
    devs = [
        {
            "id": uuid,
            "index": 0,
            "count": 10,
            "devmem": devmem,
            "devcore": 100,
            "type": gpu_type,
            "numa": 0,
            "mode": "hami-core",
            "health": True,
        }
    ]
    return node_json(
        name,
        {
            "hami.io/node-nvidia-register": json.dumps(devs),
            "hami.io/node-handshake": f"Reported {NOW_TEXT}",
        },
        {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "10"},
    )


def _job(queue, name, *, types=(), exclude=()):
    spec = JobSpec(
        name=name,
        pod_count=1,
        cpu_milli=1000,
        host_memory_mib=1024,
        duration_s=60.0,
        containers=[
            ContainerSpec(
                device_count=1,
                device_memory_mib=8192,
                cores_percent=10,
                device_types=list(types),
                device_types_exclude=list(exclude),
            )
        ],
    )
    return enqueue_job(queue, spec, enqueue=False, check_fit=False)


def _device_of(job) -> str:
    return PlacementDevice.objects.get(placement__job=job).device.uuid


def test_long_form_types_join_their_model_and_match_whole_tokens(fake, tmp_path):
    call_command("loaddata", "device_models", verbosity=0)
    cluster = make_kube_cluster(fake, tmp_path)
    fake.put(_node("gpu-h20", "GPU-h20", "NVIDIA-NVIDIA H20", 97871))
    fake.put(_node("gpu-h200", "GPU-h200", "NVIDIA-NVIDIA H200", 143771))
    assert sync_cluster_inventory(cluster.pk, now=NOW).errors == []
    models = dict(Device.objects.values_list("uuid", "model__name"))
    assert models == {"GPU-h20": "NVIDIA-H20", "GPU-h200": "NVIDIA-H200"}
    group = make_group("g", models=("NVIDIA-H20", "NVIDIA-H200"))
    _tenant, queue = make_tenant("team-a", group, devices_milli=10_000)
    queue.flavors = ["*"]  # a queue naming its flavors: each pod is limited to their models
    queue.save(update_fields=["flavors"])
    want_h20 = _job(queue, "want-h20", types=("H20",))
    want_h200 = _job(queue, "want-h200", types=("NVIDIA H200",))
    no_h20 = _job(queue, "no-h20", exclude=("H20",))
    report = run_admission_cycle(group.pk)
    assert sorted(report.admitted) == sorted(j.pk for j in (want_h20, want_h200, no_h20))
    assert _device_of(want_h20) == "GPU-h20"
    assert _device_of(want_h200) == "GPU-h200"
    assert _device_of(no_h20) == "GPU-h200"
