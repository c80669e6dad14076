"""Overview dashboard: FGD fragmentation rate, stranded GPUs and the most fragmented nodes,
by the API's permission rule (values worked out by hand).

On top of the shared world (g1: c1's four A100; a-train books 40 % memory / 30 % cores of
one, b-secret all the memory of another; a-wait asks 4 whole GPUs and waits), ``a-tiny``
books 95 % of a third A100 and cluster ``c2`` adds one T4 in group ``g2``, where no tenant
has a quota or queue.

Each node is measured against the tasks that could run on it when empty (node_demand): on
c1's 2-GPU nodes that is {400 (a-train: max(40, 30) %), 1000 (b-secret), 950 (a-tiny)}, each
1/3 (a-wait's 4 GPUs never fit a 2-GPU node). Idle A100 milli: 600 + 0 + 50 + 1000 = 1650.
Whichever two A100s share a node, the fragment is 450 (e.g. {600, 0} -> (0 + 600 + 600) / 3
= 400 and {50, 1000} -> (50 + 50 + 50) / 3 = 50), and only the 50-milli A100 is stranded
(below the smallest request, 400). Whole inventory (admins): the free T4 of c2 is asked by
no task: fragment 0 (an idle node is never fragmented), but its 1000 milli are stranded
(code ``model``).
"""

import pytest

from scheduling.models import PlacementDevice
from scheduling.services.cluster_submission import submit_to_cluster
from scheduling.services.cycle import run_admission_cycle
from tests.builders import gpu_job, make_cluster, make_group

pytestmark = pytest.mark.django_db

T4 = "Tesla-T4"


@pytest.fixture
def frag_world(world):
    tiny = gpu_job(world["queue_a"], "a-tiny", count=1, memory_percent=95, cores=95)
    assert run_admission_cycle(world["group"].pk).admitted == [tiny.pk]
    submit_to_cluster(tiny.pk)
    make_cluster("c2", nodes=1, gpus=1, model=T4, memory_mib=15360)
    make_group("g2", models=(T4,))
    world["tiny_uuid"] = PlacementDevice.objects.get(placement__job=tiny).device.uuid
    return world


def test_admin_sees_inventory_rate_and_stranded_devices(client, frag_world):
    client.force_login(frag_world["root"])
    response = client.get("/?fragment=1")
    frag = response.context["frag"]
    assert (frag.totals.idle_milli, round(frag.totals.fragment_milli, 6)) == (2650, 450.0)
    assert (frag.totals.stranded_milli, frag.totals.stranded_devices) == (1050, 2)
    text = response.content.decode()
    assert '<span class="value" id="fragmentation">17.0 %</span>' in text  # 450 / 2650
    assert '<span class="value" id="stranded-gpus">1.05</span>' in text
    assert "stranded GPUs (2 devices, all nodes)" in text
    # group rows: g1 27.3 % (450 / 1650), g2 measured against one whole GPU: 0 %
    assert [(g.name, round(g.totals.rate_percent, 1)) for g in frag.groups] == [
        ("g1", 27.3),
        ("g2", 0.0),
    ]
    assert "(no recent jobs)" in text
    # most fragmented nodes: c1's (400 and 50) first, then c2-n0 (fragment 0, a stranded
    # device); stranded devices link to the device page
    nodes = response.context["frag_nodes"]
    assert [round(n.fragment_milli) for n in nodes] == [400, 50, 0] and nodes[2].node == "c2-n0"
    assert '<a href="/devices/GPU-c2-0-0/">GPU-c2-0-0</a>' in text
    assert "no class of the target workload allows model Tesla-T4" in text
    tiny = frag_world["tiny_uuid"]
    assert f'<a href="/devices/{tiny}/">{tiny}</a>' in text
    assert (
        "50 milli free: 50 milli free is below the smallest per-GPU request (400 milli) "
        "of the classes that can run here"
    ) in text


@pytest.mark.parametrize("who", ["alice", "bob"])
def test_member_sees_own_groups_without_node_detail(client, frag_world, who):
    client.force_login(frag_world[who])
    response = client.get("/")
    text = response.content.decode()
    frag = response.context["frag"]
    assert [g.name for g in frag.groups] == ["g1"]  # not g2: no quota or queue there
    assert '<span class="value" id="fragmentation">27.3 %</span>' in text  # 450 / 1650
    assert '<span class="value" id="stranded-gpus">0.05</span>' in text
    assert "stranded GPUs (1 device, your resource groups)" in text
    assert response.context["frag_nodes"] is None
    assert 'id="fragmented-nodes"' not in text and "/devices/" not in text
    assert "shown to platform admins" in text


def test_overview_without_devices(client, db):
    from tests.builders import make_user

    client.force_login(make_user("lonely"))
    text = client.get("/").content.decode()
    assert '<span class="value" id="fragmentation">0.0 %</span>' in text
    assert "No resource group." in text


@pytest.mark.parametrize("who", ["alice", "bob"])
def test_member_overview_fragmentation_names_no_node_or_device(client, frag_world, who):
    client.force_login(frag_world[who])
    text = client.get("/?fragment=1").content.decode()
    card = text[text.index('id="fragmentation-card"') :]
    card = card[: card.index("</section>")]
    assert "g1" in card and "g2" not in card
    for name in ("c1-n0", "c1-n1", "c2-n0", "GPU-", frag_world["tiny_uuid"], "milli free"):
        assert name not in text
