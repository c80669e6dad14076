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
from scheduling.services.cluster_submission import submit_to_cluster
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.inventory import sync_cluster_inventory
from scheduling.services.jobs import ContainerSpec, JobSpec, enqueue_job
from tests.builders import make_group, make_tenant
from tests.kube.kube_helpers import make_kube_cluster, node_json
from tests.placement.placement_builders import ASCEND_B3_CARD_COUNTERS, ASCEND_B3_TEMPLATES

pytestmark = pytest.mark.django_db

K8S = "1.34.0"


@pytest.fixture(autouse=True)
def _catalogue(settings):
    settings.KUBE_RETRY_BASE_DELAY_S = 0.0
    call_command("loaddata", "device_models", verbosity=0)


def mlu_node(
    name: str, prefix: str, cards: int, vmemory_per_card: int, *, labels: dict | None = None
) -> dict:
    """A node of the Cambricon device plugin in dynamic-smlu mode: ``<prefix>.smlu.vcore``
    (100 per card) and ``<prefix>.smlu.vmemory`` capacities, no register annotation."""
    return node_json(
        name,
        {},
        {
            "cpu": "64",
            "memory": "256Gi",
            f"{prefix}.smlu.vcore": str(100 * cards),
            f"{prefix}.smlu.vmemory": str(vmemory_per_card * cards),
        },
        labels=labels,
    )


def _job(
    queue,
    group,
    *,
    vendor: str,
    memory_mib: int,
    types: list[str],
    count: int = 1,
    cores: int = 30,
    name: str = "train",
):
    job = enqueue_job(
        queue,
        JobSpec(
            name=name,
            pod_count=1,
            cpu_milli=1000,
            host_memory_mib=2048,
            containers=[
                ContainerSpec(
                    name="main",
                    vendor=vendor,
                    device_count=count,
                    device_memory_mib=memory_mib,
                    cores_percent=cores,
                    device_types=types,
                )
            ],
        ),
        enqueue=False,
    )
    JobContainer.objects.filter(job=job).update(image="registry.example/infer:1")
    return job


def _submitted_pod(fake, job) -> tuple[dict, dict]:
    """(the Pod stored by the API server, the manifest the console built, validated)."""
    assert submit_to_cluster(job.pk) == JobState.ADMITTED
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
    assert devices == {
        "mlu370-1-cambricon-mlu-0": ("MLU370-X8", 24576),
        "mlu370-1-cambricon-mlu-1": ("MLU370-X8", 24576),
        "mlu590-1-cambricon-mlu-0": ("MLU590", 79872),
    }
    group = make_group("mlu", models=("MLU370-X8", "MLU590"))
    _tenant, queue = make_tenant("team-a", group, devices_milli=10_000)
    pinned_370 = [
        _job(queue, group, vendor="MLU", memory_mib=4096, types=["MLU370"], name=f"on-370-{i}")
        for i in range(3)
    ]
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
        "cambricon.com/vmlu": "1",
        "cambricon.com/mlu590.smlu.vmemory": "6",
        "cambricon.com/mlu590.smlu.vcore": "30",
    }
    assert (
        stored["metadata"]["annotations"]["cambricon.com/use-gpuuuid"] == "mlu590-1-cambricon-mlu-0"
    )
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
    jobs = [
        _job(queue, group, vendor="MLU", memory_mib=20000, types=["MLU370"], cores=50, name=f"j{i}")
        for i in range(3)
    ]
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
    assert got == {
        "mlu-a-cambricon-mlu-0": ("MLU590", 79872),
        "mlu-a-cambricon-mlu-1": ("MLU590", 79872),
        "mlu-b-cambricon-mlu-0": ("MLU370-X8", 24576),
        # no label: HAMi's model-less MLU at 256 MiB units (64 x 256)
        "mlu-c-cambricon-mlu-0": ("MLU", 16384),
    }


# -- Hygon: identity by hardware serial ---------------------------------------------------------


def dcu_node(name: str, annotations: dict | None = None) -> dict:
    """A node of the released DCU plugin (v1.0.6): legacy 7-field ``DCU-<index>`` ids."""
    return node_json(
        name,
        {"hami.io/node-dcu-register": "DCU-0,4,65520,100,K100_AI,0,true:", **(annotations or {})},
        {"cpu": "64", "memory": "256Gi", "hygon.com/dcunum": "4"},
    )


