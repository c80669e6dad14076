"""Issue 15: one device model's bad config must flag that model and its devices, never halt
admission or the dry run for everybody (reproduced first: the API used to accept
``{"config": {"bogus_key": 1}}`` and every cycle then failed, ``/api/dry-run/`` answered 500).
"""

import pytest

from scheduling.choices import JobState
from scheduling.models import DeviceModel, Job
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.jobs import ContainerSpec, JobSpec, enqueue_job
from tests.builders import A100, gpu_job, make_cluster, make_group, make_tenant, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def mixed():
    make_cluster("c1", nodes=1, gpus=2)
    make_cluster(
        "m1", nodes=1, gpus=2, model="MLU590", vendor="MLU", memory_mib=79872, split_count=100
    )
    group = make_group("g1", models=(A100, "MLU590"))
    a, qa = make_tenant("team-a", group, devices_milli=100_000)
    b, qb = make_tenant("team-b", group, devices_milli=100_000)
    return group, qa, qb, make_user("bob", b, "member"), make_user("root", is_superuser=True)


def _mlu_job(queue):
    spec = JobSpec(
        name="mlu",
        cpu_milli=1000,
        host_memory_mib=1024,
        containers=[
            ContainerSpec(
                vendor="MLU",
                device_count=1,
                device_memory_mib=4096,
                cores_percent=10,
                device_types=["MLU590"],
            )
        ],
    )
    return enqueue_job(queue, spec, enqueue=False)


def test_the_api_refuses_an_unknown_key_with_a_field_error(api, mixed):
    *_, root = mixed
    api.force_authenticate(root)
    model = DeviceModel.objects.get(name="MLU590")
    bad = api.patch(f"/api/device-models/{model.pk}/", {"config": {"bogus_key": 1}}, format="json")
    assert bad.status_code == 400, bad.content
    assert bad.json()["error"]["fields"] == {"config.bogus_key": ["unknown key"]}
    posted = api.post(
        "/api/device-models/",
        {"name": "X", "vendor": "MLU", "config": {"bogus_key": 1}},
        format="json",
    )
    assert posted.status_code == 400, posted.content
    assert posted.json()["error"]["fields"] == {"config.bogus_key": ["unknown key"]}
    assert not DeviceModel.objects.filter(name="X").exists()
    created = api.post(
        "/api/device-models/",
        {"name": "X", "vendor": "MLU", "config": {"memory_factor": "256"}},
        format="json",
    )
    assert created.status_code == 400
    assert set(created.json()["error"]["fields"]) == {"config.memory_factor"}
    assert DeviceModel.objects.get(name="MLU590").config == model.config


def test_a_bad_stored_config_flags_its_model_and_the_others_keep_working(api, mixed):
    group, qa, qb, bob, root = mixed
    # written before validation existed, or by SQL
    DeviceModel.objects.filter(name="MLU590").update(config={"bogus_key": 1})
    mlu = _mlu_job(qa)
    gpu = gpu_job(qb, "gpu", count=1, memory_percent=100, cores=100)

    report = run_admission_cycle(group.pk)

    assert report.admitted == [gpu.pk]
    mlu.refresh_from_db()
    assert mlu.state == JobState.QUEUED
    assert "2/2 DeviceModelInvalid" in mlu.pending_reason
    model = DeviceModel.objects.get(name="MLU590")
    assert model.error == "device model MLU590: config: bogus_key: unknown key"
    # the inventory shows why the devices are out
    api.force_authenticate(root)
    rows = api.get("/api/devices/?node=m1-n0").json()["results"]
    assert {r["model_error"] for r in rows} == {model.error}
    assert api.get(f"/api/device-models/{model.pk}/").json()["resolved"] is None

    # another tenant's dry run answers
    api.force_authenticate(bob)
    body = {
        "queue": qb.pk,
        "name": "probe",
        "cpu_milli": 1000,
        "host_memory_mib": 1024,
        "containers": [
            {"name": "main", "device_count": 1, "memory_percent": 100, "cores_percent": 100}
        ],
    }
    dry = api.post("/api/dry-run/", body, format="json")
    assert dry.status_code == 200, dry.content
    assert dry.json()["admitted"] is True

    # fixing the model through the API clears the flag and the job runs next cycle
    api.force_authenticate(root)
    fixed = api.patch(
        f"/api/device-models/{model.pk}/",
        {"config": {"memory_factor": 0, "memory_mib": 79872}},
        format="json",
    )
    assert fixed.status_code == 200, fixed.content
    assert fixed.json()["error"] == ""
    assert run_admission_cycle(group.pk).admitted == [mlu.pk]
    assert Job.objects.get(pk=mlu.pk).state == JobState.ADMITTED
