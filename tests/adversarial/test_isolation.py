"""Tenant isolation through the REST API: another tenant's jobs, placements, queues, quotas,
usage, members, events, preemptions, dry-run results, telemetry and error messages.

World (tests/console_world.py): team-a (alice member, ada tenant admin, victor viewer) and
team-b (bob member) share group g1; ``b-secret`` is team-b's running job. Some tests nest the
teams under a department ``dept`` (admin ``dora``) and add an unrelated top-level ``team-c``.
"""

import pytest

from scheduling.models import Job, Preemption
from scheduling.services.cycle import run_admission_cycle
from tenants.models import Quota, Tenant
from tests.adversarial.helpers import client_for, text
from tests.builders import gpu_job, make_tenant, make_user

pytestmark = pytest.mark.django_db

SECRETS = ("b-secret", "team-b")


def _assert_blind(response, *secrets):
    assert response.status_code in (200, 400, 403, 404), (response.status_code, text(response))
    body = text(response)
    for secret in secrets or SECRETS:
        assert secret not in body, (response.request["PATH_INFO"], body[:300])


def test_every_detail_endpoint_answers_404_for_another_tenants_objects(world):
    bob_job = world["b_secret"]
    placement = bob_job.placements.get()
    Preemption.objects.create(
        victim=bob_job,
        victim_tenant="team-b",
        preemptor_tenant="team-b",
        reason="InTenant",
        message="b-secret evicted",
        time=bob_job.created,
        evict_by=bob_job.created,
        outcome="requeued",
    )
    alice = client_for(world["alice"])
    paths = [
        f"/api/jobs/{bob_job.pk}/",
        f"/api/jobs/{bob_job.pk}/events/",
        f"/api/jobs/{bob_job.pk}/preemptions/",
        f"/api/placements/{placement.pk}/",
        f"/api/queues/{world['queue_b'].pk}/",
        f"/api/tenants/{world['team_b'].pk}/",
        f"/api/quotas/{Quota.objects.get(tenant=world['team_b']).pk}/",
        f"/api/telemetry/jobs/{bob_job.pk}/efficiency/",
    ]
    for path in paths:
        response = alice.get(path)
        assert response.status_code == 404, (path, response.status_code)
        _assert_blind(response)
    # writes on another tenant's objects: 404 too, and nothing changes
    cancel = alice.post(f"/api/jobs/{bob_job.pk}/cancel/")
    assert cancel.status_code == 404
    bob_job.refresh_from_db()
    assert bob_job.state == "running"
    quota_b = Quota.objects.get(tenant=world["team_b"])
    ada = client_for(world["ada"])
    for method in ("patch", "put", "delete"):
        response = getattr(ada, method)(f"/api/quotas/{quota_b.pk}/", {"nominal": 0}, format="json")
        assert response.status_code == 404, (method, response.status_code)
    quota_b.refresh_from_db()
    assert quota_b.nominal == 2000


def test_list_filters_naming_another_tenant_return_nothing(world):
    alice = client_for(world["alice"])
    team_b, queue_b, job_b = world["team_b"], world["queue_b"], world["b_secret"]
    for path in (
        "/api/jobs/?tenant=team-b",
        f"/api/jobs/?queue={queue_b.pk}",
        "/api/placements/?tenant=team-b",
        f"/api/placements/?job={job_b.pk}",
        "/api/members/?tenant=team-b",
        "/api/members/?user=bob",
        "/api/queues/?name=default",
        "/api/quotas/",
        "/api/tenants/?name=team",
        f"/api/jobs/?name={job_b.name}",
    ):
        response = alice.get(path)
        assert response.status_code == 200, path
        _assert_blind(response)
    assert alice.get("/api/usage/?tenant=team-b").status_code == 404
    for path in (
        f"/api/telemetry/efficiency/?tenant={team_b.pk}",
        f"/api/telemetry/idle-jobs/?tenant={team_b.pk}",
        f"/api/telemetry/cost/?tenant={team_b.pk}",
        f"/api/telemetry/cost/csv/?tenant={team_b.pk}",
    ):
        response = alice.get(path)
        assert response.status_code == 404, path
        _assert_blind(response)


