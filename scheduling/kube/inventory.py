"""Cluster objects -> plain inventory records, and Pod status -> job state.

* Nodes: HAMi registration annotations are parsed by the placement core's parser
  (``scheduling.kube.hami.nodes.snapshot_from_kube``, docs/hami.md §3.4), which already
  marks devices of a stale handshake (``Requesting_<t>`` older than 60 s with allocatable 0)
  unhealthy; this module only adds the cluster-level rule that a node that is
  ``spec.unschedulable`` or whose ``Ready`` condition is not True is unavailable.
* ResourceSlices (resource.k8s.io v1 / v1beta2 / v1beta1 - the v1beta1 ``devices[].basic``
  wrapper is unwrapped): each device becomes a :class:`DraDevice` (driver, pool, node,
  attributes, ``memory_mib`` / ``cores_percent`` capacities, ``allowMultipleAllocations``,
  counter consumption) and each ``sharedCounters`` set a :class:`CounterSet`. Devices of a
  pool whose slices disagree on ``pool.generation`` keep only the newest generation (KEP-4381:
  older-generation slices are being replaced). Devices with a ``NoExecute``/``NoSchedule``
  taint are unavailable. :func:`dra_devices_to_placement` turns whole physical devices
  (not partitions) into ``placement.types.Device``.
* :func:`pod_state` maps Pod phase + conditions + container states to a job-facing state.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from scheduling.kube.hami.nodes import snapshot_from_kube
from scheduling.placement.types import ClusterSnapshot, Device
from scheduling.placement.vendors.config import default_device_configs

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

DRIVER_VENDORS: Mapping[str, str] = {
    "hami-core-gpu.project-hami.io": "NVIDIA",
    "gpu.nvidia.com": "NVIDIA",
    "ascend.project-hami.io": "Ascend",
    "gpu.amd.com": "AMD",
}
"""DRA driver name -> vendor word (``Device.vendor``)."""

_SUFFIX = {
    "Ki": Decimal(1024), "Mi": Decimal(1024) ** 2, "Gi": Decimal(1024) ** 3,
    "Ti": Decimal(1024) ** 4, "Pi": Decimal(1024) ** 5, "Ei": Decimal(1024) ** 6,
    "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
    "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
    "P": Decimal("1e15"), "E": Decimal("1e18"),
}


def parse_quantity(value: Any) -> Decimal:
    """Kubernetes resource.Quantity (``"80Gi"``, ``"100"``, ``"1.5"``, ``"2e3"``) -> Decimal.

    Raises:
        ValueError: not a quantity.
    """
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a quantity")
    if isinstance(value, (int, float)):
        return Decimal(str(value))
    text = str(value).strip()
    for suf in ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"):
        if text.endswith(suf):
            num, mult = text[: -len(suf)], _SUFFIX[suf]
            break
    else:
        if text[-1:] and text[-1] in "numkMGTPE" and text[:-1]:
            num, mult = text[:-1], _SUFFIX[text[-1]]
        else:
            num, mult = text, Decimal(1)
    try:
        return Decimal(num) * mult
    except InvalidOperation:
        raise ValueError(f"{value!r} is not a quantity") from None


@dataclass(frozen=True, slots=True)
class CounterSet:
    """A ``sharedCounters`` entry: counter name -> value (as Decimal)."""

    driver: str
    pool: str
    name: str
    counters: Mapping[str, Decimal]


@dataclass(frozen=True, slots=True)
class DraDevice:
    """One device published in a ResourceSlice.

    Attributes:
        driver / pool / name: identity (``<driver>/<pool>/<name>``).
        node: ``spec.nodeName`` of the slice ("" for network-attached / node selector pools).
        attributes: attribute name (domain prefix dropped when it is the driver's) -> value
            (string / int / bool / version string).
        memory_mib: ``capacity.memory`` in MiB (floor), 0 when absent.
        cores_percent: ``capacity.cores`` (HAMi drivers: percent), 0 when absent.
        capacity: every capacity, name -> Decimal value.
        allow_multiple: ``allowMultipleAllocations`` (consumable capacity, KEP-5075).
        consumes: counter consumption ``{counterSet: {counter: Decimal}}`` (partitions).
        available: False when tainted NoSchedule/NoExecute.
    """

    driver: str
    pool: str
    name: str
    node: str
    attributes: Mapping[str, Any]
    memory_mib: int
    cores_percent: int
    capacity: Mapping[str, Decimal]
    allow_multiple: bool
    consumes: Mapping[str, Mapping[str, Decimal]] = field(default_factory=dict)
    available: bool = True

    @property
    def uuid(self) -> str:
        """The ``uuid`` attribute, or "" when the driver publishes none."""
        return str(self.attributes.get("uuid", ""))

    @property
    def is_partition(self) -> bool:
        """True for a device that consumes shared counters (MIG / vNPU partition)."""
        return bool(self.consumes)


@dataclass(frozen=True, slots=True)
class DraInventory:
    """Devices and counter sets of all slices, plus per-slice problems."""

    devices: tuple[DraDevice, ...]
    counter_sets: tuple[CounterSet, ...]
    errors: tuple[str, ...] = ()


def nodes_to_snapshot(nodes: Sequence[Mapping[str, Any]], *, now: datetime,
                      configs: Sequence[Any] | None = None) -> ClusterSnapshot:
    """Nodes (API dicts) -> placement ``ClusterSnapshot`` (HAMi registrations).

    Delegates device parsing to ``scheduling.kube.hami.nodes.snapshot_from_kube`` with
    ``configs`` (default: ``scheduling.placement.vendors.config.default_device_configs()``,
    HAMi v2.10.0 chart defaults), then marks nodes that are cordoned
    (``spec.unschedulable``) or not ``Ready`` as not schedulable.

    Args:
        nodes: Node dicts as returned by the API.
        now: current time (handshake staleness is judged against it).
        configs: HAMi device configs (``DeviceModelConfig`` list).

    Raises:
        ValueError: a node without a name or duplicate node names (per-node registration
            errors are kept in ``Node.error`` instead).
    """
    cfgs = list(configs) if configs is not None else default_device_configs()
    snap = snapshot_from_kube([dict(n) for n in nodes], cfgs, now)
    for obj in nodes:
        name = (obj.get("metadata") or {}).get("name")
        ready = next((c for c in (obj.get("status") or {}).get("conditions") or []
                      if c.get("type") == "Ready"), None)
        if name in snap.nodes and ready is not None and ready.get("status") != "True":
            snap.nodes[name].schedulable = False
            if snap.nodes[name].error is None:
                snap.nodes[name].error = (f"node not Ready ({ready.get('reason', '')}: "
                                          f"{ready.get('message', '')})".strip())
    return snap


def _attr_value(v: Mapping[str, Any]) -> Any:
    for k in ("string", "int", "bool", "version"):
        if k in v:
            return v[k]
    return None


def _device_body(d: Mapping[str, Any]) -> Mapping[str, Any]:
    # v1beta1 nests everything but the name under "basic"
    return d.get("basic") if isinstance(d.get("basic"), Mapping) else d


def slices_to_inventory(slices: Iterable[Mapping[str, Any]]) -> DraInventory:
    """ResourceSlices (any of v1 / v1beta2 / v1beta1 shapes) -> :class:`DraInventory`.

    A malformed slice (no driver/pool, bad quantity) is skipped and named in ``errors``;
    the rest is kept.
    """
    slices = list(slices)
    newest: dict[tuple[str, str], int] = {}
    for s in slices:
        spec = s.get("spec") or {}
        pool = spec.get("pool") or {}
        key = (spec.get("driver", ""), pool.get("name", ""))
        newest[key] = max(newest.get(key, 0), int(pool.get("generation", 0) or 0))
    devices: list[DraDevice] = []
    counters: list[CounterSet] = []
    errors: list[str] = []
    for s in slices:
        sname = (s.get("metadata") or {}).get("name", "?")
        spec = s.get("spec") or {}
        driver, pool = spec.get("driver", ""), (spec.get("pool") or {})
        if not driver or not pool.get("name"):
            errors.append(f"ResourceSlice {sname}: missing driver or pool name")
            continue
        if int(pool.get("generation", 0) or 0) < newest[(driver, pool["name"])]:
            continue
        try:
            for cs in spec.get("sharedCounters") or []:
                counters.append(CounterSet(driver, pool["name"], cs["name"], {
                    k: parse_quantity(v["value"]) for k, v in (cs.get("counters") or {}).items()
                }))
            for d in spec.get("devices") or []:
                body = _device_body(d)
                attrs = {}
                for k, v in (body.get("attributes") or {}).items():
                    short = k[len(driver) + 1:] if k.startswith(driver + "/") else k
                    attrs[short] = _attr_value(v)
                cap = {k: parse_quantity(v["value"])
                       for k, v in (body.get("capacity") or {}).items()}
                consumes = {c["counterSet"]: {k: parse_quantity(v["value"])
                                              for k, v in (c.get("counters") or {}).items()}
                            for c in body.get("consumesCounters") or []}
                taints = body.get("taints") or []
                devices.append(DraDevice(
                    driver=driver, pool=pool["name"], name=d["name"],
                    node=spec.get("nodeName") or "", attributes=attrs,
                    memory_mib=int(cap.get("memory", Decimal(0)) // (1024 * 1024)),
                    cores_percent=int(cap.get("cores", Decimal(0))),
                    capacity=cap, allow_multiple=bool(body.get("allowMultipleAllocations")),
                    consumes=consumes,
                    available=not any(t.get("effect") in ("NoSchedule", "NoExecute")
                                      for t in taints)))
        except (KeyError, TypeError, ValueError) as exc:
            errors.append(f"ResourceSlice {sname}: {exc!r}")
    devices.sort(key=lambda x: (x.node, x.driver, x.pool, x.name))
    return DraInventory(tuple(devices), tuple(counters), tuple(errors))


def dra_devices_to_placement(inv: DraInventory,
                             vendors: Mapping[str, str] = DRIVER_VENDORS) -> list[Device]:
    """Whole physical DRA devices -> ``placement.types.Device`` (partitions are skipped).

    uuid = ``uuid`` attribute (else ``<pool>/<name>``), index = ``minor`` / ``index``
    attribute, type = ``productName`` (else ``model``, else ``type``), memory/cores from the
    capacities (cores default 100 when the driver publishes none), ``split_count`` = 100 for
    ``allowMultipleAllocations`` devices (sharing bounded by capacity, not slots) else 1,
    ``healthy`` = not tainted. Devices of drivers not in ``vendors`` are skipped.
    """
    out = []
    for d in inv.devices:
        vendor = vendors.get(d.driver)
        if vendor is None or d.is_partition or not d.node:
            continue
        a = d.attributes
        index = a.get("minor", a.get("index", 0))
        out.append(Device(
            uuid=d.uuid or f"{d.pool}/{d.name}", node=d.node,
            index=int(index) if isinstance(index, (int, str)) and str(index).isdigit() else 0,
            type=str(a.get("productName") or a.get("model") or a.get("type") or ""),
            vendor=vendor, memory_mib=d.memory_mib,
            cores_percent=d.cores_percent or 100,
            split_count=100 if d.allow_multiple else 1, healthy=d.available,
            mode="dra"))
    return out


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

_FATAL_WAITING = frozenset({
    "InvalidImageName", "CreateContainerConfigError", "CreateContainerError",
    "RunContainerError", "ErrImageNeverPull",
})
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
        status.get("containerStatuses") or [])


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
        return PodState(TERMINATING, "Terminating",
                        f"deletion requested at {meta['deletionTimestamp']}", node)
    if phase == "Succeeded":
        return PodState(SUCCEEDED, "", "", node)
    if phase == "Failed":
        if status.get("reason"):
            return PodState(FAILED, status["reason"], status.get("message", ""), node)
        for cs in _statuses(status):
            term = (cs.get("state") or {}).get("terminated") or {}
            if term and term.get("exitCode", 0) != 0:
                return PodState(FAILED, term.get("reason") or "Error",
                                f"container {cs.get('name')} exited with code "
                                f"{term.get('exitCode')}"
                                + (f": {term['message']}" if term.get("message") else ""), node)
        return PodState(FAILED, "Failed", status.get("message", ""), node)
    if phase == "Pending" or (not phase and not status):
        for cs in _statuses(status):
            waiting = (cs.get("state") or {}).get("waiting") or {}
            if waiting.get("reason") in _FATAL_WAITING:
                return PodState(FAILED, waiting["reason"],
                                f"container {cs.get('name')}: {waiting.get('message', '')}"
                                .rstrip(": "), node)
        for cond in status.get("conditions") or []:
            if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
                return PodState(PENDING, cond.get("reason", "Unschedulable"),
                                cond.get("message", ""), node)
        if not node:
            return PodState(PENDING, "", "", "")
        for cs in _statuses(status):
            waiting = (cs.get("state") or {}).get("waiting") or {}
            if waiting:
                return PodState(STARTING, waiting.get("reason", ""),
                                waiting.get("message", ""), node)
        return PodState(STARTING, "", "", node)
    if phase == "Running":
        for cs in status.get("containerStatuses") or []:
            waiting = (cs.get("state") or {}).get("waiting") or {}
            if waiting.get("reason") == "CrashLoopBackOff":
                return PodState(RUNNING, "CrashLoopBackOff",
                                f"container {cs.get('name')}: {waiting.get('message', '')}"
                                .rstrip(": "), node)
        return PodState(RUNNING, "", "", node)
    return PodState(UNKNOWN, status.get("reason", "") or phase, status.get("message", ""), node)


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
