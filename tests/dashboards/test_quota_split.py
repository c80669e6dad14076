"""The split view of a parent tenant's quota (issue 30): ``dave``, tenant admin of the demo's
``research``, sees research's quota and each child's nominal quota / borrowing limit /
lending limit with usage, and changes the children's shares; a split whose children's
nominal quotas exceed research's row is refused with a form error and nothing is saved."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from core.exceptions import InvalidRequest
from core.models import AuditEntry
from scheduling.models import Job
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.demo import seed_demo
from tenants.models import Quota, QuotaUsage, ResourceGroup, Tenant
from tenants.services import QuotaShare, split_quota
from tests.builders import submit_form

pytestmark = pytest.mark.django_db

DEVICES = {"resource_group__name": "nvidia-shared", "flavor": "*", "dimension": "devices"}


@pytest.fixture
def demo(client):
    seed_demo("demo-password-1")
    return {u.username: u for u in get_user_model().objects.all()}


def _row(tenant: str) -> Quota:
    return Quota.objects.get(tenant__name=tenant, **DEVICES)


def _form(**nominals: int) -> dict[str, str]:
    """The split form of research as shown, with the devices nominal of the named children
    (``team_nlp=5000``) in nvidia-shared changed."""
    data = {}
    for q in Quota.objects.filter(tenant__parent__name="research"):
        data[f"q{q.pk}_nominal"] = str(q.nominal)
        data[f"q{q.pk}_borrowing_limit"] = (
            "" if q.borrowing_limit is None else str(q.borrowing_limit)
        )
        data[f"q{q.pk}_lending_limit"] = "" if q.lending_limit is None else str(q.lending_limit)
    for name, nominal in nominals.items():
        data[f"q{_row(name.replace('_', '-')).pk}_nominal"] = str(nominal)
    return data


def _amounts() -> dict[tuple[str, str, str], tuple]:
    return {
        (q.tenant.name, q.resource_group.name, q.dimension): (
            q.nominal,
            q.borrowing_limit,
            q.lending_limit,
        )
        for q in Quota.objects.select_related("tenant", "resource_group")
    }


def test_demo_research_owns_a_quota_split_among_its_children_and_a_queue(demo):
    for group in ("nvidia-shared", "ascend-exclusive", "domestic-elastic"):
        for dimension in ("devices", "memory_mib", "cores_percent"):
            rows = {
                q.tenant.name: q.nominal
                for q in Quota.objects.filter(
                    resource_group__name=group, dimension=dimension
                ).select_related("tenant")
            }
            assert rows["research"] > rows["team-nlp"] + rows["team-vision"]
    research = Tenant.objects.get(name="research")
    assert set(research.queues.values_list("name", flat=True)) == {
        "nvidia-shared",
        "ascend-exclusive",
        "domestic-elastic",
    }


def test_dave_sees_research_s_split_with_each_child_s_limits_and_usage(client, demo):
    group = ResourceGroup.objects.get(name="nvidia-shared")
    assert run_admission_cycle(group.pk).admitted  # the demo's jobs charge usage
    client.force_login(demo["dave"])
    page = client.get("/tenants/research/quota-split/")
    assert page.status_code == 200 and page.context["can_edit"]
    shared = next(b for b in page.context["boards"] if b.group.name == "nvidia-shared")
    devices = next(r for r in shared.rows if r.parent.dimension == "devices")
    assert (devices.parent.tenant, devices.parent.nominal) == ("research", 16000)
    assert [(c.tenant, c.nominal) for c in devices.children] == [
        ("team-nlp", 6000),
        ("team-vision", 6000),
    ]
    assert (devices.given, devices.left) == (12000, 4000)
    used = {
        u.tenant.name: u.amount
        for u in QuotaUsage.objects.filter(**DEVICES).select_related("tenant")
    }
    assert [devices.parent.used, *(c.used for c in devices.children)] == [
        used.get(t, 0) for t in ("research", "team-nlp", "team-vision")
    ]
    assert used["research"] > 0 and used["team-nlp"] > 0 and used["team-vision"] > 0
    assert devices.subtree_used == sum(
        used.get(t, 0) for t in ("research", "team-nlp", "team-vision")
    )
    text = page.content.decode()
    assert f'name="q{_row("team-nlp").pk}_nominal"' in text
    assert "Borrowing limit" in text and "Lending limit" in text and "Used" in text
    assert (
        'href="/tenants/research/quota-split/"' in client.get("/tenants/research/").content.decode()
    )


def test_dave_moves_quota_from_one_child_to_another_in_one_split(client, demo):
    client.force_login(demo["dave"])
    # team-vision's new share only fits once team-nlp's is lowered: checked as a whole
    data = _form(team_nlp=4000, team_vision=8000)
    data[f"q{_row('team-vision').pk}_borrowing_limit"] = "2000"
    response = client.post("/tenants/research/quota-split/", data)
    assert response.status_code == 302
    assert (_row("team-nlp").nominal, _row("team-vision").nominal) == (4000, 8000)
    assert _row("team-vision").borrowing_limit == 2000
    changed = AuditEntry.objects.filter(action="quota.update")
    assert sorted(changed.values_list("object_id", flat=True)) == sorted(
        str(_row(t).pk) for t in ("team-nlp", "team-vision")
    )


def test_split_over_the_parent_s_quota_is_a_form_error_and_saves_nothing(client, demo):
    client.force_login(demo["dave"])
    before = _amounts()
    response = client.post(
        "/tenants/research/quota-split/", _form(team_nlp=5000, team_vision=11500)
    )
    assert response.status_code == 400
    errors = response.context["form"].non_field_errors()
    assert errors == [
        "the children of research would hold 16500 of devices for * in nvidia-shared, more "
        "than research's quota of 16000: lower a child's nominal quota by 500"
    ]
    assert errors[0] in response.content.decode().replace("&#x27;", "'")
    assert _amounts() == before
    assert not AuditEntry.objects.filter(action="quota.update").exists()


def test_lending_limit_above_nominal_is_an_error_on_that_field(client, demo):
    client.force_login(demo["dave"])
    before = _amounts()
    data = _form(team_nlp=5000)
    data[f"q{_row('team-nlp').pk}_lending_limit"] = "5001"
    response = client.post("/tenants/research/quota-split/", data)
    assert response.status_code == 400
    form = response.context["form"]
    assert form.errors[f"q{_row('team-nlp').pk}_lending_limit"] == [
        "lending_limit must be between 0 and nominal"
    ]
    assert _amounts() == before


@pytest.mark.parametrize("field", ["nominal", "borrowing_limit", "lending_limit"])
def test_an_amount_beyond_what_the_database_stores_is_a_400_not_a_500(client, demo, field):
    """A borrowing limit of 2**63 reached the database (``bigint out of range``, a 500):
    the page's fields and the service share the bound (``tenants.models.MAX_QUOTA_AMOUNT``)."""
    client.force_login(demo["dave"])
    before = _amounts()
    data = _form()
    data[f"q{_row('team-nlp').pk}_{field}"] = str(2**63)
    response = client.post("/tenants/research/quota-split/", data)
    assert response.status_code == 400
    assert f"q{_row('team-nlp').pk}_{field}" in response.context["form"].errors
    assert _amounts() == before


