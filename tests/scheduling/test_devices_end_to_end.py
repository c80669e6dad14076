"""Issue 13, the inventory / Kubernetes half: from the Node objects a HAMi cluster shows
(annotations, capacities, labels), through the inventory sync and an admission cycle, to the
Pod the console creates (validated with kubernetes-validate) - on PostgreSQL, through the
official client and the HTTP fake API server.
"""

from __future__ import annotations

import kubernetes_validate
import pytest
from django.core.management import call_command

from scheduling.backends.kubernetes import build_manifests
from scheduling.choices import JobState
from scheduling.models import Device, JobContainer, Placement, PlacementDevice
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.inventory import sync_cluster_inventory
from scheduling.services.jobs import ContainerSpec, JobSpec
from scheduling.services.jobs import submit_job as create_job
from scheduling.services.submissions import submit_job
from tests.builders import make_group, make_tenant
from tests.scheduling.kube_helpers import make_kube_cluster, node_json

pytestmark = pytest.mark.django_db

K8S = "1.34.0"


@pytest.fixture(autouse=True)
def _catalogue(settings):
    settings.KUBE_RETRY_BASE_DELAY_S = 0.0
    call_command("loaddata", "device_models", verbosity=0)


def mlu_node(name: str, prefix: str, cards: int, vmemory_per_card: int, *,
             labels: dict | None = None) -> dict:
    """A node of the Cambricon device plugin in dynamic-smlu mode: ``<prefix>.smlu.vcore``
    (100 per card) and ``<prefix>.smlu.vmemory`` capacities, no register annotation."""
    return node_json(name, {}, {"cpu": "64", "memory": "256Gi",
                                f"{prefix}.smlu.vcore": str(100 * cards),
                                f"{prefix}.smlu.vmemory": str(vmemory_per_card * cards)},
                     labels=labels)


def _job(queue, group, *, vendor: str, memory_mib: int, types: list[str], count: int = 1,
         cores: int = 30, name: str = "train"):
    job = create_job(queue, JobSpec(
        name=name, pod_count=1, cpu_milli=1000, memory_mib=2048,
        containers=[ContainerSpec(name="main", vendor=vendor, device_count=count,
                                  memory_mib=memory_mib, cores_percent=cores,
                                  device_types=types)]), enqueue=False)
    JobContainer.objects.filter(job=job).update(image="registry.example/infer:1")
    return job


def _submitted_pod(fake, job) -> tuple[dict, dict]:
    """(the Pod stored by the API server, the manifest the console built, validated)."""
    assert submit_job(job.pk) == JobState.ADMITTED
    placement = Placement.objects.get(job=job)
    manifests = build_manifests(placement)
    kubernetes_validate.validate(manifests.pod, K8S, strict=True)
    ns, name = placement.backend_ref.split("/", 1)
    return fake.get("pods", name, ns), manifests.pod


def test_two_cambricon_models_sync_place_and_emit_their_own_units(fake, tmp_path):
    cluster = make_kube_cluster(fake, tmp_path)
    # MLU370-X8: 24576 MiB in 256 MiB units; MLU590: unit 0 = 1 % of 79872 MiB = 798 MiB
    fake.put(mlu_node("mlu370-1", "cambricon.com/mlu370", 2, 96))
    fake.put(mlu_node("mlu590-1", "cambricon.com/mlu590", 1, 100))
    report = sync_cluster_inventory(cluster.pk)
    assert report.errors == []
    devices = {d.uuid: (d.model.name, d.memory_mib) for d in Device.objects.all()}
    assert devices == {"mlu370-1-cambricon-mlu-0": ("MLU370-X8", 24576),
                       "mlu370-1-cambricon-mlu-1": ("MLU370-X8", 24576),
                       "mlu590-1-cambricon-mlu-0": ("MLU590", 79872)}
    group = make_group("mlu", models=("MLU370-X8", "MLU590"))
    _tenant, queue = make_tenant("team-a", group, devices_milli=10_000)
    pinned_370 = [_job(queue, group, vendor="MLU", memory_mib=4096, types=["MLU370"],
                       name=f"on-370-{i}") for i in range(3)]
    on_590 = _job(queue, group, vendor="MLU", memory_mib=4096, types=["MLU590"], name="on-590")
    report = run_admission_cycle(group.pk)
    assert sorted(report.admitted) == sorted([j.pk for j in (*pinned_370, on_590)])
    for job in pinned_370:
        assert Placement.objects.get(job=job).node.name == "mlu370-1"
    booked = PlacementDevice.objects.get(placement__job=on_590)
    assert (booked.device.uuid, booked.memory_mib) == ("mlu590-1-cambricon-mlu-0", 6 * 798)

    stored, built = _submitted_pod(fake, on_590)
    limits = built["spec"]["containers"][0]["resources"]["limits"]
    assert stored["spec"]["containers"][0]["resources"]["limits"] == limits
    assert {k: v for k, v in limits.items() if k.startswith("cambricon.com/")} == {
        "cambricon.com/vmlu": "1", "cambricon.com/mlu590.smlu.vmemory": "6",
        "cambricon.com/mlu590.smlu.vcore": "30"}
    assert stored["metadata"]["annotations"]["cambricon.com/use-gpuuuid"] == \
        "mlu590-1-cambricon-mlu-0"
    _stored, built = _submitted_pod(fake, pinned_370[0])
    limits = built["spec"]["containers"][0]["resources"]["limits"]
    assert limits["cambricon.com/mlu370.smlu.vmemory"] == "16"  # 4096 / 256
    assert "cambricon.com/mlu590.smlu.vmemory" not in limits


