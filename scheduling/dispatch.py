"""Names of the scheduling app's Celery tasks, and the enqueue calls services make.

Services enqueue through here (after commit, :func:`core.dispatch.enqueue_on_commit`) rather
than importing :mod:`scheduling.tasks`, which imports the services. ``tasks.py`` registers
each task under the constant below; a test checks that every name is registered.
"""

from __future__ import annotations

from core.dispatch import enqueue_on_commit

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
    "SUBMIT_JOBS_TASK",
    "TASK_NAMES",
    "USAGE_RECONCILE_TASK",
    "enqueue_admission_cycle",
    "enqueue_cordon_sync",
    "enqueue_submit_jobs",
]

ADMISSION_CYCLE_TASK = "scheduling.tasks.admission_cycle_task"
ADMISSION_TICK_TASK = "scheduling.tasks.admission_tick_task"
SUBMIT_JOBS_TASK = "scheduling.tasks.submit_jobs_task"
RECONCILE_TASK = "scheduling.tasks.reconcile_task"
DEMO_STREAM_TASK = "scheduling.tasks.demo_stream_task"
KUBE_INVENTORY_SYNC_TASK = "scheduling.tasks.kube_inventory_sync_task"
KUBE_RECONCILE_TASK = "scheduling.tasks.kube_reconcile_task"
KUBE_TICK_TASK = "scheduling.tasks.kube_tick_task"
KUBE_INTAKE_TASK = "scheduling.tasks.kube_intake_task"
KUBE_CORDONS_TASK = "scheduling.tasks.kube_cordons_task"
USAGE_RECONCILE_TASK = "scheduling.tasks.usage_reconcile_task"

#: Every task name of the app.
TASK_NAMES = (
    ADMISSION_CYCLE_TASK, ADMISSION_TICK_TASK, SUBMIT_JOBS_TASK, RECONCILE_TASK,
    DEMO_STREAM_TASK, KUBE_INVENTORY_SYNC_TASK, KUBE_RECONCILE_TASK, KUBE_TICK_TASK,
    USAGE_RECONCILE_TASK, KUBE_INTAKE_TASK, KUBE_CORDONS_TASK,
)


def enqueue_admission_cycle(group_id: int) -> None:
    """Run an admission cycle of resource group ``group_id`` after commit."""
    enqueue_on_commit(ADMISSION_CYCLE_TASK, group_id)


def enqueue_submit_jobs(job_ids: list[int], *, countdown: float | None = None) -> None:
    """Submit the admitted jobs ``job_ids`` to their clusters after commit (``countdown``
    seconds later when given: preempted pods get their termination grace first)."""
    enqueue_on_commit(SUBMIT_JOBS_TASK, job_ids, countdown=countdown)


def enqueue_cordon_sync(cluster_id: int) -> None:
    """Write the console's device cordons of cluster ``cluster_id`` to it after commit."""
    enqueue_on_commit(KUBE_CORDONS_TASK, cluster_id)
