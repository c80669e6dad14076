"""Job kinds (``Job.kind``): inference services and their replicas, notebook stop/resume,
time limits. Views and tasks call these; the admission cycle knows nothing of kinds.

* **inference**: the service is a ``Job`` that is never queued (state ``running`` while it is
  up, no pods of its own); each replica is a single-pod child job (``parent`` = the service)
  that goes through the queue, quota, admission, preemption and accounting like any job -
  Kueue admits the pods of a Deployment one by one the same way. Scaling creates or cancels
  replicas; a replica that ended (failed, or lost with nothing to requeue it) is replaced by
  :func:`reconcile_services`; a preempted replica is requeued (``on_preemption`` requeue) and
  placed again when capacity returns.
* **notebook**: :func:`stop_notebook` frees the devices (state ``stopped``, no cost accrues),
  :func:`resume_notebook` queues it again. Idle culling lives in
  ``telemetry.services.culling`` (it reads device utilisation); the maximum lifetime
  (``max_runtime_s``) is enforced by :func:`enforce_time_limits`.
* **training** / **batch**: :func:`scheduling.services.eviction.enforce_max_runtime` fails a
  run longer than ``max_runtime_s`` after admission (on Kubernetes the pod's
  ``activeDeadlineSeconds`` does it too).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from core.audit import record as audit
from core.exceptions import Conflict, InvalidRequest
from core.locks import lock_rows
from scheduling.admission import CauseKind, reason_fields
from scheduling.backends import get_backend
from scheduling.choices import (
    BOOKED_PLACEMENT_STATES,
    LIVE_JOB_STATES,
    JobKind,
    JobState,
    PlacementState,
    VictimPolicy,
)
from scheduling.dispatch import enqueue_admission_cycle
from scheduling.models import Job, JobContainer, JobEvent, Placement, Queue
from scheduling.services import job_life
from scheduling.services.jobs import JobSpec, cancel_job, enqueue_jobs
from scheduling.services.locking import lock_jobs

__all__ = [
    "submit_job",
    "scale_service",
    "reconcile_services",
    "cancel_any_job",
    "stop_notebook",
    "resume_notebook",
    "enforce_time_limits",
    "ServiceStatus",
    "service_status",
    "service_statuses",
    "lifetime_left_s",
]

REPLICA_COPIED = (
    "tenant_id",
    "queue_id",
    "priority",
    "priority_class_id",
    "allow_consolidation",
    "annotations",
    "cpu_milli",
    "host_memory_mib",
    "duration_s",
    "preemptible",
    "min_runtime_s",
    "port",
    "volumes",
    "secrets",
    "tolerations",
    "node_selector",
    "source",
    "submitted_by_id",
)
"""Fields a replica takes from its service."""

CONTAINER_COPIED = tuple(
    f.attname for f in JobContainer._meta.concrete_fields if f.name not in ("id", "job", "pod_set")
)
"""Every stored field of a container (requests, device type filters, image, role, ...): a
replica's containers are its service's, field for field."""


def submit_job(queue: Queue, spec: JobSpec, *, user=None, enqueue: bool = True) -> Job:
    """Create a job of any kind: :func:`submit_jobs` of one (same errors).

    Returns:
        The new job (the service for inference).
    """
    return submit_jobs([(queue, spec)], user=user, enqueue=enqueue)[0]


def submit_jobs(
    entries: list[tuple[Queue, JobSpec]], *, user=None, enqueue: bool = True
) -> list[Job]:
    """Create jobs of any kind in one transaction, all or none:
    :func:`~scheduling.services.jobs.enqueue_jobs`, plus each inference service's
    ``replicas`` replica jobs. Notebooks get the configured idle-cull time and lifetime when
    the spec gives none (``NOTEBOOK_IDLE_CULL_S``, ``NOTEBOOK_MAX_LIFETIME_S``).

    Returns:
        The new jobs in the order of ``entries`` (the service for inference).

    Raises:
        InvalidRequest, NeverFits: as :func:`~scheduling.services.jobs.enqueue_jobs`;
            nothing is saved.
    """
    entries = [(queue, _with_notebook_defaults(spec)) for queue, spec in entries]
    with transaction.atomic():
        jobs = enqueue_jobs(entries, user=user, enqueue=enqueue)
        for job, (queue, spec) in zip(jobs, entries, strict=True):
            if spec.kind == JobKind.INFERENCE:
                _add_replicas(job, spec.replicas or 1)
                if enqueue:
                    enqueue_admission_cycle(queue.resource_group_id)
    return jobs


def _with_notebook_defaults(spec: JobSpec) -> JobSpec:
    if spec.kind != JobKind.NOTEBOOK:
        return spec
    return replace(
        spec,
        idle_cull_s=spec.idle_cull_s or settings.NOTEBOOK_IDLE_CULL_S,
        max_runtime_s=spec.max_runtime_s or settings.NOTEBOOK_MAX_LIFETIME_S,
    )


def _add_replicas(service: Job, count: int) -> list[Job]:
    """Create ``count`` queued replicas of ``service`` (containers copied)."""
    containers = list(service.containers.all())
    first = service.replica_jobs.count()
    made = []
    for i in range(first, first + count):
        replica = Job.objects.create(
            name=f"{service.name}-{i}",
            kind=JobKind.INFERENCE,
            parent=service,
            pod_count=1,
            restart_policy="Always",
            on_preemption=VictimPolicy.REQUEUE,
            **{f: getattr(service, f) for f in REPLICA_COPIED},
        )
        JobContainer.objects.bulk_create(
            JobContainer(job=replica, **{f: getattr(c, f) for f in CONTAINER_COPIED})
            for c in containers
        )
        JobEvent.objects.create(
            job=replica, kind="queued", message=f"replica {i} of service {service.pk}"
        )
        made.append(replica)
    return made


def _live_replicas(service: Job):
    return service.replica_jobs.filter(state__in=LIVE_JOB_STATES)


def _lock_live_replicas(service: Job) -> None:
    """Lock the live replicas of ``service`` (its row already locked) in one ascending round
    before any is cancelled: a replica is created after its service, so its pk is higher and
    service-then-replicas is pk order (:mod:`scheduling.services.locking`); cancelling them
    one by one in another order would be a lock round per replica."""
    lock_jobs(_live_replicas(service).values_list("pk", flat=True))


def scale_service(service: Job, replicas: int, *, user=None) -> Job:
    """Set an inference service's desired replicas: new replicas are queued (each admitted
    under the tenant's quota like any job); surplus ones are cancelled, queued ones first,
    then the newest.

    Raises:
        InvalidRequest: not a live inference service, or ``replicas`` outside
            ``[replicas_min, replicas_max]``.
    """
    if not service.is_service:
        raise InvalidRequest("only an inference service can be scaled", field="replicas")
    low, high = service.replicas_min or 1, service.replicas_max or max(replicas, 1)
    if not low <= replicas <= high:
        raise InvalidRequest(f"replicas must be between {low} and {high}", field="replicas")
    with transaction.atomic():
        locked = lock_rows(Job).get(pk=service.pk)
        if locked.state != JobState.RUNNING:
            raise Conflict(f"service {service.pk} is {locked.state}", field="state")
        live = list(_live_replicas(locked).order_by("pk"))
        before = locked.replicas
        if len(live) < replicas:
            _add_replicas(locked, replicas - len(live))
        else:
            _lock_live_replicas(locked)
            surplus = sorted(live, key=lambda j: (j.state != JobState.QUEUED, -j.pk))
            for replica in surplus[: len(live) - replicas]:
                cancel_job(replica, user=user)
        Job.objects.filter(pk=locked.pk).update(replicas=replicas, pod_count=replicas)
        JobEvent.objects.create(
            job=locked, kind="scaled", message=f"replicas {before} -> {replicas}"
        )
        audit(
            "job.scale",
            locked,
            actor=user,
            tenant_id=locked.tenant_id,
            before={"replicas": before},
            after={"replicas": replicas},
        )
        enqueue_admission_cycle(locked.queue.resource_group_id)
    service.refresh_from_db()
    return service


def reconcile_services() -> int:
    """Replace the replicas of running services that ended (failed, or finished): each
    service gets back to its desired count. Returns the number of replicas created."""
    made = 0
    for service in Job.objects.filter(
        kind=JobKind.INFERENCE, parent__isnull=True, state=JobState.RUNNING
    ).select_related("queue"):
        with transaction.atomic():
            locked = lock_rows(Job).get(pk=service.pk)
            missing = (locked.replicas or 0) - _live_replicas(locked).count()
            if locked.state == JobState.RUNNING and missing > 0:
                for replica in _add_replicas(locked, missing):
                    JobEvent.objects.create(
                        job=locked, kind="replaced", message=f"replica {replica.name} queued"
                    )
                made += missing
                enqueue_admission_cycle(locked.queue.resource_group_id)
    return made


def cancel_any_job(job: Job, *, user=None) -> Job:
    """Cancel any job: an inference service with all its live replicas; a stopped notebook
    (it holds nothing) at once; any other through ``cancel_job``.

    Raises:
        Conflict: the job already finished.
    """
    if job.is_service:
        with transaction.atomic():
            moved = job_life.cancel_jobs(
                job,
                now=timezone.now(),
                only_from=[JobState.RUNNING],
                event="service stopped",
                audit=job_life.Audit("job.cancel", actor=user),
            )
            if not moved:
                job.refresh_from_db()
                raise Conflict(f"job {job.pk} is already {job.state}", field="state")
            _lock_live_replicas(job)
            for replica in _live_replicas(job).order_by("pk"):
                cancel_job(replica, user=user)
        job.refresh_from_db()
        return job
    if job.state == JobState.STOPPED:
        job_life.cancel_jobs(
            job, now=timezone.now(), only_from=[JobState.STOPPED], event="stopped notebook deleted"
        )
        job.refresh_from_db()
        return job
    return cancel_job(job, user=user)


def _release(job: Job, now: datetime, message: str) -> bool:
    """Delete the job's pods and release its booked placements; True when any was booked."""
    placements = list(
        Placement.objects.filter(job=job, state__in=BOOKED_PLACEMENT_STATES).select_related(
            "node__cluster"
        )
    )
    for placement in placements:
        get_backend(placement.node.cluster.backend).delete(placement)
    job_life.release_placements([p.pk for p in placements], now=now, message=message, ready=False)
    return bool(placements)


