"""The placement snapshot reads each model's resolved config: MIG GPUs synced without
profiles get their model's MIG profiles, an Ascend share count that contradicts the
template table is flagged and the table wins, MLU590 unit 0 is charged by the cycle."""

import pytest

from scheduling.models import Device, DeviceModel, PlacementDevice
from scheduling.selectors.snapshot import build_cluster_snapshot
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.jobs import ContainerSpec, JobSpec, enqueue_job
from tests.builders import make_cluster, make_group, make_tenant

pytestmark = pytest.mark.django_db


def test_mig_gpus_get_their_models_profiles_and_a_two_instance_job_spreads():
    make_cluster("c1", nodes=1, gpus=2, model="NVIDIA-A100-SXM4-80GB")
    Device.objects.update(mode="mig", split_count=7)
    group = make_group("g1", models=("NVIDIA-A100-SXM4-80GB",))
    _, queue = make_tenant("team-a", group, devices_milli=100_000)
    snapshot, _ = build_cluster_snapshot(group)
    dev = snapshot.nodes["c1-n0"].devices[0]
    assert [p.name for p in dev.mig_profiles] == ["1g.10gb", "2g.20gb", "3g.40gb", "7g.79gb"]
    assert [(pl.start, pl.size) for pl in dev.mig_profiles[2].placements] == [(0, 4), (4, 4)]
    spec = JobSpec(
        name="mig",
        cpu_milli=1000,
        host_memory_mib=1024,
        containers=[ContainerSpec(device_count=2, device_memory_mib=10000, cores_percent=0)],
    )
    job = enqueue_job(queue, spec, enqueue=False)
    assert run_admission_cycle(group.pk).admitted == [job.pk]
    booked = PlacementDevice.objects.filter(placement__job=job)
    assert sorted(b.device.uuid for b in booked) == ["GPU-c1-0-0", "GPU-c1-0-1"]
    assert {b.memory_mib for b in booked} == {10240}  # 1g.10gb (nominal), one per GPU


def test_an_ascend_share_count_against_the_table_is_flagged_and_the_table_wins():
    make_cluster(
        "npu",
        nodes=1,
        gpus=1,
        model="Ascend910B3",
        vendor="Ascend",
        memory_mib=65536,
        split_count=7,
    )
    group = make_group("g1", models=("Ascend910B3",))
    snapshot, _ = build_cluster_snapshot(group)
    assert snapshot.nodes["npu-n0"].devices[0].split_count == 4
    assert snapshot.errors == [
        "device GPU-npu-0-0: registered 7 shares but the Ascend910B3 template table gives 4;"
        " the table wins"
    ]


def test_the_cycle_charges_an_mlu590_request_in_its_1_percent_units():
    make_cluster(
        "m", nodes=1, gpus=1, model="MLU590", vendor="MLU", memory_mib=79872, split_count=100
    )
    DeviceModel.objects.filter(name="MLU590").update(
        config={"memory_factor": 0, "memory_mib": 79872}
    )
    group = make_group("g1", models=("MLU590",))
    _, queue = make_tenant("team-a", group, devices_milli=100_000)
    spec = JobSpec(
        name="mlu",
        cpu_milli=1000,
        host_memory_mib=1024,
        containers=[
            ContainerSpec(vendor="MLU", device_count=1, device_memory_mib=4096, cores_percent=10)
        ],
    )
    job = enqueue_job(queue, spec, enqueue=False)
    assert run_admission_cycle(group.pk).admitted == [job.pk]
    assert PlacementDevice.objects.get(placement__job=job).memory_mib == 4788