def test_two_nodes_registering_dcu_0_are_two_serial_keyed_cards_and_metrics_follow(fake, tmp_path):
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
    assert rows == {
        "DCU-T8R1380013061601": ("dcunode3", "DCU-0", "T8R1380013061601"),
        "dcunode4/DCU-0": ("dcunode4", "DCU-0", ""),
    }
    group = make_group("dcu", models=("K100_AI",))
    _tenant, queue = make_tenant("team-a", group, devices_milli=10_000)
    jobs = [
        _job(queue, group, vendor="DCU", memory_mib=65520, types=[], cores=100, name=f"d{i}")
        for i in range(2)
    ]
    assert sorted(run_admission_cycle(group.pk).admitted) == sorted(j.pk for j in jobs)
    holder = {PlacementDevice.objects.get(placement__job=j).device.node.name: j for j in jobs}
    provisional = Device.objects.get(uuid="dcunode4/DCU-0")

    # the exporter names both serials; the one the inventory does not know yet joins by
    # (node, minor_number) and feeds the serial map
    ingest_payload("hygon", HYGON, cluster_id=cluster.pk)
    util = {s.device_id: s for s in Sample.objects.filter(metric="util_percent")}
    assert util[Device.objects.get(uuid="DCU-T8R1380013061601").pk].job_id == holder["dcunode3"].pk
    assert util[provisional.pk].job_id == holder["dcunode4"].pk

    report = sync_cluster_inventory(cluster.pk)
    assert report.devices_rekeyed == {"dcunode4/DCU-0": "DCU-T8R1380019021101"}
    provisional.refresh_from_db()
    assert (provisional.uuid, provisional.serial, provisional.hami_id) == (
        "DCU-T8R1380019021101",
        "T8R1380019021101",
        "DCU-0",
    )
    assert (
        PlacementDevice.objects.get(placement__job=holder["dcunode4"]).device_id == provisional.pk
    )  # the booking stayed with the card
    Sample.objects.all().delete()
    _parsed, _norm, result = ingest_payload("hygon", HYGON, cluster_id=cluster.pk)
    assert result.unattributed_total == 0
    by_job = {s.job_id for s in Sample.objects.all()}
    assert by_job == {holder["dcunode3"].pk, holder["dcunode4"].pk}


# -- NVIDIA MIG in the live path --------------------------------------------------------------


def _mig_gpu(uuid: str, index: int) -> dict:
    one = [{"start": s, "size": 1} for s in range(7)]
    return {
        "id": uuid,
        "index": index,
        "count": 7,
        "devmem": 81920,
        "devcore": 100,
        "type": "NVIDIA A100-SXM4-80GB",
        "numa": 0,
        "mode": "mig",
        "health": True,
        "migProfiles": [
            {"name": "1g.10gb", "memoryMB": 9856, "core": 14, "sliceCount": 1, "placements": one},
            {
                "name": "3g.40gb",
                "memoryMB": 40192,
                "core": 42,
                "sliceCount": 3,
                "placements": [{"start": 0, "size": 4}, {"start": 4, "size": 4}],
            },
        ],
    }


def _running_pod(placement, annotations: dict) -> dict:
    from tests.kube.kube_helpers import running_status

    ns, name = (placement.backend_ref or "llmops/x").split("/", 1)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "annotations": annotations,
            "labels": {"console.llmops.io/placement": str(placement.pk)},
        },
        "status": running_status(placement.node.name),
    }


