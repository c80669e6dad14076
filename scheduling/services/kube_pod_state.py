"""What one Pod says about one placement: the pod's state applied to the placement and its
job (the reconcile passes of :mod:`scheduling.services.kube_reconcile` call :func:`apply_pod`
per pod), a pod gone (:func:`pod_gone`) and a node gone (:func:`handle_lost_node`).

Pod -> placement (:func:`scheduling.kube.inventory.pod_state`):

=============================  ===============================================================
pod state                      placement / job
=============================  ===============================================================
PENDING / STARTING             reserved -> submitted (message = reason, e.g. Unschedulable)
RUNNING                        reserved/submitted -> running (``ready`` = the Ready
                               condition); job admitted -> running once every live
                               placement of the job runs
SUCCEEDED                      -> succeeded; job -> succeeded when nothing is left booked and
                               no placement failed
FAILED (container/admission)   -> failed; the job fails (requeued instead while
                               ``failed_attempts`` < ``backoff_limit``), its other pods are
                               deleted, every reservation is released
FAILED (evicted), or the Pod   "lost outside the console": devices released; the job is
deleted outside the console    requeued when its ``restart_policy`` is OnFailure or Always,
                               else failed
TERMINATING / UNKNOWN          message only (the pod still holds its devices)
any, placement terminating     (preempted or past its maximum runtime) released once the pod
                               is gone or finished; a pod still running without a deletion
                               under way is deleted again
=============================  ===============================================================

Every move is a conditional UPDATE, so applying the same pod twice changes nothing.
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from scheduling.admission import CauseKind, reason_fields
from scheduling.backends import delete_pods_on_commit
from scheduling.choices import BOOKED_PLACEMENT_STATES, Backend, JobState, PlacementState
from scheduling.kube import inventory as kinv
from scheduling.kube.hami.pods import mig_gpu_instances
from scheduling.kube.job_kind_pods import pod_ready
from scheduling.models import Job, JobEvent, Placement, PlacementMigInstance
from scheduling.services import job_life
from scheduling.services.cordons import note_pod_failure
from scheduling.services.events import announce_job_failed
from scheduling.services.eviction import release_terminated
from scheduling.services.locking import lock_jobs

__all__ = [
    "LOST_REASONS",
    "apply_pod",
    "handle_lost_node",
    "pod_gone",
    "pod_key",
    "record_gpu_instances",
    "record_job_event",
    "resource_group_of",
]

LOST_REASONS = frozenset(
    {
        "Evicted",
        "Preempting",
        "NodeLost",
        "NodeShutdown",
        "Shutdown",
        "Terminated",
        "DeletedOutside",
        "NodeGone",
    }
)
"""Pod failure reasons that mean the pod was taken away, not that the workload failed."""


_UNSTARTED = (PlacementState.RESERVED, PlacementState.SUBMITTED)


def pod_key(pod: dict) -> str:
    """``namespace/name`` of a Pod dict."""
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _is_lost(state: kinv.PodState, pod: dict) -> bool:
    if state.reason in LOST_REASONS:
        return True
    conds = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "DisruptionTarget" and c.get("status") == "True" for c in conds)


def record_job_event(job_id: int, kind: str, message: str) -> None:
    """Add a JobEvent (``message`` cut to 2,000 characters)."""
    JobEvent.objects.create(job_id=job_id, kind=kind, message=message[:2000])


def resource_group_of(job_id: int) -> int:
    """The id of the resource group of ``job_id``'s queue."""
    return Job.objects.values_list("queue__resource_group_id", flat=True).get(pk=job_id)


