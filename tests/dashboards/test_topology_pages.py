"""The cluster topology page, the job page's domains and the submit form's topology fields
(issue 31): values worked out by hand, tenant isolation."""

import re

import pytest

from scheduling.models import Cluster, Job, Placement
from scheduling.services.cycle import run_admission_cycle
from tests.builders import gpu_job, make_group, make_tenant, make_user, submit_form
from tests.topology_world import RACK, topology_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def tw(db):
    world = topology_world()
    world["a_job"] = gpu_job(world["queue_a"], "a-secret-train", count=4)
    world["b_job"] = gpu_job(world["queue_b"], "b-secret-train", count=4)
    admitted = run_admission_cycle(world["group"].pk).admitted
    assert sorted(admitted) == sorted([world["a_job"].pk, world["b_job"].pk])
    world["cluster"] = Cluster.objects.get(name="tc")
    return world


def _rows(html: str) -> dict[str, tuple[str, str, str]]:
    """``{domain: (devices, used, free)}`` of the page's domain rows."""
    rows = {}
    for match in re.finditer(
        r'data-domain="([^"]+)">.*?<td class="num">\d+</td>\s*<td class="num">(\d+)</td>'
        r'.*?<span class="used">(\d+)</span>.*?<td class="num free">(\d+)</td>',
        html,
        re.S,
    ):
        rows[match.group(1)] = match.group(2, 3, 4)
    return rows


def test_topology_page_shows_domains_devices_and_own_gangs(client, tw):
    client.force_login(tw["alice"])
    response = client.get(f"/clusters/{tw['cluster'].pk}/topology/")
    assert response.status_code == 200
    html = response.content.decode()
    rows = _rows(html)
    assert rows["zone-a"] == ("16", "8", "8")
    assert rows["block-0"] == ("16", "8", "8")
    a_node = Placement.objects.get(job=tw["a_job"]).node.name
    b_node = Placement.objects.get(job=tw["b_job"]).node.name
    assert rows[a_node] == ("4", "4", "0") and rows[b_node] == ("4", "4", "0")
    assert sum(int(rows[f"rack-{r}"][1]) for r in (0, 1)) == 8
    assert "team-a/a-secret-train</a> (1 pod)" in html
    assert "b-secret-train" not in html and "team-b" not in html
    assert "1 pod of other tenant jobs" in html
    assert f'href="/nodes/{Placement.objects.get(job=tw["a_job"]).node_id}/"' in html


def test_a_platform_admin_sees_every_gang(client, tw, django_user_model):
    root = django_user_model.objects.create_superuser("root", "r@example.org", "pw")
    client.force_login(root)
    html = client.get(f"/clusters/{tw['cluster'].pk}/topology/").content.decode()
    assert "team-a/a-secret-train" in html and "team-b/b-secret-train" in html


def test_a_group_without_topology_shows_none_and_anonymous_is_sent_to_login(client, tw):
    lone = make_group("lone")
    tenant, _queue = make_tenant("team-c", lone)
    carol = make_user("carol", tenant)
    client.force_login(carol)
    html = client.get(f"/clusters/{tw['cluster'].pk}/topology/").content.decode()
    assert "No topology" in html and "zone-a" not in html
    client.logout()
    assert client.get(f"/clusters/{tw['cluster'].pk}/topology/").status_code == 302


def test_nodes_and_card_map_link_the_topology_page(client, tw):
    client.force_login(tw["alice"])
    link = f'href="/clusters/{tw["cluster"].pk}/topology/"'
    assert link in client.get("/nodes/").content.decode()
    node_id = Placement.objects.get(job=tw["a_job"]).node_id
    assert link in client.get(f"/nodes/{node_id}/").content.decode()


def test_job_page_shows_its_request_and_the_domains_its_pods_got(client, tw):
    placement = Placement.objects.get(job=tw["a_job"])
    placement.domains = ["zone-a", "block-0", "rack-1", placement.node.name]
    placement.save()
    Job.objects.filter(pk=tw["a_job"].pk).update(topology_mode="required", topology_level=RACK)
    client.force_login(tw["alice"])
    html = client.get(f"/jobs/{tw['a_job'].pk}/").content.decode()
    assert f'<td id="job-topology">required {RACK}</td>' in html
    assert f"zone-a › block-0 › rack-1 › {placement.node.name}" in html


def test_submit_form_takes_a_topology_request(client, tw):
    client.force_login(tw["alice"])
    form = submit_form(
        tw["queue_a"],
        "ui-gang",
        pod_count=2,
        topology_mode="required",
        topology_level="rack",
        topology_slice_size=1,
        topology_slice_level="hostname",
    )
    response = client.post("/jobs/new/", form)
    assert response.status_code == 302, response.content.decode()[-3000:]
    job = Job.objects.get(name="ui-gang")
    assert (job.topology_mode, job.topology_level, job.topology_slice_size) == ("required", RACK, 1)
    bad = client.post("/jobs/new/", {**form, "name": "ui-bad", "topology_level": "aisle"})
    assert bad.status_code == 200
    assert "&#x27;aisle&#x27; is not a level of topology dc" in bad.content.decode()
    assert not Job.objects.filter(name="ui-bad").exists()
