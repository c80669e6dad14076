"""A restart of the console (``make run``: web, workers and beat stopped with SIGTERM, started
again) touches no running work (issue 29): the simulated cluster's pods outlive the console's
processes as a real cluster's do.

What the processes do across a restart, in order (:func:`_restart`): nothing at the stop (a
worker finishes its task, no shutdown hook writes); at the start ``console.run`` migrates and
runs ``seed_demo`` again, then beat fires every entry that fell due while it was down, once:
the admission tick, the simulated reconcile, the sweep, the usage reconcile, the workloads
tick and the telemetry ticks, ``GAP`` after the last tick before the stop (the synthetic
telemetry stops with the console). The demo stream's tick is left out: a sample job it adds
may preempt a lower-priority one, which is scheduling, not the restart.
"""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.utils import timezone

from scheduling.choices import JobState, PlacementState
from scheduling.models import DeviceModel, Job, JobEvent, Placement, Preemption, Queue
from scheduling.selectors.cycle_gate import needs_cycle
from scheduling.selectors.snapshot import groups_with_queued_jobs
from scheduling.services.cluster_submission import reconcile_simulated
from scheduling.services.cluster_submission_batch import submit_admitted_jobs
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.demo import seed_demo
from scheduling.services.eviction import enforce_max_runtime, release_due_terminations
from scheduling.services.job_kinds import enforce_time_limits, reconcile_services
from scheduling.services.jobs import ContainerSpec, JobSpec, enqueue_job
from scheduling.services.sweeper import overdue_reservations
from scheduling.services.usage import check_usage, sync_ledger
from telemetry.services.culling import cull_idle_notebooks
from telemetry.services.gauges import compute_group_gauges
from telemetry.services.idle_jobs import flag_idle_jobs
from telemetry.services.rollups import rollup
from telemetry.services.synthetic import synthetic_tick
from tenants.models import Membership, Quota, ResourceGroup
from tenants.services.memberships import remove_member
from tenants.services.quotas import delete_quota

pytestmark = pytest.mark.django_db

GAP = timedelta(minutes=3)
"""How long the console is down (no beat tick, no synthetic telemetry)."""


def _cycles(groups=None) -> bool:
    """One admission cycle of ``groups`` (default every group), admitted jobs submitted to
    the simulated cluster (what the cycle's after-commit submission task does). Returns
    whether a cycle admitted or preempted a job."""
    if groups is None:
        groups = list(ResourceGroup.objects.values_list("pk", flat=True))
    changed = False
    for group_id in groups:
        report = run_admission_cycle(group_id)
        if report.admitted:
            submit_admitted_jobs(report.admitted)
        changed = changed or bool(report.admitted or report.preempted)
    return changed


def _whole_devices(name: str, count: int) -> JobSpec:
    """A job of ``count`` whole NVIDIA devices that runs an hour."""
    return JobSpec(
        name=name,
        containers=[
            ContainerSpec(
                vendor="NVIDIA", device_count=count, memory_percent=100, cores_percent=100
            )
        ],
        cpu_milli=4000,
        host_memory_mib=16384,
        duration_s=3600.0,
    )


def _settle() -> None:
    """Cycles until they admit and preempt nothing more (victims' pods end after their
    grace)."""
    for _ in range(8):
        release_due_terminations(timezone.now() + timedelta(seconds=31))
        if not _cycles():
            return
    pytest.fail("the cycles did not settle")


@pytest.fixture
def full_cohort():
    """The demo with its ``nvidia-shared`` devices filled by ``research``, which borrows the
    idle quota of ``platform`` (24 one-device jobs; the last ones wait), settled, and one
    telemetry tick."""
    seed_demo("demo-password-1")
    research = Queue.objects.get(tenant__name="research", resource_group__name="nvidia-shared")
    for index in range(24):
        enqueue_job(research, _whole_devices(f"fill-{index}", 1))
    _settle()
    synthetic_tick()
    fill = Job.objects.filter(name__startswith="fill-")
    assert fill.filter(state=JobState.RUNNING).count() > 12
    assert fill.filter(state=JobState.QUEUED).exists()  # the cohort is full


def _restart(gap: timedelta = GAP) -> None:
    """The console started again ``gap`` after it stopped (module docstring)."""
    later = timezone.now() + gap
    call_command("seed_demo", stdout=io.StringIO())
    # beat's first ticks: every entry fell due while the console was down
    _cycles([g for g in groups_with_queued_jobs() if needs_cycle(g)])  # admission-tick
    freed = reconcile_simulated(later) | release_due_terminations(later)  # reconcile-tick
    _cycles(sorted(freed | enforce_max_runtime(later)))
    if overdue := overdue_reservations(later):  # sweep-tick
        submit_admitted_jobs(overdue)
    for group_id in ResourceGroup.objects.values_list("pk", flat=True):  # usage-reconcile
        check_usage(group_id)
    sync_ledger(later)
    enforce_time_limits(later)  # workloads-tick
    reconcile_services()
    synthetic_tick(now=later)  # the telemetry ticks, after the gap in their samples
    rollup(now=later)
    compute_group_gauges(now=later)
    cull_idle_notebooks(now=later)
    flag_idle_jobs(now=later)
    _cycles()  # the cycles the ticks above asked for


