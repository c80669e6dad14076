"""A user's own suspend of a workload taken in from a cluster, and its resume.

The console suspends an object while its job waits and unsuspends it on admission
(:mod:`scheduling.services.intake`). Someone else suspending it *after* the console released
it (``kubectl patch job x -p '{"spec":{"suspend":true}}'``) is the user holding the workload
back, and the user's suspend wins until the user takes it off:

* :func:`is_users_suspend` tells it apart: the object is suspended yet still carries the
  console's admitted annotation for this job. The console writes that annotation and
  ``suspend: false`` in one patch and clears it in the patch that suspends, so no object the
  console suspended (nor a read from before the release) looks like this;
* :func:`hold_for_user` stops the job (state ``stopped``: not queued, nothing charged once its
  pods are gone). Its placements stay ``terminating`` for ``ADMISSION_TERMINATION_GRACE_S``
  while the Job controller deletes the pods (released then by
  :func:`scheduling.services.eviction.release_due_terminations`), and the object gets the
  user's templates back (pins removed) with the reason as its pending annotation;
* :func:`follow_stopped`: the user unsuspended a stopped job's object; the job is queued
  again and the object is held back until admission, like a new object created unsuspended.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction

from scheduling.admission import CauseKind, reason_fields
from scheduling.choices import JobState
from scheduling.dispatch import enqueue_admission_cycle
from scheduling.kube import workloads as wl
from scheduling.kube.workload_api import WorkloadApi
from scheduling.models import Job, KubeWorkload, Placement
from scheduling.services import job_life
from scheduling.services.intake_record import suspend_object
from scheduling.services.locking import lock_jobs

__all__ = ["is_users_suspend", "hold_for_user", "follow_stopped", "WAITING_FOR_ADMISSION"]

WAITING_FOR_ADMISSION = "waiting for admission by the console"
"""Pending reason written on an object the console holds back until its job is admitted."""


def is_users_suspend(job: Job, workload: wl.Workload) -> bool:
    """Whether ``workload`` (the object of admitted or running ``job``) was suspended by
    someone other than the console after the console released it (module docstring). A gated
    Pod cannot be suspended again (a scheduling gate cannot be added back)."""
    return (
        workload.kind != "Pod"
        and workload.suspended
        and workload.annotations.get(wl.ANNOTATION_ADMITTED) == str(job.pk)
    )


def _hold_reason(row: KubeWorkload) -> str:
    path = ".".join(wl.KINDS[row.kind].suspend_path)
    return (
        f"suspended by its user in the cluster ({row.kind} {row.namespace}/{row.name}); "
        f"set {path} to false to queue it again"
    )


def hold_for_user(api: WorkloadApi, row: KubeWorkload, obj: dict, job: Job, now: datetime) -> bool:
    """The user suspended ``job``'s released object: stop the job and restore the object's
    templates (module docstring).

    Returns:
        True when this call stopped the job (False: it had left ``admitted`` / ``running``
        meanwhile). A failed write-back to the object is retried by the next intake pass
        (:func:`follow_stopped`).
    """
    reason = _hold_reason(row)
    evict_by = now + timedelta(seconds=float(settings.ADMISSION_TERMINATION_GRACE_S))
    with transaction.atomic():
        lock_jobs([job.pk])  # the job before its placements (services.locking)
        moved = job_life.stop_jobs(
            job,
            now=now,
            only_from=[JobState.ADMITTED, JobState.RUNNING],
            event=reason,
            updated=now,
            **reason_fields(CauseKind.POLICY, reason),
        )
        if not moved:
            return False
        job_life.terminate_placements(
            Placement.objects.filter(job=job), evict_by=evict_by, message=reason, updated=now
        )
    suspend_object(api, row, obj, reason)
    return True


def follow_stopped(
    api: WorkloadApi, row: KubeWorkload, obj: dict, workload: wl.Workload, job: Job
) -> bool:
    """The object of a job stopped by :func:`hold_for_user`. Still suspended: it stays so
    (its templates are restored now when that write-back had failed). Unsuspended by the
    user: the job is queued again and the object held back until the job is admitted.

    Returns:
        True when this call queued the job.
    """
    if workload.suspended:
        if workload.annotations.get(wl.ANNOTATION_ADMITTED) == str(job.pk):
            suspend_object(api, row, obj, _hold_reason(row))
        return False
    with transaction.atomic():
        moved = job_life.resume_jobs(
            job,
            event=f"{row.kind} {row.namespace}/{row.name} resumed",
            **reason_fields(CauseKind.POLICY, ""),
        )
        if not moved:
            return False
        enqueue_admission_cycle(job.queue.resource_group_id)
    suspend_object(api, row, obj, WAITING_FOR_ADMISSION)
    return True
