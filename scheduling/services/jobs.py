"""Job services: submit and cancel (views validate input, these functions change state)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone

from core.audit import entry as audit_entry
from core.exceptions import Conflict, InvalidRequest, NeverFits
from core.locks import lock_rows
from core.models import AuditEntry
from scheduling.backends import delete_pods_on_commit
from scheduling.choices import ACTIVE_PLACEMENT_STATES, LIVE_JOB_STATES, JobKind, JobState
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
from scheduling.selectors.feasibility import never_fits_reason
from scheduling.selectors.topology import TopologySpec
from scheduling.selectors.user_limits import queued_limit_refusal
from scheduling.services import job_life

MAX_POD_COUNT = 1024
"""Pods of one job (every pod set together), API or taken in from a cluster."""
MAX_CPU_MILLI = 10_000_000
"""Host cpu of one pod, milli-cores."""
MAX_HOST_MEMORY_MIB = 100_000_000
"""Host memory of one pod, MiB."""
MAX_DEVICE_COUNT = 64
"""Devices of one container."""
MAX_DEVICE_MEMORY_MIB = 16 * 1024 * 1024
"""Device memory per device of one container, MiB."""


#: Kubernetes annotation key: optional DNS-subdomain prefix (<= 253) and "/", then a name of
#: <= 63 alphanumerics, '-', '_', '.' starting and ending alphanumeric
#: (apimachinery ``validation.IsQualifiedName``).
_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_ANNOTATION_PREFIX = re.compile(rf"^{_DNS_LABEL}(\.{_DNS_LABEL})*$")
_ANNOTATION_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
#: Kubernetes' limit on the total size of a pod's annotations (keys + values, bytes).
ANNOTATIONS_MAX_BYTES = 256 * 1024


def pod_annotation_errors(annotations: dict[str, str]) -> list[str]:
    """What makes ``annotations`` (a job's pod annotations) unfit to store and to put on a
    pod: a key Kubernetes refuses, a NUL character (PostgreSQL's ``jsonb`` cannot hold one),
    more than ``ANNOTATIONS_MAX_BYTES`` in all. Empty when nothing; the API serializer and
    the intake (:func:`spec_bound_errors`) both ask here."""
    errors = []
    for key, value in annotations.items():
        prefix, _, name = key.rpartition("/")
        if (
            not _ANNOTATION_NAME.match(name)
            or len(name) > 63
            or ("/" in key and (not _ANNOTATION_PREFIX.match(prefix) or len(prefix) > 253))
        ):
            errors.append(f"{key!r} is not a valid annotation key")
        elif "\x00" in value:
            errors.append(f"{key}: NUL characters are not allowed")
    size = sum(len(k.encode()) + len(v.encode()) for k, v in annotations.items())
    if size > ANNOTATIONS_MAX_BYTES:
        errors.append(f"annotations take {size} bytes, more than {ANNOTATIONS_MAX_BYTES}")
    return errors


def spec_bound_errors(spec: JobSpec) -> list[str]:
    """What in ``spec`` is beyond the bounds above (empty when nothing): the API serializer
    enforces them field by field; the intake, whose specs come from cluster objects, asks
    here before a value overflows a column."""
    errors = []
    if spec.pod_count > MAX_POD_COUNT:
        errors.append(f"{spec.pod_count} pods, more than the {MAX_POD_COUNT} of one job")
    hosts = [(spec.name, spec.cpu_milli, spec.host_memory_mib)] + [
        (f"pod set {ps.name!r}", ps.cpu_milli, ps.host_memory_mib) for ps in spec.pod_sets
    ]
    for where, cpu, memory in hosts:
        if cpu > MAX_CPU_MILLI:
            errors.append(f"{where}: cpu {cpu} m is above {MAX_CPU_MILLI} m")
        if memory > MAX_HOST_MEMORY_MIB:
            errors.append(f"{where}: memory {memory} MiB is above {MAX_HOST_MEMORY_MIB} MiB")
    for c in [*spec.containers, *(c for ps in spec.pod_sets for c in ps.containers)]:
        if c.device_count > MAX_DEVICE_COUNT:
            errors.append(
                f"container {c.name!r}: {c.device_count} devices, more than {MAX_DEVICE_COUNT}"
            )
        if c.device_memory_mib > MAX_DEVICE_MEMORY_MIB:
            errors.append(
                f"container {c.name!r}: device memory {c.device_memory_mib} MiB is above "
                f"{MAX_DEVICE_MEMORY_MIB} MiB"
            )
    return errors + pod_annotation_errors(spec.annotations)


@dataclass(frozen=True)
class ContainerSpec:
    """A container's device request (see :class:`scheduling.models.JobContainer`)."""

    name: str = "main"
    vendor: str = "NVIDIA"
    device_count: int = 0
    device_memory_mib: int = 0
    memory_percent: int | None = None
    cores_percent: int = 0
    device_types: list[str] = field(default_factory=list)
    device_types_exclude: list[str] = field(default_factory=list)
    init: bool = False
    image: str = ""
    command: list[str] = field(default_factory=list)
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    role: str = ""


@dataclass(frozen=True)
class PodSetSpec:
    """Identical pods of a job (see :class:`scheduling.models.JobPodSet`)."""

    name: str
    count: int
    containers: list[ContainerSpec]
    cpu_milli: int = 0
    host_memory_mib: int = 0
    topology: TopologySpec = field(default_factory=TopologySpec)


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
    host_memory_mib: int = 0
    duration_s: float = 60.0
    source: str = "api"
    preemptible: bool = True
    min_runtime_s: float = 0.0
    on_preemption: str = "requeue"
    allow_consolidation: bool = False
    restart_policy: str = "Never"
    kind: str = JobKind.BATCH
    port: int | None = None
    replicas: int | None = None
    replicas_min: int | None = None
    replicas_max: int | None = None
    backoff_limit: int = 0
    idle_cull_s: float | None = None
    launcher_cpu_milli: int = 0
    launcher_memory_mib: int = 0
    volumes: list[dict] = field(default_factory=list)
    secrets: list[dict] = field(default_factory=list)
    tolerations: list[dict] = field(default_factory=list)
    node_selector: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    pod_sets: list[PodSetSpec] = field(default_factory=list)
    topology: TopologySpec = field(default_factory=TopologySpec)
    """The job's topology request (levels resolved to keys: the serializer and the intake
    call :func:`scheduling.selectors.topology.resolve_topology_spec`); a pod set's own."""


WORKLOAD_FIELDS = (
    "kind",
    "port",
    "replicas",
    "replicas_min",
    "replicas_max",
    "max_runtime_s",
    "backoff_limit",
    "idle_cull_s",
    "launcher_cpu_milli",
    "launcher_memory_mib",
    "volumes",
    "secrets",
    "tolerations",
    "node_selector",
)
"""JobSpec fields stored as they are on the Job (the job kind's settings)."""


def _container_row(job: Job, c: ContainerSpec, pod_set: JobPodSet | None = None) -> JobContainer:
    return JobContainer(
        job=job,
        pod_set=pod_set,
        name=c.name,
        init=c.init,
        vendor=c.vendor,
        device_count=c.device_count,
        device_memory_mib=c.device_memory_mib,
        memory_percent=c.memory_percent,
        cores_percent=c.cores_percent,
        device_types=list(c.device_types),
        device_types_exclude=list(c.device_types_exclude),
        image=c.image,
        command=list(c.command),
        args=list(c.args),
        env=dict(c.env),
        role=c.role,
    )


def _create_rows(
    pairs: list[tuple[Job, JobSpec]],
) -> list[tuple[list[JobContainer], list[JobPodSet]]]:
    """Every job's pod sets (one INSERT) and every container, of the jobs and of their pod
    sets (one INSERT); returns per job its containers (pod set order, then the job's own) and
    its pod sets."""
    pod_sets = JobPodSet.objects.bulk_create(
        JobPodSet(
            job=job,
            name=ps.name,
            position=position,
            count=ps.count,
            cpu_milli=ps.cpu_milli,
            host_memory_mib=ps.host_memory_mib,
            topology_group=ps.topology.group,
            **ps.topology.columns(),
        )
        for job, spec in pairs
        for position, ps in enumerate(spec.pod_sets)
    )
    sets_left = iter(pod_sets)
    per_job = []
    rows: list[JobContainer] = []
    for job, spec in pairs:
        sets = [next(sets_left) for _ in spec.pod_sets]
        mine = [
            _container_row(job, c, row)
            for row, ps in zip(sets, spec.pod_sets, strict=True)
            for c in ps.containers
        ]
        mine.extend(_container_row(job, c) for c in spec.containers)
        rows.extend(mine)
        per_job.append((mine, sets))
    JobContainer.objects.bulk_create(rows)  # sets the pks on the same objects
    return per_job


_PREFETCHED = "_prefetched_objects_cache"


def _fit_reasons(
    jobs: list[Job], queues: list[Queue], rows: list[tuple[list[JobContainer], list[JobPodSet]]]
) -> dict[int, str]:
    """``{index: reason}`` of the jobs that can never fit their group
    (:func:`never_fits_reason`), reading the rows just written instead of querying them
    again."""
    reasons = {}
    for index, (job, queue, (containers, pod_sets)) in enumerate(
        zip(jobs, queues, rows, strict=True)
    ):
        # Django's prefetch cache: ``job.containers.all()`` / ``job.pod_sets.all()`` read it
        setattr(job, _PREFETCHED, {"containers": containers, "pod_sets": pod_sets})
        try:
            reason = never_fits_reason(job, queue.resource_group)
        finally:
            delattr(job, _PREFETCHED)
        if reason is not None:
            reasons[index] = reason
    return reasons


def _write_jobs(entries: list[tuple[Queue, JobSpec]], user, now) -> tuple[list[Job], list]:
    """The jobs of ``entries`` and their pod sets and containers, one INSERT per table
    (inside the caller's transaction): ``(jobs, rows of each job)``."""
    jobs = Job.objects.bulk_create(_job_row(queue, spec, user, now) for queue, spec in entries)
    for job, (queue, _) in zip(jobs, entries, strict=True):
        job.tenant = queue.tenant  # one tenant row per queue for events, audit and reply
    return jobs, _create_rows(list(zip(jobs, (spec for _, spec in entries), strict=True)))


def never_fits_reasons(entries: list[tuple[Queue, JobSpec]]) -> dict[int, str]:
    """``{index in entries: why}`` of the submissions that can never fit their group, found
    as :func:`enqueue_jobs` finds them (the rows are written, then rolled back: nothing is
    saved). For a batch refused for other reasons too, so that one answer lists them all."""
    with transaction.atomic():
        jobs, rows = _write_jobs(entries, None, timezone.now())
        reasons = _fit_reasons(jobs, [queue for queue, _ in entries], rows)
        transaction.set_rollback(True)
    return reasons


def _audit_submit(job: Job, spec: JobSpec, queue: Queue, user) -> AuditEntry:
    """The unsaved ``job.submit`` audit entry (saved with the submission's transaction)."""
    return audit_entry(
        "job.submit",
        job,
        actor=user,
        tenant_id=job.tenant_id,
        source=spec.source,
        after={
            "queue": str(queue),
            "state": job.state,
            "priority": job.priority,
            "priority_class": spec.priority_class.name if spec.priority_class else None,
            "pod_count": job.pod_count,
            "kind": job.kind,
            "containers": [
                {
                    "name": c.name,
                    "vendor": c.vendor,
                    "device_count": c.device_count,
                    "device_memory_mib": c.device_memory_mib,
                    "cores_percent": c.cores_percent,
                }
                for c in spec.containers
            ],
        },
    )


def enqueue_job(
    queue: Queue, spec: JobSpec, *, user=None, enqueue: bool = True, check_fit: bool = True
) -> Job:
    """Create a queued job in ``queue`` and trigger its resource group's admission cycle
    after commit: :func:`enqueue_jobs` of one job (same arguments, errors and states).

    Raises:
        NeverFits: ``check_fit`` and the job fits no node of the group even when empty
            (``field="reason"``, the message says why); nothing is saved.
    """
    return enqueue_jobs([(queue, spec)], user=user, enqueue=enqueue, check_fit=check_fit)[0]


def enqueue_jobs(
    entries: list[tuple[Queue, JobSpec]], *, user=None, enqueue: bool = True, check_fit: bool = True
) -> list[Job]:
    """Create the jobs of ``entries`` (queue, spec) in one transaction, all or none: one
    INSERT each for the jobs, their pod sets, containers, events and audit entries, however
    many jobs (a batch submission: ``POST /api/jobs/batch/``). Each job is ``queued``, or
    ``running`` for an inference service, which is never queued itself (its replicas are:
    ``scheduling.services.job_kinds.submit_jobs``). After commit, one admission cycle
    request per resource group involved.

    Args:
        check_fit: refuse jobs that can never fit any node of their group, whatever the load
            (:func:`scheduling.selectors.feasibility.never_fits_reason`).

    Returns:
        The new jobs, in the order of ``entries``.

    Raises:
        InvalidRequest: a job asks more ``min_runtime_s`` than its queue's
            ``max_min_runtime_s`` (``field="min_runtime_s"``, the message names the cap;
            :meth:`scheduling.models.Queue.min_runtime_error`); more queued jobs than the
            user's ``max_queued_jobs`` (:func:`_check_queued_limits`); nothing is saved.
        NeverFits: ``check_fit`` and some jobs fit no node of their group even when empty;
            ``reasons`` maps each such job's index in ``entries`` to why, the message is the
            first reason (``field="reason"``); nothing is saved.
    """
    _check_min_runtimes(entries)
    now = timezone.now()
    with transaction.atomic():
        _check_queued_limits(entries, user)
        jobs, rows = _write_jobs(entries, user, now)
        reasons = _fit_reasons(jobs, [queue for queue, _ in entries], rows) if check_fit else {}
        if reasons:
            raise NeverFits(next(iter(reasons.values())), field="reason", reasons=reasons)
        JobEvent.objects.bulk_create(
            JobEvent(
                job=job,
                kind=job.state,
                message=(
                    f"service up in {queue}"
                    if job.state == JobState.RUNNING
                    else f"queued in {queue}"
                ),
            )
            for job, (queue, _) in zip(jobs, entries, strict=True)
        )
        AuditEntry.objects.bulk_create(
            _audit_submit(job, spec, queue, user)
            for job, (queue, spec) in zip(jobs, entries, strict=True)
        )
        if enqueue:
            queued = {
                q.resource_group_id
                for j, (q, _) in zip(jobs, entries, strict=True)
                if j.kind != JobKind.INFERENCE
            }
            for group_id in sorted(queued):
                enqueue_admission_cycle(group_id)
    return jobs


def _check_queued_limits(entries: list[tuple[Queue, JobSpec]], user) -> None:
    """Raises InvalidRequest (``field="queue"``, e.g. ``"user alice: 5 of 5 queued jobs in
    tenant team-a"``) when ``user`` would exceed a per-user ``max_queued_jobs`` of a tenant
    (issue 33; inference services are never queued). A 400, not a 429: no wait for a
    throttle window lets it through, only the user's own jobs leaving the queue. Counted
    without a lock: two concurrent submissions may both pass at the limit's edge."""
    counts: dict = {}
    for queue, spec in entries:
        if spec.kind != JobKind.INFERENCE:
            counts[queue.tenant] = counts.get(queue.tenant, 0) + 1
    refusal = queued_limit_refusal(counts, user) if counts else None
    if refusal is not None:
        raise InvalidRequest(refusal, field="queue")


def _check_min_runtimes(entries: list[tuple[Queue, JobSpec]]) -> None:
    """Raises InvalidRequest (``field="min_runtime_s"``) for the first job asking more
    ``min_runtime_s`` than its queue allows (:meth:`scheduling.models.Queue.min_runtime_error`)."""
    for queue, spec in entries:
        why = queue.min_runtime_error(spec.min_runtime_s)
        if why:
            raise InvalidRequest(why, field="min_runtime_s")


def _job_row(queue: Queue, spec: JobSpec, user, now) -> Job:
    """The unsaved Job of ``spec`` in ``queue`` (``running`` for an inference service)."""
    service = spec.kind == JobKind.INFERENCE
    return Job(
        state=JobState.RUNNING if service else JobState.QUEUED,
        started_at=now if service else None,
        **{name: getattr(spec, name) for name in WORKLOAD_FIELDS},
        tenant_id=queue.tenant_id,
        queue=queue,
        name=spec.name,
        priority=spec.priority,
        pod_count=spec.pod_count,
        min_pods=spec.min_pods,
        priority_class=spec.priority_class,
        cpu_milli=spec.cpu_milli,
        host_memory_mib=spec.host_memory_mib,
        duration_s=spec.duration_s,
        preemptible=spec.preemptible,
        allow_consolidation=spec.allow_consolidation,
        min_runtime_s=spec.min_runtime_s,
        on_preemption=spec.on_preemption,
        restart_policy=spec.restart_policy,
        annotations=dict(spec.annotations),
        **spec.topology.columns(),
        submitted_by=user if user is not None and user.is_authenticated else None,
        source=spec.source,
    )


def cancel_job(job: Job, *, user=None) -> Job:
    """Cancel a queued, admitted or running job; its pods are deleted and devices freed.

    Raises:
        Conflict: the job already finished.
    """
    now = timezone.now()
    with transaction.atomic():
        locked = lock_rows(Job).filter(pk=job.pk)
        previous = locked.values_list("state", flat=True).first()
        who = getattr(user, "username", "") or "system"
        moved = job_life.cancel_jobs(
            job,
            now=now,
            only_from=LIVE_JOB_STATES,
            event=f"cancelled by {who}",
            audit=job_life.Audit("job.cancel", user, before=previous),
        )
        if not moved:
            job.refresh_from_db()
            raise Conflict(f"job {job.pk} is already {job.state}", field="state")
        # pods already terminating (a preempted job) keep their devices until they are gone
        placements = list(
            Placement.objects.filter(job=job, state__in=ACTIVE_PLACEMENT_STATES).select_related(
                "node__cluster"
            )
        )
        job_life.release_placements([p.pk for p in placements], now=now, message="job cancelled")
        delete_pods_on_commit(placements)
        if placements:
            enqueue_admission_cycle(job.queue.resource_group_id)
    job.refresh_from_db()
    return job
