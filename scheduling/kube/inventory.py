"""Cluster objects -> plain inventory records, and Pod status -> job state.

* Nodes: HAMi registration annotations are parsed by the placement core's parser
  (``scheduling.kube.hami.nodes.snapshot_from_kube``, shared/docs/hami.md §3.4), which already
  marks devices of a stale handshake (``Requesting_<t>`` older than 60 s with allocatable 0)
  unhealthy; this module only adds the cluster-level rule that a node that is
  ``spec.unschedulable`` or whose ``Ready`` condition is not True is unavailable.
* ResourceSlices: read by :mod:`scheduling.kube.slices` (schema-checked, bounded; its names
  are re-exported here).
* :func:`pod_state` maps Pod phase + conditions + container states to a job-facing state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from scheduling.devices.defaults import default_device_configs
from scheduling.kube.hami.nodes import add_node
from scheduling.kube.limits import DEFAULT_LIMITS, InventoryLimits
from scheduling.kube.slices import (
    DRIVER_VENDORS,
    CounterSet,
    DraDevice,
    DraInventory,
    dra_devices_to_placement,
    parse_quantity,
    slices_to_inventory,
)
from scheduling.placement.types import ClusterSnapshot

__all__ = [
    "DraDevice",
    "CounterSet",
    "DraInventory",
    "parse_quantity",
    "nodes_to_snapshot",
    "slices_to_inventory",
    "dra_devices_to_placement",
    "DRIVER_VENDORS",
    "PodState",
    "pod_state",
    "job_state",
    "PENDING",
    "STARTING",
    "RUNNING",
    "SUCCEEDED",
    "FAILED",
    "TERMINATING",
    "UNKNOWN",
]


def nodes_to_snapshot(
    nodes: Sequence[Mapping[str, Any]],
    *,
    now: datetime,
    configs: Sequence[Any] | None = None,
    limits: InventoryLimits = DEFAULT_LIMITS,
) -> ClusterSnapshot:
    """Nodes (API dicts) -> placement ``ClusterSnapshot`` (HAMi registrations).

    Each node is parsed by ``scheduling.kube.hami.nodes.node_from_kube`` with ``configs``
    (default: ``scheduling.devices.defaults.default_device_configs()``, HAMi v2.10.0
    chart defaults); nodes that are cordoned (``spec.unschedulable``) or not ``Ready`` are
    not schedulable. Unlike ``place``'s snapshot, the same registered id on two nodes is left
    to the caller: the inventory sync keys devices by identity (a legacy Hygon ``DCU-0`` on
    two nodes is two cards, :mod:`scheduling.kube.identity`) and reports real conflicts.

    Args:
        nodes: Node dicts as returned by the API.
        now: current time (handshake staleness is judged against it).
        configs: HAMi device configs (``DeviceModelConfig`` list).
        limits: per-node bounds (:class:`~scheduling.kube.limits.InventoryLimits`).

    Raises:
        ValueError: a node without a name or duplicate node names (per-node registration
            errors are kept in ``Node.error`` instead).
    """
    cfgs = list(configs) if configs is not None else default_device_configs()
    snap = ClusterSnapshot()
    for i, obj in enumerate(nodes):
        add_node(snap, i, dict(obj), cfgs, now, limits)
    for obj in nodes:
        name = (obj.get("metadata") or {}).get("name")
        if name not in snap.nodes or snap.nodes[name].error:
            continue
        ready = next(
            (
                c
                for c in (obj.get("status") or {}).get("conditions") or []
                if c.get("type") == "Ready"
            ),
            None,
        )
        if ready is not None and ready.get("status") != "True":
            snap.nodes[name].schedulable = False
            if snap.nodes[name].error is None:
                snap.nodes[name].error = (
                    f"node not Ready ({ready.get('reason', '')}: "
                    f"{ready.get('message', '')})".strip()
                )
    return snap


# ------------------------------------------------------------------------------------------
# Pod status -> job state
# ------------------------------------------------------------------------------------------

PENDING = "pending"  # not scheduled yet (or unschedulable; see reason)
STARTING = "starting"  # bound to a node, containers not all running yet
RUNNING = "running"
SUCCEEDED = "succeeded"
FAILED = "failed"
TERMINATING = "terminating"
UNKNOWN = "unknown"

_FATAL_WAITING = frozenset(
    {
        "InvalidImageName",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
        "ErrImageNeverPull",
    }
)
"""Waiting reasons that never resolve by themselves (kubelet keeps the pod Pending)."""


@dataclass(frozen=True, slots=True)
class PodState:
    """Job-facing state of one Pod.

    Attributes:
        state: one of :data:`PENDING`, :data:`STARTING`, :data:`RUNNING`, :data:`SUCCEEDED`,
            :data:`FAILED`, :data:`TERMINATING`, :data:`UNKNOWN`.
        reason: short machine reason (Kubernetes reason, e.g. ``"Unschedulable"``,
            ``"OOMKilled"``, ``"ImagePullBackOff"``); "" when none.
        message: human-readable detail ("" when none).
        node: node the pod is bound to ("" when not bound).
    """

    state: str
    reason: str = ""
    message: str = ""
    node: str = ""

    @property
    def terminal(self) -> bool:
        """True for SUCCEEDED and FAILED."""
        return self.state in (SUCCEEDED, FAILED)


def _statuses(status: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(status.get("initContainerStatuses") or []) + list(
        status.get("containerStatuses") or []
    )


def pod_state(pod: Mapping[str, Any]) -> PodState:
    """Map a Pod dict to :class:`PodState`.

    Rules, in order:

    1. ``metadata.deletionTimestamp`` set and phase not terminal -> TERMINATING.
    2. phase Succeeded -> SUCCEEDED. Phase Failed -> FAILED with ``status.reason`` (e.g.
       ``Evicted``, ``UnexpectedAdmissionError`` when a device plugin refused the pod) or
       the first terminated container's reason (``OOMKilled``, ``Error``) and exit code.
    3. phase Pending: a waiting container with a reason in :data:`_FATAL_WAITING` -> FAILED
       (it never recovers); a ``PodScheduled=False`` condition -> PENDING with its reason
       (``Unschedulable``) and message; not yet bound (no ``spec.nodeName``) -> PENDING;
       bound -> STARTING with the first waiting reason (``ContainerCreating``,
       ``ImagePullBackOff``, ...).
    4. phase Running: every container running and ready (or no status yet) -> RUNNING;
       a container waiting in ``CrashLoopBackOff`` -> RUNNING with that reason (restarts
       continue under the restart policy); otherwise RUNNING.
    5. phase Unknown or missing -> UNKNOWN (node lost contact), PENDING when no status.
    """
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    node = spec.get("nodeName") or ""
    phase = status.get("phase") or ""
    if meta.get("deletionTimestamp") and phase not in ("Succeeded", "Failed"):
        return PodState(
            TERMINATING, "Terminating", f"deletion requested at {meta['deletionTimestamp']}", node
        )
    if phase == "Succeeded":
        return PodState(SUCCEEDED, "", "", node)
    if phase == "Failed":
        return _failed_state(status, node)
    if phase == "Pending" or (not phase and not status):
        return _pending_state(status, node)
    if phase == "Running":
        for cs in status.get("containerStatuses") or []:
            waiting = (cs.get("state") or {}).get("waiting") or {}
            if waiting.get("reason") == "CrashLoopBackOff":
                return PodState(
                    RUNNING,
                    "CrashLoopBackOff",
                    f"container {cs.get('name')}: {waiting.get('message', '')}".rstrip(": "),
                    node,
                )
        return PodState(RUNNING, "", "", node)
    return PodState(UNKNOWN, status.get("reason", "") or phase, status.get("message", ""), node)


def _failed_state(status: Mapping[str, Any], node: str) -> PodState:
    """Rule 2 of :func:`pod_state` for phase Failed."""
    if status.get("reason"):
        return PodState(FAILED, status["reason"], status.get("message", ""), node)
    for cs in _statuses(status):
        term = (cs.get("state") or {}).get("terminated") or {}
        if term and term.get("exitCode", 0) != 0:
            return PodState(
                FAILED,
                term.get("reason") or "Error",
                f"container {cs.get('name')} exited with code "
                f"{term.get('exitCode')}" + (f": {term['message']}" if term.get("message") else ""),
                node,
            )
    return PodState(FAILED, "Failed", status.get("message", ""), node)


def _pending_state(status: Mapping[str, Any], node: str) -> PodState:
    """Rule 3 of :func:`pod_state` for phase Pending (or no status yet)."""
    for cs in _statuses(status):
        waiting = (cs.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in _FATAL_WAITING:
            return PodState(
                FAILED,
                waiting["reason"],
                f"container {cs.get('name')}: {waiting.get('message', '')}".rstrip(": "),
                node,
            )
    for cond in status.get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            return PodState(
                PENDING, cond.get("reason", "Unschedulable"), cond.get("message", ""), node
            )
    if not node:
        return PodState(PENDING, "", "", "")
    for cs in _statuses(status):
        waiting = (cs.get("state") or {}).get("waiting") or {}
        if waiting:
            return PodState(STARTING, waiting.get("reason", ""), waiting.get("message", ""), node)
    return PodState(STARTING, "", "", node)


def job_state(pods: Sequence[PodState], expected: int) -> str:
    """Aggregate the states of a job's pods (``expected`` = pods the placement created).

    FAILED if any pod failed; SUCCEEDED when ``expected`` pods succeeded; TERMINATING if any
    pod is terminating; RUNNING when all ``expected`` pods are running or succeeded;
    PENDING if a pod is missing or pending; STARTING otherwise; UNKNOWN if any pod is
    unknown and none of the above decided.

    Raises:
        ValueError: ``expected`` < 1.
    """
    if expected < 1:
        raise ValueError("a job has at least one pod")
    states = [p.state for p in pods]
    if FAILED in states:
        return FAILED
    if states.count(SUCCEEDED) >= expected:
        return SUCCEEDED
    if TERMINATING in states:
        return TERMINATING
    if UNKNOWN in states:
        return UNKNOWN
    if len(states) >= expected and all(s in (RUNNING, SUCCEEDED) for s in states):
        return RUNNING
    if len(states) < expected or PENDING in states:
        return PENDING
    return STARTING
