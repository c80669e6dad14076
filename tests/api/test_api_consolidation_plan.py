"""``GET /api/jobs/<id>/consolidation-plan/`` (issue 31): the plan the admission cycle's
consolidation would carry out for a queued job, before anything moves: the cycle's own
planner, nothing written, another tenant's moved jobs only counted."""

import pytest

from scheduling.choices import JobState
from scheduling.models import ConsolidationMove, Job, JobEvent, Placement
from scheduling.selectors.placement_profile import forget_workloads
from scheduling.services.cycle import run_admission_cycle
from tests.api.test_api_directory import as_user
from tests.builders import gpu_job, make_cluster, make_group, make_tenant, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_workloads():
    forget_workloads()
    yield
    forget_workloads()


def _fragmented(halves_tenant: str, waiting_tenant: str):
    """Two half-GPU jobs of ``halves_tenant`` on both GPUs of node c1-n0, then three
    whole-GPU jobs of ``waiting_tenant``: two fit on c1-n1, the third waits for a move."""
    make_cluster("c1", nodes=2, gpus=2)
    group = make_group("g1")
    group.consolidation_enabled = True
    group.save()
    queues = {}
    for name in sorted({halves_tenant, waiting_tenant}):
        queues[name] = make_tenant(name, group, devices_milli=100_000)
    halves = [
        gpu_job(queues[halves_tenant][1], f"h{i}", count=1, memory_percent=50, cores=50)
        for i in range(2)
    ]
    Job.objects.filter(pk__in=[h.pk for h in halves]).update(allow_consolidation=True)
    assert len(run_admission_cycle(group.pk).admitted) == 2
    wholes = [
        gpu_job(queues[waiting_tenant][1], f"w{i}", count=1, memory_percent=100, cores=100)
        for i in range(3)
    ]
    return group, {name: tenant for name, (tenant, _) in queues.items()}, halves, wholes


def _counts():
    return (
        Job.objects.filter(state=JobState.QUEUED).count(),
        Placement.objects.count(),
        JobEvent.objects.count(),
        ConsolidationMove.objects.count(),
        list(Job.objects.order_by("pk").values_list("pending_reason", "preempting_since")),
    )


def test_the_preview_shows_the_move_the_cycle_then_makes_and_writes_nothing(api):
    group, tenants, halves, wholes = _fragmented("team-a", "team-a")
    alice = make_user("alice", tenants["team-a"])
    before = _counts()

    response = as_user(api, alice).get(f"/api/jobs/{wholes[2].pk}/consolidation-plan/")

    assert response.status_code == 200, response.content
    body = response.json()
    assert _counts() == before  # nothing written
    assert (body["plannable"], body["reason"], body["target"], body["other_tenants"]) == (
        True,
        "",
        None,
        0,
    )
    assert len(body["moves"]) == 1
    move = body["moves"][0]
    assert move["job"] in {h.pk for h in halves}
    assert (move["from_node"], move["to_node"]) == ("c1-n0", "c1-n0")
    assert move["job_name"] == Job.objects.get(pk=move["job"]).name
    assert body["summary"] == f"job {move['job_name']} (c1-n0 -> c1-n0)"

    report = run_admission_cycle(group.pk)  # the cycle moves the very job the preview named
    assert report.moved == [move["job"]]


def test_another_tenants_moved_jobs_are_only_counted(api):
    _, tenants, halves, wholes = _fragmented("team-b", "team-a")
    alice = make_user("alice", tenants["team-a"])

    body = as_user(api, alice).get(f"/api/jobs/{wholes[2].pk}/consolidation-plan/").json()

    assert (body["plannable"], body["moves"], body["other_tenants"]) == (True, [], 1)
    assert body["summary"] == "1 job of other tenants"
    text = str(body)
    assert "team-b" not in text and all(h.name not in text for h in halves)


def test_another_tenants_job_answers_404(api):
    _, tenants, _, wholes = _fragmented("team-a", "team-a")
    other = make_tenant("team-c", make_group("g2"), devices_milli=1000)[0]
    bob = make_user("bob", other)

    response = as_user(api, bob).get(f"/api/jobs/{wholes[2].pk}/consolidation-plan/")

    assert response.status_code == 404


@pytest.mark.parametrize(
    ("which", "reason"),
    [
        ("admitted", "the job is not pending"),
        ("off", "consolidation is off in resource group g1"),
        ("fits", "the next admission cycle admits it without moves"),
    ],
)
def test_no_plan_says_why(api, which, reason):
    group, tenants, halves, wholes = _fragmented("team-a", "team-a")
    alice = make_user("alice", tenants["team-a"])
    job = {"admitted": halves[0], "off": wholes[2], "fits": wholes[0]}[which]
    if which == "off":
        group.consolidation_enabled = False
        group.save()

    body = as_user(api, alice).get(f"/api/jobs/{job.pk}/consolidation-plan/").json()

    assert (body["plannable"], body["reason"], body["moves"], body["target"]) == (
        False,
        reason,
        [],
        None,
    )


def test_in_propose_mode_the_cycle_only_shows_the_plan_until_auto(api):
    group, tenants, halves, wholes = _fragmented("team-a", "team-a")
    root = make_user("root", is_superuser=True, is_staff=True)
    url = f"/api/resource-groups/{group.pk}/"
    bad = as_user(api, root).patch(url, {"consolidation_mode": "sometimes"}, format="json")
    assert bad.status_code == 400
    assert set(bad.json()["error"]["fields"]) == {"consolidation_mode"}
    response = as_user(api, root).patch(url, {"consolidation_mode": "propose"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["consolidation_mode"] == "propose"

    report = run_admission_cycle(group.pk)

    assert report.moved == [] and ConsolidationMove.objects.count() == 0
    waiting = Job.objects.get(pk=wholes[2].pk)
    assert waiting.preempting_since is None
    assert waiting.pending_reason.endswith(
        "\nconsolidation: a plan moving 1 job(s) to make room awaits approval"
    )
    alice = make_user("alice", tenants["team-a"])
    body = as_user(api, alice).get(f"/api/jobs/{wholes[2].pk}/consolidation-plan/").json()
    assert body["plannable"] is True and len(body["moves"]) == 1

    as_user(api, root).patch(url, {"consolidation_mode": "auto"}, format="json")  # approved
    assert run_admission_cycle(group.pk).moved == [body["moves"][0]["job"]]
