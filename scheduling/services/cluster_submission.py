"""Cluster submission (console → cluster) of one admitted job: its reserved placements go to
their cluster backend; and the simulated backend's reconcile of what runs. (A user's *job
submission*, user → console, is :mod:`scheduling.services.jobs`.)"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db import transaction
from django.db.models import DateTimeField, DurationField, ExpressionWrapper, F, Value
from django.utils import timezone

from scheduling.admission import CauseKind, reason_fields
from scheduling.backends import SubmissionError, get_backend
from scheduling.choices import (
    ACTIVE_PLACEMENT_STATES,
    BOOKED_PLACEMENT_STATES,
    LONG_RUNNING_KINDS,
    Backend,
    JobState,
    PlacementState,
)
from scheduling.models import Job, Placement
from scheduling.services import job_life
from scheduling.services.events import announce_job_failed
from scheduling.services.locking import lock_jobs

logger = logging.getLogger(__name__)


def submit_to_cluster(job_id: int) -> str:
    """Hand the reserved placements of an admitted job to its cluster backend.

    Idempotent: only placements still ``reserved`` are submitted, each move is a conditional
    UPDATE; a placement released while its pod was being created (job cancelled meanwhile)
    has that pod deleted again. A permanent backend error fails the job and releases its
    reservation (the kube-scheduler Unreserve analogue); a retryable one re-raises for the
    task to retry.

    Returns:
        The job's state afterwards.

    Raises:
        SubmissionError: retryable backend error.
    """
    placements = list(
        Placement.objects.filter(job_id=job_id, state=PlacementState.RESERVED).select_related(
            "node__cluster"
        )
    )
    now = timezone.now()
    for placement in placements:
        backend = get_backend(placement.node.cluster.backend)
        try:
            new_state = backend.submit(placement)
        except SubmissionError as exc:
            if exc.retryable:
                raise
            fail_job(job_id, f"submission refused: {exc}")
            return JobState.FAILED
        moved = _record_submission(placement, new_state, now)
        if (
            not moved
            and not Placement.objects.filter(
                pk=placement.pk, state__in=ACTIVE_PLACEMENT_STATES
            ).exists()
        ):
            # Released or terminating (job cancelled, preempted or failed) while the backend
            # was creating the pod: the release found nothing to delete, so delete it now or
            # it runs on devices the console counts as free (or never lets a terminating
            # placement go). (Still active = a concurrent submission of the same placement
            # won; its pod is this pod, keep it.)
            _undo_submission(backend, placement)
    _mark_running_if_started(job_id, now)
    return Job.objects.values_list("state", flat=True).get(pk=job_id)


def _record_submission(placement: Placement, new_state: str, now) -> int:
    """The reserved ``placement`` became ``new_state`` (what the backend's ``submit``
    answered: submitted, or running at once); returns 1 when it moved, 0 when it had left
    ``reserved`` meanwhile."""
    fields = {"backend_ref": placement.backend_ref, "ready": placement.ready}
    reserved = [PlacementState.RESERVED]
    if new_state == PlacementState.RUNNING:
        return job_life.run_placements(
            placement, now=now, only_from=reserved, submitted_at=now, **fields
        )
    return job_life.submit_placements(placement, now=now, **fields)


def _undo_submission(backend, placement) -> None:
    try:
        backend.delete(placement)
    except Exception:  # noqa: BLE001 - the Kubernetes reconcile deletes orphans later
        logger.exception(
            "placement %s released during submission; deleting its pod failed", placement.pk
        )


def _mark_running_if_started(job_id: int, now) -> None:
    live = Placement.objects.filter(
        job_id=job_id,
        state__in=[PlacementState.RESERVED, PlacementState.SUBMITTED, PlacementState.RUNNING],
    )
    if live.exists() and not live.exclude(state=PlacementState.RUNNING).exists():
        job_life.start_jobs(job_id, now=now, event="all pods running")


def fail_job(job_id: int, message: str) -> None:
    """Fail a live job and release every booked placement (idempotent)."""
    now = timezone.now()
    with transaction.atomic():
        lock_jobs([job_id])  # the job before its placements (services.locking)
        placements = Placement.objects.filter(job_id=job_id)
        job_life.release_placements(
            placements,
            now=now,
            only_from=[PlacementState.RESERVED, PlacementState.SUBMITTED],
            message=message,
        )
        job_life.fail_placements(
            placements, now=now, only_from=[PlacementState.RUNNING], message=message
        )
        if job_life.fail_jobs(
            job_id,
            now=now,
            only_from=[JobState.ADMITTED, JobState.RUNNING],
            event=message,
            **reason_fields(CauseKind.POLICY, message),
        ):
            announce_job_failed(job_id, message)


def reconcile_simulated(now=None) -> set[int]:
    """Finish simulated pods whose job ran for ``duration_s``; finish their jobs. Inference
    replicas and notebooks run until stopped (``LONG_RUNNING_KINDS``).

    Returns:
        Ids of the resource groups where capacity was freed (their cycles should run).
    """
    now = now or timezone.now()
    ends = ExpressionWrapper(
        F("started_at")
        + ExpressionWrapper(
            F("job__duration_s") * Value(timedelta(seconds=1)), output_field=DurationField()
        ),
        output_field=DateTimeField(),
    )
    done = (
        Placement.objects.filter(
            state=PlacementState.RUNNING, node__cluster__backend=Backend.SIMULATED
        )
        .exclude(job__kind__in=LONG_RUNNING_KINDS)
        .annotate(ends_at=ends)
        .filter(ends_at__lte=now)
    )
    rows = list(done.values_list("pk", "job_id", "job__queue__resource_group_id"))
    if not rows:
        return set()
    job_ids = {job_id for _, job_id, _ in rows}
    with transaction.atomic():
        lock_jobs(job_ids)  # jobs before placements (scheduling.services.locking)
        job_life.succeed_placements(
            [pk for pk, _, _ in rows], now=now, only_from=[PlacementState.RUNNING]
        )
        still_live = set(
            Placement.objects.filter(
                job_id__in=job_ids, state__in=BOOKED_PLACEMENT_STATES
            ).values_list("job_id", flat=True)
        )
        finished = sorted(job_ids - still_live)
        moved = list(
            Job.objects.filter(pk__in=finished, state=JobState.RUNNING).values_list("pk", flat=True)
        )
        job_life.succeed_jobs(
            moved,
            now=now,
            only_from=[JobState.RUNNING],
            events=dict.fromkeys(moved, "all pods succeeded"),
        )
    return {group_id for _, _, group_id in rows}
