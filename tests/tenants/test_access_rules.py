"""The tenant access rules in one home (issue 28): a table of (user, tenant) -> access, and
the REST API, the pages and the dry-run intake agreeing with it queue for queue.

Tree: ``dept`` (no queue) above ``team-a`` and ``team-b``; ``squad`` below ``team-a``;
``other`` a second root. Every tenant but ``dept`` has one queue ``default``.
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from scheduling.models import Queue
from scheduling.selectors.access import submit_queues, submit_refusal, visible_jobs
from tenants.models import Tenant
from tenants.selectors import (
    Access,
    get_visible_tenant_ids,
    tenant_access,
    visible_tenant_ids_by_user,
)
from tests.builders import gpu_job, make_cluster, make_group, make_tenant, make_user

pytestmark = pytest.mark.django_db

N, R, W = Access.NONE, Access.READ, Access.WRITE
TENANTS = ("dept", "team-a", "squad", "team-b", "other")
TABLE = {  # user -> access to each of TENANTS
    "root": (W, W, W, W, W),
    "dana": (W, R, R, R, N),  # tenant admin of dept: reads below, writes in dept only
    "ada": (N, W, R, N, N),  # tenant admin of team-a
    "alice": (N, W, N, N, N),  # member of team-a: nothing below
    "victor": (N, R, N, N, N),  # viewer of team-a
    "mixed": (N, N, N, R, W),  # viewer of team-b, member of other
    "nobody": (N, N, N, N, N),
}
REFUSALS = {
    "dana": "There is no queue you may submit to: dept has no queue (a platform admin "
    "creates queues).",
    "victor": "There is no queue you may submit to: your role in your tenants (viewer) does "
    "not allow submitting jobs.",
    "nobody": "There is no queue you may submit to: you are not a member of any tenant.",
}


@pytest.fixture
def tree():
    make_cluster("c1", nodes=1, gpus=2)
    group = make_group("g1")
    dept = Tenant.objects.create(name="dept")
    tenants = {"dept": dept}
    for name, parent in (("team-a", dept), ("squad", None), ("team-b", dept), ("other", None)):
        tenants[name], _ = make_tenant(name, group, devices_milli=1000)
        Tenant.objects.filter(pk=tenants[name].pk).update(parent=parent)
    Tenant.objects.filter(name="squad").update(parent=tenants["team-a"])
    users = {
        "root": get_user_model().objects.create_superuser("root", "root@example.org", "pw"),
        "dana": make_user("dana", dept, "tenant_admin"),
        "ada": make_user("ada", tenants["team-a"], "tenant_admin"),
        "alice": make_user("alice", tenants["team-a"], "member"),
        "victor": make_user("victor", tenants["team-a"], "viewer"),
        "mixed": make_user("mixed", tenants["team-b"], "viewer"),
        "nobody": make_user("nobody"),
    }
    users["mixed"].memberships.create(tenant=tenants["other"], role="member")
    jobs = {
        name: gpu_job(Queue.objects.get(tenant=tenant), f"{name}-job")
        for name, tenant in tenants.items()
        if name != "dept"
    }
    return tenants, users, jobs


@pytest.mark.parametrize("who", sorted(TABLE))
def test_access_table(tree, who):
    tenants, users, _jobs = tree
    got = tuple(tenant_access(users[who], tenants[name].pk) for name in TENANTS)
    assert got == TABLE[who]


@pytest.mark.parametrize("who", sorted(TABLE))
def test_reads_and_submissions_follow_the_table(tree, who):
    tenants, users, jobs = tree
    user = users[who]
    access = dict(zip(TENANTS, TABLE[who], strict=True))
    readable = {jobs[name].pk for name in jobs if access[name] >= R}
    assert set(visible_jobs(user).values_list("pk", flat=True)) == readable
    writable = {name for name in TENANTS if access[name] == W and name != "dept"}
    assert {q.tenant.name for q in submit_queues(user)} == writable
    assert submit_refusal(user) == REFUSALS.get(who)


@pytest.mark.parametrize("who", sorted(TABLE))
def test_api_pages_and_dry_run_allow_the_same_queues(client, tree, who):
    """Each interface asked about every queue: the API's submit and dry-run accept a queue
    exactly when the page's form offers it; with none, all three refuse with one message."""
    _tenants, users, _jobs = tree
    api = APIClient()
    api.force_authenticate(users[who])
    client.force_login(users[who])
    page = client.get("/jobs/new/")
    expected = {q.pk for q in submit_queues(users[who])}
    if not expected:
        assert page.status_code == 403 and REFUSALS[who] in page.content.decode()
    else:
        assert {q.pk for q in page.context["form"].fields["queue"].queryset} == expected
    for queue in Queue.objects.order_by("pk"):
        for url in ("/api/jobs/", "/api/dry-run/", "/api/jobs/batch/"):
            body = {"queue": queue.pk, "name": "probe"}  # no containers: always 400
            if url.endswith("batch/"):
                body = {"jobs": [body]}
            resp = api.post(url, body, format="json")
            if not expected:
                assert resp.status_code == 403, url
                assert resp.json()["error"]["message"] == REFUSALS[who]
                continue
            assert resp.status_code == 400, url
            fields = resp.json()["error"]["fields"]
            refused = "queue" in fields or "jobs[0].queue" in fields
            assert refused is (queue.pk not in expected), (url, queue.tenant.name)


def test_the_bulk_read_rule_agrees_with_the_per_user_one(tree, django_assert_num_queries):
    """The gauges task's per-user scopes (one pass for every user) give each user what
    ``get_visible_tenant_ids`` gives them; a user without a membership has no entry."""
    _tenants, users, _jobs = tree
    with django_assert_num_queries(2):
        bulk = visible_tenant_ids_by_user()
    for who, user in users.items():
        if who == "root":
            continue
        expected = get_visible_tenant_ids(user)
        assert bulk.get(user.pk, set()) == expected, who
        readable = {name for name, a in zip(TENANTS, TABLE[who], strict=True) if a >= R}
        assert set(Tenant.objects.filter(pk__in=expected).values_list("name", flat=True)) == (
            readable
        )
    assert users["nobody"].pk not in bulk
