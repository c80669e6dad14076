"""Issue 30: forms and filters that know the cluster. The submit form offers the vendors and
models the chosen queue's resource group runs and refuses others; the list filters are
selects of names the user may see; the nodes list shows vendor / model and searches."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from scheduling.models import Device, Job, Node, Queue
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


def _labels(html: str, name: str) -> list[str]:
    select = re.search(rf'<select name="{name}"[^>]*>(.*?)</select>', html, re.S).group(1)
    return re.findall(r"<option[^>]*>([^<]*)</option>", select)


@pytest.mark.parametrize(
    ("who", "tenants", "queues"),
    [
        ("alice", ["any", "team-a"], ["any", "team-a / a-npu", "team-a / default"]),
        ("victor", ["any", "team-a"], ["any", "team-a / a-npu", "team-a / default"]),
        ("bob", ["any", "team-b"], ["any", "team-b / default"]),
        (
            "root",
            ["any", "team-a", "team-b"],
            ["any", "team-a / a-npu", "team-a / default", "team-b / default"],
        ),
    ],
)
def test_job_filters_are_selects_of_what_the_user_may_see(client, npu_world, who, tenants, queues):
    client.force_login(npu_world[who])
    html = client.get("/jobs/").content.decode()
    assert _labels(html, "tenant") == tenants
    assert _labels(html, "queue") == queues
    assert _labels(html, "vendor") == ["any", "Ascend", "NVIDIA"]
    assert _labels(html, "model") == ["any", f"{ASCEND} (Ascend)", "NVIDIA-A100-SXM4-80GB (NVIDIA)"]
    assert _options(html, "state")[:1] == ["queued"] and "running" in _options(html, "state")
    if who != "root":
        other = "team-a" if who == "bob" else "team-b"
        form = re.search(r'<form method="get".*?</form>', html, re.S).group(0)
        assert other not in form


def test_job_filter_selects_filter_the_list(client, npu_world):
    client.force_login(npu_world["alice"])
    client.post(
        "/jobs/new/",
        submit_form(
            npu_world["npu_queue"], "on-npu", vendor="Ascend", device_type=ASCEND, cores_percent=0
        ),
    )

    def names(query: str) -> set[str]:
        html = client.get(f"/jobs/?{query}").content.decode()
        return set(re.findall(r'<td class="wrap"><a href="/jobs/\d+/">([^<]+)</a>', html))

    assert names(f"queue={npu_world['npu_queue'].pk}") == {"on-npu"}
    assert names(f"queue={npu_world['queue_a'].pk}") == {"a-train", "a-wait"}
    assert names("vendor=Ascend") == {"on-npu"}
    assert names(f"model={ASCEND}") == {"on-npu"}
    # a-train is placed on an A100 (asks for any model); a-wait asks any model, unplaced
    assert names("model=NVIDIA-A100-SXM4-80GB") == {"a-train"}
    assert names(f"tenant={npu_world['team_a'].pk}") == {"on-npu", "a-train", "a-wait"}
    # another tenant's id in the box shows nothing of theirs
    assert names(f"tenant={npu_world['team_b'].pk}") == set()
    assert names(f"queue={npu_world['queue_b'].pk}") == set()


def test_an_unknown_vendor_in_the_jobs_url_is_a_form_error_not_a_500(client, npu_world):
    """A crafted or stale ``/jobs/?vendor=bogus`` raised the API's ValidationError inside
    the page (a 500, found by the review): the filter's form field refuses it, the page says
    why, and any case of a real vendor still filters."""
    client.force_login(npu_world["alice"])
    response = client.get("/jobs/?vendor=bogus")
    assert response.status_code == 200
    assert response.context["filter"].errors["vendor"] == [
        "unknown value 'bogus'; valid values: "
        + ", ".join(sorted(response.context["filter"].filters["vendor"].extra["valid_values"]))
    ]
    assert "unknown value" in response.content.decode()
    assert client.get("/jobs/?vendor=ascend").status_code == 200


def _node_rows(html: str) -> dict[str, tuple[str, str]]:
    """``{node name: (vendor cell, model cell)}`` of the nodes table."""
    return {
        name: (vendor, model)
        for name, vendor, model in re.findall(
            r'<a href="/nodes/\d+/">([^<]+)</a></td><td class="num">\d+</td>'
            r'<td class="wrap vendor">([^<]*)</td><td class="wrap model">([^<]*)</td>',
            html,
        )
    }


def test_nodes_list_shows_vendor_and_model_and_searches(client, npu_world):
    node = Node.objects.get(name="c1-n1")
    node.labels = {"pool": "c1", "zone": "west"}
    node.save()
    client.force_login(npu_world["alice"])
    assert _node_rows(client.get("/nodes/").content.decode()) == {
        "c1-n0": ("NVIDIA", "NVIDIA-A100-SXM4-80GB"),
        "c1-n1": ("NVIDIA", "NVIDIA-A100-SXM4-80GB"),
        "npu-n0": ("Ascend", ASCEND),
    }
    # a removed device's model is no longer listed
    Device.objects.filter(node__name="npu-n0").update(removed_at=node.created)
    assert _node_rows(client.get("/nodes/").content.decode())["npu-n0"] == ("—", "—")
    search = {
        "npu": {"npu-n0"},  # part of the name
        "WEST": {"c1-n1"},  # a label value, any case
        "zone": {"c1-n1"},  # a label key
        "pool=c1": {"c1-n0", "c1-n1"},  # key=value, exactly
        "pool=c": set(),
    }
    for text, expected in search.items():
        html = client.get("/nodes/", {"search": text}).content.decode()
        assert set(_node_rows(html)) == expected, text
        assert f'name="search" value="{text}"' in html


def test_nodes_page_query_count_does_not_grow_with_a_search(
    client, npu_world, django_assert_num_queries
):
    client.force_login(npu_world["alice"])
    client.get("/nodes/")
    with CaptureQueriesContext(connection) as plain:
        client.get("/nodes/")
    make_cluster("more", nodes=6, gpus=3)
    with django_assert_num_queries(len(plain.captured_queries)):
        assert client.get("/nodes/", {"search": "pool"}).status_code == 200
