"""Issue 16 acceptance through the database cycle and the REST API: double booking during a
victim's grace period, quota shrink and deletion, priority classes, child-tenant quotas."""

from datetime import timedelta

import pytest
from django.db.models import Sum
from django.utils import timezone

from core.models import AuditEntry
from scheduling.choices import BOOKED_PLACEMENT_STATES, JobState, PlacementState
from scheduling.models import Device, Job, Placement, PlacementDevice, PriorityClass
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.eviction import release_due_terminations
from tenants.models import Quota, QuotaUsage, Tenant
from tests.builders import A100, gpu_job, make_cluster, make_group, make_tenant, make_user

pytestmark = pytest.mark.django_db

WHOLE = {"count": 1, "memory_percent": 100, "cores": 100}


def _body(queue, **extra):
    body = {
        "queue": queue.pk,
        "name": "probe",
        "cpu_milli": 1000,
        "host_memory_mib": 1024,
        "containers": [
            {"name": "main", "device_count": 1, "memory_percent": 100, "cores_percent": 100}
        ],
    }
    body.update(extra)
    return body


def _devices_used(tenant, group):
    return sum(
        QuotaUsage.objects.filter(
            tenant=tenant, resource_group=group, dimension="devices"
        ).values_list("amount", flat=True)
    )


def _assert_no_device_overbooked():
    """Every device's bookings by placements that hold it (terminating ones included) fit."""
    rows = (
        PlacementDevice.objects.filter(placement__state__in=BOOKED_PLACEMENT_STATES)
        .values("device_id")
        .annotate(mem=Sum("memory_mib"), cores=Sum("cores_percent"), slots=Sum("slots"))
    )
    for row in rows:
        device = Device.objects.get(pk=row["device_id"])
        assert row["mem"] <= device.memory_mib and row["cores"] <= device.cores_percent, device.uuid


def _stagger(jobs):
    base = timezone.now() - timedelta(minutes=10)
    for i, job in enumerate(jobs):
        Job.objects.filter(pk=job.pk).update(admitted_at=base + timedelta(seconds=i))


def _grace_over():
    return release_due_terminations(timezone.now() + timedelta(seconds=31))


# -- double booking ------------------------------------------------------------------------------


def test_no_job_lands_on_a_victims_devices_during_its_grace_period(api):
    make_cluster("c1", nodes=1, gpus=2)
    group = make_group("g1")
    team, queue = make_tenant("team-a", group, devices_milli=2000, flavor=A100)
    Quota.objects.filter(tenant=team).update(borrowing_limit=0)
    low = [gpu_job(queue, f"low{i}", **WHOLE, priority=1) for i in range(2)]
    assert run_admission_cycle(group.pk).admitted == [j.pk for j in low]
    _stagger(low)
    high = gpu_job(queue, "high", **WHOLE, priority=10)
    filler = gpu_job(queue, "filler", **WHOLE, priority=0)
    report = run_admission_cycle(group.pk)
    # high preempts the newest low job; nothing (not even high) takes its device yet
    assert (report.admitted, report.preempted) == ([], [low[1].pk])
    victim = Placement.objects.get(job=low[1])
    assert victim.state == PlacementState.TERMINATING and victim.evict_by is not None
    _assert_no_device_overbooked()
    assert _devices_used(team, group) == 2000  # the victim is still charged
    filler.refresh_from_db()
    assert filler.state == JobState.QUEUED
    assert filler.pending_reason.splitlines()[0] == (
        f"tenant team-a, group g1, flavor {A100}, devices: needs 1000, free 0, borrowable 0 "
        "(bounded by borrowing limit of tenant team-a)"
    )
    # a second cycle inside the grace period changes nothing
    assert run_admission_cycle(group.pk).admitted == []
    user = make_user("alice", team, "member")
    api.force_authenticate(user)
    body = api.get(f"/api/jobs/{high.pk}/").json()
    assert (body["state"], body["queue_position"]) == ("queued", 1)
    assert body["pending_reason"].startswith(
        f"waiting for 1 preempted workload(s) to terminate ({low[1].pk}); admitted once "
        "their pods are gone (grace until "
    )
    body = api.get(f"/api/jobs/{low[1].pk}/").json()
    assert body["state"] == "queued"
    assert [p["state"] for p in body["placements"]] == ["terminating"]
    usage = {r["dimension"]: r for r in api.get("/api/usage/").json()}
    assert usage["devices"]["used"] == 2000
    # the pods are gone: high gets the device, the requeued victim and filler wait
    assert _grace_over() == {group.pk}
    assert run_admission_cycle(group.pk).admitted == [high.pk]
    assert Placement.objects.get(job=high).node_id == victim.node_id
    _assert_no_device_overbooked()
    assert _devices_used(team, group) == 2000


