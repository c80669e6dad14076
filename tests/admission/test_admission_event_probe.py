"""Probe: the events of a job that reclaimed capacity from another tenant must not name that
tenant, its job id or its job name (the victim's side is anonymous already, see the
preemptions API)."""

import pytest

from scheduling.services.cycle import run_admission_cycle
from tests.builders import gpu_job

pytestmark = pytest.mark.django_db

WHOLE = {"count": 1, "memory_percent": 100, "cores": 100}


def test_the_preemptors_events_do_not_name_another_tenants_victim(cohort):
    group, (_a, qa), (_b, qb) = cohort
    b_jobs = [gpu_job(qb, f"secret-b{i}", **WHOLE) for i in range(4)]
    run_admission_cycle(group.pk)
    mine = gpu_job(qa, "a0", **WHOLE)
    report = run_admission_cycle(group.pk)
    (victim,) = report.preempted
    run_admission_cycle(group.pk)  # the preemptor waits for the victim's pods to be gone
    mine.refresh_from_db()
    assert victim in [j.pk for j in b_jobs]
    for message in [mine.pending_reason, *mine.events.values_list("message", flat=True)]:
        assert "team-b" not in message and "secret" not in message, message
        assert f"preempted {victim}" not in message and f"job {victim}" not in message