def test_a_two_instance_mig_job_is_spread_emitted_and_its_instances_attributed(fake, tmp_path):
    import json

    from scheduling.models import PlacementMigInstance
    from scheduling.services.kube_reconcile import apply_pod
    from telemetry.models import Sample
    from telemetry.services.ingestion import ingest_payload

    cluster = make_kube_cluster(fake, tmp_path)
    fake.put(
        node_json(
            "gpu-mig",
            {
                "hami.io/node-nvidia-register": json.dumps(
                    [_mig_gpu("GPU-mig-0", 0), _mig_gpu("GPU-mig-1", 1)]
                )
            },
            {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "14"},
        )
    )
    assert sync_cluster_inventory(cluster.pk).errors == []
    stored = Device.objects.get(uuid="GPU-mig-0")
    assert stored.model.name == "NVIDIA-A100-SXM4-80GB"  # the registered spelling joins it
    assert [p["name"] for p in stored.mig_profiles] == ["1g.10gb", "3g.40gb"]
    group = make_group("mig", models=("NVIDIA-A100-SXM4-80GB",))
    _t, queue_a = make_tenant("team-a", group, devices_milli=10_000)
    _t, queue_b = make_tenant("team-b", group, devices_milli=10_000)
    two = _job(queue_a, group, vendor="NVIDIA", memory_mib=9000, types=[], count=2, name="two")
    assert run_admission_cycle(group.pk).admitted == [two.pk]
    one = _job(queue_b, group, vendor="NVIDIA", memory_mib=9000, types=[], count=1, name="one")
    assert run_admission_cycle(group.pk).admitted == [one.pk]

    mine = list(
        PlacementMigInstance.objects.filter(placement__job=two).values_list(
            "device__uuid", "profile"
        )
    )
    assert sorted(mine) == [("GPU-mig-0", "1g.10gb"), ("GPU-mig-1", "1g.10gb")]  # spread
    shared = PlacementMigInstance.objects.get(placement__job=one)
    theirs = PlacementMigInstance.objects.get(placement__job=two, device=shared.device)
    assert shared.start != theirs.start  # the booked placement is not handed out twice

    stored_pod, built = _submitted_pod(fake, two)
    limits = built["spec"]["containers"][0]["resources"]["limits"]
    assert (limits["nvidia.com/gpu"], limits["nvidia.com/gpumem"]) == ("2", "9856")
    annotations = stored_pod["metadata"]["annotations"]
    assert annotations["nvidia.com/vgpu-mode"] == "mig"
    assert sorted(annotations["nvidia.com/use-gpuuuid"].split(",")) == ["GPU-mig-0", "GPU-mig-1"]
    _submitted_pod(fake, one)

    # the device plugin reports the GPU instances it created; DCGM names them by GPU_I_ID
    gpu = shared.device.uuid
    for job, inst, gi in ((two, theirs, 7), (one, shared, 9)):
        placement = Placement.objects.get(job=job)
        apply_pod(
            placement,
            _running_pod(
                placement,
                {
                    "hami.io/vgpu-mig-allocations": json.dumps(
                        [
                            {
                                "containerIndex": 0,
                                "deviceIndex": 0,
                                "gpuUUID": gpu,
                                "profile": "1g.10gb",
                                "placement": {"start": inst.start, "size": 1},
                                "gpuInstanceID": gi,
                                "computeInstanceID": 0,
                                "migUUID": f"MIG-{gi}",
                            }
                        ]
                    )
                },
            ),
        )
    assert dict(
        PlacementMigInstance.objects.filter(device__uuid=gpu).values_list(
            "placement__job_id", "gpu_instance_id"
        )
    ) == {two.pk: 7, one.pk: 9}
    idx = shared.device.index
    payload = "".join(
        f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{gpu="{idx}",UUID="{gpu}",Hostname="gpu-mig",'
        f'GPU_I_PROFILE="1g.10gb",GPU_I_ID="{gi}"}} {v}\n'
        for gi, v in ((7, "0.5"), (9, "0.25"))
    )
    ingest_payload("dcgm", payload, cluster_id=cluster.pk)
    got = {s.job_id: s.value for s in Sample.objects.filter(device__uuid=gpu)}
    assert set(got) == {two.pk, one.pk}
    assert got[two.pk] == 2 * got[one.pk] > 0  # 0.5 vs 0.25: each GPU instance its own


# -- DRA: driver and device class per model from the catalogue ---------------------------------


def test_a_dra_driver_configured_on_a_model_is_synced_and_claimed_with_its_class(fake, tmp_path):
    from scheduling.models import DeviceModel

    cluster = make_kube_cluster(fake, tmp_path, mode="dra")
    model = DeviceModel.objects.get(name="MLU590")
    model.config = {
        **model.config,
        "dra": {"driver": "mlu.cambricon.example.com", "device_class": "mlu-{model}.example.com"},
    }
    model.save()
    fake.put(node_json("mlu-1", {}, {"cpu": "64", "memory": "256Gi"}))
    fake.put(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "mlu-1-mlu-cambricon-example-com"},
            "spec": {
                "driver": "mlu.cambricon.example.com",
                "nodeName": "mlu-1",
                "pool": {"name": "mlu-1", "generation": 1, "resourceSliceCount": 1},
                "devices": [
                    {
                        "name": "mlu-0",
                        "allowMultipleAllocations": True,
                        "attributes": {
                            "uuid": {"string": "MLU-5f0c"},
                            "productName": {"string": "MLU590"},
                            "minor": {"int": 0},
                        },
                        "capacity": {"cores": {"value": "100"}, "memory": {"value": "78Gi"}},
                    }
                ],
            },
        }
    )
    assert sync_cluster_inventory(cluster.pk).errors == []
    dev = Device.objects.get(uuid="MLU-5f0c")
    assert (dev.model.name, dev.source, dev.memory_mib) == ("MLU590", "dra", 79872)
    group = make_group("mlu", models=("MLU590",))
    _tenant, queue = make_tenant("team-a", group, devices_milli=10_000)
    job = _job(queue, group, vendor="MLU", memory_mib=4096, types=[], cores=30)
    assert run_admission_cycle(group.pk).admitted == [job.pk]
    assert submit_to_cluster(job.pk) == JobState.ADMITTED
    placement = Placement.objects.get(job=job)
    manifests = build_manifests(placement)
    (claim,) = manifests.claims
    kubernetes_validate.validate(claim, K8S, strict=True)
    kubernetes_validate.validate(manifests.pod, K8S, strict=True)
    (req,) = claim["spec"]["devices"]["requests"]
    assert req["exactly"]["deviceClassName"] == "mlu-mlu590.example.com"
    assert req["exactly"]["capacity"] == {"requests": {"memory": "4788Mi", "cores": "30"}}
    assert req["exactly"]["selectors"][0]["cel"]["expression"] == (
        'device.driver == "mlu.cambricon.example.com" && '
        'device.attributes["mlu.cambricon.example.com"].uuid == "MLU-5f0c"'
    )
    ns, name = placement.backend_ref.split("/", 1)
    assert (
        fake.get("resourceclaims", f"{name}-dev", ns)["spec"]["devices"]["requests"][0]["exactly"][
            "deviceClassName"
        ]
        == "mlu-mlu590.example.com"
    )