def stop_notebook(job: Job, *, reason: str = "", user=None, now: datetime | None = None) -> Job:
    """Stop a notebook: its pod is deleted, its devices freed (no cost accrues while it is
    stopped) and it leaves the queue until :func:`resume_notebook`.

    Raises:
        InvalidRequest: not a notebook.
        Conflict: the notebook is not queued, admitted or running.
    """
    if job.kind != JobKind.NOTEBOOK:
        raise InvalidRequest("only a notebook can be stopped", field="kind")
    now = now or timezone.now()
    who = getattr(user, "username", "") or "system"
    message = reason or f"stopped by {who}"
    with transaction.atomic():
        locked = lock_rows(Job).get(pk=job.pk)
        moved = job_life.stop_jobs(
            locked,
            now=now,
            only_from=LIVE_JOB_STATES,
            event=message,
            audit=job_life.Audit("job.stop", user, before=locked.state),
            **reason_fields(CauseKind.POLICY, message[:2000]),
        )
        if not moved:
            raise Conflict(f"notebook {job.pk} is {locked.state}", field="state")
        freed = _release(locked, now, message)
        if freed:
            enqueue_admission_cycle(locked.queue.resource_group_id)
    job.refresh_from_db()
    return job


def resume_notebook(job: Job, *, user=None) -> Job:
    """Queue a stopped notebook again: it asks for devices anew (it may land elsewhere).

    Raises:
        Conflict: the notebook is not stopped.
    """
    with transaction.atomic():
        moved = job.kind == JobKind.NOTEBOOK and job_life.resume_jobs(
            job,
            event="queued again",
            audit=job_life.Audit("job.resume", user),
            **reason_fields(CauseKind.POLICY, ""),
        )
        if not moved:
            job.refresh_from_db()
            raise Conflict(f"notebook {job.pk} is {job.state}, not stopped", field="state")
        enqueue_admission_cycle(job.queue.resource_group_id)
    job.refresh_from_db()
    return job


