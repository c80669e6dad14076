"""Cluster submission (console → cluster) of the jobs an admission cycle admitted: the task
after each cycle hands them to their cluster here. Not the API's batch *job* submission
(user → console, ``POST /api/jobs/batch/``: :func:`scheduling.services.jobs.enqueue_jobs`).

Jobs whose reserved placements are all on simulated clusters are started in one transaction
(jobs locked in pk order, then one UPDATE of their placements, one of the jobs, one insert of
their events: :mod:`scheduling.services.locking` order) instead of seven autocommitted queries
per job; a trace cycle admits 500 jobs at a time. Every other job goes through
:func:`submit_admitted_job`: a job taken in from a cluster is released there
(:func:`scheduling.services.intake_record.release_kube_job`), any other gets its Pods created
(:func:`scheduling.services.cluster_submission.submit_to_cluster`; Kubernetes: one API call per
pod, retried per job).
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from scheduling.backends.simulated import SimulatedBackend
from scheduling.choices import (
    BOOKED_PLACEMENT_STATES,
    JOB_SOURCE_KUBE,
    Backend,
    JobState,
    PlacementState,
)
from scheduling.models import Job, Placement
from scheduling.services import job_life
from scheduling.services.cluster_submission import submit_to_cluster
from scheduling.services.intake_record import release_kube_job
from scheduling.services.locking import lock_jobs


def submit_admitted_jobs(job_ids: list[int]) -> dict[str, int]:
    """Submit the admitted jobs ``job_ids`` (module docstring); idempotent like
    :func:`submit_admitted_job`.

    Returns:
        ``{"bulk": jobs started in bulk, "single": jobs submitted one by one}``.

    Raises:
        SubmissionError: a retryable backend error of a job submitted one by one (the jobs
            before it are submitted; the task retries the list, which is idempotent).
    """
    reserved = Placement.objects.filter(job_id__in=job_ids, state=PlacementState.RESERVED)
    simulated_only = set(
        reserved.values("job_id")
        .annotate(other=Count("pk", filter=~Q(node__cluster__backend=Backend.SIMULATED)))
        .filter(other=0)
        .values_list("job_id", flat=True)
    )
    bulk = sorted(simulated_only)
    if bulk:
        _start_simulated(bulk)
    single = [pk for pk in job_ids if pk not in simulated_only]
    for job_id in single:
        submit_admitted_job(job_id)
    return {"bulk": len(bulk), "single": len(single)}


def submit_admitted_job(job_id: int) -> str:
    """Submit one admitted job: :func:`~scheduling.services.intake_record.release_kube_job` for
    a job taken in from a cluster (its object is released there), else
    :func:`~scheduling.services.cluster_submission.submit_to_cluster` (the console creates its
    Pods).

    Returns:
        The job's state afterwards.

    Raises:
        SubmissionError: retryable backend error.
    """
    source = Job.objects.filter(pk=job_id).values_list("source", flat=True).first()
    if source == JOB_SOURCE_KUBE:
        return release_kube_job(job_id)
    return submit_to_cluster(job_id)


def _start_simulated(job_ids: list[int]) -> None:
    now = timezone.now()
    with transaction.atomic():
        lock_jobs(job_ids)
        job_life.run_placements(  # SimulatedBackend.submit of each, in one UPDATE
            Placement.objects.filter(job_id__in=job_ids),
            now=now,
            only_from=[PlacementState.RESERVED],
            submitted_at=now,
            backend_ref=SimulatedBackend().backend_ref_expression(),
            updated=now,
        )
        not_running = (
            Placement.objects.filter(job_id__in=job_ids, state__in=BOOKED_PLACEMENT_STATES)
            .exclude(state=PlacementState.RUNNING)
            .values("job_id")
        )
        started = list(
            Job.objects.filter(pk__in=job_ids, state=JobState.ADMITTED)
            .filter(placements__state=PlacementState.RUNNING)
            .exclude(pk__in=not_running)
            .distinct()
            .values_list("pk", flat=True)
        )
        job_life.start_jobs(
            started, now=now, updated=now, events=dict.fromkeys(started, "all pods running")
        )