def test_a_unit_that_would_flood_kubelet_with_plugin_devices_is_warned(fake, tmp_path):
    from scheduling.models import DeviceModel

    cluster = make_kube_cluster(fake, tmp_path)
    model = DeviceModel.objects.get(name="MLU370-X8")
    model.config = {**model.config, "memory_factor": 1, "min_slice_mib": 0}  # 1 MiB units
    model.save()
    fake.put(mlu_node("mlu370-1", "cambricon.com/mlu370", 2, 24576))
    fake.put(mlu_node("mlu590-1", "cambricon.com/mlu590", 8, 100))  # unit 0: 100 per card
    report = sync_cluster_inventory(cluster.pk)
    assert report.errors == []
    assert report.warnings == [
        "Node mlu370-1: model MLU370-X8 would register 49152 device-plugin devices for "
        "cambricon.com/mlu370.smlu.vmemory, over its bound of 10000 (max_plugin_devices; "
        "kubelet refuses a ListAndWatch reply over 4 MiB): raise the memory unit "
        "(memory_factor) or the bound"
    ]
    assert Device.objects.filter(node__name="mlu370-1").count() == 2  # still synced


# -- DRA template devices: Ascend vNPU partitions consume the card's shared counters ---------


def ascend_dra_card(fake, tmp_path) -> Device:
    """A DRA cluster with one Ascend910B3 card ``NPU-dra-0`` (20 aicore, 64 hbm-gib shared
    counters) whose templates consume them: ``vir05_1c_16g`` 5 / 16, ``vir10_3c_32g``
    12 / 32 (the driver's ``sharedCounters`` / ``consumesCounters`` convention), synced."""
    from scheduling.models import DeviceModel

    cluster = make_kube_cluster(fake, tmp_path, mode="dra")
    model = DeviceModel.objects.get(name="Ascend910B3")
    # counters of the card and of each template (the driver's sharedCounters convention)
    model.config = {
        "dra": {"counters": dict(ASCEND_B3_CARD_COUNTERS)},
        "templates": list(ASCEND_B3_TEMPLATES),
    }
    model.save()
    fake.put(node_json("npu-1", {}, {"cpu": "192", "memory": "1024Gi"}))
    fake.put(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "npu-1-ascend-project-hami-io"},
            "spec": {
                "driver": "ascend.project-hami.io",
                "nodeName": "npu-1",
                "pool": {"name": "npu-1", "generation": 1, "resourceSliceCount": 1},
                "devices": [
                    {
                        "name": "npu-0",
                        "allowMultipleAllocations": True,
                        "attributes": {
                            "uuid": {"string": "NPU-dra-0"},
                            "productName": {"string": "Ascend910B3"},
                            "minor": {"int": 0},
                        },
                        "capacity": {"cores": {"value": "20"}, "memory": {"value": "64Gi"}},
                    }
                ],
            },
        }
    )
    assert sync_cluster_inventory(cluster.pk).errors == []
    return Device.objects.get(uuid="NPU-dra-0")


