"""Issue 13, the remaining HAMi vendors in the live path: AWS Neuron, Vastai and Biren from
the Node objects their device plugins write, through the inventory sync and an admission
cycle, to the HAMi Pod the console creates (validated with kubernetes-validate), on
PostgreSQL through the official client and the HTTP fake API server."""

from __future__ import annotations

import json

import kubernetes_validate
import pytest

from scheduling.backends.kubernetes import build_manifests
from scheduling.choices import JobState
from scheduling.models import Device, JobContainer, Placement, PlacementDevice
from scheduling.services.cluster_submission import submit_to_cluster
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.inventory import sync_cluster_inventory
from scheduling.services.jobs import ContainerSpec, JobSpec, enqueue_job
from tests.builders import make_group, make_tenant
from tests.kube.kube_helpers import make_kube_cluster, node_json

pytestmark = pytest.mark.django_db


def _job(queue, name: str, vendor: str, count: int, cores: int = 0):
    job = enqueue_job(
        queue,
        JobSpec(
            name=name,
            cpu_milli=1000,
            host_memory_mib=1024,
            containers=[ContainerSpec(vendor=vendor, device_count=count, cores_percent=cores)],
        ),
        enqueue=False,
    )
    JobContainer.objects.filter(job=job).update(image="registry.example/infer:1")
    return job


def _limits(job) -> tuple[dict, dict]:
    assert submit_to_cluster(job.pk) == JobState.ADMITTED
    manifests = build_manifests(Placement.objects.get(job=job))
    kubernetes_validate.validate(manifests.pod, "1.34.0", strict=True)
    pod = manifests.pod
    return pod["spec"]["containers"][0]["resources"]["limits"], pod["metadata"]["annotations"]


def test_neuron_vastai_and_biren_sync_place_and_emit(fake, tmp_path):
    cluster = make_kube_cluster(fake, tmp_path)
    fake.put(
        node_json(
            "trn-1",
            {},
            {
                "cpu": "128",
                "memory": "512Gi",
                "aws.amazon.com/neuron": "8",
                "aws.amazon.com/neuroncore": "16",
            },
            labels={"node.kubernetes.io/instance-type": "trn1.32xlarge"},
        )
    )
    for name, anno, kind in (
        ("va-1", "hami.io/node-va-register", "Vastai"),
        ("br-1", "hami.io/node-biren-register", "Biren"),
    ):
        fake.put(
            node_json(
                name,
                {
                    anno: json.dumps(
                        [
                            {
                                "id": f"{kind.upper()}-{i}",
                                "index": i,
                                "count": 1,
                                "devmem": 16384,
                                "devcore": 100,
                                "type": kind,
                                "health": True,
                            }
                            for i in range(2)
                        ]
                    )
                },
                {"cpu": "32", "memory": "128Gi"},
            )
        )
    assert sync_cluster_inventory(cluster.pk).errors == []
    neuron = Device.objects.get(uuid="trn-1-AWSNeuron-0")
    assert (neuron.model.name, neuron.cores_percent, neuron.split_count) == ("AWSNeuron", 2, 2)
    group = make_group("mixed", models=("AWSNeuron", "Vastai", "Biren"))
    _tenant, queue = make_tenant("team-a", group, devices_milli=100_000)
    run = _job(queue, "four-devices", "AWSNeuron", 4)
    core = _job(queue, "one-core", "AWSNeuron", 1, cores=1)
    va = _job(queue, "va", "Vastai", 1)
    br = _job(queue, "br", "Biren", 2)
    assert sorted(run_admission_cycle(group.pk).admitted) == sorted(
        j.pk for j in (core, run, va, br)
    )
    # the run is 4 whole devices at an aligned start; the single core is on another device
    assert sorted(
        PlacementDevice.objects.filter(placement__job=run).values_list("device__index", flat=True)
    ) in ([0, 1, 2, 3], [4, 5, 6, 7])
    (one,) = PlacementDevice.objects.filter(placement__job=core)
    assert (
        one.cores_percent,
        one.device.index
        not in PlacementDevice.objects.filter(placement__job=run).values_list(
            "device__index", flat=True
        ),
    ) == (1, True)
    limits, ann = _limits(core)
    assert {k: v for k, v in limits.items() if k.startswith("aws")} == {
        "aws.amazon.com/neuroncore": "1"
    }
    assert ann["aws.amazon.com/use-neuron-uuid"].startswith("trn-1-AWSNeuron-")
    limits, _ = _limits(run)
    assert {k: v for k, v in limits.items() if k.startswith("aws")} == {
        "aws.amazon.com/neuron": "4"
    }
    limits, ann = _limits(va)
    assert {k: v for k, v in limits.items() if k.startswith("vastai")} == {"vastaitech.com/va": "1"}
    assert ann["vastaitech.com/use-gpuuuid"] in ("VASTAI-0", "VASTAI-1")
    limits, ann = _limits(br)
    assert {k: v for k, v in limits.items() if k.startswith("biren")} == {"birentech.com/gpu": "2"}
    assert sorted(ann["birentech.com/use-gpuuuid"].split(",")) == ["BIREN-0", "BIREN-1"]


def test_enflame_drs_cards_sync_take_profiles_and_emit_the_slice_count(fake, tmp_path):
    cluster = make_kube_cluster(fake, tmp_path)
    fake.put(
        node_json(
            "gcu-1",
            {
                "enflame.com/gcu-drs-capacity": json.dumps(
                    {
                        "devices": [
                            {"index": "0", "minor": "0", "capacity": 6},
                            {"index": "1", "minor": "1", "capacity": 6},
                        ],
                        "profiles": {"1g.8gb": "p1", "3g.24gb": "p3", "6g.48gb": "p6"},
                    }
                )
            },
            {"cpu": "64", "memory": "256Gi"},
        )
    )
    assert sync_cluster_inventory(cluster.pk).errors == []
    card = Device.objects.get(uuid="gcu-1-enflame-drs-0")
    assert (card.model.vendor, card.memory_mib, card.split_count) == ("EnflameDRS", 49152, 6)
    assert {p["name"]: p["profile_id"] for p in card.mig_profiles} == {
        "1g.8gb": "p1",
        "3g.24gb": "p3",
        "6g.48gb": "p6",
    }
    group = make_group("gcu", models=(card.model.name,))
    _tenant, queue = make_tenant("team-a", group, devices_milli=100_000)
    jobs = []
    for i in range(5):
        job = enqueue_job(
            queue,
            JobSpec(
                name=f"drs-{i}",
                cpu_milli=1000,
                host_memory_mib=1024,
                containers=[
                    ContainerSpec(
                        vendor="EnflameDRS",
                        device_count=1,
                        device_memory_mib=20000,
                        cores_percent=30,
                    )
                ],
            ),
            enqueue=False,
        )
        JobContainer.objects.filter(job=job).update(image="registry.example/infer:1")
        jobs.append(job)
    # 20000 MiB / 30 % -> the 3g.24gb profile (3 slices, 24 GiB, 50 %): two per 6-slice card
    assert len(run_admission_cycle(group.pk).admitted) == 4
    booked = PlacementDevice.objects.filter(placement__job__in=jobs)
    assert {(b.memory_mib, b.cores_percent, b.slots) for b in booked} == {(24576, 50, 3)}
    limits, ann = _limits(jobs[0])
    assert {k: v for k, v in limits.items() if k.startswith("enflame")} == {
        "enflame.com/drs-gcu": "3"
    }
    assert ann["enflame.com/use-gpuuuid"].startswith("gcu-1-enflame-drs-")
