"""Writing the console's decisions into objects users created: Events, the placement of an
admitted workload (then released), and suspension of a preempted or queued one.

Called by the intake pass (:mod:`scheduling.services.intake`), by the submission task for jobs
taken in from a cluster (:func:`release_kube_job`, in place of creating Pods) and after an
admission cycle evicted such a job (:func:`suspend_kube_job`). Every write is idempotent; a
failed one is retried by the next intake pass, which compares object and job again.
"""

from __future__ import annotations

import logging

from django.utils import timezone

from scheduling.backends import SubmissionError
from scheduling.backends.kubernetes import gateway_for, pod_assignment
from scheduling.choices import BOOKED_PLACEMENT_STATES, JobState
from scheduling.kube import workload_patches as wp
from scheduling.kube import workloads as wl
from scheduling.kube.device_resources import ManifestError, dra_drivers_for
from scheduling.kube.errors import KubeError, Permanent, Retryable
from scheduling.kube.workload_api import WorkloadApi
from scheduling.models import Job, JobEvent, KubeWorkload, Placement
from scheduling.selectors.device_models import get_catalogue
from scheduling.services import job_life
from scheduling.services.cluster_submission import fail_job

logger = logging.getLogger(__name__)

__all__ = ["emit", "record_placement", "suspend_object", "release_kube_job", "suspend_kube_job"]


def emit(
    api: WorkloadApi, kind: str, obj: dict, reason: str, message: str, *, warning: bool = False
) -> None:
    """Record an Event about ``obj`` (never raises: a lost Event is logged)."""
    meta = obj.get("metadata") or {}
    info = wl.KINDS.get(kind)
    body = wp.event_body(
        kind=kind,
        api_version=info.api_version if info else "v1",
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta.get("name")),
        uid=str(meta.get("uid") or ""),
        reason=reason,
        message=message,
        type_="Warning" if warning else "Normal",
        time=timezone.now().strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
    try:
        api.create_event(body)
    except KubeError as exc:
        logger.warning(
            "event %s on %s %s/%s not recorded: %s",
            reason,
            kind,
            meta.get("namespace"),
            meta.get("name"),
            exc,
        )


def _split(
    placements: list[Placement], workload: wl.Workload
) -> list[tuple[wl.PodSet, list[Placement]]]:
    """Placements (pod_index order) per pod set, in pod set order."""
    out, start = [], 0
    for ps in workload.pod_sets:
        mine = [p for p in placements if start <= p.pod_index < start + ps.count]
        if mine:
            out.append((ps, mine))
        start += ps.count
    return out


def _admissions(
    api: WorkloadApi,
    row: KubeWorkload,
    workload: wl.Workload,
    placements: list[Placement],
    catalogue,
) -> list[wp.Admission]:
    out = []
    mode = row.cluster.submission_mode
    for ps, mine in _split(placements, workload):
        assigns = tuple(pod_assignment(p) for p in mine)
        if mode != "dra":
            out.append(wp.Admission(ps, assigns))
            continue
        version = api.gw.dra_version()
        if version is None:
            raise ManifestError(
                f"cluster {row.cluster.name!r} serves no resource.k8s.io "
                "version; use submission mode hami or whole"
            )
        drivers: dict = {}
        for a in assigns:
            drivers.update(dra_drivers_for(a, catalogue))
        template, refs = wp.claim_template(
            workload, ps, assigns, drivers, f"resource.k8s.io/{version}", str(row.job_id)
        )
        api.ensure_claim_template(template)
        out.append(wp.Admission(ps, assigns, template["metadata"]["name"], refs))
    return out


def _fail(api: WorkloadApi, row: KubeWorkload, obj: dict, message: str) -> None:
    if row.job_id is not None:
        fail_job(row.job_id, message)
    emit(api, row.kind, obj, "AdmissionFailed", message, warning=True)


def record_placement(api: WorkloadApi, row: KubeWorkload, obj: dict, workload: wl.Workload) -> bool:
    """Write the admitted job's placement into ``obj`` and release it (unsuspend / ungate).

    Returns:
        True when the object was patched; False when there was nothing to record or the job
        was failed instead (a placement outside the object's cluster, or one the submission
        mode cannot express - the reason is on the job and in a Warning Event).

    Raises:
        Retryable: the API server did not answer (the caller retries).
    """
    if row.job_id is None:
        return False
    placements = list(
        Placement.objects.filter(job_id=row.job_id, state__in=BOOKED_PLACEMENT_STATES)
        .select_related("node__cluster")
        .order_by("pod_index")
    )
    if not placements:
        return False
    foreign = [p for p in placements if p.node.cluster_id != row.cluster_id]
    if foreign:
        _fail(
            api,
            row,
            obj,
            f"placed on node {foreign[0].node.name} of cluster "
            f"{foreign[0].node.cluster.name}, not the workload's cluster "
            f"{row.cluster.name}; give the queue a resource group of that "
            "cluster",
        )
        return False
    try:
        _patch_admitted(api, row, obj, workload, placements)
    except ManifestError as exc:
        _fail(api, row, obj, f"cannot record the placement: {exc}")
        return False
    except Permanent as exc:
        _fail(api, row, obj, f"the API server refused the admitted workload: {exc.message}")
        return False
    _mark_recorded(api, row, obj, placements)
    return True