def test_the_split_service_refuses_a_borrowing_limit_beyond_the_database(demo):
    research = Tenant.objects.get(name="research")
    nlp = _row("team-nlp")
    with pytest.raises(InvalidRequest) as refused:
        split_quota(research, [QuotaShare(nlp, nlp.nominal, 2**63, None)])
    assert "between 0 and 9223372036854775807" in str(refused.value)
    assert _row("team-nlp").borrowing_limit == nlp.borrowing_limit


@pytest.mark.parametrize(
    ("who", "tenant", "get", "post"),
    [
        ("alice", "research", 404, 404),  # a member of a child does not read its parent
        ("alice", "team-nlp", 200, 403),  # reads her tenant, splits nothing
        ("carol", "team-nlp", 200, 403),
        ("dave", "team-nlp", 200, 403),  # a child has nothing below it to split
        ("dave", "platform", 404, 404),
    ],
)
def test_who_may_open_and_post_a_split(client, demo, who, tenant, get, post):
    client.force_login(demo[who])
    before = _amounts()
    assert client.get(f"/tenants/{tenant}/quota-split/").status_code == get
    assert client.post(f"/tenants/{tenant}/quota-split/", _form(team_nlp=1)).status_code == post
    assert _amounts() == before


def test_split_service_refuses_a_row_that_is_not_a_child_s(demo):
    research = Tenant.objects.get(name="research")
    platform = Quota.objects.get(tenant__name="platform", **DEVICES)
    with pytest.raises(InvalidRequest) as refused:
        split_quota(research, [QuotaShare(platform, 1000, None, None)])
    assert refused.value.field == f"quotas[{platform.pk}].nominal"
    assert Quota.objects.get(pk=platform.pk).nominal == 6000


def test_dave_submits_a_job_to_research_s_queue_from_the_page(client, demo):
    client.force_login(demo["dave"])
    form = client.get("/jobs/new/")
    assert form.status_code == 200
    queue = research_queue = Tenant.objects.get(name="research").queues.get(name="nvidia-shared")
    assert queue in form.context["form"].fields["queue"].queryset
    response = client.post(
        "/jobs/new/",
        submit_form(
            research_queue,
            "dave-eval",
            kind="batch",
            device_memory_mib=8192,
            cores_percent=20,
            host_memory_mib=4096,
        ),
    )
    job = Job.objects.get(name="dave-eval")
    assert response.status_code == 302 and response.url == f"/jobs/{job.pk}/"
    assert (job.tenant.name, job.submitted_by.username) == ("research", "dave")