def _live() -> dict[int, tuple[int, float]]:
    """Jobs holding placements now: ``{job id: (preemption count, seconds it runs)}``."""
    return {
        pk: (count, duration or 0.0)
        for pk, count, duration in Job.objects.filter(
            state__in=[JobState.ADMITTED, JobState.RUNNING]
        ).values_list("pk", "preemption_count", "duration_s")
    }


def _assert_untouched(before: dict[int, tuple[int, float]], since) -> None:
    """Every job live before the restart still runs with its preemption count, or succeeded
    (its duration ended during the gap); none was preempted, stopped or requeued."""
    assert not Preemption.objects.filter(victim_id__in=list(before)).exists(), list(
        Preemption.objects.filter(victim_id__in=list(before)).values_list("victim_id", "message")
    )
    after = dict(Job.objects.filter(pk__in=list(before)).values_list("pk", "preemption_count"))
    assert after == {pk: count for pk, (count, _) in before.items()}
    states = dict(Job.objects.filter(pk__in=list(before)).values_list("pk", "state"))
    assert set(states.values()) <= {JobState.RUNNING, JobState.SUCCEEDED}, states
    assert not Placement.objects.filter(
        job_id__in=list(before), state__in=[PlacementState.TERMINATING, PlacementState.RELEASED]
    ).exists()
    assert not JobEvent.objects.filter(
        job_id__in=list(before), kind__in=["preempted", "failed", "stopped"], time__gte=since
    ).exists()


def test_a_restart_touches_no_running_job(full_cohort):
    before, since = _live(), timezone.now()
    assert len(before) > 20
    assert Job.objects.filter(pk__in=list(before), duration_s__lt=GAP.total_seconds()).exists()

    _restart()

    _assert_untouched(before, since)
    assert Job.objects.filter(pk__in=list(before), state=JobState.RUNNING).count() >= 20


def test_a_restart_does_not_bring_back_a_quota_row_the_operator_deleted(full_cohort):
    """The reported release: the admin deleted ``platform``'s quota in the shared group, whose
    idle nominal quota ``research`` borrows, and a job of ``platform`` waits (no quota of its
    own); the start's ``seed_demo`` created the rows again, so the next cycle reclaimed
    ``platform``'s nominal quota from ``research``, evicting a running job."""
    group = ResourceGroup.objects.get(name="nvidia-shared")
    rows = Quota.objects.filter(tenant__name="platform", resource_group=group)
    assert rows.count() == 3
    for row in rows:
        delete_quota(row)
    queue = Queue.objects.get(tenant__name="platform", resource_group=group)
    waiting = enqueue_job(queue, _whole_devices("platform-train", 1))
    _settle()
    waiting.refresh_from_db()
    assert waiting.state == JobState.QUEUED, waiting.pending_reason
    before, since = _live(), timezone.now()

    _restart()

    _assert_untouched(before, since)
    assert not Quota.objects.filter(tenant__name="platform", resource_group=group).exists()
    waiting.refresh_from_db()
    assert waiting.state == JobState.QUEUED


def test_a_restart_keeps_what_the_operator_changed_in_the_demo():
    """``seed_demo`` at every start creates the demo once: a device model's configuration and
    family set in the admin, a member removed and a user deleted stay so; a shipped device
    model the database lacks (a newer release's) is created."""
    seed_demo("demo-password-1")
    DeviceModel.objects.filter(name="NVIDIA-L40S").delete()
    model = DeviceModel.objects.get(name="MLU370-X8")
    model.family = "MLU370-lab"
    model.config = {"memory_factor": 0, "memory_mib": 24000}
    model.save()
    remove_member(Membership.objects.get(user__username="alice", tenant__name="team-nlp"))
    get_user_model().objects.filter(username="carol").delete()

    call_command("seed_demo", stdout=io.StringIO())

    model.refresh_from_db()
    assert (model.family, model.config) == ("MLU370-lab", {"memory_factor": 0, "memory_mib": 24000})
    assert not Membership.objects.filter(user__username="alice").exists()
    assert not get_user_model().objects.filter(username="carol").exists()
    assert DeviceModel.objects.get(name="NVIDIA-L40S").family == "L40S"
