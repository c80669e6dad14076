"""Pages and API lists run the same number of SQL queries whatever the numbers of nodes,
devices and jobs: measured on the small world, then again after adding 4x the nodes, devices
and jobs (placed, running, finished and queued), the counts must be equal."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from scheduling.models import Placement
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.jobs import cancel_job
from scheduling.services.submissions import submit_to_cluster
from tests.builders import gpu_job, make_cluster

pytestmark = pytest.mark.django_db

PAGES = [
    "/",
    "/jobs/",
    "/jobs/?state=queued",
    "/nodes/",
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
    urls = [*PAGES, f"/nodes/{node_id}/"]
    _grow(world, 3)
    small = _counts(client, urls)
    _grow(world, 12)
    large = _counts(client, urls)
    assert large == small


def test_overview_shares_its_inventory_panels_between_views(client, world, settings):
    from django.core.cache import cache

    settings.DASHBOARD_CACHE_S = 60
    cache.delete_many(["overview:fragmentation:all", "overview:measured-util"])
    client.force_login(world["root"])
    with CaptureQueriesContext(connection) as first:
        cold = client.get("/?fragment=1")
    with CaptureQueriesContext(connection) as second:
        warm = client.get("/?fragment=1")
    cache.delete_many(["overview:fragmentation:all", "overview:measured-util"])
    # the cached fragmentation skips the inventory snapshot and the recent-job reads
    assert len(second.captured_queries) < len(first.captured_queries)
    for marker in ('id="fragmentation"', 'id="stranded-gpus"'):
        assert _kpi(cold.content.decode(), marker) == _kpi(warm.content.decode(), marker)


def _kpi(html: str, marker: str) -> str:
    start = html.index(marker) + len(marker) + 1
    return html[start : html.index("<", start)]
