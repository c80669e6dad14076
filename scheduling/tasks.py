"""Celery tasks of the scheduling app: thin wrappers that take ids and call one service."""

from __future__ import annotations

import random

from celery import shared_task
from django.conf import settings

from scheduling.backends import SubmissionError
from scheduling.choices import Backend
from scheduling.dispatch import (
    ADMISSION_CYCLE_TASK,
    ADMISSION_TICK_TASK,
    DEMO_STREAM_TASK,
    KUBE_CORDONS_TASK,
    KUBE_INTAKE_TASK,
    KUBE_INVENTORY_SYNC_TASK,
    KUBE_RECONCILE_TASK,
    KUBE_TICK_TASK,
    RECONCILE_TASK,
    SIMULATION_TASK,
    SUBMIT_JOBS_TASK,
    SWEEP_TASK,
    USAGE_RECONCILE_TASK,
    WORKLOADS_TICK_TASK,
    admission_cycle_started,
    enqueue_admission_cycle,
)
from scheduling.models import Cluster
from scheduling.selectors.cycle_gate import needs_cycle
from scheduling.selectors.snapshot import groups_with_queued_jobs
from scheduling.services.cluster_submission import reconcile_simulated
from scheduling.services.cluster_submission_batch import submit_admitted_jobs
from scheduling.services.cordons import sync_device_cordons
from scheduling.services.cycle import run_admission_cycle
from scheduling.services.demo import submit_demo_job
from scheduling.services.eviction import enforce_max_runtime, release_due_terminations
from scheduling.services.intake import intake_cluster
from scheduling.services.inventory import sync_cluster_inventory
from scheduling.services.job_kinds import enforce_time_limits, reconcile_services
from scheduling.services.kube_reconcile import reconcile_cluster
from scheduling.services.sweeper import overdue_reservations
from scheduling.services.usage import check_usage, sync_ledger
from scheduling.services.whatif import run_whatif
from tenants.models import ResourceGroup


@shared_task(name=ADMISSION_CYCLE_TASK)
def admission_cycle_task(group_id: int) -> dict:
    """Run one admission cycle for a resource group; chain another when the batch was full
    (through the coalescing dispatch, so a chained cycle and a submission's request are one)."""
    admission_cycle_started(group_id)
    report = run_admission_cycle(group_id)
    if report.more:
        enqueue_admission_cycle(group_id)
    return {"group": group_id, "admitted": len(report.admitted), "locked": report.locked_out}


@shared_task(name=ADMISSION_TICK_TASK)
def admission_tick_task() -> int:
    """Beat tick: enqueue a cycle for every resource group with queued jobs, except groups
    whose last cycle was blocked and where nothing changed since (``cycle_gate``)."""
    groups = [g for g in groups_with_queued_jobs() if needs_cycle(g)]
    for group_id in groups:
        enqueue_admission_cycle(group_id)  # coalesced with requests already waiting
    return len(groups)


@shared_task(
    name=SUBMIT_JOBS_TASK,
    autoretry_for=(SubmissionError,),
    retry_backoff=True,
    retry_backoff_max=settings.SUBMIT_RETRY_BACKOFF_MAX_S,
    max_retries=10,
)
def submit_jobs_task(job_ids: list[int]) -> int:
    """Submit admitted jobs to their cluster backends (simulated ones in bulk; retryable
    errors retry with backoff)."""
    submit_admitted_jobs(job_ids)
    return len(job_ids)


@shared_task(name=SWEEP_TASK)
def sweep_task() -> dict:
    """Beat tick (``SWEEP_TICK_S``): submit again the admitted jobs whose placements stayed
    reserved (their submission task was lost, e.g. while the broker was down)."""
    job_ids = overdue_reservations()
    if job_ids:
        submit_jobs_task.delay(job_ids)
    return {"resubmitted": len(job_ids)}


@shared_task(name=RECONCILE_TASK)
def reconcile_task() -> int:
    """Beat tick: finish simulated pods that ran their duration, release simulated pods whose
    termination grace ended, stop jobs past their maximum runtime (every backend), then re-run
    the cycles of the groups that got capacity back."""
    groups = reconcile_simulated() | release_due_terminations() | enforce_max_runtime()
    for group_id in sorted(groups):
        admission_cycle_task.delay(group_id)
    return len(groups)


