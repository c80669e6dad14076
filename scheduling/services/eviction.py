"""Eviction of running jobs: their pods are deleted with a termination grace period, and their
placements stay ``terminating`` (devices booked, quota charged) until the pods are gone.

Kueue semantics (``pkg/controller/jobframework/reconciler.go``, "handle eviction"): an evicted
workload keeps ``QuotaReserved`` until its job is no longer active, so the capacity it frees
is never handed to another workload while its pods still run. Here:

* :func:`evict` carries out one preemption decided by the admission core;
* :func:`enforce_max_runtime` stops jobs that ran past ``Job.max_runtime_s`` (Kueue
  ``maximumExecutionTimeSeconds``; backfill around a starvation reservation relies on it);
* the reconcile releases a terminating placement once its pods are gone:
  :func:`release_terminated` (kubernetes: the pod is deleted or finished) and
  :func:`release_due_terminations` (simulated pods, and the pods of jobs taken in from a
  cluster, end at ``evict_by``). The charge is then settled by the next cycle, exactly once.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from core.locks import lock_rows
from scheduling.admission import CauseKind, PreemptionTarget, reason_fields
from scheduling.backends import delete_pods_on_commit
from scheduling.choices import (
    ACTIVE_PLACEMENT_STATES,
    JOB_SOURCE_KUBE,
    LONG_RUNNING_KINDS,
    Backend,
    JobState,
    PlacementState,
    VictimPolicy,
)
from scheduling.models import Job, Placement
from scheduling.models import Preemption as PreemptionRow
from scheduling.selectors.preemptions import CROSS_TENANT_PREEMPTION_MESSAGE
from scheduling.services import job_life
from scheduling.services.events import announce_preemption
from scheduling.services.intake_record import suspend_kube_job

_EVICTABLE = (JobState.ADMITTED, JobState.RUNNING)
"""States of a job that preemption, the maximum runtime or a drain can stop."""


def terminate_placements(
    job: Job, placements: list[Placement], *, now: datetime, evict_by: datetime, message: str
) -> int:
    """Stop the pods of ``placements`` (``node__cluster`` loaded) and move the still-active
    ones to ``terminating`` until ``evict_by``. The console's own pods are deleted through
    their backend after commit (:func:`scheduling.backends.delete_pods_on_commit`); a job
    taken in from a cluster (``source`` kube) has its object suspended after commit instead
    (its controller deletes the pods).

    Returns:
        Number of placements moved.
    """
    if job.source == JOB_SOURCE_KUBE:
        transaction.on_commit(lambda: suspend_kube_job(job.pk, message))
    else:
        delete_pods_on_commit(placements)
    return job_life.terminate_placements(
        [p.pk for p in placements], evict_by=evict_by, message=message[:2000], updated=now
    )


def evict(preemption: PreemptionTarget, preemptor: Job | None, now: datetime) -> bool:
    """Carry out one preemption; returns False when the victim already left (nothing to do).

    The victim's placements become ``terminating`` (pods deleted with the grace period
    ``evict_by - at``; devices and quota stay charged until the pods are gone); the job goes
    back to ``queued`` (keeping its age; it is not considered again before its old pods are
    gone) or to ``failed`` per ``Job.on_preemption``; a ``Preemption`` row and a ``JobEvent``
    record it. What the victim's tenant sees never names another tenant or its job.

    The caller holds the victim's job row and its booked placements (the cycle commit's job
    round, ``core.locks.LOCK_ORDER``): they are read here, not locked a second time after the
    commit's node and device locks.
    """
    victim = Job.objects.filter(pk=int(preemption.victim_id), state__in=_EVICTABLE).first()
    if victim is None:
        return False
    requeue = victim.on_preemption == VictimPolicy.REQUEUE
    cross_tenant = bool(preemption.preemptor_tenant) and (
        preemption.preemptor_tenant != preemption.victim_tenant
    )
    shown = CROSS_TENANT_PREEMPTION_MESSAGE if cross_tenant else preemption.message
    placements = list(
        Placement.objects.filter(job=victim, state__in=ACTIVE_PLACEMENT_STATES)
        .select_related("node__cluster")
        .order_by("pk")
    )
    terminate_placements(
        victim,
        placements,
        now=now,
        evict_by=preemption.evict_by,
        message=f"preempted: {shown}" if victim.source != JOB_SOURCE_KUBE else shown,
    )
    outcome = "requeued" if requeue else "failed"
    fields = {
        "preemption_count": F("preemption_count") + 1,
        **reason_fields(CauseKind.PREEMPTION, f"preempted: {shown}"),
        "preempting_since": None,
        "reserving_since": None,
    }
    event = {
        "event_kind": "preempted",
        "event": f"{preemption.reason.value}: {shown}; {outcome} (pods terminating until "
        f"{preemption.evict_by.isoformat()})",
    }
    if requeue:
        job_life.requeue_jobs(victim, **event, **fields)
    else:
        job_life.fail_jobs(victim, now=now, only_from=_EVICTABLE, **event, **fields)
    _record_preemption(preemption, victim, preemptor, now, outcome, shown, cross_tenant)
    return True


def _record_preemption(
    preemption: PreemptionTarget,
    victim: Job,
    preemptor: Job | None,
    now: datetime,
    outcome: str,
    shown: str,
    cross_tenant: bool,
) -> None:
    """The ``Preemption`` row and the notifications of one eviction (``shown``: the text the
    victim's tenant may see; its ``preempted`` event is written by the move itself)."""
    PreemptionRow.objects.create(
        victim=victim,
        preemptor=preemptor,
        victim_tenant=preemption.victim_tenant,
        preemptor_tenant=preemption.preemptor_tenant,
        reason=preemption.reason.value,
        message=preemption.message,
        time=now,
        evict_by=preemption.evict_by,
        outcome=outcome,
    )
    announce_preemption(
        victim,
        preemptor,
        reason=preemption.reason.value,
        outcome=outcome,
        victim_message=shown,
        cross_tenant=cross_tenant,
    )


def _past_max_runtime(job: Job, now: datetime) -> bool:
    """Whether ``job`` has run ``max_runtime_s`` seconds since admission (False if unset)."""
    if job.admitted_at is None or job.max_runtime_s is None:
        return False
    return job.admitted_at + timedelta(seconds=job.max_runtime_s) <= now


def enforce_max_runtime(now: datetime | None = None) -> set[int]:
    """Fail admitted or running jobs that ran past ``max_runtime_s`` since admission; their
    pods are deleted with the termination grace period (placements ``terminating``). Notebooks
    (stopped at the end of their lifetime) and inference services are
    :func:`scheduling.services.job_kinds.enforce_time_limits`' business.

    Returns:
        Ids of the resource groups of the jobs stopped.
    """
    now = now or timezone.now()
    grace = timedelta(seconds=float(settings.ADMISSION_TERMINATION_GRACE_S))
    due = [
        job
        for job in Job.objects.filter(
            state__in=[JobState.ADMITTED, JobState.RUNNING],
            max_runtime_s__isnull=False,
            admitted_at__isnull=False,
        )
        .exclude(kind__in=LONG_RUNNING_KINDS)
        .select_related("queue")
        .order_by("pk")
        if _past_max_runtime(job, now)
    ]
    groups: set[int] = set()
    for job in due:
        message = f"exceeded its maximum runtime of {job.max_runtime_s:g}s"
        with transaction.atomic():
            moved = job_life.fail_jobs(  # the UPDATE takes the job's row lock itself
                job,
                now=now,
                only_from=_EVICTABLE,
                updated=now,
                event=message,
                **reason_fields(CauseKind.POLICY, message),
            )
            if not moved:
                continue
            placements = list(
                lock_rows(Placement)
                .filter(job=job, state__in=ACTIVE_PLACEMENT_STATES)
                .select_related("node__cluster")
            )
            terminate_placements(job, placements, now=now, evict_by=now + grace, message=message)
        groups.add(job.queue.resource_group_id)
    return groups


def release_terminated(placement_ids: list[int], *, now: datetime, reason: str) -> set[int]:
    """The pods of these terminating placements are gone: release their devices (the next
    cycle settles their charges).

    Returns:
        Ids of the resource groups where capacity was freed.
    """
    with transaction.atomic():  # placements in pk order (scheduling.services.locking), not
        # in the arbitrary order a multi-row UPDATE meets them (a cycle locks them ascending)
        rows = list(
            lock_rows(Placement)
            .filter(pk__in=sorted(placement_ids), state=PlacementState.TERMINATING)
            .order_by("pk")
            .values_list("pk", "job__queue__resource_group_id")
        )
        if not rows:
            return set()
        job_life.release_placements(
            [pk for pk, _ in rows],
            now=now,
            only_from=[PlacementState.TERMINATING],
            message=reason[:2000],
            updated=now,
        )
    return {group for _, group in rows}


def release_due_terminations(now: datetime | None = None) -> set[int]:
    """Release the terminating placements whose pods nobody reports on and whose grace period
    (``evict_by``) passed: simulated pods honour their grace period and end at ``evict_by``;
    the pods of a job taken in from a cluster belong to the user's (now suspended) object,
    which the reconcile does not watch, and the kubelet kills them at the end of the grace
    period. The console's own kubernetes pods are released by the reconcile when they are
    gone (:func:`release_terminated`).

    Returns:
        Ids of the resource groups where capacity was freed.
    """
    now = now or timezone.now()
    ids = list(
        Placement.objects.filter(
            Q(node__cluster__backend=Backend.SIMULATED) | Q(job__source=JOB_SOURCE_KUBE),
            state=PlacementState.TERMINATING,
            evict_by__lte=now,
        ).values_list("pk", flat=True)
    )
    return release_terminated(ids, now=now, reason="pods terminated")