# -- quota deletion and shrink ------------------------------------------------------------------


def test_deleting_a_quota_row_keeps_the_tenants_running_usage_counted(api, cohort):
    group, (a, qa), (b, qb) = cohort
    b_jobs = [gpu_job(qb, f"b{i}", **WHOLE) for i in range(3)]
    assert len(run_admission_cycle(group.pk).admitted) == 3
    _stagger(b_jobs)
    root = make_user("root", is_superuser=True)
    api.force_authenticate(root)
    # a tenant with jobs cannot be deleted (its usage would vanish from the cohort)
    response = api.delete(f"/api/tenants/{b.pk}/")
    assert response.status_code == 409, response.content
    assert Tenant.objects.filter(pk=b.pk).exists()
    row = Quota.objects.get(tenant=b, dimension="devices")
    assert api.delete(f"/api/quotas/{row.pk}/").status_code == 204
    rows = {r["tenant"]: r for r in api.get("/api/usage/?resource_group=g1").json()}
    assert rows["team-b"]["used"] == 3000  # still counted
    # the cohort's quota is now team-a's 2000 alone and team-b runs 3000 on it: all of
    # team-b's usage is borrowed, so team-a reclaims its whole nominal although two devices
    # are physically free (it is not over-admitted onto usage nobody counts)
    a_jobs = [gpu_job(qa, f"a{i}", **WHOLE) for i in range(2)]
    more_b = gpu_job(qb, "b-more", **WHOLE)
    report = run_admission_cycle(group.pk)
    assert report.admitted == []
    assert sorted(report.preempted) == sorted(j.pk for j in b_jobs)
    more_b.refresh_from_db()
    assert more_b.pending_reason.splitlines()[0] == (
        f"tenant team-b, group g1, flavor {A100}: no quota for this flavor"
    )
    assert _devices_used(b, group) == 3000  # charged until the pods are gone
    _assert_no_device_overbooked()
    _grace_over()
    assert run_admission_cycle(group.pk).admitted == [j.pk for j in a_jobs]
    assert (_devices_used(a, group), _devices_used(b, group)) == (2000, 0)
    rows = {r["tenant"]: r for r in api.get("/api/usage/?resource_group=g1").json()}
    assert "team-b" not in rows and rows["team-a"]["used"] == 2000


def test_quota_shrink_dry_run_lists_the_jobs_that_would_go_over(api, cohort):
    group, (a, qa), (b, qb) = cohort
    b_jobs = [gpu_job(qb, f"b{i}", **WHOLE) for i in range(2)]
    run_admission_cycle(group.pk)
    _stagger(b_jobs)
    root = make_user("root", is_superuser=True)
    api.force_authenticate(root)
    change = {
        "tenant": "team-b",
        "resource_group": "g1",
        "flavor": A100,
        "dimension": "devices",
        "nominal": 1000,
    }
    response = api.post("/api/quotas/dry-run/", {"changes": [change]}, format="json")
    assert response.status_code == 200, response.content
    [answer] = response.json()["groups"]
    # no hard limit breaks (no borrowing limit), but team-b would run 1000 over its nominal
    assert answer["violations"] == [] and answer["preempts"] == []
    [over] = answer["over_nominal"]
    assert (over["tenant"], over["usage"], over["nominal"], over["jobs"]) == (
        "team-b",
        2000,
        1000,
        [b_jobs[1].pk],
    )
    # the same as a deletion: every running job of team-b is over
    response = api.post(
        "/api/quotas/dry-run/", {"changes": [{**change, "remove": True}]}, format="json"
    )
    [answer] = response.json()["groups"]
    assert answer["over_nominal"][0]["jobs"] == [b_jobs[1].pk, b_jobs[0].pk]
    row = Quota.objects.get(tenant=b, dimension="devices")
    assert api.patch(f"/api/quotas/{row.pk}/", {"nominal": 1000}, format="json").status_code == 200
    # applied: nothing is evicted, the usage stays counted, team-a can reclaim its nominal
    assert all(j.state == JobState.ADMITTED for j in Job.objects.filter(tenant=b))
    a_jobs = [gpu_job(qa, f"a{i}", **WHOLE) for i in range(3)]
    report = run_admission_cycle(group.pk)
    # a0 fits the cohort's 3000; a1 reclaims b1, the job over team-b's new nominal; a2
    # would need team-b's remaining 1000, which is within its nominal: not reclaimable
    assert (report.admitted, report.preempted) == ([a_jobs[0].pk], [b_jobs[1].pk])
    a2 = Job.objects.get(pk=a_jobs[2].pk)
    assert a2.pending_reason.splitlines()[0].startswith(
        f"tenant team-a, group g1, flavor {A100}, devices: needs 1000"
    )
    # (a1's hold replaces b1's charges for the rest of the cycle, so team-b is back within
    # its nominal and both its jobs are rejected with that rule: issue 29)
    assert a2.pending_reason.splitlines()[-1] == (
        "preemption: 2 job(s) of other tenants rejected: borrower within nominal x2"
    )
    _grace_over()
    assert run_admission_cycle(group.pk).admitted == [a_jobs[1].pk]
    assert (_devices_used(a, group), _devices_used(b, group)) == (2000, 1000)
    _assert_no_device_overbooked()


