"""Overview dashboard: FGD fragmentation rate, stranded GPUs and the most fragmented nodes,
by the API's permission rule (values worked out by hand).

On top of the shared world (g1: c1's four A100; a-train books 40 % memory / 30 % cores of
one, b-secret all the memory of another; a-wait asks 4 whole GPUs and waits), ``a-tiny``
books 95 % of a third A100 and cluster ``c2`` adds one T4 in group ``g2``, where no tenant
has a quota or queue.

M of g1 = {400 (a-train: max(40, 30) %), 1000 (b-secret), 950 (a-tiny), 4 x 1000 (a-wait)},
each 1/4. Idle A100 milli: 600 + 0 + 50 + 1000 = 1650. Whichever two A100s share a node,
F(M) = 750 over g1 (e.g. {600, 0} -> (0 + 600 + 600 + 600) / 4 = 450 and {50, 1000} ->
(50 + 50 + 50 + 1050) / 4 = 300), and only the 50-milli A100 is stranded (below the
smallest request, 400). Whole inventory (admins): M is the same (g2 has no job) and allows
only the A100, so the free T4 adds 1000 idle, 1000 fragment and 1000 stranded (model).
"""

import pytest

from scheduling.models import PlacementDevice
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.submissions import submit_job
from tests.builders import gpu_job, make_cluster, make_group

pytestmark = pytest.mark.django_db

T4 = "Tesla-T4"


@pytest.fixture
def frag_world(world):
    tiny = gpu_job(world["queue_a"], "a-tiny", count=1, memory_percent=95, cores=95)
    assert run_admission_cycle(world["group"].pk).admitted == [tiny.pk]
    submit_job(tiny.pk)
    make_cluster("c2", nodes=1, gpus=1, model=T4, memory_mib=15360)
    make_group("g2", models=(T4,))
    world["tiny_uuid"] = PlacementDevice.objects.get(placement__job=tiny).device.uuid
    return world


def test_admin_sees_inventory_rate_and_stranded_devices(client, frag_world):
    client.force_login(frag_world["root"])
    response = client.get("/?fragment=1")
    frag = response.context["frag"]
    assert (frag.totals.idle_milli, round(frag.totals.fragment_milli, 6)) == (2650, 1750.0)
    assert (frag.totals.stranded_milli, frag.totals.stranded_devices) == (1050, 2)
    text = response.content.decode()
    assert '<span class="value" id="fragmentation">66.0 %</span>' in text  # 1750 / 2650
    assert '<span class="value" id="stranded-gpus">1.05</span>' in text
    assert "stranded GPUs (2 devices, all nodes)" in text
    # group rows: g1 45.5 % (750 / 1650), g2 measured against one whole GPU: 0 %
    assert [(g.name, round(g.totals.rate_percent, 1)) for g in frag.groups] == [
        ("g1", 45.5), ("g2", 0.0)]
    assert "(no recent jobs)" in text
    # most fragmented nodes: c2-n0 (1000) first; stranded devices link to the device page
    nodes = response.context["frag_nodes"]
    assert nodes[0].node == "c2-n0" and len(nodes) == 3
    assert '<a href="/devices/GPU-c2-0-0/">GPU-c2-0-0</a>' in text
    assert "no class of the target workload allows model Tesla-T4" in text
    tiny = frag_world["tiny_uuid"]
    assert f'<a href="/devices/{tiny}/">{tiny}</a>' in text
    assert ("50 milli free: 50 milli free is below the smallest per-GPU request (400 milli) "
            "of the classes that can run here") in text


@pytest.mark.parametrize("who", ["alice", "bob"])
def test_member_sees_own_groups_without_node_detail(client, frag_world, who):
    client.force_login(frag_world[who])
    response = client.get("/")
    text = response.content.decode()
    frag = response.context["frag"]
    assert [g.name for g in frag.groups] == ["g1"]  # not g2: no quota or queue there
    assert '<span class="value" id="fragmentation">45.5 %</span>' in text  # 750 / 1650
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
    card = text[text.index('id="fragmentation-card"'):]
    card = card[:card.index("</section>")]
    assert "g1" in card and "g2" not in card
    for name in ("c1-n0", "c1-n1", "c2-n0", "GPU-", frag_world["tiny_uuid"], "milli free"):
        assert name not in text
