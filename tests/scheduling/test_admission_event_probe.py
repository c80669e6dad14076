"""Probe: the admitted event of a job that reclaimed capacity from another tenant must not
name that tenant's job (the victim's side is anonymous already, see the preemptions API)."""

import re

import pytest

from scheduling.services.cycle import run_admission_cycle
from tests.builders import gpu_job

pytestmark = pytest.mark.django_db

WHOLE = {"count": 1, "memory_percent": 100, "cores": 100}


def _preempted_part(job) -> str:
    message = job.events.get(kind="admitted").message
    match = re.search(r"; preempted (.*)$", message)
    assert match, message
    return match.group(1)


def test_the_preemptors_event_names_own_victims_and_counts_other_tenants(cohort):
    group, (_a, qa), (_b, qb) = cohort
    b_jobs = [gpu_job(qb, f"b{i}", **WHOLE) for i in range(4)]
    run_admission_cycle(group.pk)
    mine = gpu_job(qa, "a0", **WHOLE)
    report = run_admission_cycle(group.pk)
    assert report.admitted == [mine.pk] and len(report.preempted) == 1
    victim = report.preempted[0]
    assert victim in [j.pk for j in b_jobs]
    assert _preempted_part(mine) == "1 job of another tenant"


def test_a_victim_of_the_same_tenant_is_still_named(cohort):
    group, (_a, qa), _b = cohort
    low = [gpu_job(qa, f"low{i}", priority=0, **WHOLE) for i in range(4)]
    run_admission_cycle(group.pk)
    high = gpu_job(qa, "high", priority=100, **WHOLE)
    report = run_admission_cycle(group.pk)
    assert high.pk in report.admitted
    (victim,) = report.preempted
    assert victim in [j.pk for j in low]
    assert _preempted_part(high) == str(victim)