def _end_job(
    job_id: int, message: str, *, lost: bool, now: datetime, except_placement: int | None = None
) -> set[int]:
    """Fail or requeue a live job whose pod failed / was lost; release its other placements
    and delete their pods. Returns the job's group id when capacity was freed."""
    job = Job.objects.select_related("queue").get(pk=job_id)
    # lost: back to the queue unless restartPolicy Never; failed: retried while the job's
    # backoff_limit allows (Kubernetes Job semantics), counted in failed_attempts
    retry = not lost and job.failed_attempts < job.backoff_limit
    requeue = (lost and job.restart_policy != "Never") or retry
    if retry:
        Job.objects.filter(pk=job_id).update(failed_attempts=F("failed_attempts") + 1)
    with transaction.atomic():
        lock_jobs([job_id])  # the job before its placements (services.locking)
        others = list(
            Placement.objects.select_related("node__cluster")
            .filter(job_id=job_id, state__in=BOOKED_PLACEMENT_STATES)
            .exclude(pk=except_placement or 0)
        )
        ids = [p.pk for p in others]
        job_life.release_placements(ids, now=now, only_from=_UNSTARTED, message=message)
        job_life.fail_placements(ids, now=now, only_from=[PlacementState.RUNNING], message=message)
        live = [JobState.ADMITTED, JobState.RUNNING]
        if requeue:
            job_life.requeue_jobs(
                job_id,
                event=message[:2000],
                **reason_fields(CauseKind.CAPACITY, f"requeued: {message}"[:2000]),
                requeue_count=F("requeue_count") + 1,
                updated=now,
            )
        elif job_life.fail_jobs(
            job_id,
            now=now,
            only_from=live,
            event=message[:2000],
            updated=now,
            **reason_fields(CauseKind.POLICY, message[:2000]),
        ):
            announce_job_failed(job_id, message)
    kube = [p for p in others if p.node.cluster.backend == Backend.KUBERNETES]
    if kube:
        delete_pods_on_commit(kube)
    return {job.queue.resource_group_id}


def _finish_if_done(job_id: int, now: datetime) -> set[int]:
    live = Placement.objects.filter(job_id=job_id, state__in=BOOKED_PLACEMENT_STATES)
    if (
        live.exists()
        or Placement.objects.filter(job_id=job_id, state=PlacementState.FAILED).exists()
    ):
        return set()
    job_life.succeed_jobs(
        job_id,
        now=now,
        only_from=[JobState.ADMITTED, JobState.RUNNING],
        event="all pods succeeded",
        updated=now,
    )
    return {resource_group_of(job_id)}


def _mark_job_running(job_id: int, now: datetime) -> None:
    live = Placement.objects.filter(job_id=job_id, state__in=BOOKED_PLACEMENT_STATES)
    if live.exists() and not live.exclude(state=PlacementState.RUNNING).exists():
        job_life.start_jobs(job_id, now=now, event="all pods running", updated=now)


def apply_pod(placement: Placement, pod: dict, *, now: datetime | None = None) -> set[int]:
    """Move ``placement`` (and its job) to what ``pod`` says (see the module table).

    Args:
        placement: the Placement the pod's ``console.llmops.io/placement`` label names.
        pod: the Pod dict from a list or watch event.

    Returns:
        Resource group ids where capacity was freed.
    """
    now = now or timezone.now()
    state = kinv.pod_state(pod)
    note = ": ".join(x for x in (state.reason, state.message) if x)
    ref = pod_key(pod)
    qs = Placement.objects.filter(pk=placement.pk)
    if placement.state == PlacementState.TERMINATING:
        return _apply_terminating(placement, state, ref, note, now)
    if state.state in (kinv.PENDING, kinv.STARTING):
        _apply_pending(qs, ref, note, now)
        return set()
    if state.state == kinv.RUNNING:
        _apply_running(placement, pod, ref, note, now)
        return set()
    if state.state == kinv.SUCCEEDED:
        moved = job_life.succeed_placements(qs, now=now, message=note, updated=now)
        return _finish_if_done(placement.job_id, now) if moved else set()
    if state.state == kinv.FAILED:
        return _apply_failed(placement, state, pod, note, now)
    # TERMINATING / UNKNOWN: the pod still holds its devices
    qs.filter(state__in=BOOKED_PLACEMENT_STATES).exclude(message=note).update(
        message=note, updated=now
    )
    return set()


def _apply_pending(qs: QuerySet[Placement], ref: str, note: str, now: datetime) -> None:
    """The pod exists but does not run yet: a reserved placement becomes submitted; the
    pending reason (e.g. Unschedulable) is the message."""
    job_life.submit_placements(qs, now=now, backend_ref=ref, message=note, updated=now)
    qs.filter(state=PlacementState.SUBMITTED).exclude(message=note).update(
        message=note, updated=now
    )


def _apply_running(placement: Placement, pod: dict, ref: str, note: str, now: datetime) -> None:
    """The pod runs: the placement runs (``ready`` = the pod's Ready condition), its MIG
    instances get their GPU instance ids, and the job runs once all its placements do."""
    record_gpu_instances(placement, pod)
    ready = pod_ready(pod)
    qs = Placement.objects.filter(pk=placement.pk)
    job_life.run_placements(
        qs,
        now=now,
        backend_ref=ref,
        message=note,
        submitted_at=placement.submitted_at or now,
        ready=ready,
        updated=now,
    )
    qs.filter(state=PlacementState.RUNNING).exclude(message=note, ready=ready).update(
        message=note, ready=ready
    )
    _mark_job_running(placement.job_id, now)


