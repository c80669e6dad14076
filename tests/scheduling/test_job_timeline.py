"""The job page's state timeline (issue 30) read from the history the services write: each
transition with its time, cause, the state it led to and how long the job stayed there."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from scheduling.choices import VictimPolicy
from scheduling.models import Job
from scheduling.selectors.job_timeline import job_timeline, polls_live
from scheduling.services.cluster_submission import submit_to_cluster
from scheduling.services.cordons import cordon_device
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.jobs import cancel_job
from tests.builders import gpu_job

pytestmark = pytest.mark.django_db

WHOLE = {"count": 1, "memory_percent": 100, "cores": 100}


def _reclaim(cohort, policy: str) -> Job:
    """team-b borrows all 4 devices (running); team-a reclaims one: the newest of team-b,
    which goes back to its queue or fails per ``policy``. Returns that victim."""
    group, (_a, qa), (_b, qb) = cohort
    b_jobs = [gpu_job(qb, f"b-{i}", **WHOLE) for i in range(4)]
    Job.objects.filter(pk=b_jobs[3].pk).update(on_preemption=policy)
    run_admission_cycle(group.pk)
    for job in b_jobs:
        submit_to_cluster(job.pk)
    base = timezone.now() - timedelta(minutes=10)
    for i, job in enumerate(b_jobs):
        Job.objects.filter(pk=job.pk).update(admitted_at=base + timedelta(seconds=i))
    gpu_job(qa, "a-reclaims", **WHOLE)
    assert run_admission_cycle(group.pk).preempted == [b_jobs[3].pk]
    return Job.objects.get(pk=b_jobs[3].pk)


def test_a_requeued_victims_timeline_runs_queued_admitted_running_preempted(cohort):
    victim = _reclaim(cohort, VictimPolicy.REQUEUE)
    now = timezone.now()
    timeline = job_timeline(victim, now=now)
    assert [(e.kind, e.state) for e in timeline] == [
        ("queued", "queued"),
        ("admitted", "admitted"),
        ("running", "running"),
        ("preempted", "queued"),
    ]
    events = list(victim.events.all())
    assert [e.lasted_s for e in timeline[:3]] == [
        (events[i + 1].time - events[i].time).total_seconds() for i in range(3)
    ]
    assert timeline[-1].current and not any(e.current for e in timeline[:-1])
    assert timeline[-1].lasted_s == (now - events[-1].time).total_seconds()
    assert timeline[-1].cause.startswith("InCohortReclamation: ")
    assert timeline[-1].cause.endswith(events[-1].message[-20:])
    assert timeline[0].cause == f"queued in {victim.queue}"
    assert polls_live(victim)


def test_a_victim_that_fails_on_preemption_ends_the_timeline(cohort):
    victim = _reclaim(cohort, VictimPolicy.FAIL)
    timeline = job_timeline(victim)
    assert [(e.kind, e.state) for e in timeline][-1] == ("preempted", "failed")
    assert timeline[-1].current and timeline[-1].lasted_s is None  # a final state
    assert victim.state == "failed" and not polls_live(victim)


def test_notes_change_no_state_and_do_not_cut_a_state_short(cohort):
    group, (_a, qa), _b = cohort
    job = gpu_job(qa, "noted", **WHOLE)
    run_admission_cycle(group.pk)
    submit_to_cluster(job.pk)
    device = job.placements.get().devices.get().device
    cordon_device(device, reason="fan noise", policy="wait")
    cancel_job(job)
    job = Job.objects.get(pk=job.pk)
    timeline = job_timeline(job)
    assert [(e.kind, e.state) for e in timeline] == [
        ("queued", "queued"),
        ("admitted", "admitted"),
        ("running", "running"),
        ("device-cordoned", None),
        ("cancelled", "cancelled"),
    ]
    note, cancelled = timeline[3], timeline[4]
    assert note.lasted_s is None and not note.current
    assert "fan noise" in note.cause
    assert timeline[2].lasted_s == (cancelled.time - timeline[2].time).total_seconds()
    assert cancelled.current and cancelled.lasted_s is None and not polls_live(job)


def test_the_timeline_costs_no_query_when_prefetched(cohort, django_assert_num_queries):
    victim = _reclaim(cohort, VictimPolicy.REQUEUE)
    job = Job.objects.prefetch_related("events", "preemptions").get(pk=victim.pk)
    with django_assert_num_queries(0):
        assert len(job_timeline(job)) == 4
