"""No N+1 on API lists: each list costs a bounded number of queries with many rows."""

import pytest

from scheduling.models import Cluster, DeviceModel
from scheduling.services.cluster_submission import submit_to_cluster
from scheduling.services.cycle import run_admission_cycle
from tenants.models import Membership, ResourceGroup, Tenant
from tests.api.test_api_directory import as_user
from tests.builders import gpu_job, make_cluster, make_user

pytestmark = pytest.mark.django_db

MAX_QUERIES = 8
"""Token lookup, count, page, and at most a few prefetches: never one per row."""


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
        tenant = Tenant.objects.create(name=f"extra-{i}", parent=world["team_a"])
        Membership.objects.create(user=make_user(f"user-{i}"), tenant=tenant)
        ResourceGroup.objects.create(name=f"group-{i}")
        DeviceModel.objects.create(name=f"model-{i}", vendor="NVIDIA", config={"memory_mib": 1024})
        Cluster.objects.create(name=f"cluster-{i}")
    return world


LISTS = [
    "/api/jobs/",
    "/api/queues/",
    "/api/nodes/",
    "/api/devices/",
    "/api/tenants/",
    "/api/members/",
    "/api/resource-groups/",
    "/api/device-models/",
    "/api/clusters/",
    "/api/placements/",
    "/api/quotas/",
]


def test_list_query_count_is_bounded(api, big_world, django_assert_max_num_queries):
    client = as_user(api, big_world["root"])
    for url in LISTS:
        with django_assert_max_num_queries(MAX_QUERIES):
            response = client.get(url)
        assert response.status_code == 200, url
        assert response.json()["count"] >= 2, url


def test_member_job_list_is_bounded_too(api, big_world, django_assert_max_num_queries):
    client = as_user(api, big_world["alice"])
    with django_assert_max_num_queries(MAX_QUERIES):
        body = client.get("/api/jobs/").json()
    assert body["count"] == 14