def enforce_time_limits(now: datetime | None = None) -> list[int]:
    """Stop notebooks past their lifetime (``max_runtime_s`` counted from ``started_at``).
    Other kinds' ``max_runtime_s`` is enforced from admission by
    :func:`scheduling.services.eviction.enforce_max_runtime` (Kueue
    maximumExecutionTimeSeconds). Returns the ids of the notebooks stopped."""
    now = now or timezone.now()
    ended = []
    rows = Job.objects.filter(
        state=JobState.RUNNING,
        max_runtime_s__isnull=False,
        started_at__isnull=False,
        parent__isnull=True,
        kind=JobKind.NOTEBOOK,
    )
    for job in rows.select_related("queue"):
        if job.started_at is None or job.max_runtime_s is None:
            continue  # excluded by the query; narrows the types
        if job.started_at + timedelta(seconds=job.max_runtime_s) > now:
            continue
        limit = f"{job.max_runtime_s:g} s"
        try:
            stop_notebook(job, reason=f"culled: maximum lifetime {limit} reached", now=now)
        except Conflict:
            continue  # it ended meanwhile
        ended.append(job.pk)
    return ended


def lifetime_left_s(job: Job, now: datetime | None = None) -> float | None:
    """Seconds before a running job reaches ``max_runtime_s`` (a notebook's lifetime), or
    None when it has no limit or is not running."""
    if job.state != JobState.RUNNING or not job.max_runtime_s or job.started_at is None:
        return None
    now = now or timezone.now()
    return max(0.0, job.max_runtime_s - (now - job.started_at).total_seconds())