# -- priority classes ---------------------------------------------------------------------------


@pytest.fixture
def classes(api, cohort):
    group, (a, qa), (b, qb) = cohort
    root = make_user("root", is_superuser=True)
    alice = make_user("alice", a, "member")
    api.force_authenticate(alice)
    assert (
        api.post(
            "/api/priority-classes/", {"name": "critical", "value": 1000}, format="json"
        ).status_code
        == 403
    )
    api.force_authenticate(root)
    for name, value, preemptible in (
        ("critical", 1000, False),
        ("batch", 10, True),
        ("scavenger", -10, True),
    ):
        response = api.post(
            "/api/priority-classes/",
            {"name": name, "value": value, "preemptible": preemptible},
            format="json",
        )
        assert response.status_code == 201, response.content
    response = api.patch(
        f"/api/queues/{qa.pk}/",
        {"allowed_priority_classes": ["batch", "scavenger"], "default_priority_class": "critical"},
        format="json",
    )
    assert response.status_code == 400
    assert "default_priority_class" in response.json()["error"]["fields"]
    response = api.patch(
        f"/api/queues/{qa.pk}/",
        {"allowed_priority_classes": ["batch", "scavenger"], "default_priority_class": "batch"},
        format="json",
    )
    assert response.status_code == 200, response.content
    assert (
        response.json()["allowed_priority_classes"],
        response.json()["default_priority_class"],
    ) == (["batch", "scavenger"], "batch")
    assert AuditEntry.objects.get(action="queue.update").after["allowed_priority_classes"] == [
        "batch",
        "scavenger",
    ]
    return {
        "group": group,
        "qa": qa,
        "qb": qb,
        "root": root,
        "alice": alice,
        "bob": make_user("bob", a, "member"),
    }


def test_queue_allows_only_its_priority_classes_and_members_set_no_raw_priority(api, classes):
    qa = classes["qa"]
    api.force_authenticate(classes["alice"])
    assert (
        api.patch(
            f"/api/queues/{qa.pk}/", {"allowed_priority_classes": []}, format="json"
        ).status_code
        == 403
    )
    response = api.post("/api/jobs/", _body(qa, priority=1000), format="json")
    assert response.status_code == 400
    assert "priority" in response.json()["error"]["fields"]
    response = api.post("/api/jobs/", _body(qa, priority_class="critical"), format="json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"]["priority_class"] == [
        f"critical is not allowed in queue {qa.name} (allowed: batch, scavenger)."
    ]
    response = api.post("/api/jobs/", _body(qa, priority_class="nope"), format="json")
    assert response.status_code == 400
    assert Job.objects.count() == 0
    # no class: the queue's default; the job's priority is the class's value
    response = api.post("/api/jobs/", _body(qa), format="json")
    assert response.status_code == 201, response.content
    assert (response.json()["priority_class"], response.json()["priority"]) == ("batch", 10)
    response = api.post("/api/jobs/", _body(qa, priority_class="scavenger"), format="json")
    assert (response.json()["priority_class"], response.json()["priority"]) == ("scavenger", -10)
    # a class still used cannot be deleted
    api.force_authenticate(classes["root"])
    batch = PriorityClass.objects.get(name="batch")
    assert api.delete(f"/api/priority-classes/{batch.pk}/").status_code == 409


def test_a_member_cannot_preempt_teammates_at_the_same_class(api, classes):
    group, qa = classes["group"], classes["qa"]
    Quota.objects.filter(tenant__name="team-a").update(borrowing_limit=0)
    api.force_authenticate(classes["bob"])
    bob_jobs = [
        api.post("/api/jobs/", _body(qa, name=f"bob{i}"), format="json").json()["id"]
        for i in range(2)
    ]
    assert run_admission_cycle(group.pk).admitted == bob_jobs
    Job.objects.filter(pk__in=bob_jobs).update(admitted_at=timezone.now() - timedelta(hours=1))
    api.force_authenticate(classes["alice"])
    mine = api.post("/api/jobs/", _body(qa, name="mine"), format="json").json()["id"]
    report = run_admission_cycle(group.pk)
    assert (report.admitted, report.preempted) == ([], [])
    reason = api.get(f"/api/jobs/{mine}/").json()["pending_reason"].splitlines()
    assert reason[0].startswith(f"tenant team-a, group g1, flavor {A100}, devices: needs 1000")
    for job_id in bob_jobs:
        assert (
            f"preemption: {job_id} rejected: withinClusterQueue LowerPriority: "
            "priority 10 >= 10" in reason
        )
    # a platform admin may still submit at a raw priority; the member's job does not move
    api.force_authenticate(classes["root"])
    response = api.post("/api/jobs/", _body(qa, name="ops", priority=500), format="json")
    assert response.status_code == 201, response.content
    assert response.json()["priority_class"] is None


