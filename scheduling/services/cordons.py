"""Device health written back to the cluster: console cordons, drains, and their write-back.

A device gets a console cordon (``Device.cordon_reason``) when

* the console marks it unhealthy (:func:`mark_unhealthy`: a telemetry verdict such as a
  critical XID through :func:`scheduling.services.devices.set_device_health`, or
  ``DEVICE_FAILURE_THRESHOLD`` pod failures on it within ``DEVICE_FAILURE_WINDOW_S``,
  :func:`note_pod_failure`); ``Device.console_unhealthy`` is then set and the inventory sync
  never turns it back to healthy - only the console clears it (recovery, operator);
* an operator cordons it (:func:`cordon_device`, API and device page).

Jobs booked on a newly cordoned device are drained by policy (:data:`DRAIN_POLICIES`):
``wait`` leaves them running (the device takes no new work), ``requeue`` evicts them back to
their queue (a job taken in from a cluster is suspended), ``fail`` fails them. Health cordons
use ``DEVICE_DRAIN_POLICY``; an operator names the policy with each cordon.

:func:`sync_device_cordons` writes the cordons into the cluster so that HAMi and
kube-scheduler stop using the devices too: HAMi devices go into the node annotation
``hami.io/device-cordon`` (comma-separated device uuids, HAMi ``DeviceCordonAnnotation`` in
``pkg/device/nvidia/device.go``: excluded from new allocations, running pods untouched); the
console remembers which entries are its own in ``console.llmops.io/device-cordon`` so it
never removes an operator's ``kubectl annotate``. DRA devices get a DeviceTaintRule with a
``NoSchedule`` taint (KEP-5055) where the cluster serves the API; where it does not, the
report says so.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Count, F
from django.utils import timezone

from core import locks
from core.locks import lock_rows
from scheduling.admission import CauseKind, reason_fields
from scheduling.backends import delete_pods_on_commit
from scheduling.backends.kubernetes import gateway_for
from scheduling.choices import (
    BOOKED_PLACEMENT_STATES,
    JOB_SOURCE_KUBE,
    Backend,
    JobState,
    PlacementState,
)
from scheduling.dispatch import enqueue_admission_cycle, enqueue_cordon_sync
from scheduling.kube.errors import KubeError
from scheduling.kube.hami.nodes import CORDON_ANNOTATION
from scheduling.kube.manifests import CONSOLE_SELECTOR, LABEL_MANAGED_BY, MANAGED_BY
from scheduling.kube.workload_api import WorkloadApi
from scheduling.models import Cluster, Device, Job, JobEvent, Placement, PlacementDevice
from scheduling.services import job_life
from scheduling.services.intake_record import suspend_kube_job

logger = logging.getLogger(__name__)

__all__ = [
    "DRAIN_POLICIES",
    "CONSOLE_CORDON_ANNOTATION",
    "TAINT_KEY",
    "CordonReport",
    "mark_unhealthy",
    "clear_unhealthy",
    "cordon_device",
    "uncordon_device",
    "drain_device",
    "note_pod_failure",
    "sync_device_cordons",
]

DRAIN_POLICIES = ("wait", "requeue", "fail")
CONSOLE_CORDON_ANNOTATION = "console.llmops.io/device-cordon"
"""Node annotation: the entries of ``hami.io/device-cordon`` the console wrote."""
TAINT_KEY = "console.llmops.io/cordoned"
"""Device taint key of the console's DeviceTaintRules."""
HEALTH_PREFIX = "unhealthy: "


def _after_cordon(device: Device, policy: str, message: str) -> None:
    if device.node.cluster.backend == Backend.KUBERNETES:
        enqueue_cordon_sync(device.node.cluster_id)
    drain_device(device.pk, policy, message)


