"""Kubernetes Node objects (dicts) -> :class:`NodeInfo` with HAMi-registered devices.

Registration (shared/docs/hami.md §3.4): per backend, the register annotation in JSON
(``[{"id","index","count","devmem","devcore","type","numa","mode","migProfiles","health",
"custominfo"}]``; a missing ``health`` means false, missing ``index``/``numa`` mean 0) or in
the legacy ``id,count,devmem,devcore,type,numa,health[,index,mode]:`` format (7-field entries
get mode ``hami-core``). Metax sGPU registers its plugin's own JSON entries
(``{"uuid","model","totalDevCount","totalCompute","totalVRam","numa","healthy","qosPolicy"}``,
HAMi ``MetaxSDeviceInfo``); an entry in the common format (with ``id``) is read as such.
Backends without a register annotation (Cambricon, Metax GPU, Mthreads, Kunlun XPU, Enflame
GCU, AWS Neuron) get devices synthesised from ``status.capacity`` (:mod:`.capacity`); Enflame
DRS cards come from ``enflame.com/gcu-drs-capacity`` (:mod:`.drs`).

Health: a device type is unhealthy when its handshake annotation is ``Requesting_<time>``
older than 60 s at ``now`` and the node's allocatable count for the resource is 0 (HAMi
``CheckHealth``; HAMi drops such devices, we keep them marked unhealthy so the reason says
``CardNotHealth``). ``hami.io/device-cordon`` lists cordoned uuids. ``hami.io/node-nvidia-score``
gives NVIDIA pair scores.

A malformed annotation flags only that node (``NodeInfo.error``), other nodes keep working. The
same device uuid on two nodes is a conflict: both copies are marked unhealthy and the
conflict is listed in ``ClusterSnapshot.errors``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from scheduling.devices.schema import DeviceModelConfig
from scheduling.devices.vendors import vendor_traits
from scheduling.kube.hami.capacity import CAMBRICON_MODEL_LABEL, cambricon_model, capacity_devices
from scheduling.kube.hami.drs import ENFLAME_DRS_ANNOTATION, parse_drs_capacity
from scheduling.kube.hami.registration import (
    DeviceIn,
    MetaxSDeviceIn,
    NodeIn,
    NodeStatusIn,
    validate,
)
from scheduling.kube.limits import (
    DEFAULT_LIMITS,
    InventoryLimits,
    check_bound,
    load_json,
    over_bound,
)
from scheduling.kube.quantity import cpu_milli, memory_mib
from scheduling.placement.types import (
    ClusterSnapshot,
    DeviceUsage,
    MigPlacement,
    MigProfile,
    NodeInfo,
)

__all__ = [
    "parse_node_devices",
    "parse_legacy_devices",
    "parse_json_devices",
    "node_from_kube",
    "snapshot_from_kube",
    "add_node",
    "cambricon_model",
    "HANDSHAKE_STALE_S",
    "CORDON_ANNOTATION",
    "SCORE_ANNOTATION",
    "CAMBRICON_MODEL_LABEL",
]

HANDSHAKE_STALE_S = 60
CORDON_ANNOTATION = "hami.io/device-cordon"
SCORE_ANNOTATION = "hami.io/node-nvidia-score"


def _int(v: Any, where: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise ValueError(f"{where}: {v!r} is not an integer")
    try:
        return int(v)
    except ValueError:
        raise ValueError(f"{where}: {v!r} is not an integer") from None


def _device(
    d: DeviceIn, node: str, cfg: DeviceModelConfig, index: int | None = None
) -> DeviceUsage:
    """A placement ``Device`` of a validated registration entry."""
    profiles = tuple(
        MigProfile(
            p.name,
            p.memoryMB,
            p.core,
            p.sliceCount,
            tuple(MigPlacement(pl.start, pl.size) for pl in p.placements),
        )
        for p in d.migProfiles or ()
    )
    return DeviceUsage(
        uuid=d.id,
        node=node,
        index=d.index if index is None else index,
        type=cfg.chip or d.type,
        vendor=cfg.vendor,
        memory_mib=d.devmem,
        cores_percent=d.devcore,
        split_count=d.count,
        numa=d.numa,
        healthy=d.health,
        mode=d.mode or "",
        mig_profiles=profiles,
        network_id=d.network_id,
        # HAMi keeps CustomInfo on the device (pkg/device/devices.go:140): Vastai's die mode
        # and card (DeviceStrategy, AIC) are read from it (vastai/device.go:236-249, 389-402)
        custom=dict(d.custominfo or {}),
    )


def _check_count(what: str, n: int, limits: InventoryLimits) -> None:
    check_bound(what, n, limits, "max_devices_per_node", " devices")


def parse_legacy_devices(
    value: str, node: str, cfg: DeviceModelConfig, limits: InventoryLimits = DEFAULT_LIMITS
) -> list[DeviceUsage]:
    """Parse ``id,count,devmem,devcore,type,numa,health[,index,mode]:`` entries.

    7-field entries get mode ``hami-core`` and their position as index. Every field is
    checked by :class:`~scheduling.kube.hami.registration.DeviceIn`.

    Raises:
        ValueError: naming the entry, on a malformed one or more entries than the bound.
    """
    entries = [e for e in value.split(":") if e.strip()]
    _check_count(cfg.register_annotation, len(entries), limits)
    out = []
    for pos, entry in enumerate(entries):
        f = entry.split(",")
        where = f"{cfg.register_annotation} entry {pos} {entry[:80]!r}"
        if len(f) not in (7, 9):
            raise ValueError(f"{where}: expected 7 or 9 comma-separated fields, got {len(f)}")
        data = dict(
            zip(
                ("id", "count", "devmem", "devcore", "type", "numa", "health", "index", "mode"),
                f,
                strict=False,
            )
        )
        data.setdefault("index", str(pos))
        data.setdefault("mode", "hami-core")
        out.append(_device(validate(DeviceIn, data, where, limits), node, cfg))
    return out


def parse_json_devices(
    value: str, node: str, cfg: DeviceModelConfig, limits: InventoryLimits = DEFAULT_LIMITS
) -> list[DeviceUsage]:
    """Parse the JSON register format (``MarshalNodeDevices``), each entry checked by
    :class:`~scheduling.kube.hami.registration.DeviceIn`.

    Raises:
        ValueError: too long, too deep, not JSON, not an array, more entries than the
            bound, or an entry that does not fit the schema (the message names it).
    """
    data = load_json(value, cfg.register_annotation, limits)
    if not isinstance(data, list):
        raise ValueError(f"{cfg.register_annotation}: expected a JSON array")
    _check_count(cfg.register_annotation, len(data), limits)
    out = []
    own_entries = vendor_traits(cfg.vendor).own_registration_entries
    for pos, entry in enumerate(data):
        where = f"{cfg.register_annotation}[{pos}]"
        if own_entries and isinstance(entry, dict) and "id" not in entry:
            out.append(_metax_sdevice(validate(MetaxSDeviceIn, entry, where, limits), pos, node))
            continue
        out.append(_device(validate(DeviceIn, entry, where, limits), node, cfg))
    return out


def _metax_sdevice(d: MetaxSDeviceIn, pos: int, node: str) -> DeviceUsage:
    """A Metax sGPU of the plugin's own entry (HAMi ``convertMetaxSDeviceToHAMIDevice``,
    metax/protocol.go:102-127: index = position, HAMi's type ``Metax-SGPU``; the console
    keeps the model as the device's type so its catalogue row applies)."""
    return DeviceUsage(
        uuid=d.uuid,
        node=node,
        index=pos,
        type=d.model or "Metax-SGPU",
        vendor="MetaxSGPU",
        memory_mib=d.totalVRam,
        cores_percent=d.totalCompute,
        split_count=d.totalDevCount,
        numa=d.numa,
        healthy=d.healthy,
        mode="",
        qos_policy=d.qosPolicy,
    )


