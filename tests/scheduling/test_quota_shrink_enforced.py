"""Issue 29 item 1: a quota deleted or shrunk below the running usage is enforced against new
admissions. The cohort's capacity is recomputed against the existing usage every cycle, so a
job needing that resource waits until the usage is back within the capacity (evicting the
borrower stays up to the queues' reclaim policy, as before); the quota dry run reports it."""

from datetime import timedelta

import pytest
from django.utils import timezone

from scheduling.choices import JobState
from scheduling.models import Queue
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.eviction import release_due_terminations
from scheduling.services.jobs import cancel_job
from tenants.models import Quota, QuotaUsage
from tenants.services.quotas import delete_quota, update_quota
from tests.builders import A100, gpu_job, make_cluster, make_group, make_tenant, make_user

pytestmark = pytest.mark.django_db

MEM = 81920  # one A100-80GB, MiB


@pytest.fixture
def lent(db):
    """team-a (memory nominal 81920) borrows 81920 MiB of team-b's 163840: two whole-memory
    jobs of team-a run on a 4-GPU cluster."""
    make_cluster("c1", nodes=2, gpus=2)
    group = make_group("g1")
    a, qa = make_tenant("team-a", group, devices_milli=2000, memory_mib=MEM, flavor=A100)
    b, qb = make_tenant("team-b", group, devices_milli=2000, memory_mib=2 * MEM, flavor=A100)
    borrowers = [gpu_job(qa, f"a{i}", memory_mib=MEM, cores=100) for i in range(2)]
    assert run_admission_cycle(group.pk).admitted == [j.pk for j in borrowers]
    assert _memory_booked(group) == 2 * MEM
    return group, (a, qa, borrowers), (b, qb)


def _memory_booked(group):
    """MiB of device memory the group's stored usage books, every tenant together."""
    return sum(
        QuotaUsage.objects.filter(resource_group=group, dimension="memory_mib").values_list(
            "amount", flat=True
        )
    )


def _no_reclaim(queue):
    Queue.objects.filter(pk=queue.pk).update(
        reclaim_within_cohort="Never", borrow_within_cohort="Never"
    )


def test_deleted_lender_row_holds_new_memory_jobs_until_usage_fits(lent):
    group, (a, qa, borrowers), (b, qb) = lent
    _no_reclaim(qb)
    delete_quota(Quota.objects.get(tenant=b, dimension="memory_mib"))
    newcomer = gpu_job(qb, "b0", memory_mib=MEM, cores=100)
    report = run_admission_cycle(group.pk)
    assert (report.admitted, report.preempted) == ([], [])
    newcomer.refresh_from_db()
    assert newcomer.state == JobState.QUEUED
    assert newcomer.pending_reason.splitlines()[0] == (
        f"tenant team-b, group g1, flavor {A100}, memory_mib: needs 81920, cohort g1 usage "
        "163840 exceeds its quota 81920 (a quota row was shrunk or deleted); waits until the "
        "usage is back within the quota"
    )
    assert _memory_booked(group) == 2 * MEM  # not 245760 against a cohort quota of 81920
    # one borrower finishes: the cohort's usage (81920) is within its quota again
    cancel_job(borrowers[1])
    assert run_admission_cycle(group.pk).admitted == [newcomer.pk]
    assert _memory_booked(group) == 2 * MEM


def test_shrunk_lender_row_holds_new_memory_jobs(lent):
    group, _, (b, qb) = lent
    _no_reclaim(qb)
    row = Quota.objects.get(tenant=b, dimension="memory_mib")
    update_quota(row, nominal=0, borrowing_limit=None, lending_limit=None)
    newcomer = gpu_job(qb, "b0", memory_mib=MEM, cores=100)
    assert run_admission_cycle(group.pk).admitted == []
    newcomer.refresh_from_db()
    assert newcomer.pending_reason.splitlines()[0] == (
        f"tenant team-b, group g1, flavor {A100}, memory_mib: needs 81920, free 0, "
        "borrowable 0 (bounded by cohort g1)"
    )
    assert _memory_booked(group) == 2 * MEM


def test_default_policy_reclaims_the_borrower_before_admitting(lent):
    group, (a, qa, borrowers), (b, qb) = lent
    delete_quota(Quota.objects.get(tenant=b, dimension="memory_mib"))
    newcomer = gpu_job(qb, "b0", memory_mib=MEM, cores=100)
    report = run_admission_cycle(group.pk)
    # the newest borrowing job of team-a is reclaimed; nothing is admitted on top of it
    assert (report.admitted, len(report.preempted)) == ([], 1)
    assert report.preempted[0] in {j.pk for j in borrowers}
    assert _memory_booked(group) == 2 * MEM
    release_due_terminations(timezone.now() + timedelta(seconds=31))
    assert run_admission_cycle(group.pk).admitted == [newcomer.pk]
    assert _memory_booked(group) == 2 * MEM


def test_quota_dry_run_reports_the_cohort_excess_of_a_deleted_row(api, lent):
    group, (a, qa, borrowers), (b, qb) = lent
    api.force_authenticate(make_user("root", is_superuser=True))
    change = {
        "tenant": "team-b",
        "resource_group": "g1",
        "flavor": A100,
        "dimension": "memory_mib",
        "remove": True,
    }
    response = api.post("/api/quotas/dry-run/", {"changes": [change]}, format="json")
    assert response.status_code == 200, response.content
    [impact] = response.json()["groups"]
    assert impact["violations"] == [
        f"cohort g1, flavor {A100}, memory_mib: usage 163840 exceeds cohort quota 81920"
    ]
    assert len(impact["preempts"]) == 1
    assert impact["preempts"][0]["job"] in {j.pk for j in borrowers}
    assert impact["unresolved"] == []