def _patch_admitted(
    api: WorkloadApi,
    row: KubeWorkload,
    obj: dict,
    workload: wl.Workload,
    placements: list[Placement],
) -> None:
    """Patch ``obj`` with its placements in the cluster's submission mode: a gated Pod gets
    its assignment and loses its gate; a workload object gets each pod set's assignments
    (and, in DRA mode, its ResourceClaimTemplates) and is unsuspended.

    Raises:
        ManifestError: the submission mode cannot express the placement.
        Permanent / Retryable: the API server refused / did not answer.
    """
    catalogue = get_catalogue()
    job_id = str(row.job_id)
    if row.kind == "Pod":
        patch = wp.pod_admission_patch(
            obj,
            pod_assignment(placements[0]),
            mode=row.cluster.submission_mode,
            job_id=job_id,
            catalogue=catalogue,
        )
        api.patch_pod(row.namespace, row.name, patch)
        return
    admissions = _admissions(api, row, workload, placements, catalogue)
    patch = wp.admission_patch(
        row.kind,
        obj,
        admissions,
        mode=row.cluster.submission_mode,
        job_id=job_id,
        catalogue=catalogue,
        configs=list(catalogue.configs),
    )
    api.patch_workload(row.kind, row.namespace, row.name, patch)


def _mark_recorded(
    api: WorkloadApi, row: KubeWorkload, obj: dict, placements: list[Placement]
) -> None:
    """After the patch: the reserved placements are submitted (``backend_ref`` = the object),
    the row is recorded, and an ``Admitted`` Event names the nodes."""
    now = timezone.now()
    job_life.submit_placements(
        [p.pk for p in placements],
        now=now,
        updated=now,
        backend_ref=f"{row.kind}/{row.namespace}/{row.name}"[:253],
    )
    KubeWorkload.objects.filter(pk=row.pk).update(recorded=True, reason_written="")
    nodes = ", ".join(sorted({p.node.name for p in placements}))
    emit(
        api,
        row.kind,
        obj,
        "Admitted",
        f"admitted by the console (job {row.job_id}): {len(placements)} pod(s) on {nodes}",
    )


def suspend_object(api: WorkloadApi, row: KubeWorkload, obj: dict, reason: str) -> bool:
    """Hold ``obj`` back again: suspend it with its original templates (a gated Pod is
    deleted instead; its controller creates a new, gated one). Returns False (logged) when
    the API call failed; the next intake pass tries again."""
    meta = obj.get("metadata") or {}
    try:
        if row.kind == "Pod":
            api.delete_pod(row.namespace, row.name)
        else:
            api.patch_workload(
                row.kind,
                row.namespace,
                row.name,
                wp.suspend_patch(row.kind, obj, row.original_spec or None, reason),
            )
    except KubeError as exc:
        logger.warning(
            "suspending %s %s/%s failed: %s", row.kind, meta.get("namespace"), meta.get("name"), exc
        )
        return False
    KubeWorkload.objects.filter(pk=row.pk).update(recorded=False, reason_written=reason)
    emit(api, row.kind, obj, "Suspended", reason, warning=reason.startswith("preempted"))
    return True


def _live_row(job_id: int) -> KubeWorkload | None:
    return (
        KubeWorkload.objects.filter(job_id=job_id, gone_at__isnull=True)
        .select_related("cluster")
        .order_by("-pk")
        .first()
    )


def _read(api: WorkloadApi, row: KubeWorkload) -> dict | None:
    if row.kind == "Pod":
        return api.gw.get_pod(row.namespace, row.name)
    return api.get_workload(row.kind, row.namespace, row.name)


def release_kube_job(job_id: int, *, gateway=None) -> str:
    """Submission of a job taken in from a cluster: record its placement in the object.

    Returns:
        The job's state afterwards.

    Raises:
        SubmissionError: retryable when the API server did not answer.
    """
    row = _live_row(job_id)
    if row is None:
        fail_job(job_id, "its Kubernetes object is gone")
        return JobState.FAILED
    api = WorkloadApi(gateway or gateway_for(row.cluster))
    try:
        obj = _read(api, row)
        if obj is None:
            return Job.objects.values_list("state", flat=True).get(pk=job_id)
        configs = list(get_catalogue().configs)
        workload = (
            wl.read_gated_pod(obj, configs)
            if row.kind == "Pod"
            else wl.read_workload(row.kind, obj, configs)
        )
        record_placement(api, row, obj, workload)
    except Retryable as exc:
        raise SubmissionError(
            f"HTTP {exc.status} {exc.reason}: {exc.message}", retryable=True
        ) from exc
    except (KubeError, wl.WorkloadError) as exc:
        fail_job(job_id, f"cannot release the workload: {exc}")
    return Job.objects.values_list("state", flat=True).get(pk=job_id)


def suspend_kube_job(job_id: int, message: str, *, gateway=None) -> None:
    """A job taken in from a cluster was preempted: suspend its object (never raises; the
    intake pass suspends it later when this fails)."""
    row = _live_row(job_id)
    if row is None:
        return
    try:
        api = WorkloadApi(gateway or gateway_for(row.cluster))
        obj = _read(api, row)
        if obj is not None:
            suspend_object(api, row, obj, f"preempted: {message}")
    except KubeError as exc:
        logger.warning("job %s preempted; suspending its object failed: %s", job_id, exc)
        return
    JobEvent.objects.create(
        job_id=job_id, kind="suspended", message=f"{row.kind} {row.namespace}/{row.name} suspended"
    )