def test_vnpu_templates_consume_the_cards_counters_and_the_claim_selects_the_template(
    fake, tmp_path
):
    card = ascend_dra_card(fake, tmp_path)
    assert (card.model.name, card.source, card.memory_mib) == ("Ascend910B3", "dra", 65536)
    group = make_group("npu", models=("Ascend910B3",))
    _tenant, queue = make_tenant("team-a", group, devices_milli=10_000)
    big = [
        _job(queue, group, vendor="Ascend", memory_mib=20000, types=[], name=f"big-{i}")
        for i in range(2)
    ]
    # the first vir10 takes 12 of 20 aicore: the second one is refused by the counter
    # although 32 GiB of memory is left on the card
    assert run_admission_cycle(group.pk).admitted == [big[0].pk]
    big[1].refresh_from_db()
    assert big[1].state == JobState.QUEUED
    assert "CardSharedCountersExhausted" in big[1].pending_reason
    small = _job(queue, group, vendor="Ascend", memory_mib=8000, types=[], name="small")
    assert run_admission_cycle(group.pk).admitted == [small.pk]  # 5 + 12 <= 20 aicore
    assert dict(
        PlacementDevice.objects.filter(device=card).values_list("placement__job_id", "memory_mib")
    ) == {big[0].pk: 32768, small.pk: 16384}

    assert submit_to_cluster(big[0].pk) == JobState.ADMITTED
    manifests = build_manifests(Placement.objects.get(job=big[0]))
    (claim,) = manifests.claims
    kubernetes_validate.validate(claim, K8S, strict=True)
    kubernetes_validate.validate(manifests.pod, K8S, strict=True)
    (req,) = claim["spec"]["devices"]["requests"]
    assert req["exactly"]["deviceClassName"] == "npu-ascend910b3.project-hami.io"
    assert req["exactly"]["count"] == 1
    assert req["exactly"]["selectors"][0]["cel"]["expression"] == (
        'device.driver == "ascend.project-hami.io" && '
        'device.attributes["ascend.project-hami.io"].parentUUID == "NPU-dra-0" && '
        'device.attributes["ascend.project-hami.io"].template == "vir10_3c_32g"'
    )
    assert "capacity" not in req["exactly"]  # the partition device carries its size


def test_an_ascend_share_count_against_the_template_table_is_flagged_and_the_table_wins(
    fake, tmp_path
):
    import json

    cluster = make_kube_cluster(fake, tmp_path)
    # 910B3: 65536 MiB allocatable, smallest template 16384 MiB -> 4 vNPUs, not 7
    fake.put(
        node_json(
            "npu-1",
            {
                "hami.io/node-register-Ascend910B3": json.dumps(
                    [
                        {
                            "id": f"NPU-{i}",
                            "index": i,
                            "count": c,
                            "devmem": 65536,
                            "devcore": 20,
                            "type": "Ascend910B3",
                            "health": True,
                        }
                        for i, c in ((0, 7), (1, 4))
                    ]
                )
            },
            {"cpu": "192", "memory": "1024Gi", "huawei.com/Ascend910B3": "8"},
        )
    )
    report = sync_cluster_inventory(cluster.pk)
    assert report.errors == []
    assert report.warnings == [
        "Node npu-1: device NPU-0: registered 7 shares but the Ascend910B3 template table "
        "gives 4; the table wins"
    ]
    rows = {d.uuid: (d.split_count, d.error) for d in Device.objects.all()}
    assert rows == {
        "NPU-0": (
            4,
            "registered 7 shares but the Ascend910B3 template table gives 4; the table wins",
        ),
        "NPU-1": (4, ""),
    }