def test_a_job_pinned_to_mlu370_never_lands_on_an_mlu590(fake, tmp_path):
    cluster = make_kube_cluster(fake, tmp_path)
    fake.put(mlu_node("mlu370-1", "cambricon.com/mlu370", 1, 96))
    fake.put(mlu_node("mlu590-1", "cambricon.com/mlu590", 4, 100))
    sync_cluster_inventory(cluster.pk)
    group = make_group("mlu", models=("MLU370-X8", "MLU590"))
    _tenant, queue = make_tenant("team-a", group, devices_milli=10_000)
    # the MLU370 card holds one of these; the MLU590s have room for all, but are not MLU370s
    jobs = [_job(queue, group, vendor="MLU", memory_mib=20000, types=["MLU370"], cores=50,
                 name=f"j{i}") for i in range(3)]
    report = run_admission_cycle(group.pk)
    assert len(report.admitted) == 1
    assert {p.node.name for p in Placement.objects.filter(job__in=jobs)} == {"mlu370-1"}
    pending = [j for j in jobs if j.pk not in report.admitted]
    assert all(j.pk in report.pending for j in pending)


def test_the_model_label_names_the_cards_of_model_less_capacities(fake, tmp_path):
    cluster = make_kube_cluster(fake, tmp_path)
    fake.put(mlu_node("mlu-a", "cambricon.com/mlu", 2, 100, labels={"Model": "MLU590-M9D"}))
    fake.put(mlu_node("mlu-b", "cambricon.com/mlu", 1, 96, labels={"Model": "MLU370-X8"}))
    fake.put(mlu_node("mlu-c", "cambricon.com/mlu", 1, 64))
    assert sync_cluster_inventory(cluster.pk).errors == []
    got = {d.uuid: (d.model.name, d.memory_mib) for d in Device.objects.all()}
    assert got == {"mlu-a-cambricon-mlu-0": ("MLU590", 79872),
                   "mlu-a-cambricon-mlu-1": ("MLU590", 79872),
                   "mlu-b-cambricon-mlu-0": ("MLU370-X8", 24576),
                   # no label: HAMi's model-less MLU at 256 MiB units (64 x 256)
                   "mlu-c-cambricon-mlu-0": ("MLU", 16384)}


# -- Hygon: identity by hardware serial ---------------------------------------------------------

def dcu_node(name: str, annotations: dict | None = None) -> dict:
    """A node of the released DCU plugin (v1.0.6): legacy 7-field ``DCU-<index>`` ids."""
    return node_json(name, {"hami.io/node-dcu-register": "DCU-0,4,65520,100,K100_AI,0,true:",
                            **(annotations or {})},
                     {"cpu": "64", "memory": "256Gi", "hygon.com/dcunum": "4"})


def test_two_nodes_registering_dcu_0_are_two_serial_keyed_cards_and_metrics_follow(
        fake, tmp_path):
    from telemetry.models import Sample
    from telemetry.services.ingestion import ingest_payload
    from tests.telemetry.payloads import HYGON

    cluster = make_kube_cluster(fake, tmp_path)
    fake.put(dcu_node("dcunode3", {"console.llmops.io/dcu-serials": '{"0": "T8R1380013061601"}'}))
    fake.put(dcu_node("dcunode4"))
    report = sync_cluster_inventory(cluster.pk)
    assert report.errors == []
    assert len(report.warnings) == 1 and "dcunode4" in report.warnings[0]
    rows = {d.uuid: (d.node.name, d.hami_id, d.serial) for d in Device.objects.all()}
    assert rows == {"DCU-T8R1380013061601": ("dcunode3", "DCU-0", "T8R1380013061601"),
                    "dcunode4/DCU-0": ("dcunode4", "DCU-0", "")}
    group = make_group("dcu", models=("K100_AI",))
    _tenant, queue = make_tenant("team-a", group, devices_milli=10_000)
    jobs = [_job(queue, group, vendor="DCU", memory_mib=65520, types=[], cores=100,
                 name=f"d{i}") for i in range(2)]
    assert sorted(run_admission_cycle(group.pk).admitted) == sorted(j.pk for j in jobs)
    holder = {PlacementDevice.objects.get(placement__job=j).device.node.name: j for j in jobs}
    provisional = Device.objects.get(uuid="dcunode4/DCU-0")

    # the exporter names both serials; the one the inventory does not know yet joins by
    # (node, minor_number) and feeds the serial map
    ingest_payload("hygon", HYGON, cluster_id=cluster.pk)
    util = {s.device_id: s for s in Sample.objects.filter(metric="util_percent")}
    assert util[Device.objects.get(uuid="DCU-T8R1380013061601").pk].job_id == \
        holder["dcunode3"].pk
    assert util[provisional.pk].job_id == holder["dcunode4"].pk

    report = sync_cluster_inventory(cluster.pk)
    assert report.devices_rekeyed == {"dcunode4/DCU-0": "DCU-T8R1380019021101"}
    provisional.refresh_from_db()
    assert (provisional.uuid, provisional.serial, provisional.hami_id) == (
        "DCU-T8R1380019021101", "T8R1380019021101", "DCU-0")
    assert PlacementDevice.objects.get(placement__job=holder["dcunode4"]).device_id == \
        provisional.pk  # the booking stayed with the card
    Sample.objects.all().delete()
    _parsed, _norm, result = ingest_payload("hygon", HYGON, cluster_id=cluster.pk)
    assert result.unattributed_total == 0
    by_job = {s.job_id for s in Sample.objects.all()}
    assert by_job == {holder["dcunode3"].pk, holder["dcunode4"].pk}