# -- child-tenant quotas ------------------------------------------------------------------------


def test_a_tenant_admin_splits_only_what_the_parent_has(api):
    make_cluster("c1", nodes=2, gpus=2)
    group = make_group("g1")
    dept, _ = make_tenant("dept", group, devices_milli=2000, flavor=A100)
    other, q_other = make_tenant("other", group, devices_milli=2000, flavor=A100)
    team, q_team = make_tenant("team-x", group)
    team_y, _ = make_tenant("team-y", group)
    Tenant.objects.filter(pk__in=[team.pk, team_y.pk]).update(parent=dept)
    boss = make_user("boss", dept, "tenant_admin")
    api.force_authenticate(boss)
    body = {
        "tenant": "team-x",
        "resource_group": "g1",
        "flavor": A100,
        "dimension": "devices",
        "nominal": 10**15,
    }
    response = api.post("/api/quotas/", body, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"]["nominal"] == [
        f"nominal {10**15} exceeds what tenant dept has left to split: its devices quota for "
        f"{A100} in g1 is 2000, its other children hold 0, so at most 2000"
    ]
    response = api.post("/api/quotas/", {**body, "nominal": 1500}, format="json")
    assert response.status_code == 201, response.content
    response = api.post(
        "/api/quotas/", {**body, "tenant": "team-y", "nominal": 1000}, format="json"
    )
    assert response.status_code == 400
    assert "so at most 500" in response.json()["error"]["fields"]["nominal"][0]
    quota_id = Quota.objects.get(tenant=team).pk
    assert (
        api.patch(f"/api/quotas/{quota_id}/", {"nominal": 2001}, format="json").status_code == 400
    )
    assert (
        api.patch(f"/api/quotas/{quota_id}/", {"nominal": 2000}, format="json").status_code == 200
    )
    response = api.post(
        "/api/quotas/", {**body, "dimension": "memory_mib", "nominal": 1}, format="json"
    )
    assert response.status_code == 400  # dept has no memory row to split
    # through the cycle: team-x fills the cluster, "other" still gets its guaranteed 2000
    x_jobs = [gpu_job(q_team, f"x{i}", **WHOLE) for i in range(4)]
    assert len(run_admission_cycle(group.pk).admitted) == 4
    _stagger(x_jobs)
    mine = [gpu_job(q_other, f"o{i}", **WHOLE) for i in range(2)]
    report = run_admission_cycle(group.pk)
    assert report.admitted == [] and sorted(report.preempted) == sorted(j.pk for j in x_jobs[2:])
    _grace_over()
    assert run_admission_cycle(group.pk).admitted == [j.pk for j in mine]
    assert (_devices_used(other, group), _devices_used(team, group)) == (2000, 2000)
    _assert_no_device_overbooked()


def test_a_mig_victim_frees_its_instance_in_the_preemption_search():
    from scheduling.services.jobs import ContainerSpec, JobSpec, enqueue_job

    make_cluster("c1", nodes=1, gpus=1)
    Device.objects.update(mode="mig", split_count=7)
    group = make_group("g1")
    _, queue = make_tenant("team-a", group, devices_milli=100_000)

    def mig_job(name, memory_mib, priority):
        return enqueue_job(
            queue,
            JobSpec(
                name=name,
                priority=priority,
                cpu_milli=1000,
                host_memory_mib=1024,
                containers=[ContainerSpec(device_count=1, device_memory_mib=memory_mib)],
            ),
            enqueue=False,
        )

    low = mig_job("low", 70000, 1)  # 7g.79gb: the whole GPU
    assert run_admission_cycle(group.pk).admitted == [low.pk]
    Job.objects.filter(pk=low.pk).update(admitted_at=timezone.now() - timedelta(hours=1))
    high = mig_job("high", 30000, 10)  # 3g.40gb: only once low's instance is gone
    report = run_admission_cycle(group.pk)
    assert (report.admitted, report.preempted) == ([], [low.pk])
    _grace_over()
    assert run_admission_cycle(group.pk).admitted == [high.pk]
    assert list(
        Placement.objects.get(job=high).mig_instances.values_list("profile", flat=True)
    ) == ["3g.40gb"]