# -- minimum slice: a small request is rounded up and charged so -----------------------------


def test_a_request_below_the_minimum_slice_is_rounded_up_charged_and_emitted(fake, tmp_path):
    from scheduling.models import DeviceModel
    from scheduling.services.usage import recomputed_usage

    cluster = make_kube_cluster(fake, tmp_path)
    model = DeviceModel.objects.get(name="MLU370-X8")
    model.config = {**model.config, "min_slice_mib": 1000}  # -> 4 units of 256 MiB
    model.save()
    fake.put(mlu_node("mlu370-1", "cambricon.com/mlu370", 1, 96))
    assert sync_cluster_inventory(cluster.pk).errors == []
    group = make_group("mlu", models=("MLU370-X8",))
    tenant, queue = make_tenant("team-a", group, devices_milli=10_000)
    job = _job(queue, group, vendor="MLU", memory_mib=300, types=[], cores=5)
    assert run_admission_cycle(group.pk).admitted == [job.pk]
    assert PlacementDevice.objects.get(placement__job=job).memory_mib == 1024
    charged = [
        v
        for (t, _flavor, dim), v in recomputed_usage(group).items()
        if (t, dim) == (tenant.pk, "memory_mib")
    ]
    assert charged == [1024]  # the tenant's quota is charged the rounded slice
    _stored, built = _submitted_pod(fake, job)
    limits = built["spec"]["containers"][0]["resources"]["limits"]
    assert limits["cambricon.com/mlu370.smlu.vmemory"] == "4"


# -- type matching: whole tokens after the vendor prefix --------------------------------------


def test_short_model_names_match_whole_tokens_in_the_live_cycle(fake, tmp_path):
    import json

    cluster = make_kube_cluster(fake, tmp_path)

    def gpus(name, kind, n=1):
        return node_json(
            name,
            {
                "hami.io/node-nvidia-register": json.dumps(
                    [
                        {
                            "id": f"GPU-{name}-{i}",
                            "index": i,
                            "count": 10,
                            "devmem": 97871,
                            "devcore": 100,
                            "type": kind,
                            "numa": 0,
                            "mode": "hami-core",
                            "health": True,
                        }
                        for i in range(n)
                    ]
                )
            },
            {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "10"},
        )

    fake.put(gpus("h20", "NVIDIA H20"))
    fake.put(gpus("h200", "NVIDIA H200", 2))
    fake.put(gpus("a100", "NVIDIA A100-SXM4-80GB"))
    assert sync_cluster_inventory(cluster.pk).errors == []
    models = {d.uuid: d.model.name for d in Device.objects.all()}
    assert models["GPU-h20-0"] == "NVIDIA-H20" and models["GPU-h200-0"] == "NVIDIA-H200"
    group = make_group("gpu", models=("NVIDIA-H20", "NVIDIA-H200", "NVIDIA-A100-SXM4-80GB"))
    _tenant, queue = make_tenant("team-a", group, devices_milli=100_000)
    on_h20 = [
        _job(
            queue,
            group,
            vendor="NVIDIA",
            memory_mib=60000,
            types=["H20"],
            cores=50,
            name=f"h20-{i}",
        )
        for i in range(2)
    ]
    on_a100 = _job(
        queue, group, vendor="NVIDIA", memory_mib=1000, types=["A100"], cores=10, name="a100"
    )
    admitted = run_admission_cycle(group.pk).admitted
    # one H20 card holds one 60000 MiB job; the idle H200s are never taken for "H20"
    assert sorted(admitted) == sorted([on_h20[0].pk, on_a100.pk])
    assert PlacementDevice.objects.get(placement__job=on_h20[0]).device.uuid == "GPU-h20-0"
    assert PlacementDevice.objects.get(placement__job=on_a100).device.uuid == "GPU-a100-0"
    on_h20[1].refresh_from_db()
    assert on_h20[1].state == JobState.QUEUED