@shared_task(name=DEMO_STREAM_TASK)
def demo_stream_task() -> int | None:
    """Beat tick (``DEMO_STREAM_S``): submit one random sample job to the demo cluster."""
    job = submit_demo_job(random.Random())  # noqa: S311 - sample jobs, not security
    return job.pk if job else None


# -- kubernetes clusters ---------------------------------------------------------------------


@shared_task(name=KUBE_INVENTORY_SYNC_TASK)
def kube_inventory_sync_task(cluster_id: int) -> dict:
    """Sync one kubernetes cluster's Nodes / ResourceSlices into the inventory; re-run the
    cycles of groups where a vanished node freed capacity."""
    report = sync_cluster_inventory(cluster_id)
    for group_id in sorted(report.lost_groups):
        admission_cycle_task.delay(group_id)
    return {
        "cluster": report.cluster,
        "nodes": len(report.nodes),
        "added": len(report.devices_added),
        "removed": len(report.devices_removed),
        "errors": len(report.errors),
        "locked": report.locked_out,
    }


@shared_task(name=KUBE_RECONCILE_TASK)
def kube_reconcile_task(cluster_id: int) -> dict:
    """One reconcile turn (periodic resync when due, then a pod watch) of a kubernetes
    cluster; re-run the cycles of groups where capacity was freed."""
    report = reconcile_cluster(cluster_id)
    for group_id in sorted(report.groups):
        admission_cycle_task.delay(group_id)
    return {
        "cluster": report.cluster,
        "changed": len(report.changed),
        "events": report.events,
        "unknown": len(report.unknown),
        "locked": report.locked_out,
    }


@shared_task(name=KUBE_TICK_TASK)
def kube_tick_task() -> int:
    """Beat tick (``KUBE_TICK_S``): enqueue an inventory sync, a reconcile turn, a workload
    intake pass and a device-cordon write-back for every kubernetes cluster (each is
    single-flight per cluster)."""
    ids = list(Cluster.objects.filter(backend=Backend.KUBERNETES).values_list("pk", flat=True))
    for cluster_id in ids:
        kube_inventory_sync_task.delay(cluster_id)
        kube_reconcile_task.delay(cluster_id)
        kube_intake_task.delay(cluster_id)
        kube_cordons_task.delay(cluster_id)
    return len(ids)


@shared_task(name=KUBE_INTAKE_TASK)
def kube_intake_task(cluster_id: int) -> dict:
    """One intake turn of a kubernetes cluster (list of every labelled workload when the
    periodic resync is due, then a watch); the service enqueues the cycles of groups that got
    capacity back."""
    report = intake_cluster(cluster_id)
    return {
        "cluster": report.cluster,
        "queued": len(report.queued),
        "released": len(report.released),
        "suspended": len(report.suspended),
        "stopped": len(report.stopped),
        "resumed": len(report.resumed),
        "refused": len(report.refused),
        "locked": report.locked_out,
    }


@shared_task(name=KUBE_CORDONS_TASK)
def kube_cordons_task(cluster_id: int) -> dict:
    """Write the console's device cordons to a kubernetes cluster (HAMi's device-cordon node
    annotation, DeviceTaintRules where served)."""
    report = sync_device_cordons(cluster_id)
    return {
        "cluster": report.cluster,
        "nodes": len(report.nodes_patched),
        "rules": len(report.rules_created) + len(report.rules_deleted),
        "locked": report.locked_out,
    }


@shared_task(name=USAGE_RECONCILE_TASK)
def usage_reconcile_task() -> dict:
    """Beat tick: settle released usage, recompute every group's usage from live placements
    and report drift and broken invariants (logged as warnings), then sync the usage ledger."""
    drift = violations = 0
    for group_id in ResourceGroup.objects.order_by("pk").values_list("pk", flat=True):
        check = check_usage(group_id)
        drift += len(check.drift)
        violations += len(check.violations)
    opened, closed = sync_ledger()
    return {"drift": drift, "violations": violations, "opened": opened, "closed": closed}


@shared_task(name=WORKLOADS_TICK_TASK)
def workloads_tick_task() -> dict:
    """Beat tick: end runs past their time limit (notebook lifetime, ``max_runtime_s``) and
    replace the replicas of inference services that ended."""
    ended = enforce_time_limits()
    return {"ended": len(ended), "replicas_created": reconcile_services()}


@shared_task(name=SIMULATION_TASK)
def simulation_task(run_id: int) -> str:
    """Replay a what-if simulation run (progress and result are stored on the run)."""
    return run_whatif(run_id)