SERVICE_PHASES = ("starting", "degraded", "ready")
"""What a live inference service's replicas amount to (:attr:`ServiceStatus.phase`)."""


@dataclass(frozen=True)
class ServiceStatus:
    """An inference service's replicas: desired, live (queued/admitted/running), running
    (all pods running) and ready (pod passes readiness)."""

    desired: int
    live: int
    running: int
    ready: int
    up: bool = True

    @property
    def phase(self) -> str:
        """``ready`` when every desired replica is ready, ``degraded`` when some are,
        ``starting`` when none is yet (the service's own state stays ``running`` while it
        is up: that says the service exists, not that it serves); ``stopped`` once the
        service is not up (cancelled)."""
        if not self.up:
            return "stopped"
        if self.ready >= self.desired:
            return "ready"
        return "degraded" if self.ready else "starting"

    @property
    def summary(self) -> str:
        """The phase with the counts, e.g. ``"starting (0/3 ready)"``."""
        return f"{self.phase} ({self.ready}/{self.desired} ready)"


def service_statuses(jobs: list[Job]) -> dict[int, ServiceStatus]:
    """``{service id: ServiceStatus}`` of the inference services among ``jobs`` (a page of
    the job list), in two queries whatever their number; the same counts as
    :func:`service_status`."""
    services = {job.pk: job for job in jobs if job.is_service}
    if not services:
        return {}
    counts: dict[int, tuple[int, int]] = {
        parent: (live, running)
        for parent, live, running in Job.objects.filter(
            parent_id__in=services, state__in=LIVE_JOB_STATES
        )
        .values("parent_id")
        .annotate(live=Count("pk"), running=Count("pk", filter=Q(state=JobState.RUNNING)))
        .values_list("parent_id", "live", "running")
    }
    ready = dict(
        Placement.objects.filter(
            job__parent_id__in=services, state=PlacementState.RUNNING, ready=True
        )
        .values("job__parent_id")
        .annotate(n=Count("job_id", distinct=True))
        .values_list("job__parent_id", "n")
    )
    return {
        pk: ServiceStatus(
            desired=job.replicas or 0,
            live=counts.get(pk, (0, 0))[0],
            running=counts.get(pk, (0, 0))[1],
            ready=ready.get(pk, 0),
            up=job.state == JobState.RUNNING,
        )
        for pk, job in services.items()
    }


def service_status(service: Job) -> ServiceStatus:
    """Replica counts of an inference service (see :class:`ServiceStatus`)."""
    live = _live_replicas(service)
    ready = (
        Placement.objects.filter(job__parent=service, state=PlacementState.RUNNING, ready=True)
        .values("job_id")
        .distinct()
        .count()
    )
    return ServiceStatus(
        desired=service.replicas or 0,
        live=live.count(),
        running=live.filter(state=JobState.RUNNING).count(),
        ready=ready,
        up=service.state == JobState.RUNNING,
    )
