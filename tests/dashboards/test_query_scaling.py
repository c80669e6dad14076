"""Pages and API lists run the same number of SQL queries whatever the numbers of nodes,
devices and jobs: measured on the small world, then again after adding 4x the nodes, devices
and jobs (placed, running, finished and queued), the counts must be equal."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from scheduling.models import Placement
from scheduling.services.cluster_submission import submit_to_cluster
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.jobs import cancel_job
from tests.builders import gpu_job, make_cluster

pytestmark = pytest.mark.django_db

PAGES = [
    "/",
    "/jobs/",
    "/jobs/?state=queued",
    "/jobs/?fragment=1",  # the list's live refresh (issue 30)
    "/jobs/?state=queued&fragment=1",
    "/nodes/",
    "/nodes/?search=pool",
    "/jobs/?vendor=NVIDIA&model=NVIDIA-A100-SXM4-80GB",
    "/usage/",
    "/quotas/",
    "/api/jobs/",
    "/api/nodes/",
    "/api/devices/",
    "/api/placements/",
    "/api/queues/",
]


def _grow(world, n):
    """Add a cluster of ``n`` nodes x 2 devices and ``3 n`` jobs of team-a (placed and
    running, cancelled, queued)."""
    make_cluster(f"grow{n}", nodes=n, gpus=2)
    placed = [
        gpu_job(world["queue_a"], f"g{n}-{i}", count=1, memory_percent=10, cores=10)
        for i in range(n)
    ]
    run_admission_cycle(world["group"].pk)
    for job in placed:
        submit_to_cluster(job.pk)
    for i in range(n):
        cancel_job(gpu_job(world["queue_a"], f"c{n}-{i}", count=1, cores=10, memory_percent=10))
        gpu_job(world["queue_a"], f"q{n}-{i}", count=8)


def _counts(client, urls):
    out = {}
    for url in urls:
        client.get(url)  # caches warm, as for a second visitor
        with CaptureQueriesContext(connection) as ctx:
            response = client.get(url)
        assert response.status_code == 200, url
        out[url] = len(ctx.captured_queries)
    return out


@pytest.mark.parametrize("who", ["root", "alice"])
def test_query_counts_do_not_grow_with_the_data(client, world, who):
    client.force_login(world[who])
    node_id = Placement.objects.get(job=world["a_train"]).node_id
    urls = [*PAGES, f"/nodes/{node_id}/", f"/nodes/{node_id}/?fragment=1"]
    _grow(world, 3)
    small = _counts(client, urls)
    _grow(world, 12)
    large = _counts(client, urls)
    assert large == small


@pytest.mark.parametrize("who", ["root", "alice"])
def test_overview_reads_the_panels_the_gauges_task_stored(client, world, who):
    """The overview never measures the inventory in a request: the gauges task stores the
    fragmentation and utilisation panels; after it ran, a view reads them (no inventory
    snapshot, no recent-job read) and shows the figures a live measurement gives."""
    from scheduling.selectors.fragmentation import cluster_fragmentation, groups_for_tenants
    from telemetry.models import DashboardPanel
    from telemetry.services.gauges import compute_group_gauges
    from tenants.selectors import get_visible_tenant_ids

    _grow(world, 3)
    compute_group_gauges()
    user = world[who]
    scope = None if user.is_superuser else groups_for_tenants(get_visible_tenant_ids(user))
    live = cluster_fragmentation(scope).totals
    stored = DashboardPanel.objects.count()
    assert stored >= 3  # the whole inventory, utilisation, and at least one user scope
    client.force_login(user)
    with CaptureQueriesContext(connection) as ctx:
        html = client.get("/?fragment=1").content.decode()
    sql = " ".join(q["sql"] for q in ctx.captured_queries)
    assert "scheduling_jobcontainer" not in sql  # the recent jobs' shapes: not read
    assert DashboardPanel.objects.count() == stored  # nothing computed in the request
    assert _kpi(html, 'id="fragmentation"') == f"{live.rate_percent:.1f} %"
    assert _kpi(html, 'id="stranded-gpus"') == f"{live.stranded_gpus:.2f}"


def _kpi(html: str, marker: str) -> str:
    start = html.index(marker) + len(marker) + 1
    return html[start : html.index("<", start)]
