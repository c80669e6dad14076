"""Quota CRUD over the API: who may read and write, validation, tenant isolation."""

import pytest

from tenants.models import Quota, Tenant
from tests.builders import A100, make_cluster, make_group, make_tenant, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def org():
    make_cluster("c1", nodes=1, gpus=2)
    group = make_group("g1")
    dept, _ = make_tenant("dept", group, devices_milli=4000, memory_mib=327680, flavor=A100)
    team, _ = make_tenant("team-a", group, devices_milli=1000, flavor=A100)
    Tenant.objects.filter(pk=team.pk).update(parent=dept)
    other, _ = make_tenant("other", group, devices_milli=1000, flavor=A100)
    return {
        "group": group,
        "dept": dept,
        "team": team,
        "other": other,
        "boss": make_user("boss", dept, "tenant_admin"),
        "lead": make_user("lead", team, "tenant_admin"),
        "viewer": make_user("viewer", team, "viewer"),
        "root": make_user("root", is_superuser=True),
    }


def _body(**extra):
    body = {
        "tenant": "team-a",
        "resource_group": "g1",
        "flavor": A100,
        "dimension": "memory_mib",
        "nominal": 163840,
    }
    body.update(extra)
    return body


def test_parent_admin_creates_and_updates_a_team_quota(api, org):
    api.force_authenticate(org["boss"])
    response = api.post("/api/quotas/", _body(borrowing_limit=0), format="json")
    assert response.status_code == 201, response.content
    quota_id = response.json()["id"]
    assert response.json()["nominal"] == 163840
    response = api.patch(f"/api/quotas/{quota_id}/", {"nominal": 81920}, format="json")
    assert response.status_code == 200, response.content
    quota = Quota.objects.get(pk=quota_id)
    assert (quota.nominal, quota.borrowing_limit) == (81920, 0)
    # the department admin sees the team's quotas, not another tenant's
    names = {row["tenant"] for row in api.get("/api/quotas/").json()["results"]}
    assert names == {"dept", "team-a"}


def test_team_admin_cannot_raise_its_own_quota_and_viewers_are_read_only(api, org):
    api.force_authenticate(org["lead"])
    assert api.post("/api/quotas/", _body(), format="json").status_code == 403
    quota = Quota.objects.get(tenant=org["team"])
    response = api.patch(f"/api/quotas/{quota.pk}/", {"nominal": 99000}, format="json")
    assert response.status_code == 403
    api.force_authenticate(org["viewer"])
    assert api.get(f"/api/quotas/{quota.pk}/").status_code == 200
    assert api.delete(f"/api/quotas/{quota.pk}/").status_code == 403
    assert Quota.objects.get(pk=quota.pk).nominal == 1000


def test_another_tenants_quota_is_404(api, org):
    api.force_authenticate(org["boss"])
    theirs = Quota.objects.get(tenant=org["other"])
    assert api.get(f"/api/quotas/{theirs.pk}/").status_code == 404
    assert api.delete(f"/api/quotas/{theirs.pk}/").status_code == 404
    assert api.post("/api/quotas/", _body(tenant="other"), format="json").status_code == 404


def test_validation_errors_are_clear_and_change_nothing(api, org):
    api.force_authenticate(org["root"])
    response = api.post("/api/quotas/", _body(flavor="H100"), format="json")
    assert response.status_code == 400
    assert (
        "flavor 'H100' is not '*', a device model or a model family of group g1"
        in response.json()["error"]["message"]
    )
    response = api.post("/api/quotas/", _body(lending_limit=10**9), format="json")
    assert response.status_code == 400
    response = api.post("/api/quotas/", _body(dimension="devices", nominal=5), format="json")
    assert response.status_code == 409  # team-a already has a devices row for A100
    response = api.patch(
        f"/api/quotas/{Quota.objects.get(tenant=org['team']).pk}/", {"flavor": "*"}, format="json"
    )
    assert response.status_code == 400
    assert Quota.objects.count() == 4  # dept: devices and memory; team-a; other
