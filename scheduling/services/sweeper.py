"""Sweeper of lost enqueues: work the database says is due but no task was queued for.

Every enqueue happens after commit (:func:`core.dispatch.enqueue_on_commit`) and is skipped with a
warning when the broker is down, so what a lost task should have done is found again here,
from the database alone:

* a job left ``queued`` without its admission cycle: ``admission_tick_task`` (every
  ``ADMISSION_TICK_S``) enqueues a cycle for every group with queued jobs, and the cycle gate
  counts a job queued after the group's last cycle as a change;
* placements left ``reserved`` without their submission task (the cycle's after-commit
  enqueue was lost, or the worker died before running it): :func:`overdue_reservations`
  finds their jobs for ``sweep_task`` to submit again. Kubernetes clusters are left to
  their reconcile, which adopts or re-creates pods after ``KUBE_SUBMIT_GRACE_S``.

Both are idempotent: a cycle is single-flight per group and admits only queued jobs; a
submission moves only ``reserved`` placements, each by a conditional UPDATE, so a task that
arrives late after all changes nothing twice.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from scheduling.choices import Backend, JobState, PlacementState
from scheduling.models import Placement


def submit_sweep_grace_s() -> float:
    """Seconds a placement may stay reserved before the sweeper submits it again: at least
    ``SUBMIT_SWEEP_GRACE_S``, and never less than the preemption termination grace (a
    preemptor's submission is deliberately delayed by that long)."""
    return max(settings.SUBMIT_SWEEP_GRACE_S, settings.ADMISSION_TERMINATION_GRACE_S)


def overdue_reservations(now=None) -> list[int]:
    """Ids (ascending) of admitted jobs with a placement still ``reserved`` longer than
    :func:`submit_sweep_grace_s` on a non-Kubernetes cluster."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=submit_sweep_grace_s())
    return sorted(
        set(
            Placement.objects.filter(
                state=PlacementState.RESERVED, created__lte=cutoff, job__state=JobState.ADMITTED
            )
            .exclude(node__cluster__backend=Backend.KUBERNETES)
            .values_list("job_id", flat=True)
        )
    )