def _apply_failed(
    placement: Placement, state: kinv.PodState, pod: dict, note: str, now: datetime
) -> set[int]:
    """The pod failed: the placement fails and the job ends (:func:`_end_job`); a failure of
    the workload (not a lost pod) counts towards marking its devices unhealthy
    (:func:`scheduling.services.cordons.note_pod_failure`). Returns the resource group ids
    where capacity was freed."""
    lost = _is_lost(state, pod)
    note = note or "pod failed"
    moved = job_life.fail_placements(placement, now=now, message=note, updated=now)
    if not moved:
        return set()
    if not lost:
        note_pod_failure(placement.pk, now=now)
    return _end_job(
        placement.job_id,
        f"pod {pod_key(pod)} {'lost' if lost else 'failed'}: {note}",
        lost=lost,
        now=now,
        except_placement=placement.pk,
    )


def _apply_terminating(
    placement: Placement, state: kinv.PodState, ref: str, note: str, now: datetime
) -> set[int]:
    """A preempted placement's pod: once it has finished, its devices are free (release);
    while it still runs without a deletion under way (the delete failed or raced its
    creation), delete it again."""
    if state.terminal:
        return release_terminated(
            [placement.pk],
            now=now,
            reason=f"pod {ref} ended after preemption: {note or state.state}",
        )
    if state.state != kinv.TERMINATING:
        delete_pods_on_commit([placement])
    return set()


def record_gpu_instances(placement: Placement, pod: dict) -> int:
    """Store the MIG GPU instance ids the device plugin wrote on the pod
    (:func:`scheduling.kube.hami.pods.mig_gpu_instances`) on the placement's MIG instances
    (matched by GPU uuid and placement start), so DCGM series with ``GPU_I_ID`` attribute to
    the right booking. Returns the number of instances updated."""
    ids = mig_gpu_instances((pod.get("metadata") or {}).get("annotations") or {})
    updated = 0
    if not ids:
        return 0
    for inst in PlacementMigInstance.objects.filter(placement=placement).select_related("device"):
        gi = ids.get((inst.device.hami_id or inst.device.uuid, inst.start))
        if gi is not None and gi != inst.gpu_instance_id:
            inst.gpu_instance_id = gi
            inst.save(update_fields=["gpu_instance_id"])
            updated += 1
    return updated


def pod_gone(placement: Placement, reason: str, *, now: datetime | None = None) -> set[int]:
    """The placement's Pod no longer exists (deleted outside the console, or its node went
    away): release its devices and fail or requeue its job (restart policy).

    Returns:
        Resource group ids where capacity was freed.
    """
    now = now or timezone.now()
    if placement.state == PlacementState.TERMINATING:
        return release_terminated([placement.pk], now=now, reason=f"pods gone: {reason}")
    moved = job_life.fail_placements(
        placement,
        now=now,
        only_from=[PlacementState.SUBMITTED, PlacementState.RUNNING],
        message=reason,
        updated=now,
    )
    if not moved:
        return set()
    return _end_job(placement.job_id, reason, lost=True, now=now, except_placement=placement.pk)


def handle_lost_node(node_id: int, reason: str, *, now: datetime | None = None) -> set[int]:
    """A node vanished: every booked placement on it is lost (its job failed or requeued
    according to its restart policy) and its Pod deleted (the pod GC would delete a pod bound
    to a missing node anyway; deleting it now means a requeued job never runs twice).

    Returns:
        Resource group ids where capacity was freed.
    """
    now = now or timezone.now()
    groups: set[int] = set()
    placements = list(
        Placement.objects.select_related("node__cluster").filter(
            node_id=node_id, state__in=BOOKED_PLACEMENT_STATES
        )
    )
    for p in placements:
        end = (
            job_life.fail_placements
            if p.state == PlacementState.RUNNING
            else job_life.release_placements
        )
        end(p, now=now, message=reason, updated=now)
        groups |= _end_job(p.job_id, reason, lost=True, now=now, except_placement=p.pk)
    kube = [p for p in placements if p.node.cluster.backend == Backend.KUBERNETES]
    if kube:
        delete_pods_on_commit(kube)
    return groups