def mark_unhealthy(device_id: int, reason: str, *, policy: str | None = None) -> bool:
    """The console's verdict: ``device_id`` is unhealthy (kept so across inventory syncs),
    cordoned in its cluster, and its jobs drained by ``policy`` (default
    ``DEVICE_DRAIN_POLICY``). Returns False when it was already marked."""
    cordon = f"{HEALTH_PREFIX}{reason}"[:500]
    changed = (
        Device.objects.filter(pk=device_id)
        .exclude(console_unhealthy=True)
        .update(console_unhealthy=True, healthy=False, cordoned=True, updated=timezone.now())
    )
    Device.objects.filter(pk=device_id, cordon_reason="").update(cordon_reason=cordon)
    if changed:
        device = Device.objects.select_related("node__cluster").get(pk=device_id)
        _after_cordon(
            device,
            policy or settings.DEVICE_DRAIN_POLICY,
            f"device {device.uuid} is unhealthy ({reason})",
        )
    return bool(changed)


def clear_unhealthy(device_id: int) -> bool:
    """The console's verdict is healthy again: the health cordon is lifted (an operator's
    stays); the registration's own health flag applies from the next inventory sync."""
    now = timezone.now()
    changed = Device.objects.filter(pk=device_id, console_unhealthy=True).update(
        console_unhealthy=False, healthy=True, updated=now
    )
    lifted = Device.objects.filter(pk=device_id, cordon_reason__startswith=HEALTH_PREFIX).update(
        cordon_reason="", cordoned=False, updated=now
    )
    if lifted:
        cluster = (
            Device.objects.filter(pk=device_id)
            .values_list("node__cluster_id", "node__cluster__backend")
            .first()
        )
        if cluster and cluster[1] == Backend.KUBERNETES:
            enqueue_cordon_sync(cluster[0])
    return bool(changed)


def cordon_device(device: Device, *, reason: str, user=None, policy: str = "wait") -> Device:
    """An operator cordons ``device``: no new work, written to the cluster, jobs on it
    drained by ``policy`` (``wait`` | ``requeue`` | ``fail``). Cordoning a cordoned device
    again updates the reason; with ``wait`` its jobs get no second event, with ``requeue`` or
    ``fail`` they are drained now.

    Raises:
        ValueError: unknown policy, or a NUL character in ``reason``.
    """
    if policy not in DRAIN_POLICIES:
        raise ValueError(f"drain policy must be one of {', '.join(DRAIN_POLICIES)}")
    if "\x00" in reason:
        raise ValueError("the reason must not contain NUL characters")
    who = getattr(user, "username", "") or "operator"
    text = f"cordoned by {who}" + (f": {reason}" if reason else "")
    with transaction.atomic():
        was_cordoned = (
            lock_rows(Device).filter(pk=device.pk).values_list("cordoned", flat=True).first()
        )
        Device.objects.filter(pk=device.pk).update(
            cordon_reason=text[:500], cordoned=True, updated=timezone.now()
        )
    device.refresh_from_db()
    if was_cordoned and policy == "wait":
        # a repeat (or a new reason): its jobs were told already and keep running
        if device.node.cluster.backend == Backend.KUBERNETES:
            enqueue_cordon_sync(device.node.cluster_id)
        return device
    _after_cordon(device, policy, f"device {device.uuid} {text}")
    return device


def uncordon_device(device: Device, *, user=None) -> Device:
    """Lift the console's cordon of ``device`` (a device the console still finds unhealthy
    keeps its health cordon)."""
    fields = {"cordon_reason": "", "cordoned": False, "updated": timezone.now()}
    if device.console_unhealthy:
        fields = {"cordon_reason": f"{HEALTH_PREFIX}still unhealthy"}
    Device.objects.filter(pk=device.pk).update(**fields)
    device.refresh_from_db()
    if device.node.cluster.backend == Backend.KUBERNETES:
        enqueue_cordon_sync(device.node.cluster_id)
    return device


def drain_device(device_id: int, policy: str, message: str) -> list[int]:
    """Apply ``policy`` to every job booked on the device; returns the job ids touched."""
    job_ids = sorted(
        set(
            PlacementDevice.objects.filter(
                device_id=device_id, placement__state__in=BOOKED_PLACEMENT_STATES
            ).values_list("placement__job_id", flat=True)
        )
    )
    for job_id in job_ids:
        _drain_job(job_id, policy, message)
    return job_ids


