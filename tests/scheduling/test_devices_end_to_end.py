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


# -- NVIDIA MIG in the live path --------------------------------------------------------------

def _mig_gpu(uuid: str, index: int) -> dict:
    one = [{"start": s, "size": 1} for s in range(7)]
    return {"id": uuid, "index": index, "count": 7, "devmem": 81920, "devcore": 100,
            "type": "NVIDIA A100-SXM4-80GB", "numa": 0, "mode": "mig", "health": True,
            "migProfiles": [
                {"name": "1g.10gb", "memoryMB": 9856, "core": 14, "sliceCount": 1,
                 "placements": one},
                {"name": "3g.40gb", "memoryMB": 40192, "core": 42, "sliceCount": 3,
                 "placements": [{"start": 0, "size": 4}, {"start": 4, "size": 4}]}]}


def _running_pod(placement, annotations: dict) -> dict:
    from tests.scheduling.kube_helpers import running_status

    ns, name = (placement.backend_ref or "llmops/x").split("/", 1)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "annotations": annotations,
                         "labels": {"console.llmops.io/placement": str(placement.pk)}},
            "status": running_status(placement.node.name)}


def test_a_two_instance_mig_job_is_spread_emitted_and_its_instances_attributed(fake, tmp_path):
    import json

    from scheduling.models import PlacementMigInstance
    from scheduling.services.kube_reconcile import apply_pod
    from telemetry.models import Sample
    from telemetry.services.ingestion import ingest_payload

    cluster = make_kube_cluster(fake, tmp_path)
    fake.put(node_json("gpu-mig", {"hami.io/node-nvidia-register": json.dumps(
        [_mig_gpu("GPU-mig-0", 0), _mig_gpu("GPU-mig-1", 1)])},
        {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "14"}))
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

    mine = list(PlacementMigInstance.objects.filter(placement__job=two)
                .values_list("device__uuid", "profile"))
    assert sorted(mine) == [("GPU-mig-0", "1g.10gb"), ("GPU-mig-1", "1g.10gb")]  # spread
    shared = PlacementMigInstance.objects.get(placement__job=one)
    theirs = PlacementMigInstance.objects.get(placement__job=two, device=shared.device)
    assert shared.start != theirs.start  # the booked placement is not handed out twice

    stored_pod, built = _submitted_pod(fake, two)
    limits = built["spec"]["containers"][0]["resources"]["limits"]
    assert (limits["nvidia.com/gpu"], limits["nvidia.com/gpumem"]) == ("2", "9856")
    annotations = stored_pod["metadata"]["annotations"]
    assert annotations["nvidia.com/vgpu-mode"] == "mig"
    assert sorted(annotations["nvidia.com/use-gpuuuid"].split(",")) == ["GPU-mig-0",
                                                                          "GPU-mig-1"]
    _submitted_pod(fake, one)

    # the device plugin reports the GPU instances it created; DCGM names them by GPU_I_ID
    gpu = shared.device.uuid
    for job, inst, gi in ((two, theirs, 7), (one, shared, 9)):
        placement = Placement.objects.get(job=job)
        apply_pod(placement, _running_pod(placement, {"hami.io/vgpu-mig-allocations": json.dumps(
            [{"containerIndex": 0, "deviceIndex": 0, "gpuUUID": gpu, "profile": "1g.10gb",
              "placement": {"start": inst.start, "size": 1}, "gpuInstanceID": gi,
              "computeInstanceID": 0, "migUUID": f"MIG-{gi}"}])}))
    assert dict(PlacementMigInstance.objects.filter(device__uuid=gpu).values_list(
        "placement__job_id", "gpu_instance_id")) == {two.pk: 7, one.pk: 9}
    idx = shared.device.index
    payload = "".join(
        f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{gpu="{idx}",UUID="{gpu}",Hostname="gpu-mig",'
        f'GPU_I_PROFILE="1g.10gb",GPU_I_ID="{gi}"}} {v}\n'
        for gi, v in ((7, "0.5"), (9, "0.25")))
    ingest_payload("dcgm", payload, cluster_id=cluster.pk)
    got = {s.job_id: s.value for s in Sample.objects.filter(device__uuid=gpu)}
    assert set(got) == {two.pk, one.pk}
    assert got[two.pk] == 2 * got[one.pk] > 0  # 0.5 vs 0.25: each GPU instance its own


# -- DRA: driver and device class per model from the catalogue ---------------------------------

def test_a_dra_driver_configured_on_a_model_is_synced_and_claimed_with_its_class(fake, tmp_path):
    from scheduling.models import DeviceModel

    cluster = make_kube_cluster(fake, tmp_path, mode="dra")
    model = DeviceModel.objects.get(name="MLU590")
    model.config = {**model.config, "dra": {"driver": "mlu.cambricon.example.com",
                                            "device_class": "mlu-{model}.example.com"}}
    model.save()
    fake.put(node_json("mlu-1", {}, {"cpu": "64", "memory": "256Gi"}))
    fake.put({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
              "metadata": {"name": "mlu-1-mlu-cambricon-example-com"},
              "spec": {"driver": "mlu.cambricon.example.com", "nodeName": "mlu-1",
                       "pool": {"name": "mlu-1", "generation": 1, "resourceSliceCount": 1},
                       "devices": [{"name": "mlu-0", "allowMultipleAllocations": True,
                                    "attributes": {"uuid": {"string": "MLU-5f0c"},
                                                   "productName": {"string": "MLU590"},
                                                   "minor": {"int": 0}},
                                    "capacity": {"cores": {"value": "100"},
                                                 "memory": {"value": "78Gi"}}}]}})
    assert sync_cluster_inventory(cluster.pk).errors == []
    dev = Device.objects.get(uuid="MLU-5f0c")
    assert (dev.model.name, dev.source, dev.memory_mib) == ("MLU590", "dra", 79872)
    group = make_group("mlu", models=("MLU590",))
    _tenant, queue = make_tenant("team-a", group, devices_milli=10_000)
    job = _job(queue, group, vendor="MLU", memory_mib=4096, types=[], cores=30)
    assert run_admission_cycle(group.pk).admitted == [job.pk]
    assert submit_job(job.pk) == JobState.ADMITTED
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
        'device.attributes["mlu.cambricon.example.com"].uuid == "MLU-5f0c"')
    ns, name = placement.backend_ref.split("/", 1)
    assert fake.get("resourceclaims", f"{name}-dev", ns)["spec"]["devices"]["requests"][0][
        "exactly"]["deviceClassName"] == "mlu-mlu590.example.com"


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
        "(memory_factor) or the bound"]
    assert Device.objects.filter(node__name="mlu370-1").count() == 2  # still synced
