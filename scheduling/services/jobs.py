"""Job services: submit and cancel (views validate input, these functions change state)."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone

from core.audit import record as audit
from core.exceptions import Conflict
from scheduling.backends import delete_pods_on_commit
from scheduling.choices import ACTIVE_PLACEMENT_STATES, LIVE_JOB_STATES, JobState, PlacementState
from scheduling.dispatch import enqueue_admission_cycle
from scheduling.models import (
    Job,
    JobContainer,
    JobEvent,
    JobPodSet,
    Placement,
    PriorityClass,
    Queue,
)


@dataclass(frozen=True)
class ContainerSpec:
    """A container's device request (see :class:`scheduling.models.JobContainer`)."""

    name: str = "main"
    vendor: str = "NVIDIA"
    device_count: int = 0
    memory_mib: int = 0
    memory_percent: int | None = None
    cores_percent: int = 0
    device_types: list[str] = field(default_factory=list)
    device_types_exclude: list[str] = field(default_factory=list)
    init: bool = False
    image: str = ""
    command: list[str] = field(default_factory=list)
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PodSetSpec:
    """Identical pods of a job (see :class:`scheduling.models.JobPodSet`)."""

    name: str
    count: int
    containers: list[ContainerSpec]
    cpu_milli: int = 0
    memory_mib: int = 0


@dataclass(frozen=True)
class JobSpec:
    """A validated job submission (the API serializer builds it)."""

    name: str
    containers: list[ContainerSpec]
    priority: int = 0
    priority_class: PriorityClass | None = None
    max_runtime_s: float | None = None
    pod_count: int = 1
    min_pods: int | None = None
    cpu_milli: int = 0
    memory_mib: int = 0
    duration_s: float = 60.0
    source: str = "api"
    preemptible: bool = True
    min_runtime_s: float = 0.0
    on_preemption: str = "requeue"
    restart_policy: str = "Never"
    pod_sets: list[PodSetSpec] = field(default_factory=list)


def _container_row(job: Job, c: ContainerSpec, pod_set: JobPodSet | None = None
                   ) -> JobContainer:
    return JobContainer(
        job=job, pod_set=pod_set, name=c.name, init=c.init, vendor=c.vendor,
        device_count=c.device_count, memory_mib=c.memory_mib, memory_percent=c.memory_percent,
        cores_percent=c.cores_percent, device_types=list(c.device_types),
        device_types_exclude=list(c.device_types_exclude), image=c.image,
        command=list(c.command), args=list(c.args), env=dict(c.env))


def _create_pod_sets(job: Job, pod_sets: list[PodSetSpec]) -> None:
    for position, ps in enumerate(pod_sets):
        row = JobPodSet.objects.create(job=job, name=ps.name, position=position,
                                       count=ps.count, cpu_milli=ps.cpu_milli,
                                       memory_mib=ps.memory_mib)
        JobContainer.objects.bulk_create(_container_row(job, c, row) for c in ps.containers)


def submit_job(queue: Queue, spec: JobSpec, *, user=None, enqueue: bool = True) -> Job:
    """Create a queued job in ``queue`` and trigger its resource group's admission cycle
    after commit.

    Returns:
        The new Job (state ``queued``).
    """
    with transaction.atomic():
        job = Job.objects.create(
            tenant_id=queue.tenant_id, queue=queue, name=spec.name,
            priority=spec.priority, priority_class=spec.priority_class,
            max_runtime_s=spec.max_runtime_s, pod_count=spec.pod_count, min_pods=spec.min_pods,
            cpu_milli=spec.cpu_milli,
            memory_mib=spec.memory_mib,
            duration_s=spec.duration_s,
            preemptible=spec.preemptible,
            min_runtime_s=spec.min_runtime_s,
            on_preemption=spec.on_preemption,
            restart_policy=spec.restart_policy,
            submitted_by=user if user is not None and user.is_authenticated else None,
            source=spec.source,
        )
        _create_pod_sets(job, spec.pod_sets)
        JobContainer.objects.bulk_create(_container_row(job, c) for c in spec.containers)
        JobEvent.objects.create(job=job, kind="queued", message=f"queued in {queue}")
        audit(
            "job.submit", job, actor=user, tenant_id=job.tenant_id, source=spec.source,
            after={
                "queue": str(queue), "state": job.state, "priority": job.priority,
                "priority_class": spec.priority_class.name if spec.priority_class else None,
                "pod_count": job.pod_count,
                "containers": [
                    {"name": c.name, "vendor": c.vendor, "device_count": c.device_count,
                     "memory_mib": c.memory_mib, "cores_percent": c.cores_percent}
                    for c in spec.containers
                ],
            },
        )
        if enqueue:
            enqueue_admission_cycle(queue.resource_group_id)
    return job


def cancel_job(job: Job, *, user=None) -> Job:
    """Cancel a queued, admitted or running job; its pods are deleted and devices freed.

    Raises:
        Conflict: the job already finished.
    """
    now = timezone.now()
    with transaction.atomic():
        locked = Job.objects.select_for_update().filter(pk=job.pk)
        previous = locked.values_list("state", flat=True).first()
        moved = Job.objects.filter(pk=job.pk, state__in=LIVE_JOB_STATES).update(
            state=JobState.CANCELLED, finished_at=now
        )
        if not moved:
            job.refresh_from_db()
            raise Conflict(f"job {job.pk} is already {job.state}", field="state")
        audit(
            "job.cancel", job, actor=user, tenant_id=job.tenant_id,
            before={"state": previous}, after={"state": JobState.CANCELLED.value},
        )
        # pods already terminating (a preempted job) keep their devices until they are gone
        placements = list(
            Placement.objects.filter(
                job=job,
                state__in=ACTIVE_PLACEMENT_STATES,
            ).select_related("node__cluster")
        )
        Placement.objects.filter(pk__in=[p.pk for p in placements]).update(
            state=PlacementState.RELEASED, ended_at=now, message="job cancelled"
        )
        delete_pods_on_commit(placements)
        who = getattr(user, "username", "") or "system"
        JobEvent.objects.create(job=job, kind="cancelled", message=f"cancelled by {who}")
        if placements:
            enqueue_admission_cycle(job.queue.resource_group_id)
    job.refresh_from_db()
    return job
