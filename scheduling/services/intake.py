"""Intake of workloads users create with kubectl (labelled ``console.llmops.io/queue``).

:func:`sync_cluster_workloads` is one level-triggered pass over a kubernetes cluster;
:func:`intake_cluster` (``kube_intake_task``, every beat tick) runs it as the periodic resync
(``KUBE_INTAKE_RESYNC_S``) and between resyncs watches each kind from the list's
resourceVersion, handling each changed object the same way (single-flight per cluster
under an advisory lock):

1. list every taken-in kind carrying the queue label (Job, JobSet, PyTorchJob; Deployments
   and StatefulSets; the Pods of those) - a full list each pass is the periodic resync;
2. a new object in a namespace no tenant owns, naming a queue its tenant does not have, or
   with invalid HAMi resources is refused: a Warning Event on the object says why. In a
   tenant's namespace a refused object created unsuspended is suspended (Kueue keeps a
   workload it cannot queue suspended), so it never runs outside admission; in a namespace
   of no tenant it is left as it is. Otherwise it becomes a queued console job (``source = kube``)
   with one pod set per template (:mod:`scheduling.kube.workloads`); an object created
   unsuspended is suspended first (Kueue's webhook does the same);
3. each known object is brought in line with its job: admitted -> the placement is written
   into the object and it is released (:mod:`scheduling.services.intake_record`); queued ->
   it stays (or is put back) suspended and carries the pending reason (annotation and a
   ``Pending`` Event whenever the reason changes); suspended by its user once released -> the
   job is stopped until the user unsuspends it (:mod:`scheduling.services.intake_hold`);
   finished in the cluster -> the job finishes and its devices are freed; gone from the
   cluster -> the job is cancelled;
4. labelled Deployments / StatefulSets get the console's scheduling gate in their pod
   template; each gated Pod is a single-pod job.

Everything is idempotent: Event names derive from their content, patches are rebuilt from a
fresh read, state moves are conditional UPDATEs. Objects without the label are never read.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core import locks
from scheduling.admission import CauseKind, reason_fields
from scheduling.backends.kubernetes import gateway_for
from scheduling.choices import JobState
from scheduling.dispatch import enqueue_admission_cycle
from scheduling.kube import workload_patches as wp
from scheduling.kube import workloads as wl
from scheduling.kube.errors import Expired, KubeError, NotFound, Retryable
from scheduling.kube.workload_api import WorkloadApi
from scheduling.models import Cluster, Job, KubeWorkload, Placement, Queue
from scheduling.selectors.device_models import get_catalogue
from scheduling.services import intake_hold as hold
from scheduling.services import intake_policy as policy
from scheduling.services import job_life
from scheduling.services.intake_record import emit, record_placement, suspend_object
from scheduling.services.intake_spec import job_spec
from scheduling.services.jobs import enqueue_job
from tenants.selectors import tenant_for_namespace

logger = logging.getLogger(__name__)

__all__ = ["IntakeReport", "sync_cluster_workloads", "intake_cluster", "SUSPENDABLE", "GATED"]

SUSPENDABLE = ("Job", "JobSet", "PyTorchJob")
GATED = ("Deployment", "StatefulSet")
# job states an object's end (finished, deleted) moves: the live ones and stopped (by its user)
FOLLOWED_STATES = (JobState.QUEUED, JobState.ADMITTED, JobState.RUNNING, JobState.STOPPED)


@dataclass
class IntakeReport:
    """What one pass did (lists of ``Kind ns/name``; ``jobs`` maps them to job ids)."""

    cluster: str
    locked_out: bool = False
    queued: list[str] = field(default_factory=list)
    released: list[str] = field(default_factory=list)
    suspended: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)
    finished: list[str] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)
    gated: list[str] = field(default_factory=list)
    stopped: list[str] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    jobs: dict[str, int] = field(default_factory=dict)
    events: int = 0
    groups: set[int] = field(default_factory=set)


def _key(kind: str, obj: dict) -> str:
    meta = obj.get("metadata") or {}
    return f"{kind} {meta.get('namespace', '')}/{meta.get('name', '')}"


def _refuse(
    api: WorkloadApi,
    cluster: Cluster,
    kind: str,
    obj: dict,
    reason: str,
    message: str,
    report: IntakeReport,
    *,
    suspend: bool = False,
) -> None:
    """Record why ``obj`` is not taken in and say so in a Warning Event. ``suspend``: the
    object is in a tenant's namespace, must not run outside admission and was created
    unsuspended (:func:`_runs_unless_held`), so it is suspended with ``message`` as its
    pending reason and a ``Suspended`` Event (a refused Pod keeps its scheduling gate)."""
    meta = obj.get("metadata") or {}
    report.refused[_key(kind, obj)] = message
    row, _ = KubeWorkload.objects.update_or_create(
        cluster=cluster,
        uid=str(meta.get("uid")),
        defaults={
            "kind": kind,
            "namespace": meta.get("namespace", ""),
            "name": meta.get("name", ""),
            "error": message[:2000],
            "queue_name": str((meta.get("labels") or {}).get(wl.LABEL_QUEUE, ""))[:63],
        },
    )
    emit(api, kind, obj, reason, message, warning=True)
    if suspend and suspend_object(api, row, obj, message):
        report.suspended.append(_key(kind, obj))


def _runs_unless_held(kind: str, obj: dict) -> bool:
    """Whether a refused object would run outside admission unless the console suspends it:
    a kind with a ``suspend`` field whose object is not suspended (a Pod is held by its
    scheduling gate, which a refusal leaves in place)."""
    info = wl.KINDS.get(kind)
    return info is not None and bool(info.suspend_path) and not wl.is_suspended(kind, obj)


def _queue_for(cluster: Cluster, namespace: str, queue_name: str) -> tuple[Queue | None, str]:
    """The tenant queue an object names, or None and why not."""
    tenant = tenant_for_namespace(cluster, namespace)
    if tenant is None:
        return None, (
            f"namespace {namespace!r} belongs to no tenant of cluster "
            f"{cluster.name!r}; the console does not admit workloads there"
        )
    queue = (
        Queue.objects.filter(tenant=tenant, name=queue_name)
        .select_related("resource_group", "default_priority_class")
        .first()
    )
    if queue is None:
        return None, f"tenant {tenant.name!r} has no queue {queue_name!r}"
    return queue, ""


def _take_in(
    api: WorkloadApi,
    cluster: Cluster,
    kind: str,
    obj: dict,
    workload: wl.Workload,
    report: IntakeReport,
) -> KubeWorkload | None:
    """Create the console job of a new object (refusing it when it cannot be queued)."""
    queue, why = _queue_for(cluster, workload.namespace, workload.queue)
    if queue is None:
        reason = "NoTenant" if "tenant of" in why else "UnknownQueue"
        held = reason == "UnknownQueue" and _runs_unless_held(kind, obj)  # a tenant's namespace
        _refuse(api, cluster, kind, obj, reason, why, report, suspend=held)
        return None
    try:
        policy.check_pod_security(obj, workload)
        spec = job_spec(workload, policy.priority_class_of(queue, workload), queue.resource_group)
    except policy.Refused as exc:
        held = _runs_unless_held(kind, obj)
        _refuse(api, cluster, kind, obj, exc.reason, exc.message, report, suspend=held)
        return None
    except wl.WorkloadError as exc:
        held = _runs_unless_held(kind, obj)
        _refuse(api, cluster, kind, obj, "InvalidWorkload", str(exc), report, suspend=held)
        return None
    with transaction.atomic():
        # a workload that already exists in the cluster is recorded even if it never fits:
        # its pending reason says why (submit-time refusal is for the console's own API/UI)
        job = enqueue_job(queue, spec, check_fit=False)
        row, _ = KubeWorkload.objects.update_or_create(
            cluster=cluster,
            uid=workload.uid,
            defaults={
                "kind": kind,
                "namespace": workload.namespace,
                "name": workload.name,
                "queue_name": workload.queue[:63],
                "job": job,
                "error": "",
                "original_spec": dict(obj.get("spec") or {}) if kind != "Pod" else {},
                "owner": "/".join(wl.pod_owner(obj)) if kind == "Pod" else "",
            },
        )
    report.queued.append(_key(kind, obj))
    report.jobs[_key(kind, obj)] = job.pk
    emit(api, kind, obj, "Queued", f"queued in {queue} as console job {job.pk}")
    return row


def _finish(row: KubeWorkload, outcome: str, now: datetime, report: IntakeReport) -> None:
    """The object finished (or vanished): end the job and free its devices."""
    job = row.job
    if job is None:
        return
    end_job = {"succeeded": job_life.succeed_jobs, "failed": job_life.fail_jobs}.get(
        outcome, job_life.cancel_jobs
    )
    end_placements = {
        "succeeded": job_life.succeed_placements,
        "failed": job_life.fail_placements,
    }.get(outcome, job_life.release_placements)
    message = {"succeeded": "the workload completed", "failed": "the workload failed"}.get(
        outcome, f"{row.kind} {row.namespace}/{row.name} was deleted from the cluster"
    )
    if outcome == "gone" and row.kind == "Pod" and row.reason_written.startswith("preempted"):
        # the console deleted the preempted replica; its controller made a new, gated one
        message = (
            f"replica {row.namespace}/{row.name} was preempted and deleted; its "
            "replacement queues as a new job"
        )
    with transaction.atomic():
        end_job(
            job,
            now=now,
            only_from=FOLLOWED_STATES,
            event=message,
            updated=now,
            **reason_fields(CauseKind.POLICY, "" if outcome == "succeeded" else message),
        )
        freed = end_placements(
            Placement.objects.filter(job=job), now=now, message=message, updated=now
        )
    if freed:
        report.groups.add(job.queue.resource_group_id)


def _mark_running(job: Job, now: datetime) -> None:
    moved = job_life.run_placements(Placement.objects.filter(job=job), now=now, updated=now)
    if moved:
        job_life.start_jobs(job, now=now, updated=now, event="the workload's pods run")


def _follow_admitted(
    api: WorkloadApi,
    row: KubeWorkload,
    obj: dict,
    workload: wl.Workload,
    job: Job,
    now: datetime,
    report: IntakeReport,
) -> None:
    """An admitted or running job's object: released (again, when it is still suspended or
    not yet recorded), stopped when its user suspended it, followed to running."""
    key = _key(row.kind, obj)
    if hold.is_users_suspend(job, workload):  # the user's suspend wins (intake_hold)
        if hold.hold_for_user(api, row, obj, job, now):
            report.stopped.append(key)
    elif not row.recorded or workload.suspended:
        if record_placement(api, row, obj, workload):
            report.released.append(key)
    elif workload.active:
        _mark_running(job, now)


def _follow(
    api: WorkloadApi,
    row: KubeWorkload,
    kind: str,
    obj: dict,
    workload: wl.Workload,
    now: datetime,
    report: IntakeReport,
) -> None:
    """Bring a known object in line with its console job (module docstring, step 3)."""
    if row.job_id is None:  # not taken in (the caller takes it in first)
        return
    job = Job.objects.select_related("queue").get(pk=row.job_id)
    row.job = job
    key = _key(kind, obj)
    report.jobs[key] = job.pk
    if workload.finished and job.state in FOLLOWED_STATES:
        _finish(row, workload.finished, now, report)
        report.finished.append(key)
        return
    if job.state == JobState.STOPPED:  # by its user, who may have taken the suspend off now
        if hold.follow_stopped(api, row, obj, workload, job):
            report.resumed.append(key)
            report.suspended.append(key)
        return
    if job.state in (JobState.ADMITTED, JobState.RUNNING):
        _follow_admitted(api, row, obj, workload, job, now, report)
        return
    if not workload.suspended and not workload.finished:
        # queued (preempted, or the user took the suspend off) or ended in the console
        reason = job.pending_reason or f"job {job.state} in the console"
        if suspend_object(api, row, obj, reason):
            report.suspended.append(key)
        return
    if (
        job.state == JobState.QUEUED
        and job.pending_reason
        and job.pending_reason != row.reason_written
    ):
        api_reason = job.pending_reason.splitlines()[0]
        try:
            if kind == "Pod":
                api.patch_pod(workload.namespace, workload.name, wp.pending_patch(api_reason))
            else:
                api.patch_workload(
                    kind, workload.namespace, workload.name, wp.pending_patch(api_reason)
                )
        except KubeError as exc:
            report.errors.append(f"{key}: {exc}")
            return
        emit(api, kind, obj, "Pending", api_reason)
        KubeWorkload.objects.filter(pk=row.pk).update(reason_written=job.pending_reason)


def _one(
    api: WorkloadApi,
    cluster: Cluster,
    kind: str,
    obj: dict,
    configs,
    now: datetime,
    report: IntakeReport,
    seen: set[str],
) -> None:
    uid = str((obj.get("metadata") or {}).get("uid") or "")
    if not uid:
        return
    seen.add(uid)
    row = KubeWorkload.objects.filter(cluster=cluster, uid=uid).first()
    try:
        workload = (
            wl.read_gated_pod(obj, configs)
            if kind == "Pod"
            else wl.read_workload(kind, obj, configs)
        )
    except wl.WorkloadError as exc:
        if row is None or row.job_id is None:
            namespace = str((obj.get("metadata") or {}).get("namespace") or "")
            held = _runs_unless_held(kind, obj) and (
                tenant_for_namespace(cluster, namespace) is not None
            )
            _refuse(api, cluster, kind, obj, "InvalidWorkload", str(exc), report, suspend=held)
        else:
            report.errors.append(f"{_key(kind, obj)}: {exc}")
        return
    if row is None or row.job_id is None:
        if workload.finished or (kind == "Pod" and not workload.suspended):
            return  # finished before we saw it, or a replica from before the gate: not ours
        row = _take_in(api, cluster, kind, obj, workload, report)
        if row is None:
            return
        if (
            kind != "Pod"
            and not workload.suspended
            and suspend_object(api, row, obj, hold.WAITING_FOR_ADMISSION)
        ):
            report.suspended.append(_key(kind, obj))
        return
    if row.gone_at is not None:
        KubeWorkload.objects.filter(pk=row.pk).update(gone_at=None)
    _follow(api, row, kind, obj, workload, now, report)


def _gate(api: WorkloadApi, cluster: Cluster, kind: str, obj: dict, report: IntakeReport) -> None:
    """A labelled Deployment / StatefulSet: refuse it, or make sure its template is gated."""
    meta = obj.get("metadata") or {}
    queue_name = str((meta.get("labels") or {}).get(wl.LABEL_QUEUE, ""))
    queue, why = _queue_for(cluster, str(meta.get("namespace") or ""), queue_name)
    if queue is None:
        reason = "NoTenant" if "tenant of" in why else "UnknownQueue"
        report.refused[_key(kind, obj)] = why
        emit(api, kind, obj, reason, why, warning=True)
        return
    patch = wp.gate_template_patch(obj)
    if patch is None:
        return
    try:
        api.patch_workload(kind, str(meta.get("namespace")), str(meta.get("name")), patch)
    except KubeError as exc:
        report.errors.append(f"{_key(kind, obj)}: {exc}")
        return
    report.gated.append(_key(kind, obj))
    emit(
        api,
        kind,
        obj,
        "Gated",
        f"pods wait for the console's admission (scheduling gate "
        f"{wl.SCHEDULING_GATE}) in queue {queue}",
    )


def _vanished(cluster: Cluster, seen: set[str], now: datetime, report: IntakeReport) -> None:
    rows = (
        KubeWorkload.objects.filter(cluster=cluster, gone_at__isnull=True)
        .exclude(uid__in=seen)
        .select_related("job__queue")
    )
    for row in rows:
        KubeWorkload.objects.filter(pk=row.pk).update(gone_at=now)
        if row.job_id is not None:
            _finish(row, "gone", now, report)
        report.gone.append(f"{row.kind} {row.namespace}/{row.name}")


def sync_cluster_workloads(
    cluster_id: int, *, gateway=None, now: datetime | None = None
) -> IntakeReport:
    """One intake pass over a kubernetes cluster (module docstring).

    Returns:
        :class:`IntakeReport`; the resource groups in ``groups`` got capacity back and have
        an admission cycle enqueued (a new job enqueues its group's cycle itself).

    Raises:
        KubeError: a list failed (nothing is marked gone then).
    """
    cluster = Cluster.objects.get(pk=cluster_id)
    report = IntakeReport(cluster=cluster.name)
    now = now or timezone.now()
    with locks.try_session_lock(locks.KUBE_INTAKE, cluster.pk) as taken:
        if not taken:
            report.locked_out = True
            return report
        rvs = _pass(cluster, WorkloadApi(gateway or gateway_for(cluster)), now, report)
        Cluster.objects.filter(pk=cluster.pk).update(
            intake_resource_versions=rvs, intake_resynced_at=now
        )
    for group_id in sorted(report.groups):
        enqueue_admission_cycle(group_id)
    return report


def _pass(
    cluster: Cluster, api: WorkloadApi, now: datetime, report: IntakeReport
) -> dict[str, str]:
    """The full list pass; returns each kind's list resourceVersion (watch resume points)."""
    configs = get_catalogue().configs
    listed = {kind: api.list_workloads(kind) for kind in (*SUSPENDABLE, *GATED)}
    listed["Pod"] = api.list_queued_pods()
    seen: set[str] = set()
    for kind in SUSPENDABLE:
        for obj in listed[kind].items:
            _one(api, cluster, kind, obj, configs, now, report, seen)
    for kind in GATED:
        for obj in listed[kind].items:
            _gate(api, cluster, kind, obj, report)
    for pod in listed["Pod"].items:
        _one(api, cluster, "Pod", pod, configs, now, report, seen)
    _vanished(cluster, seen, now, report)
    return {kind: lst.resource_version for kind, lst in listed.items()}


def _watch(
    cluster: Cluster, api: WorkloadApi, rvs: dict[str, str], seconds: int, report: IntakeReport
) -> dict[str, str]:
    """Follow each kind's changes from its resume point (``seconds`` shared among the
    kinds); a kind whose point expired (410) loses it, so the next turn lists again."""
    configs = get_catalogue().configs
    kinds = (*SUSPENDABLE, *GATED, "Pod")
    per_kind = max(1, seconds // len(kinds))
    out = dict(rvs)
    for kind in kinds:
        if not out.get(kind):
            continue
        try:
            for etype, obj in api.watch_workloads(kind, out[kind], per_kind):
                out[kind] = str((obj.get("metadata") or {}).get("resourceVersion") or out[kind])
                report.events += 1
                _on_event(api, cluster, kind, etype, obj, configs, report)
        except Expired:
            out[kind] = ""
        except NotFound:
            continue  # the kind is not served (CRD not installed)
        except Retryable as exc:  # the stream broke: resume from the last point next turn
            report.errors.append(f"watch {kind}: {exc}")
    return out


def _on_event(
    api: WorkloadApi,
    cluster: Cluster,
    kind: str,
    etype: str,
    obj: dict,
    configs,
    report: IntakeReport,
) -> None:
    now = timezone.now()
    if etype == "DELETED":
        uid = str((obj.get("metadata") or {}).get("uid") or "")
        rows = KubeWorkload.objects.filter(cluster=cluster, uid=uid, gone_at__isnull=True)
        for row in rows.select_related("job__queue"):
            KubeWorkload.objects.filter(pk=row.pk).update(gone_at=now)
            if row.job_id is not None:
                _finish(row, "gone", now, report)
            report.gone.append(f"{row.kind} {row.namespace}/{row.name}")
        return
    if kind in GATED:
        _gate(api, cluster, kind, obj, report)
    else:
        _one(api, cluster, kind, obj, configs, now, report, set())


def intake_cluster(
    cluster_id: int, *, gateway=None, watch_s: int | None = None, now: datetime | None = None
) -> IntakeReport:
    """One intake turn: the full pass (:func:`sync_cluster_workloads`) when the last one is
    older than ``KUBE_INTAKE_RESYNC_S`` (default 30 s) or a resume point is missing, then a
    watch of every kind for about ``watch_s`` seconds (default ``KUBE_WATCH_S``; 0 = none)
    from the stored resume points. Single-flight per cluster.

    Raises:
        KubeError: a list or watch failed.
    """
    cluster = Cluster.objects.get(pk=cluster_id)
    now = now or timezone.now()
    due = (
        cluster.intake_resynced_at is None
        or not all(cluster.intake_resource_versions.get(k) for k in (*SUSPENDABLE, *GATED, "Pod"))
        or cluster.intake_resynced_at
        <= now - timedelta(seconds=float(settings.KUBE_INTAKE_RESYNC_S))
    )
    report = IntakeReport(cluster=cluster.name)
    with locks.try_session_lock(locks.KUBE_INTAKE, cluster.pk) as taken:
        if not taken:
            report.locked_out = True
            return report
        api = WorkloadApi(gateway or gateway_for(cluster))
        rvs = dict(cluster.intake_resource_versions)
        if due:
            rvs = _pass(cluster, api, now, report)
            Cluster.objects.filter(pk=cluster.pk).update(
                intake_resource_versions=rvs, intake_resynced_at=now
            )
        seconds = int(settings.KUBE_WATCH_S if watch_s is None else watch_s)
        if seconds > 0:
            rvs = _watch(cluster, api, rvs, seconds, report)
            Cluster.objects.filter(pk=cluster.pk).update(intake_resource_versions=rvs)
    for group_id in sorted(report.groups):
        enqueue_admission_cycle(group_id)
    return report
