"""Names of the scheduling app's Celery tasks, and the enqueue calls services make.

Services enqueue through here (after commit, :func:`core.dispatch.enqueue_on_commit`) rather
than importing :mod:`scheduling.tasks`, which imports the services. ``tasks.py`` registers
each task under the constant below; a test checks that every name is registered.
"""

from __future__ import annotations

import contextlib

from django.core.cache import cache
from django.db import transaction

from core.dispatch import CACHE_ERRORS, enqueue_on_commit, send_task

__all__ = [
    "ADMISSION_CYCLE_TASK",
    "ADMISSION_TICK_TASK",
    "DEMO_STREAM_TASK",
    "KUBE_CORDONS_TASK",
    "KUBE_INTAKE_TASK",
    "KUBE_INVENTORY_SYNC_TASK",
    "KUBE_RECONCILE_TASK",
    "KUBE_TICK_TASK",
    "RECONCILE_TASK",
    "SIMULATION_TASK",
    "SUBMIT_JOBS_TASK",
    "SWEEP_TASK",
    "TASK_NAMES",
    "USAGE_RECONCILE_TASK",
    "WORKLOADS_TICK_TASK",
    "admission_cycle_started",
    "enqueue_admission_cycle",
    "enqueue_whatif",
    "enqueue_cordon_sync",
    "enqueue_submit_jobs",
]

ADMISSION_CYCLE_TASK = "scheduling.tasks.admission_cycle_task"
ADMISSION_TICK_TASK = "scheduling.tasks.admission_tick_task"
SUBMIT_JOBS_TASK = "scheduling.tasks.submit_jobs_task"
SWEEP_TASK = "scheduling.tasks.sweep_task"
RECONCILE_TASK = "scheduling.tasks.reconcile_task"
DEMO_STREAM_TASK = "scheduling.tasks.demo_stream_task"
KUBE_INVENTORY_SYNC_TASK = "scheduling.tasks.kube_inventory_sync_task"
KUBE_RECONCILE_TASK = "scheduling.tasks.kube_reconcile_task"
KUBE_TICK_TASK = "scheduling.tasks.kube_tick_task"
KUBE_INTAKE_TASK = "scheduling.tasks.kube_intake_task"
KUBE_CORDONS_TASK = "scheduling.tasks.kube_cordons_task"
USAGE_RECONCILE_TASK = "scheduling.tasks.usage_reconcile_task"
WORKLOADS_TICK_TASK = "scheduling.tasks.workloads_tick_task"
SIMULATION_TASK = "scheduling.tasks.simulation_task"

#: Every task name of the app.
TASK_NAMES = (
    ADMISSION_CYCLE_TASK,
    ADMISSION_TICK_TASK,
    SUBMIT_JOBS_TASK,
    SWEEP_TASK,
    RECONCILE_TASK,
    DEMO_STREAM_TASK,
    KUBE_INVENTORY_SYNC_TASK,
    KUBE_RECONCILE_TASK,
    KUBE_TICK_TASK,
    USAGE_RECONCILE_TASK,
    WORKLOADS_TICK_TASK,
    KUBE_INTAKE_TASK,
    KUBE_CORDONS_TASK,
    SIMULATION_TASK,
)


#: Seconds a "cycle requested" mark lives (a lost task is covered by the beat tick anyway).
CYCLE_REQUEST_TTL_S = 30


def _request_key(group_id: int) -> str:
    return f"admission:requested:{group_id}"


def enqueue_admission_cycle(group_id: int) -> None:
    """Run an admission cycle of resource group ``group_id`` after commit.

    Coalesced: while a cycle of the group is requested and has not started, further requests
    send nothing (a burst of 1,000 submissions asks for a handful of cycles, each taking every
    new head, instead of 1,000 cycle tasks). The cycle task calls
    :func:`admission_cycle_started` first, so a request arriving during a cycle sends exactly
    one follow-up.
    """

    def send() -> None:
        try:
            first = cache.add(_request_key(group_id), 1, timeout=CYCLE_REQUEST_TTL_S)
        except CACHE_ERRORS:  # coalescing is an optimisation: without the cache, always send
            first = True
        if first and not send_task(ADMISSION_CYCLE_TASK, group_id):
            admission_cycle_started(group_id)  # not sent: let the next request try again

    transaction.on_commit(send)


def admission_cycle_started(group_id: int) -> None:
    """Forget the group's pending request (the cycle task is about to read the queue)."""
    with contextlib.suppress(*CACHE_ERRORS):  # an unreadable mark expires by itself
        cache.delete(_request_key(group_id))


def enqueue_submit_jobs(job_ids: list[int], *, countdown: float | None = None) -> None:
    """Submit the admitted jobs ``job_ids`` to their clusters after commit (``countdown``
    seconds later when given: preempted pods get their termination grace first)."""
    enqueue_on_commit(SUBMIT_JOBS_TASK, job_ids, countdown=countdown)


def enqueue_cordon_sync(cluster_id: int) -> None:
    """Write the console's device cordons of cluster ``cluster_id`` to it after commit."""
    enqueue_on_commit(KUBE_CORDONS_TASK, cluster_id)


def enqueue_whatif(run_id: int) -> None:
    """Replay what-if simulation run ``run_id`` in a worker after commit."""
    enqueue_on_commit(SIMULATION_TASK, run_id)
