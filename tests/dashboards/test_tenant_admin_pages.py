"""The demo's roles in the pages (issue 30): a parent tenant's admin (``dave``, tenant admin
of ``research``, whose children are ``team-nlp`` and ``team-vision``) sees in the pages what
the API shows him; a refused submit page says the real cause; the navigation links only
pages the role may open."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from scheduling.services.demo import seed_demo

pytestmark = pytest.mark.django_db

DEMO_USERS = ("admin", "alice", "bob", "carol", "dave")


@pytest.fixture
def demo():
    seed_demo("demo-password-1")
    return {u.username: u for u in get_user_model().objects.filter(username__in=DEMO_USERS)}


def _api(user) -> APIClient:
    api = APIClient()
    api.force_authenticate(user)
    return api


def _all(api, url) -> list[dict]:
    rows, page = [], url
    while page:
        body = api.get(page).json()
        rows += body["results"]
        page = body["next"]
    return rows


def test_parent_admin_quotas_page_shows_the_api_s_quota_rows(client, demo):
    api_rows = {
        (r["tenant"], r["resource_group"], r["flavor"], r["dimension"], r["nominal"])
        for r in _all(_api(demo["dave"]), "/api/quotas/")
    }
    assert len(api_rows) == 27
    assert {r[0] for r in api_rows} == {"research", "team-nlp", "team-vision"}
    client.force_login(demo["dave"])
    page = client.get("/quotas/")
    shown = {
        (r.tenant, board.group.name, r.flavor, r.dimension, r.nominal)
        for board in page.context["boards"]
        for r in board.rows
    }
    assert shown == api_rows
    assert "No quota for your tenants yet" not in page.content.decode()


@pytest.mark.parametrize("who", ["alice", "carol", "dave"])
def test_jobs_page_lists_the_api_s_jobs(client, demo, who):
    listed = [j["id"] for j in _api(demo[who]).get("/api/jobs/").json()["results"]]
    client.force_login(demo[who])
    shown = [j.pk for j in client.get("/jobs/").context["jobs"]]
    assert shown == listed and listed


def test_parent_tenant_page_lists_its_children_and_opens_theirs(client, demo):
    client.force_login(demo["dave"])
    research = client.get("/tenants/research/")
    assert research.status_code == 200
    text = research.content.decode()
    assert [t.name for t in research.context["children"]] == ["team-nlp", "team-vision"]
    assert 'href="/tenants/team-nlp/"' in text and 'href="/tenants/team-vision/"' in text
    child = client.get("/tenants/team-nlp/")
    assert child.status_code == 200
    assert {r.tenant for b in child.context["boards"] for r in b.rows} == {"team-nlp"}
    # members of a tenant are shown to its own members only, as GET /api/members/ does
    members_api = {m["user"] for m in _all(_api(demo["dave"]), "/api/members/")}
    assert members_api == {"dave"}
    assert list(child.context["members"]) == [] and "alice" not in child.content.decode()
    tenants_api = {t["name"] for t in _all(_api(demo["dave"]), "/api/tenants/")}
    assert tenants_api == {"research", "team-nlp", "team-vision"}
    client.force_login(demo["alice"])
    assert client.get("/tenants/research/").status_code == 404


@pytest.mark.parametrize(
    ("who", "cause"),
    [("carol", "There is no queue you may submit to: your role in your tenants (viewer)")],
)
def test_refused_submit_page_says_the_real_cause(client, demo, who, cause):
    client.force_login(demo[who])
    page = client.get("/jobs/new/")
    assert page.status_code == 403
    assert cause in page.content.decode()
    api = _api(demo[who]).post("/api/jobs/", {"queue": 1, "name": "x"}, format="json")
    assert api.status_code == 403 and api.json()["error"]["message"].startswith(cause)


NAV = re.compile(r'<(?:header class="top"|nav)>(.*?)</(?:header|nav)>', re.S)
HREF = re.compile(r'<a [^>]*href="(/[^"]*)"')


@pytest.mark.parametrize("who", DEMO_USERS)
def test_navigation_links_only_pages_the_role_may_open(client, demo, who):
    client.force_login(demo[who])
    page = client.get("/jobs/").content.decode()
    header = page.split("<main>")[0]
    links = sorted(set(HREF.findall(header)) - {"/api/docs/"})
    opened = {url: client.get(url).status_code for url in links}
    assert opened == dict.fromkeys(links, 200)
    assert ("/simulations/" in links) is (who in ("admin", "dave"))


@pytest.mark.parametrize(
    ("who", "tenant", "status"),
    [
        ("dave", "team-nlp", 200),
        ("dave", "team-vision", 200),
        ("dave", "platform", 404),
        ("alice", "team-vision", 404),
        ("alice", "research", 404),
    ],
)
def test_cost_and_efficiency_cover_the_tenants_the_pages_show(client, demo, who, tenant, status):
    api = _api(demo[who])
    for url in ("/api/telemetry/cost/", "/api/telemetry/efficiency/", "/api/telemetry/idle-jobs/"):
        assert api.get(url, {"tenant": tenant}).status_code == status, url
    client.force_login(demo[who])
    page = client.get(f"/tenants/{tenant}/").status_code
    assert page == status