def test_unfiltered_lists_and_telemetry_show_only_own_tenant(world):
    alice = client_for(world["alice"])
    jobs = alice.get("/api/jobs/").json()["results"]
    assert sorted(j["name"] for j in jobs) == ["a-train", "a-wait"]
    placements = alice.get("/api/placements/").json()["results"]
    assert {p["tenant"] for p in placements} == {"team-a"}
    assert [u["tenant"] for u in alice.get("/api/usage/").json()] == ["team-a"]
    for path in (
        "/api/telemetry/efficiency/",
        "/api/telemetry/idle-jobs/",
        "/api/telemetry/cost/",
        "/api/telemetry/cost/csv/",
        "/api/members/",
        "/api/queues/",
        "/api/tenants/",
        "/api/quotas/",
    ):
        _assert_blind(alice.get(path))
    cost = alice.get("/api/telemetry/cost/").json()["rows"]
    assert {r["tenant"] for r in cost} <= {"team-a"}


def test_submit_and_dry_run_into_another_tenants_queue_are_refused_without_a_trace(world):
    alice = client_for(world["alice"])
    body = {"queue": world["queue_b"].pk, "name": "intruder", "containers": [{"device_count": 1}]}
    for path in ("/api/jobs/", "/api/dry-run/"):
        response = alice.post(path, body, format="json")
        assert response.status_code == 400
        assert set(response.json()["error"]["fields"]) == {"queue"}
        _assert_blind(response)
    assert not Job.objects.filter(name="intruder").exists()


@pytest.fixture
def nested(world):
    """team-a and team-b under ``dept`` (admin ``dora``); ``team-c`` top level."""
    dept = Tenant.objects.create(name="dept")
    Tenant.objects.filter(pk__in=[world["team_a"].pk, world["team_b"].pk]).update(parent=dept)
    dora = make_user("dora", dept, "tenant_admin")
    team_c, queue_c = make_tenant("team-c", world["group"], devices_milli=1000)
    return {**world, "dept": dept, "dora": dora, "team_c": team_c, "queue_c": queue_c}


def test_team_members_do_not_see_the_department_or_a_sibling_team(nested):
    alice = client_for(nested["alice"])
    Quota.objects.create(
        tenant=nested["dept"],
        resource_group=nested["group"],
        flavor="*",
        dimension="devices",
        nominal=8000,
    )
    assert [q["tenant"] for q in alice.get("/api/quotas/").json()["results"]] == ["team-a"]
    assert alice.get("/api/usage/?tenant=dept").status_code == 404
    assert alice.get(f"/api/tenants/{nested['dept'].pk}/").status_code == 404
    jobs = alice.get("/api/jobs/?tenant=team-b").json()["results"]
    assert jobs == []


def test_department_admin_reads_child_quotas_but_manages_no_outside_tenant(nested):
    dora = client_for(nested["dora"])
    seen = {q["tenant"] for q in dora.get("/api/quotas/").json()["results"]}
    assert seen == {"team-a", "team-b"}
    assert dora.get("/api/usage/?tenant=team-c").status_code == 404
    quota_c = Quota.objects.get(tenant=nested["team_c"])
    assert (
        dora.patch(f"/api/quotas/{quota_c.pk}/", {"nominal": 0}, format="json").status_code == 404
    )
    # a department admin sets the teams' quotas, never the department's own
    own = dora.post(
        "/api/quotas/",
        {"tenant": "dept", "resource_group": "g1", "dimension": "devices", "nominal": 99000},
        format="json",
    )
    assert own.status_code == 403
    assert not Quota.objects.filter(tenant=nested["dept"]).exists()


def test_tenant_admin_cannot_raise_their_own_quota(world):
    ada = client_for(world["ada"])
    quota = Quota.objects.get(tenant=world["team_a"])
    assert (
        ada.patch(f"/api/quotas/{quota.pk}/", {"nominal": 99000}, format="json").status_code == 403
    )
    created = ada.post(
        "/api/quotas/",
        {
            "tenant": "team-a",
            "resource_group": "g1",
            "flavor": "NVIDIA-A100-SXM4-80GB",
            "dimension": "devices",
            "nominal": 99000,
        },
        format="json",
    )
    assert created.status_code == 403
    dry = ada.post(
        "/api/quotas/dry-run/",
        {
            "changes": [
                {
                    "tenant": "team-a",
                    "resource_group": "g1",
                    "dimension": "devices",
                    "nominal": 99000,
                }
            ]
        },
        format="json",
    )
    assert dry.status_code == 403
    quota.refresh_from_db()
    assert quota.nominal == 2000 and Quota.objects.filter(tenant=world["team_a"]).count() == 1