def test_910b4_never_takes_a_910b4_1_card(fake, tmp_path):
    import json

    cluster = make_kube_cluster(fake, tmp_path)
    for chip, mem in (("Ascend910B4", 32768), ("Ascend910B4-1", 65536)):
        fake.put(
            node_json(
                chip.lower(),
                {
                    f"hami.io/node-register-{chip}": json.dumps(
                        [
                            {
                                "id": f"{chip}-0",
                                "index": 0,
                                "count": 4,
                                "devmem": mem,
                                "devcore": 20,
                                "type": chip,
                                "health": True,
                            }
                        ]
                    )
                },
                {"cpu": "64", "memory": "512Gi", f"huawei.com/{chip}": "4"},
            )
        )
    assert sync_cluster_inventory(cluster.pk).errors == []
    group = make_group("npu", models=("Ascend910B4", "Ascend910B4-1"))
    _tenant, queue = make_tenant("team-a", group, devices_milli=100_000)
    jobs = [
        _job(queue, group, vendor="Ascend", memory_mib=30000, types=["Ascend910B4"], name=f"b4-{i}")
        for i in range(2)
    ]
    admitted = run_admission_cycle(group.pk).admitted
    # the 910B4 card (32 GiB) holds one whole-card job; the idle 910B4-1 is not a 910B4
    assert admitted == [jobs[0].pk]
    assert PlacementDevice.objects.get(placement__job=jobs[0]).device.uuid == "Ascend910B4-0"


def test_a_hygon_card_is_one_dra_device_with_consumable_capacity(fake, tmp_path):
    from scheduling.models import DeviceModel

    cluster = make_kube_cluster(fake, tmp_path, mode="dra")
    model = DeviceModel.objects.get(name="K100_AI")
    model.config = {
        **model.config,
        "dra": {"driver": "dcu.hygon.example.com", "device_class": "dcu.hygon.example.com"},
    }
    model.save()
    fake.put(node_json("dcu-1", {}, {"cpu": "64", "memory": "256Gi"}))
    fake.put(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "dcu-1-dcu-hygon-example-com"},
            "spec": {
                "driver": "dcu.hygon.example.com",
                "nodeName": "dcu-1",
                "pool": {"name": "dcu-1", "generation": 1, "resourceSliceCount": 1},
                "devices": [
                    {
                        "name": "dcu-0",
                        "allowMultipleAllocations": True,
                        "attributes": {
                            "uuid": {"string": "DCU-T8R1380013061601"},
                            "productName": {"string": "K100_AI"},
                            "minor": {"int": 0},
                        },
                        "capacity": {"cores": {"value": "100"}, "memory": {"value": "65520Mi"}},
                    }
                ],
            },
        }
    )
    assert sync_cluster_inventory(cluster.pk).errors == []
    card = Device.objects.get(uuid="DCU-T8R1380013061601")
    assert (card.model.name, card.source, card.memory_mib) == ("K100_AI", "dra", 65520)
    group = make_group("dcu", models=("K100_AI",))
    _tenant, queue = make_tenant("team-a", group, devices_milli=10_000)
    jobs = [
        _job(queue, group, vendor="DCU", memory_mib=30000, types=[], cores=40, name=f"d{i}")
        for i in range(3)
    ]
    # two 30000 MiB / 40 % shares fit the card's consumable capacity, a third does not
    assert sorted(run_admission_cycle(group.pk).admitted) == sorted(j.pk for j in jobs[:2])
    assert submit_to_cluster(jobs[0].pk) == JobState.ADMITTED
    (claim,) = build_manifests(Placement.objects.get(job=jobs[0])).claims
    kubernetes_validate.validate(claim, K8S, strict=True)
    (req,) = claim["spec"]["devices"]["requests"]
    assert req["exactly"]["deviceClassName"] == "dcu.hygon.example.com"
    assert req["exactly"]["capacity"] == {"requests": {"memory": "30000Mi", "cores": "40"}}


