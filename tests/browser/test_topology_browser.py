"""Issue 31 in a real browser: from the nodes list a member opens the cluster's topology
page, reads zone -> block -> rack -> node with free and used devices and their own gang,
never the other tenant's job, and follows a node to its card map and the gang to its job
page, which shows the domains its pods got."""

import pytest
from playwright.sync_api import expect

from scheduling.models import Cluster, Placement
from scheduling.selectors.topology import TopologySpec
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.jobs import ContainerSpec, JobSpec, enqueue_job
from tests.browser.conftest import login
from tests.builders import gpu_job
from tests.topology_world import RACK, topology_world

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_topology_page_shows_domains_and_own_gangs(chromium, live_server):
    world = topology_world(racks=2, per_rack=2, gpus=4)
    spec = JobSpec(
        name="ring",
        pod_count=4,
        cpu_milli=1000,
        host_memory_mib=1024,
        containers=[ContainerSpec(device_count=2)],
        topology=TopologySpec(mode="required", level=RACK),
    )
    gang = enqueue_job(world["queue_a"], spec, enqueue=False)
    other = gpu_job(world["queue_b"], "b-hidden", count=1)
    admitted = run_admission_cycle(world["group"].pk).admitted
    assert sorted(admitted) == sorted([gang.pk, other.pk])
    rack = Placement.objects.filter(job=gang).first().domains[2]
    cluster = Cluster.objects.get(name="tc")

    page = login(chromium, live_server.url, "alice", "pw-alice")
    page.goto(f"{live_server.url}/nodes/")
    page.locator(f'a[href="/clusters/{cluster.pk}/topology/"]').first.click()
    page.wait_for_url(f"{live_server.url}/clusters/{cluster.pk}/topology/")
    expect(page.locator("h1")).to_have_text("Topology of cluster tc")
    table = page.locator('section[data-topology="dc"]')
    expect(table.locator("tr.domain")).to_have_count(1 + 1 + 2 + 4)  # zone, block, racks, nodes
    zone = table.locator('tr[data-domain="zone-a"]')
    expect(zone.locator(".used")).to_have_text("9")  # 4 pods x 2 GPUs + 1
    expect(zone.locator(".free")).to_have_text("7")
    rack_row = table.locator(f'tr[data-level="rack"][data-domain="{rack}"]')
    expect(rack_row.locator(".used")).to_have_text("8")
    expect(rack_row.locator(".free")).to_have_text("0")
    expect(rack_row.locator(".gangs")).to_contain_text("team-a/ring (4 pods)")
    expect(page.locator("body")).not_to_contain_text("b-hidden")
    expect(page.locator("body")).not_to_contain_text("team-b")

    rack_row.locator(".gangs a").click()
    page.wait_for_url(f"{live_server.url}/jobs/{gang.pk}/")
    expect(page.locator("#job-topology")).to_have_text(f"required {RACK}")
    expect(page.locator("#placements td.domains").first).to_contain_text(
        f"zone-a › block-0 › {rack} ›"
    )

    page.go_back()
    node_row = table.locator('tr[data-level="hostname"]').first
    node_name = node_row.get_attribute("data-domain")
    node_row.locator("a.node-link").click()
    expect(page.locator("h1")).to_contain_text(f"Node {node_name}")