def test_quota_endpoints_do_not_tell_an_unknown_tenant_from_another_tenants(world):
    """Answering 400 "does not exist" for a missing tenant but 404 for another tenant's
    lets anyone list the tenant names; both must read the same."""
    ada = client_for(world["ada"])
    answers = {}
    for name in ("team-b", "no-such-team"):
        create = ada.post(
            "/api/quotas/",
            {"tenant": name, "resource_group": "g1", "dimension": "devices", "nominal": 1},
            format="json",
        )
        dry = ada.post(
            "/api/quotas/dry-run/",
            {
                "changes": [
                    {"tenant": name, "resource_group": "g1", "dimension": "devices", "nominal": 1}
                ]
            },
            format="json",
        )
        answers[name] = [(r.status_code, r.json()["error"]["message"]) for r in (create, dry)]
    assert answers["team-b"] == answers["no-such-team"] == [(404, "No such tenant.")] * 2


def test_membership_writes_by_a_non_admin_do_not_reveal_which_usernames_exist(world):
    alice = client_for(world["alice"])
    real = alice.post(
        "/api/members/", {"tenant": "team-a", "user": "bob", "role": "viewer"}, format="json"
    )
    made_up = alice.post(
        "/api/members/",
        {"tenant": "team-a", "user": "nobody-here", "role": "viewer"},
        format="json",
    )
    assert real.status_code == made_up.status_code == 403
    assert real.json() == made_up.json()


def test_tenant_admin_cannot_touch_another_tenants_memberships(world):
    from tenants.models import Membership

    ada = client_for(world["ada"])
    bob_membership = Membership.objects.get(user=world["bob"])
    for method in ("patch", "put", "delete"):
        response = getattr(ada, method)(
            f"/api/members/{bob_membership.pk}/",
            {"tenant": "team-b", "user": "bob", "role": "viewer"},
            format="json",
        )
        assert response.status_code == 404
    added = ada.post(
        "/api/members/", {"tenant": "team-b", "user": "alice", "role": "viewer"}, format="json"
    )
    unknown = ada.post(
        "/api/members/", {"tenant": "no-such", "user": "alice", "role": "viewer"}, format="json"
    )
    # tenant admins never enrol directly (issue 15): refused before the names are looked at
    assert added.status_code == unknown.status_code == 403
    assert added.json() == unknown.json()
    invited, invited_unknown = (
        ada.post("/api/invitations/", {"tenant": name, "invitee": "alice"}, format="json")
        for name in ("team-b", "no-such")
    )
    assert invited.status_code == invited_unknown.status_code == 404
    assert invited.json() == invited_unknown.json()
    alice_membership = Membership.objects.get(user=world["alice"])
    moved = ada.patch(f"/api/members/{alice_membership.pk}/", {"tenant": "team-b"}, format="json")
    assert moved.status_code == 400
    bob_membership.refresh_from_db()
    alice_membership.refresh_from_db()
    assert (bob_membership.role, alice_membership.tenant_id) == ("member", world["team_a"].pk)
    assert not Membership.objects.filter(user=world["alice"], tenant=world["team_b"]).exists()


def test_quota_dry_run_does_not_show_an_outside_tenants_quota_or_usage(nested):
    """A department admin's what-if must not print the numbers of a tenant outside the
    department (team-c's usage, nominal quota and borrowing limit)."""
    c_job = gpu_job(nested["queue_c"], "c-hidden-job", count=1)
    Job.objects.filter(pk=nested["a_wait"].pk).update(state="cancelled")
    run_admission_cycle(nested["group"].pk)
    c_job.refresh_from_db()
    assert c_job.state == "admitted"
    # team-c is now over its (lowered) quota: a violation that exists before the change
    Quota.objects.filter(tenant=nested["team_c"]).update(nominal=0, borrowing_limit=0)
    dora = client_for(nested["dora"])
    response = dora.post(
        "/api/quotas/dry-run/",
        {
            "changes": [
                {"tenant": "team-a", "resource_group": "g1", "dimension": "devices", "nominal": 0}
            ]
        },
        format="json",
    )
    assert response.status_code == 200
    group = response.json()["groups"][0]
    outside = [m for m in group["violations"] + group["unresolved"] if "team-c" in m]
    assert outside, group  # the violation is reported ...
    for message in outside:  # ... without team-c's figures
        assert not any(ch.isdigit() for ch in message.replace("team-c", "")), message
    for victim in group["preempts"]:
        if victim["tenant"] == "team-c":
            assert victim["job"] is None
            assert "usage 1000" not in victim["violation"], victim
    assert "c-hidden-job" not in text(response)
