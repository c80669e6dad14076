"""Reconcile of kubernetes clusters: what the cluster runs -> placement and job states.

Three entry points, all idempotent (every move is a conditional UPDATE):

* :func:`resync` - the periodic full pass over a pod list (``LIST`` with the console's label
  selector, or the ``RELISTED`` list a watch yields after 410 Gone). Placements are read
  *before* the list, so a placement seen as submitted had its Pod created before the list.
* :func:`watch` - a pod watch from the cluster's stored ``watch_resource_version``; each event
  updates one placement; 410 Expired relists (the gateway yields ``RELISTED``) and runs
  :func:`resync` on the fresh list; the resume point is saved as events arrive.
* :func:`handle_lost_node` - called by the inventory sync for a vanished node (it lives with
  the pod-state rules in :mod:`scheduling.services.kube_pod_state`; re-exported here).

What one pod means for its placement and job (the pod-state table: pending, running,
succeeded, failed, lost, terminating) is :mod:`scheduling.services.kube_pod_state`; this module
decides which pods to apply, when, and under which lock.

Crash consistency: a placement still ``reserved`` ``KUBE_SUBMIT_GRACE_S`` (default 60 s) after
it was committed means the submitting worker died (or its task was lost) between the commit
and the create. The resync then adopts the Pod when it exists (deterministic name) or submits
it again through :func:`scheduling.services.cluster_submission.submit_to_cluster` (which fails
the job and releases the reservation on a permanent error). A console-labelled Pod whose
placement is no longer booked is deleted (its devices are free in the console, so running it
would double-book them); one whose placement the console does not know is reported in
``Cluster.unknown_pods`` and left alone - never adopted, never booked twice.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from core import locks
from scheduling.backends import SubmissionError, delete_pods_on_commit
from scheduling.backends.kubernetes import gateway_for
from scheduling.choices import (
    BOOKED_PLACEMENT_STATES,
    JOB_SOURCE_KUBE,
    Backend,
    JobState,
    PlacementState,
)
from scheduling.kube import inventory as kinv
from scheduling.kube.manifests import LABEL_PLACEMENT
from scheduling.models import Cluster, Placement
from scheduling.services.cluster_submission import submit_to_cluster
from scheduling.services.kube_pod_state import (
    LOST_REASONS,
    apply_pod,
    handle_lost_node,
    pod_gone,
    pod_key,
    record_job_event,
    resource_group_of,
)

logger = logging.getLogger(__name__)

KUBE_RECONCILE_LOCK = locks.KUBE_RECONCILE
"""Advisory lock namespace of the per-cluster reconcile (next to core.locks)."""

__all__ = [
    "ReconcileReport",
    "resync",
    "watch",
    "reconcile_cluster",
    "apply_pod",
    "pod_gone",
    "handle_lost_node",
    "KUBE_RECONCILE_LOCK",
    "LOST_REASONS",
]


@dataclass
class ReconcileReport:
    """What a reconcile pass did.

    Attributes:
        cluster: cluster name.
        locked_out: another reconcile of the cluster was running (nothing done).
        changed: placement ids whose state changed.
        adopted: placement ids found reserved whose Pod already existed.
        resubmitted: placement ids submitted again after a lost submission.
        lost: placement ids whose Pod vanished or was evicted.
        orphans_deleted: ``namespace/name`` of pods deleted because their placement ended.
        unknown: ``namespace/name`` of console pods without a placement in this console.
        events: watch events processed.
        relisted: True when a full list was processed (resync or 410).
        groups: resource group ids where capacity was freed (run their cycles).
    """

    cluster: str
    locked_out: bool = False
    changed: list[int] = field(default_factory=list)
    adopted: list[int] = field(default_factory=list)
    resubmitted: list[int] = field(default_factory=list)
    lost: list[int] = field(default_factory=list)
    orphans_deleted: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    events: int = 0
    relisted: bool = False
    groups: set[int] = field(default_factory=set)


def _placement_id(pod: dict) -> int | None:
    value = ((pod.get("metadata") or {}).get("labels") or {}).get(LABEL_PLACEMENT, "")
    return int(value) if str(value).isdigit() else None


def _gateway(cluster: Cluster, gateway):
    if gateway is not None:
        return gateway
    return gateway_for(cluster)


# ------------------------------------------------------------------------------------------
# Full pass
# ------------------------------------------------------------------------------------------


def _delete_orphan(p: Placement, pod: dict, report: ReconcileReport) -> None:
    """A console pod whose placement is no longer booked: delete it unless it has finished."""
    if not kinv.pod_state(pod).terminal:
        delete_pods_on_commit([p])
        report.orphans_deleted.append(pod_key(pod))


def _apply_booked(p: Placement, pod: dict, report: ReconcileReport, now: datetime) -> set[int]:
    """:func:`apply_pod` for booked placement ``p``; ``report.changed`` gets its id when its
    state moved. Returns the resource group ids where capacity was freed."""
    before = p.state
    groups = apply_pod(p, pod, now=now)
    if Placement.objects.filter(pk=p.pk).exclude(state=before).exists():
        report.changed.append(p.pk)
    return groups


def _grace() -> timedelta:
    return timedelta(seconds=float(settings.KUBE_SUBMIT_GRACE_S))


def resync(
    cluster: Cluster,
    pods: list[dict] | None = None,
    *,
    gateway=None,
    now: datetime | None = None,
    placements: list[Placement] | None = None,
) -> ReconcileReport:
    """Bring every placement of ``cluster`` in line with the cluster's console pods.

    Args:
        cluster: the kubernetes Cluster.
        pods: the full list of console pods (None: list them now).
        gateway: the cluster's gateway (default: :func:`gateway_for`).
        now: current time.
        placements: booked placements read before ``pods`` was listed (None: read now,
            before listing). A placement created after the list is left for the next pass.

    Returns:
        :class:`ReconcileReport` (``Cluster.unknown_pods`` and ``resynced_at`` are saved).
    """
    now = now or timezone.now()
    report = ReconcileReport(cluster=cluster.name, relisted=True)
    gw = _gateway(cluster, gateway)
    if placements is None:
        placements = _booked(cluster)
    if pods is None:
        pods = gw.list_pods().items
    by_id: dict[int, dict] = {}
    for pod in pods:
        pid = _placement_id(pod)
        if pid is None:
            report.unknown.append(pod_key(pod))
        else:
            by_id[pid] = pod
    booked = {p.pk: p for p in placements}
    _match_pods(cluster, by_id, booked, report, now)
    _resubmit(_missing_pods(by_id, booked, report, now), report)
    report.unknown.sort()
    if report.unknown:
        logger.warning(
            "cluster %s: %d console pod(s) unknown to this console: %s",
            cluster.name,
            len(report.unknown),
            ", ".join(report.unknown[:10]),
        )
    Cluster.objects.filter(pk=cluster.pk).update(unknown_pods=report.unknown, resynced_at=now)
    return report


def _match_pods(
    cluster: Cluster,
    by_id: dict[int, dict],
    booked: dict[int, Placement],
    report: ReconcileReport,
    now: datetime,
) -> None:
    """Pods of placements the console knows: orphans deleted, booked ones applied."""
    known = {
        p.pk: p
        for p in Placement.objects.select_related("node__cluster").filter(pk__in=list(by_id))
    }
    for pid, pod in sorted(by_id.items()):
        p = known.get(pid)
        if p is None or p.node.cluster_id != cluster.pk:
            report.unknown.append(pod_key(pod))
            continue
        if p.state not in BOOKED_PLACEMENT_STATES:
            _delete_orphan(p, pod, report)
            continue
        if pid not in booked:
            continue  # booked after our read: next pass
        if p.state == PlacementState.RESERVED:
            report.adopted.append(pid)
        report.groups |= _apply_booked(p, pod, report, now)


def _missing_pods(
    by_id: dict[int, dict], booked: dict[int, Placement], report: ReconcileReport, now: datetime
) -> set[int]:
    """Booked placements without a pod: a submitted/running one lost its pod; a reserved one
    past the submit grace period is returned (its job id) for resubmission."""
    resubmit_jobs: set[int] = set()
    for pid, p in sorted(booked.items()):
        if pid in by_id:
            continue
        if p.state == PlacementState.TERMINATING:
            report.groups |= pod_gone(p, f"pod {p.backend_ref or pid} deleted", now=now)
            report.changed.append(pid)
        elif p.state in (PlacementState.SUBMITTED, PlacementState.RUNNING):
            report.groups |= pod_gone(
                p, f"pod {p.backend_ref or pid} was deleted outside the console", now=now
            )
            report.lost.append(pid)
            report.changed.append(pid)
        elif p.state == PlacementState.RESERVED and p.created <= now - _grace():
            resubmit_jobs.add(p.job_id)
            report.resubmitted.append(pid)
    return resubmit_jobs


def _resubmit(job_ids: set[int], report: ReconcileReport) -> None:
    """Finish the submissions whose worker stopped (a retryable error waits for next pass)."""
    for job_id in sorted(job_ids):
        try:
            state = submit_to_cluster(job_id)
        except SubmissionError as exc:
            logger.warning("resubmitting job %s failed (%s); next pass retries", job_id, exc)
            continue
        record_job_event(
            job_id,
            "resubmitted",
            "submission finished by the reconciler after the submitting worker stopped",
        )
        if state == JobState.FAILED:
            report.groups.add(resource_group_of(job_id))


# ------------------------------------------------------------------------------------------
# Watch
# ------------------------------------------------------------------------------------------


def watch(
    cluster: Cluster, *, gateway=None, timeout_s: int = 30, now_fn=timezone.now
) -> ReconcileReport:
    """Follow pod changes from ``cluster.watch_resource_version`` for about ``timeout_s``.

    An empty resume point, or a 410 Expired, makes the gateway relist; the list is
    reconciled with :func:`resync` (placements read before the list). The resume point is
    saved after every event.
    """
    report = ReconcileReport(cluster=cluster.name)
    gw = _gateway(cluster, gateway)
    rv = cluster.watch_resource_version or None
    # read before the gateway's first list (it lists first when there is no resume point)
    placements_before = _booked(cluster) if rv is None else None
    for ev in gw.watch_pods(resource_version=rv, timeout_s=timeout_s):
        report.events += 1
        if ev.type == "RELISTED":
            if placements_before is not None:
                sub = resync(
                    cluster, ev.objects, gateway=gw, now=now_fn(), placements=placements_before
                )
            else:
                # 410 mid-watch: placements read now would be newer than the gateway's list
                # (a pod created in between would look deleted), so read them, list again.
                sub = resync(cluster, None, gateway=gw, now=now_fn())
            _merge(report, sub)
            placements_before = None
        else:
            report.groups |= _apply_event(cluster, ev.type, ev.object or {}, report, now_fn())
        if ev.resource_version and ev.resource_version != rv:
            rv = ev.resource_version
            Cluster.objects.filter(pk=cluster.pk).update(watch_resource_version=rv)
    cluster.watch_resource_version = rv or ""
    return report


def _booked(cluster: Cluster) -> list[Placement]:
    """Booked placements whose Pods the console creates (jobs taken in from the cluster run
    the user's objects, followed by :mod:`scheduling.services.intake`)."""
    return list(
        Placement.objects.select_related("node__cluster", "job")
        .filter(node__cluster=cluster, state__in=BOOKED_PLACEMENT_STATES)
        .exclude(job__source=JOB_SOURCE_KUBE)
    )


def _merge(report: ReconcileReport, sub: ReconcileReport) -> None:
    report.relisted = report.relisted or sub.relisted
    for name in ("changed", "adopted", "resubmitted", "lost", "orphans_deleted", "unknown"):
        getattr(report, name).extend(getattr(sub, name))
    report.groups |= sub.groups


def _apply_event(
    cluster: Cluster, etype: str, pod: dict, report: ReconcileReport, now: datetime
) -> set[int]:
    pid = _placement_id(pod)
    p = (
        Placement.objects.select_related("node__cluster").filter(pk=pid).first()
        if pid is not None
        else None
    )
    if p is None or p.node.cluster_id != cluster.pk:
        if etype != "DELETED" and pod_key(pod) not in report.unknown:
            report.unknown.append(pod_key(pod))
        return set()
    if etype == "DELETED":
        if p.state == PlacementState.TERMINATING:
            return pod_gone(p, f"pod {pod_key(pod)} deleted", now=now)
        if p.state in (PlacementState.SUBMITTED, PlacementState.RUNNING):
            state = kinv.pod_state(pod)
            if state.terminal:  # deleted after it finished: record the outcome first
                return apply_pod(p, pod, now=now)
            report.lost.append(p.pk)
            return pod_gone(p, f"pod {pod_key(pod)} was deleted outside the console", now=now)
        return set()
    if p.state not in BOOKED_PLACEMENT_STATES:
        _delete_orphan(p, pod, report)
        return set()
    return _apply_booked(p, pod, report, now)


# ------------------------------------------------------------------------------------------
# Task entry point
# ------------------------------------------------------------------------------------------


def reconcile_cluster(
    cluster_id: int, *, gateway=None, watch_s: int | None = None, now: datetime | None = None
) -> ReconcileReport:
    """One reconcile turn of a kubernetes cluster: a full :func:`resync` when the last one is
    older than ``KUBE_RESYNC_S`` (default 300 s) or there is no watch resume point, then a
    :func:`watch` of ``watch_s`` seconds (default ``KUBE_WATCH_S``, 20; 0 = no watch).

    Single-flight per cluster (session advisory lock): a concurrent call returns at once with
    ``locked_out``.

    Raises:
        KubeError: the cluster could not be listed or watched.
    """
    cluster = Cluster.objects.get(pk=cluster_id)
    report = ReconcileReport(cluster=cluster.name)
    if cluster.backend != Backend.KUBERNETES:
        raise ValueError(f"cluster {cluster.name!r} is {cluster.backend}, not kubernetes")
    with locks.try_session_lock(KUBE_RECONCILE_LOCK, cluster.pk) as taken:
        if not taken:
            report.locked_out = True
            return report
        gw = _gateway(cluster, gateway)
        now = now or timezone.now()
        resync_s = float(settings.KUBE_RESYNC_S)
        due = cluster.resynced_at is None or cluster.resynced_at <= now - timedelta(
            seconds=resync_s
        )
        if due or not cluster.watch_resource_version:
            placements = _booked(cluster)
            lst = gw.list_pods()
            _merge(report, resync(cluster, lst.items, gateway=gw, now=now, placements=placements))
            cluster.watch_resource_version = lst.resource_version
            Cluster.objects.filter(pk=cluster.pk).update(
                watch_resource_version=lst.resource_version
            )
        seconds = int(settings.KUBE_WATCH_S if watch_s is None else watch_s)
        if seconds > 0:
            sub = watch(cluster, gateway=gw, timeout_s=seconds)
            _merge(report, sub)
            report.events = sub.events
    report.unknown = sorted(set(report.unknown))
    return report