def _drain_job(job_id: int, policy: str, message: str) -> None:
    now = timezone.now()
    with transaction.atomic():
        job = (
            lock_rows(Job)
            .select_related("queue")
            .filter(pk=job_id, state__in=[JobState.ADMITTED, JobState.RUNNING])
            .first()
        )
        if job is None:
            return
        if policy == "wait":
            JobEvent.objects.create(
                job=job,
                kind="device-cordoned",
                message=f"{message}; the job keeps running (drain: wait)",
            )
            return
        placements = list(
            lock_rows(Placement)
            .select_related("node__cluster")
            .filter(job=job, state__in=BOOKED_PLACEMENT_STATES)
            .order_by("pk")
        )
        if job.source == JOB_SOURCE_KUBE:
            transaction.on_commit(lambda: suspend_kube_job(job_id, message))
        else:  # pods go once the release is committed, never inside this transaction
            delete_pods_on_commit(placements)
        job_life.release_placements(
            [p.pk for p in placements], now=now, message=f"drained: {message}"
        )
        drained = {"event": f"{message}; {policy}", "event_kind": "drained"}
        if policy == "requeue":
            job_life.requeue_jobs(
                job,
                requeue_count=F("requeue_count") + 1,
                **drained,
                **reason_fields(CauseKind.CAPACITY, f"requeued: {message}"),
            )
        else:
            job_life.fail_jobs(
                job,
                now=now,
                only_from=[JobState.ADMITTED, JobState.RUNNING],
                **drained,
                **reason_fields(CauseKind.POLICY, f"failed: {message}"),
            )
        enqueue_admission_cycle(job.queue.resource_group_id)


def note_pod_failure(placement_id: int, *, now: datetime | None = None) -> list[int]:
    """A pod of ``placement_id`` failed (not lost): mark unhealthy each of its devices that
    saw ``DEVICE_FAILURE_THRESHOLD`` failed pods within ``DEVICE_FAILURE_WINDOW_S``.
    Returns the ids of the devices marked."""
    now = now or timezone.now()
    since = now - timedelta(seconds=float(settings.DEVICE_FAILURE_WINDOW_S))
    threshold = int(settings.DEVICE_FAILURE_THRESHOLD)
    devices = list(
        PlacementDevice.objects.filter(placement_id=placement_id).values_list(
            "device_id", flat=True
        )
    )
    counts = dict(
        PlacementDevice.objects.filter(
            device_id__in=devices,
            placement__state=PlacementState.FAILED,
            placement__ended_at__gte=since,
        )
        .values("device_id")
        .annotate(n=Count("id"))
        .values_list("device_id", "n")
    )
    marked = []
    for device_id in devices:
        if counts.get(device_id, 0) >= threshold and mark_unhealthy(
            device_id,
            f"{counts[device_id]} pods failed on it within "
            f"{int(settings.DEVICE_FAILURE_WINDOW_S)} s",
        ):
            marked.append(device_id)
    return marked


# -- write-back ------------------------------------------------------------------------------


@dataclass
class CordonReport:
    """What :func:`sync_device_cordons` wrote."""

    cluster: str
    locked_out: bool = False
    nodes_patched: list[str] = field(default_factory=list)
    rules_created: list[str] = field(default_factory=list)
    rules_deleted: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _csv(value: object) -> set[str]:
    return {u.strip() for u in str(value or "").split(",") if u.strip()}


def _node_patch(node: dict, mine: set[str]) -> dict | None:
    """Merge patch making the node's cordon annotation hold ``mine`` (the console's), keeping
    entries someone else wrote; None when nothing changes."""
    meta = node.get("metadata") or {}
    ann = meta.get("annotations") or {}
    current, before = _csv(ann.get(CORDON_ANNOTATION)), _csv(ann.get(CONSOLE_CORDON_ANNOTATION))
    wanted = (current - (before - mine)) | mine
    if wanted == current and before == mine:
        return None
    return {
        "metadata": {
            "resourceVersion": meta.get("resourceVersion"),
            "annotations": {
                CORDON_ANNOTATION: ",".join(sorted(wanted)) or None,
                CONSOLE_CORDON_ANNOTATION: ",".join(sorted(mine)) or None,
            },
        }
    }


