"""Kubernetes Node objects (dicts) -> :class:`Node` with HAMi-registered devices.

Registration (docs/hami.md §3.4): per backend, the register annotation in JSON
(``[{"id","index","count","devmem","devcore","type","numa","mode","migProfiles","health",
"custominfo"}]``; a missing ``health`` means false, missing ``index``/``numa`` mean 0) or in
the legacy ``id,count,devmem,devcore,type,numa,health[,index,mode]:`` format (7-field entries
get mode ``hami-core``). Backends without a register annotation (Cambricon, Metax GPU,
Mthreads, Kunlun XPU, Enflame GCU) get devices synthesised from ``status.capacity``.

Health: a device type is unhealthy when its handshake annotation is ``Requesting_<time>``
older than 60 s at ``now`` and the node's allocatable count for the resource is 0 (HAMi
``CheckHealth``; HAMi drops such devices, we keep them marked unhealthy so the reason says
``CardNotHealth``). ``hami.io/device-cordon`` lists cordoned uuids. ``hami.io/node-nvidia-score``
gives NVIDIA pair scores.

A malformed annotation flags only that node (``Node.error``), other nodes keep working. The
same device uuid on two nodes is a conflict: both copies are marked unhealthy and the
conflict is listed in ``ClusterSnapshot.errors``.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from typing import Any

from scheduling.kube.hami.quantity import cpu_milli, memory_mib, plain_int
from scheduling.placement.types import ClusterSnapshot, Device, MigPlacement, MigProfile, Node
from scheduling.placement.vendors.config import DeviceModelConfig

__all__ = ["parse_node_devices", "parse_legacy_devices", "parse_json_devices", "node_from_kube",
           "snapshot_from_kube", "HANDSHAKE_STALE_S", "CORDON_ANNOTATION", "SCORE_ANNOTATION"]

HANDSHAKE_STALE_S = 60
CORDON_ANNOTATION = "hami.io/device-cordon"
SCORE_ANNOTATION = "hami.io/node-nvidia-score"


def _bool(v: Any, where: str) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.lower() in ("true", "false"):
        return v.lower() == "true"
    raise ValueError(f"{where}: {v!r} is not a boolean")


def _int(v: Any, where: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise ValueError(f"{where}: {v!r} is not an integer")
    try:
        return int(v)
    except ValueError:
        raise ValueError(f"{where}: {v!r} is not an integer") from None


def parse_legacy_devices(value: str, node: str, cfg: DeviceModelConfig) -> list[Device]:
    """Parse ``id,count,devmem,devcore,type,numa,health[,index,mode]:`` entries.

    Raises ValueError naming the entry on a malformed one.
    """
    out = []
    for pos, entry in enumerate(e for e in value.split(":") if e.strip()):
        f = entry.split(",")
        where = f"{cfg.register_annotation} entry {pos} {entry!r}"
        if len(f) not in (7, 9):
            raise ValueError(f"{where}: expected 7 or 9 comma-separated fields, got {len(f)}")
        index = _int(f[7], where) if len(f) == 9 else pos
        mode = f[8] if len(f) == 9 else "hami-core"
        out.append(Device(
            uuid=f[0], node=node, index=index, type=cfg.chip or f[4], vendor=cfg.vendor,
            memory_mib=_int(f[2], where), cores_percent=_int(f[3], where),
            split_count=_int(f[1], where), numa=_int(f[5], where),
            healthy=_bool(f[6], where), mode=mode))
    return out


def parse_json_devices(value: str, node: str, cfg: DeviceModelConfig) -> list[Device]:
    """Parse the JSON register format (``MarshalNodeDevices``). Raises ValueError."""
    try:
        data = json.loads(value)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{cfg.register_annotation}: invalid JSON ({exc})") from None
    if not isinstance(data, list):
        raise ValueError(f"{cfg.register_annotation}: expected a JSON array")
    out = []
    for pos, d in enumerate(data):
        where = f"{cfg.register_annotation}[{pos}]"
        if not isinstance(d, dict) or not isinstance(d.get("id"), str) or not d["id"]:
            raise ValueError(f"{where}: each device needs a string 'id'")
        profiles = []
        for j, p in enumerate(d.get("migProfiles") or ()):
            pw = f"{where}.migProfiles[{j}]"
            if not isinstance(p, dict) or not isinstance(p.get("name"), str):
                raise ValueError(f"{pw}: needs a string 'name'")
            places = tuple(MigPlacement(_int(pl.get("start", 0), pw), _int(pl.get("size"), pw))
                           for pl in p.get("placements") or ())
            profiles.append(MigProfile(p["name"], _int(p.get("memoryMB", 0), pw),
                                       _int(p.get("core", 0), pw),
                                       _int(p.get("sliceCount", 0), pw), places))
        custom = d.get("custominfo") or {}
        net = custom.get("NetworkID") if isinstance(custom, dict) else None
        health = d.get("health", False)
        out.append(Device(
            uuid=d["id"], node=node, index=_int(d.get("index", 0), where),
            type=cfg.chip or str(d.get("type", "")), vendor=cfg.vendor,
            memory_mib=_int(d.get("devmem", 0), where),
            cores_percent=_int(d.get("devcore", 0), where),
            split_count=_int(d.get("count", 0), where), numa=_int(d.get("numa", 0), where),
            healthy=_bool(health, where + ".health"), mode=str(d.get("mode", "") or ""),
            mig_profiles=tuple(profiles),
            network_id=_int(net, where + ".custominfo.NetworkID") if net is not None else None))
    return out


def parse_node_devices(value: str, node: str, cfg: DeviceModelConfig) -> list[Device]:
    """Register annotation in either format (JSON when it starts with ``[``)."""
    v = value.strip()
    if v.startswith("["):
        return parse_json_devices(v, node, cfg)
    return parse_legacy_devices(v, node, cfg)


def _synth(node: str, cfg: DeviceModelConfig, capacity: dict[str, Any]) -> list[Device]:
    """Devices of backends registered only through ``status.capacity``."""
    raw = capacity.get(cfg.capacity_resource)
    if raw is None:
        return []
    cap = plain_int(raw, f"status.capacity.{cfg.capacity_resource}")
    if cap == 0:
        return []
    v = cfg.vendor
    if v == "MLU":
        cards = math.ceil(cap / 100)
        mem = cfg.memory_mib
        if not mem:
            if cfg.memory_factor == 0:
                raise ValueError("cambricon memoryFactor 0 (1 % units) needs memoryAllocatable "
                                 "(MiB per card) in the config")
            vm = plain_int(capacity.get(cfg.resource_memory, 0),
                           f"status.capacity.{cfg.resource_memory}")
            mem = vm * cfg.memory_factor * 100 // cap
        return [Device(f"{node}-cambricon-mlu-{i}", node, i, "MLU", v, mem, 100,
                       cfg.split_count) for i in range(cards)]
    if v == "Mthreads":
        cards = math.ceil(cap / cfg.cores_percent)
        vm = plain_int(capacity.get(cfg.resource_memory, 0),
                       f"status.capacity.{cfg.resource_memory}")
        mem = cfg.memory_mib or vm * cfg.memory_factor // cards
        return [Device(f"{node}-mthreads-{i}", node, i, "Mthreads", v, mem, cfg.cores_percent,
                       cfg.split_count) for i in range(cards)]
    if v == "Kunlun":
        return [Device(f"{node}-kunlun-xpu-{i}", node, i, "XPU", v, cfg.memory_mib, 100,
                       cfg.split_count, numa=1 if i >= cap // 2 else 0) for i in range(cap)]
    word = {"Metax": "metax-gpu", "Enflame": "enflame-gcu"}.get(v, v.lower())
    return [Device(f"{node}-{word}-{i}", node, i, cfg.common_word, v, cfg.memory_mib,
                   cfg.cores_percent, cfg.split_count) for i in range(cap)]


def _stale(value: str, now: datetime | None) -> bool:
    if now is None or not value.startswith("Requesting_"):
        return False
    try:
        t = datetime.strptime(value[len("Requesting_"):], "%Y-%m-%d %H:%M:%S")
    except ValueError:
        return False
    ref = now.astimezone(UTC).replace(tzinfo=None) if now.tzinfo else now
    return ref - t > timedelta(seconds=HANDSHAKE_STALE_S)


def node_from_kube(obj: dict[str, Any], configs: list[DeviceModelConfig],
                   now: datetime | None = None) -> Node:
    """Build a Node from a Kubernetes Node dict. Registration errors go to ``Node.error``.

    Raises ValueError only when the object has no ``metadata.name``.
    """
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(name, str) or not name:
        raise ValueError("node object without metadata.name")
    ann = meta.get("annotations") or {}
    labels = meta.get("labels") or {}
    status = obj.get("status") or {}
    alloc = status.get("allocatable") or status.get("capacity") or {}
    capacity = status.get("capacity") or alloc
    node = Node(name, labels=dict(labels), annotations=dict(ann),
                schedulable=not bool((obj.get("spec") or {}).get("unschedulable", False)))
    try:
        if "cpu" in alloc:
            node.cpu_milli = cpu_milli(alloc["cpu"], f"node {name} status.allocatable.cpu")
        if "memory" in alloc:
            node.memory_mib = memory_mib(alloc["memory"],
                                         f"node {name} status.allocatable.memory")
    except ValueError as exc:
        node.error = str(exc)
        return node
    devices: list[Device] = []
    try:
        for cfg in configs:
            if cfg.register_annotation and cfg.register_annotation in ann:
                devs = parse_node_devices(str(ann[cfg.register_annotation]), name, cfg)
                hs = ann.get(cfg.handshake_annotation, "") if cfg.handshake_annotation else ""
                if devs and _stale(str(hs), now) and str(alloc.get(cfg.resource_count, "0")) \
                        in ("0", ""):
                    for d in devs:
                        d.healthy = False
                devices.extend(devs)
            elif cfg.capacity_resource and not cfg.register_annotation:
                devices.extend(_synth(name, cfg, capacity))
        cordon = {u.strip() for u in str(ann.get(CORDON_ANNOTATION, "")).split(",") if u.strip()}
        for d in devices:
            if d.uuid in cordon:
                d.cordoned = True
        if SCORE_ANNOTATION in ann:
            node.pair_scores = _pair_scores(str(ann[SCORE_ANNOTATION]))
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


def _pair_scores(value: str) -> dict[str, dict[str, int]]:
    try:
        data = json.loads(value)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{SCORE_ANNOTATION}: invalid JSON ({exc})") from None
    if not isinstance(data, list):
        raise ValueError(f"{SCORE_ANNOTATION}: expected a JSON array")
    out: dict[str, dict[str, int]] = {}
    for i, e in enumerate(data):
        if not isinstance(e, dict) or not isinstance(e.get("uuid"), str) \
                or not isinstance(e.get("score", {}), dict):
            raise ValueError(f"{SCORE_ANNOTATION}[{i}]: needs 'uuid' and a 'score' map")
        out[e["uuid"]] = {k: _int(v, f"{SCORE_ANNOTATION}[{i}].score.{k}")
                          for k, v in e.get("score", {}).items()}
    return out


def snapshot_from_kube(nodes: list[dict[str, Any]], configs: list[DeviceModelConfig],
                       now: datetime | None = None) -> ClusterSnapshot:
    """Snapshot of Kubernetes Node dicts. Duplicate node names raise ValueError; duplicate
    device uuids across nodes are reported in ``errors`` and those devices made unhealthy."""
    snap = ClusterSnapshot()
    owner: dict[str, Device] = {}
    for i, obj in enumerate(nodes):
        try:
            node = node_from_kube(obj, configs, now)
        except ValueError as exc:
            raise ValueError(f"nodes[{i}]: {exc}") from None
        if node.name in snap.nodes:
            raise ValueError(f"nodes[{i}]: duplicate node name {node.name!r}")
        snap.nodes[node.name] = node
        for d in node.devices:
            other = owner.get(d.uuid)
            if other is not None:
                snap.errors.append(f"device {d.uuid!r} registered on nodes {other.node!r} and "
                                   f"{d.node!r}; both copies are kept out of placement")
                other.healthy = False
                d.healthy = False
            else:
                owner[d.uuid] = d
    return snap