def test_whole_mode_asks_for_the_models_own_device_plugin_resource(fake, tmp_path):
    from scheduling.models import DeviceModel

    cluster = make_kube_cluster(fake, tmp_path, mode="whole")
    # this cluster runs Cambricon's own plugin with per-model names for MLU590 cards
    model = DeviceModel.objects.get(name="MLU590")
    model.config = {**model.config, "whole_resource": "cambricon.com/mlu590"}
    model.save()
    fake.put(mlu_node("mlu590-1", "cambricon.com/mlu590", 2, 100))
    fake.put(mlu_node("mlu370-1", "cambricon.com/mlu370", 2, 96))
    assert sync_cluster_inventory(cluster.pk).errors == []
    group = make_group("mlu", models=("MLU370-X8", "MLU590"))
    _tenant, queue = make_tenant("team-a", group, devices_milli=10_000)
    jobs = {
        t: _job(
            queue, group, vendor="MLU", memory_mib=0, types=[t], count=2, cores=100, name=t.lower()
        )
        for t in ("MLU590", "MLU370")
    }
    assert len(run_admission_cycle(group.pk).admitted) == 2
    for t, resource in (("MLU590", "cambricon.com/mlu590"), ("MLU370", "cambricon.com/mlu")):
        _stored, built = _submitted_pod(fake, jobs[t])
        limits = built["spec"]["containers"][0]["resources"]["limits"]
        assert {k: v for k, v in limits.items() if k.startswith("cambricon")} == {resource: "2"}


def test_a_job_that_refuses_mlu370_through_the_api_lands_on_an_mlu590(fake, tmp_path):
    from rest_framework.test import APIClient

    from scheduling.models import Job
    from tests.builders import make_user

    cluster = make_kube_cluster(fake, tmp_path)
    fake.put(mlu_node("mlu370-1", "cambricon.com/mlu370", 2, 96))
    fake.put(mlu_node("mlu590-1", "cambricon.com/mlu590", 1, 100))
    assert sync_cluster_inventory(cluster.pk).errors == []
    group = make_group("mlu", models=("MLU370-X8", "MLU590"))
    tenant, queue = make_tenant("team-a", group, devices_milli=10_000)
    api = APIClient()
    api.force_authenticate(make_user("ann", tenant, "member"))
    body = {
        "queue": queue.pk,
        "name": "not-370",
        "cpu_milli": 1000,
        "host_memory_mib": 1024,
        "containers": [
            {
                "name": "main",
                "vendor": "MLU",
                "device_count": 1,
                "device_memory_mib": 4096,
                "cores_percent": 10,
                "device_types_exclude": ["MLU370"],
            }
        ],
    }
    bad = api.post(
        "/api/jobs/",
        {**body, "containers": [{**body["containers"][0], "device_types_exclude": "MLU370"}]},
        format="json",
    )
    assert bad.status_code == 400
    assert [k for k in bad.json()["error"]["fields"] if "device_types_exclude" in k] == [
        "containers[0].device_types_exclude"
    ], bad.json()
    big = {**body, "containers": [{**body["containers"][0], "device_memory_mib": 76000}]}
    created = api.post("/api/jobs/", big, format="json")
    assert created.status_code == 201, created.content
    job = Job.objects.get(pk=created.json()["id"])
    assert created.json()["containers"][0]["device_types_exclude"] == ["MLU370"]
    assert run_admission_cycle(group.pk).admitted == [job.pk]
    assert Placement.objects.get(job=job).node.name == "mlu590-1"
    # the MLU590 is full; the idle MLU370 cards are refused, so the next one waits ...
    again = Job.objects.get(
        pk=api.post("/api/jobs/", {**body, "name": "again"}, format="json").json()["id"]
    )
    assert run_admission_cycle(group.pk).admitted == []
    again.refresh_from_db()
    assert again.state == JobState.QUEUED
    # ... while the same job without the exclusion takes an MLU370
    free = api.post(
        "/api/jobs/",
        {
            **body,
            "name": "any",
            "containers": [
                {k: v for k, v in body["containers"][0].items() if k != "device_types_exclude"}
            ],
        },
        format="json",
    ).json()["id"]
    assert run_admission_cycle(group.pk).admitted == [free]
    assert Placement.objects.get(job_id=free).node.name == "mlu370-1"