def taint_rule_name(dra_device: str) -> str:
    """DeviceTaintRule name of a DRA device ``<driver>/<pool>/<device>``."""
    return f"llmops-cordon-{hashlib.sha256(dra_device.encode()).hexdigest()[:16]}"


def taint_rule(version: str, dra_device: str, reason: str) -> dict:
    """A DeviceTaintRule tainting one DRA device ``NoSchedule`` (KEP-5055)."""
    driver, pool, device = dra_device.split("/", 2)
    return {
        "apiVersion": f"resource.k8s.io/{version}",
        "kind": "DeviceTaintRule",
        "metadata": {
            "name": taint_rule_name(dra_device),
            "labels": {LABEL_MANAGED_BY: MANAGED_BY},
            "annotations": {"console.llmops.io/reason": reason[:500]},
        },
        "spec": {
            "deviceSelector": {"driver": driver, "pool": pool, "device": device},
            "taint": {"key": TAINT_KEY, "value": "true", "effect": "NoSchedule"},
        },
    }


def _sync_nodes(api: WorkloadApi, cluster: Cluster, report: CordonReport) -> None:
    mine: dict[str, set[str]] = {}
    for name, uuid, hami_id in (
        Device.objects.filter(node__cluster=cluster, removed_at__isnull=True)
        .exclude(cordon_reason="")
        .exclude(source="dra")
        .values_list("node__name", "uuid", "hami_id")
    ):
        mine.setdefault(name, set()).add(hami_id or uuid)
    for node in api.gw.list_nodes().items:
        name = str((node.get("metadata") or {}).get("name"))
        patch = _node_patch(node, mine.get(name, set()))
        if patch is None:
            continue
        try:
            api.patch_node(name, patch)
        except KubeError as exc:
            report.errors.append(f"node {name}: {exc}")
            continue
        report.nodes_patched.append(name)


def _sync_rules(api: WorkloadApi, cluster: Cluster, report: CordonReport) -> None:
    wanted = dict(
        Device.objects.filter(node__cluster=cluster, removed_at__isnull=True, source="dra")
        .exclude(cordon_reason="")
        .exclude(dra_device="")
        .values_list("dra_device", "cordon_reason")
    )
    version = api.taint_rule_version()
    if version is None:
        if wanted:
            report.errors.append(
                "the cluster serves no DeviceTaintRule API; DRA devices "
                f"{', '.join(sorted(wanted))} are cordoned in the console only"
            )
        return
    have = {r["metadata"]["name"] for r in api.list_taint_rules(version, CONSOLE_SELECTOR).items}
    rules = {taint_rule_name(d): taint_rule(version, d, r) for d, r in wanted.items()}
    for name in sorted(set(rules) - have):
        api.create_taint_rule(version, rules[name])
        report.rules_created.append(name)
    for name in sorted(have - set(rules)):
        api.delete_taint_rule(version, name)
        report.rules_deleted.append(name)


def sync_device_cordons(cluster_id: int, *, gateway=None) -> CordonReport:
    """Write the console's cordons of a kubernetes cluster (module docstring); single-flight
    per cluster. Idempotent: a second run patches nothing.

    Raises:
        KubeError: the node or rule list failed.
    """
    cluster = Cluster.objects.get(pk=cluster_id)
    report = CordonReport(cluster=cluster.name)
    with locks.try_session_lock(locks.KUBE_CORDONS, cluster.pk) as taken:
        if not taken:
            report.locked_out = True
            return report
        api = WorkloadApi(gateway or gateway_for(cluster))
        _sync_nodes(api, cluster, report)
        _sync_rules(api, cluster, report)
    if report.errors:
        logger.warning("cluster %s cordons: %s", cluster.name, "; ".join(report.errors))
    return report
