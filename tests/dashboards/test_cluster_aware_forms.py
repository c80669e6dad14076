"""Issue 30: forms and filters that know the cluster. The submit form offers the vendors and
models the chosen queue's resource group runs and refuses others; the list filters are
selects of names the user may see; the nodes list shows vendor / model and searches."""

import re

import pytest

from scheduling.models import Job, Queue
from tests.builders import make_cluster, make_group, submit_form

pytestmark = pytest.mark.django_db

ASCEND = "Ascend910B4"


@pytest.fixture
def npu_world(world):
    """``world`` plus cluster ``npu`` (one node, two Ascend910B4) in group ``g-npu``, and
    team-a's queue ``a-npu`` there (first of team-a's queues by name)."""
    make_cluster("npu", nodes=1, gpus=2, model=ASCEND, vendor="Ascend", memory_mib=32768)
    group = make_group("g-npu", models=(ASCEND,))
    world["npu_queue"] = Queue.objects.create(
        tenant=world["team_a"], resource_group=group, name="a-npu"
    )
    return world


def _options(html: str, name: str) -> list[str]:
    """Values of the options of the select ``name`` in ``html``."""
    select = re.search(rf'<select name="{name}"[^>]*>(.*?)</select>', html, re.S).group(1)
    return re.findall(r'<option value="([^"]*)"', select)


def _selected(html: str, name: str) -> str:
    select = re.search(rf'<select name="{name}"[^>]*>(.*?)</select>', html, re.S).group(1)
    return re.search(r'<option value="([^"]*)"[^>]*selected', select).group(1)


def test_submit_form_preselects_a_queue_with_its_groups_vendor(client, npu_world):
    client.force_login(npu_world["alice"])
    html = client.get("/jobs/new/").content.decode()
    assert _selected(html, "queue") == str(npu_world["npu_queue"].pk)
    assert _options(html, "vendor") == ["Ascend"]
    assert _selected(html, "vendor") == "Ascend"
    assert _options(html, "device_type") == ["", ASCEND]


def test_submit_form_offers_only_the_chosen_queues_models(client, npu_world):
    client.force_login(npu_world["alice"])
    html = client.get(f"/jobs/new/?queue={npu_world['queue_a'].pk}").content.decode()
    assert _selected(html, "queue") == str(npu_world["queue_a"].pk)
    assert _options(html, "vendor") == ["NVIDIA"]
    assert _options(html, "device_type") == ["", "NVIDIA-A100-SXM4-80GB"]
    # another tenant's queue in ?queue= is ignored (the first own queue is shown)
    html = client.get(f"/jobs/new/?queue={npu_world['queue_b'].pk}").content.decode()
    assert _selected(html, "queue") == str(npu_world["npu_queue"].pk)


def test_the_defaults_of_the_preselected_queue_submit(client, npu_world):
    """The bug: the Ascend queue came preselected with vendor NVIDIA."""
    client.force_login(npu_world["alice"])
    html = client.get("/jobs/new/").content.decode()
    form = {
        key: re.search(rf'name="{key}" value="([^"]*)"', html).group(1)
        for key in ("pod_count", "cpu_milli", "host_memory_mib", "duration_s", "device_count")
    }
    form.update(
        name="defaults",
        queue=_selected(html, "queue"),
        vendor=_selected(html, "vendor"),
        device_memory_mib=0,
        cores_percent=0,
    )
    response = client.post("/jobs/new/", form)
    assert response.status_code == 302, response.content.decode()[-1500:]
    job = Job.objects.get(name="defaults")
    assert (job.queue_id, job.containers.get().vendor) == (npu_world["npu_queue"].pk, "Ascend")


def test_a_vendor_or_model_the_group_cannot_run_is_a_form_error(client, npu_world):
    client.force_login(npu_world["alice"])
    nvidia_on_npu = client.post("/jobs/new/", submit_form(npu_world["npu_queue"], "wrong-vendor"))
    assert nvidia_on_npu.status_code == 200
    assert "Resource group g-npu has no NVIDIA device (it runs: Ascend)." in (
        nvidia_on_npu.content.decode()
    )
    a100_on_npu = client.post(
        "/jobs/new/",
        submit_form(
            npu_world["npu_queue"],
            "wrong-model",
            vendor="Ascend",
            device_type="NVIDIA-A100-SXM4-80GB",
        ),
    )
    assert a100_on_npu.status_code == 200
    assert "Resource group g-npu has no NVIDIA-A100-SXM4-80GB device." in (
        a100_on_npu.content.decode()
    )
    assert not Job.objects.filter(name__in=["wrong-vendor", "wrong-model"]).exists()
    ok = client.post(
        "/jobs/new/",
        submit_form(
            npu_world["npu_queue"], "right", vendor="Ascend", device_type=ASCEND, cores_percent=0
        ),
    )
    assert ok.status_code == 302, ok.content.decode()[-1500:]
    assert Job.objects.get(name="right").containers.get().device_types == [ASCEND]
