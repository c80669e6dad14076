"""No N+1 on pages: each list page costs a bounded number of queries with many rows."""

import pytest

from core.audit import record
from scheduling.models import Placement
from scheduling.services.cluster_submission import submit_to_cluster
from scheduling.services.cycle import run_admission_cycle
from telemetry.services.gauges import compute_group_gauges
from telemetry.services.usage_months import refresh_usage_months
from tests.builders import gpu_job, make_cluster

pytestmark = pytest.mark.django_db

BOUNDS = {
    "/": 21,
    "/?fragment=1": 15,
    "/quotas/": 10,
    "/jobs/": 18,
    "/jobs/?fragment=1": 6,
    "/nodes/": 10,
    "/usage/": 10,
    "/audit/": 10,
}
"""Session + user + memberships for the navigation, the page's own queries; none per row.
The overview reads the capacity rows aggregated by PostgreSQL (one query per
breakdown, whatever the number of groups) and the fragmentation and utilisation panels the
gauges task stored (one query each; a member's groups cost two more), and the trend charts.
The jobs page adds the start ranges of its queued jobs: three queries,
then six per resource group they are in (one here), whatever the number of rows. Its live
refresh (``?fragment=1``, polled every 5 s) reads the session, the user, the page's jobs and
their queue slots: not the navigation nor the filter selects."""


@pytest.fixture
def big_world(world):
    make_cluster("c2", nodes=6, gpus=2)
    jobs = [
        gpu_job(world["queue_a"], f"small-{i}", count=1, memory_percent=10, cores=10)
        for i in range(12)
    ]
    assert len(run_admission_cycle(world["group"].pk).admitted) == 12
    for job in jobs:
        submit_to_cluster(job.pk)
    for i in range(12):
        gpu_job(world["queue_a"], f"waiting-{i}", count=4)
        record("test.entry", world["team_a"], actor=world["root"], after={"i": i})
    compute_group_gauges()  # the overview's stored panels, as the beat task keeps them
    refresh_usage_months()  # the usage page's monthly rows, as the rollup task keeps them
    return world


@pytest.mark.parametrize("who", ["root", "alice"])
def test_page_query_count_is_bounded(client, big_world, who, django_assert_max_num_queries):
    client.force_login(big_world[who])
    for url, bound in BOUNDS.items():
        expected = 403 if (url == "/audit/" and who != "root") else 200
        with django_assert_max_num_queries(bound):
            response = client.get(url)
        assert response.status_code == expected, url


def test_card_map_and_device_pages_are_bounded(client, big_world, django_assert_max_num_queries):
    client.force_login(big_world["alice"])
    node_id = Placement.objects.get(job=big_world["a_train"]).node_id
    with django_assert_max_num_queries(8):
        assert client.get(f"/nodes/{node_id}/").status_code == 200
    with django_assert_max_num_queries(13):  # + telemetry health by serial (3)
        assert client.get("/devices/GPU-c1-0-0/").status_code == 200
    # + telemetry charts: 4 metrics, one query each; + the health events marked on them;
    # + the unmatched MIG series count (1)
    client.force_login(big_world["root"])
    with django_assert_max_num_queries(19):
        assert client.get("/devices/GPU-c1-0-0/").status_code == 200
    with django_assert_max_num_queries(9):
        assert client.get(f"/nodes/{node_id}/").status_code == 200
    client.force_login(big_world["alice"])
    job = big_world["a_train"]
    with django_assert_max_num_queries(14):
        assert client.get(f"/jobs/{job.pk}/").status_code == 200