def parse_node_devices(
    value: str, node: str, cfg: DeviceModelConfig, limits: InventoryLimits = DEFAULT_LIMITS
) -> list[DeviceUsage]:
    """Register annotation in either format (JSON when it starts with ``[``)."""
    v = value.strip()
    error = over_bound(
        cfg.register_annotation, len(v), limits, "max_annotation_bytes", " characters"
    )
    if error:
        raise ValueError(error)
    if v.startswith("["):
        return parse_json_devices(v, node, cfg, limits)
    return parse_legacy_devices(v, node, cfg, limits)


def _stale(value: str, now: datetime | None) -> bool:
    if now is None or not value.startswith("Requesting_"):
        return False
    try:
        # the handshake time carries no zone; it is read as UTC
        t = datetime.strptime(value[len("Requesting_") :], "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    except ValueError:
        return False
    ref = now if now.tzinfo else now.replace(tzinfo=UTC)  # a naive ``now`` is UTC
    return ref - t > timedelta(seconds=HANDSHAKE_STALE_S)


def _host(node: NodeInfo, alloc: dict[str, Any], limits: InventoryLimits) -> None:
    """Allocatable CPU / memory of the node (bounded; set only when within the bounds)."""
    cpu = cpu_milli(alloc["cpu"], "status.allocatable.cpu") if "cpu" in alloc else 0
    mem = memory_mib(alloc["memory"], "status.allocatable.memory") if "memory" in alloc else 0
    for error in (
        over_bound("status.allocatable.cpu", cpu, limits, "max_node_cpu_milli", " millicores"),
        over_bound("status.allocatable.memory", mem, limits, "max_node_memory_mib", " MiB"),
    ):
        if error:
            raise ValueError(error)
    node.cpu_milli, node.memory_mib = cpu, mem


def _registered(
    name: str,
    ann: dict[str, str],
    alloc: dict[str, Any],
    capacity: dict[str, Any],
    configs: list[DeviceModelConfig],
    now: datetime | None,
    limits: InventoryLimits,
    labels: dict[str, str],
) -> list[DeviceUsage]:
    """Every vendor's devices of one node: register annotations (a stale handshake with
    allocatable 0 makes them unhealthy) and capacity-registered vendors; each annotation or
    capacity is read once, by the first config naming it (the vendor's default precedes its
    per-model configs in the catalogue)."""
    devices: list[DeviceUsage] = []
    done: set[str] = set()  # per-model configs share their vendor's annotation / capacity
    for cfg in configs:
        source = (
            cfg.register_annotation
            or cfg.capacity_resource
            or (ENFLAME_DRS_ANNOTATION if vendor_traits(cfg.vendor).drs_profiles else "")
        )
        if source in done:
            continue
        done.add(source)
        if source == ENFLAME_DRS_ANNOTATION:
            if source in ann:
                devices.extend(parse_drs_capacity(ann[source], name, cfg, limits))
        elif cfg.register_annotation and cfg.register_annotation in ann:
            devs = parse_node_devices(ann[cfg.register_annotation], name, cfg, limits)
            hs = ann.get(cfg.handshake_annotation, "") if cfg.handshake_annotation else ""
            if devs and _stale(hs, now) and str(alloc.get(cfg.resource_count, "0")) in ("0", ""):
                for d in devs:
                    d.healthy = False
            devices.extend(devs)
        elif cfg.capacity_resource and not cfg.register_annotation:
            devices.extend(capacity_devices(name, cfg, capacity, limits, labels, configs))
        _check_count("registered devices", len(devices), limits)
    return devices


def node_from_kube(
    obj: dict[str, Any],
    configs: list[DeviceModelConfig],
    now: datetime | None = None,
    limits: InventoryLimits = DEFAULT_LIMITS,
) -> NodeInfo:
    """Build a Node from a Kubernetes Node dict. Registration errors go to ``NodeInfo.error``.

    The envelope is checked by :class:`~scheduling.kube.hami.registration.NodeIn` and the
    registrations by ``DeviceIn`` (bounded by ``limits``); any error names the field.

    Raises ValueError only when the object has no ``metadata.name``.
    """
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(name, str) or not name:
        raise ValueError("node object without metadata.name")
    node = NodeInfo(name)
    try:
        env = validate(NodeIn, obj, "", limits)
    except ValueError as exc:
        node.error = str(exc)
        return node
    ann = dict(env.metadata.annotations or {})
    status = env.status or NodeStatusIn()
    alloc = dict(status.allocatable or status.capacity or {})
    capacity = dict(status.capacity or alloc)
    node.labels, node.annotations = dict(env.metadata.labels or {}), ann
    node.schedulable = not (env.spec and env.spec.unschedulable)
    try:
        _host(node, alloc, limits)
        devices = _registered(name, ann, alloc, capacity, configs, now, limits, node.labels)
        cordon = {u.strip() for u in ann.get(CORDON_ANNOTATION, "").split(",") if u.strip()}
        for d in devices:
            d.cordoned = d.uuid in cordon
        if SCORE_ANNOTATION in ann:
            node.pair_scores = _pair_scores(ann[SCORE_ANNOTATION], limits)
        seen: set[str] = set()
        for d in devices:
            if d.uuid in seen:
                raise ValueError(f"device id {d.uuid!r} registered twice on the node")
            seen.add(d.uuid)
    except ValueError as exc:
        node.error = str(exc)
        return node
    node.devices = devices
    return node


def _pair_scores(value: str, limits: InventoryLimits) -> dict[str, dict[str, int]]:
    data = load_json(value, SCORE_ANNOTATION, limits)
    if not isinstance(data, list):
        raise ValueError(f"{SCORE_ANNOTATION}: expected a JSON array")
    out: dict[str, dict[str, int]] = {}
    for i, e in enumerate(data):
        if (
            not isinstance(e, dict)
            or not isinstance(e.get("uuid"), str)
            or not isinstance(e.get("score", {}), dict)
        ):
            raise ValueError(f"{SCORE_ANNOTATION}[{i}]: needs 'uuid' and a 'score' map")
        out[e["uuid"]] = {
            k: _int(v, f"{SCORE_ANNOTATION}[{i}].score.{k}") for k, v in e.get("score", {}).items()
        }
    return out


def add_node(
    snap: ClusterSnapshot,
    i: int,
    obj: dict[str, Any],
    configs: list[DeviceModelConfig],
    now: datetime | None,
    limits: InventoryLimits,
) -> NodeInfo:
    """Read ``nodes[i]`` (:func:`node_from_kube`) into ``snap``; an unexpected failure flags
    the node (``NodeInfo.error``) instead of raising.

    Raises:
        ValueError: the node has no name, or its name is already in ``snap``.
    """
    try:
        node = node_from_kube(obj, configs, now, limits)
    except ValueError as exc:
        raise ValueError(f"nodes[{i}]: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - one node's input never stops the others
        node = NodeInfo(str(obj["metadata"]["name"]), error=f"unreadable node ({exc!r})"[:500])
    if node.name in snap.nodes:
        raise ValueError(f"nodes[{i}]: duplicate node name {node.name!r}")
    snap.nodes[node.name] = node
    return node


def snapshot_from_kube(
    nodes: list[dict[str, Any]],
    configs: list[DeviceModelConfig],
    now: datetime | None = None,
    limits: InventoryLimits = DEFAULT_LIMITS,
) -> ClusterSnapshot:
    """Snapshot of Kubernetes Node dicts (each through :func:`node_from_kube`).

    Duplicate node names and nameless nodes raise ValueError; duplicate device uuids across
    nodes are reported in ``errors`` and those devices made unhealthy. An unexpected failure
    while reading one node flags that node (``NodeInfo.error``), never the others.
    """
    snap = ClusterSnapshot()
    owner: dict[str, DeviceUsage] = {}
    for i, obj in enumerate(nodes):
        node = add_node(snap, i, obj, configs, now, limits)
        for d in node.devices:
            other = owner.get(d.uuid)
            if other is not None:
                snap.errors.append(
                    f"device {d.uuid!r} registered on nodes {other.node!r} and "
                    f"{d.node!r}; both copies are kept out of placement"
                )
                other.healthy = False
                d.healthy = False
            else:
                owner[d.uuid] = d
    return snap
