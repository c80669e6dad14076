"""Pods: HAMi allocation annotations <-> grants, existing usage, manifest -> request.

Annotation encoding (``EncodePodSingleDevice``, docs/hami.md §3.2)::

    value := container* ; container := device* ";" ; device := UUID "," TYPE "," MEM "," CORES ":"

one entry per container, init containers first, then app containers; a container without
devices is an empty entry. MEM is MiB after the memory factor, CORES percent (AMD: CUs).
"""

from __future__ import annotations

import json
from typing import Any

from scheduling.devices.schema import DeviceModelConfig
from scheduling.kube.hami.quantity import cpu_milli, memory_mib, plain_int
from scheduling.placement.booking import apply_assignment
from scheduling.placement.types import (
    ClusterSnapshot,
    ContainerAssignment,
    ContainerRequest,
    DeviceGrant,
    DeviceRequest,
    PodAssignment,
    PodRequest,
)

__all__ = [
    "decode_pod_devices",
    "encode_pod_devices",
    "apply_existing_pods",
    "pod_request_from_kube",
    "NODE_ANNOTATION",
    "MIG_ANNOTATION",
    "mig_gpu_instances",
]

NODE_ANNOTATION = "hami.io/vgpu-node"
MIG_ANNOTATION = "hami.io/vgpu-mig-allocations"
_TERMINAL = ("Succeeded", "Failed")


def decode_pod_devices(
    value: str, where: str = "annotation"
) -> list[list[tuple[str, str, int, int]]]:
    """Decode to ``[[(uuid, type, memory_mib, cores), ...] per container]`` keeping empty
    container entries. Raises ValueError naming ``where`` on a malformed device."""
    if value == "":
        return []
    parts = value.split(";")
    if parts and parts[-1] == "":
        parts = parts[:-1]
    out = []
    for ci, part in enumerate(parts):
        devs = []
        for entry in (e for e in part.split(":") if e != ""):
            f = entry.split(",")
            if len(f) != 4 or not f[0]:
                raise ValueError(
                    f"{where}: container {ci} device {entry!r} is not UUID,TYPE,MEM,CORES"
                )
            try:
                devs.append((f[0], f[1], int(f[2]), int(f[3])))
            except ValueError:
                raise ValueError(
                    f"{where}: container {ci} device {entry!r} has non-integer MEM/CORES"
                ) from None
        out.append(devs)
    return out


def encode_pod_devices(containers: list[list[DeviceGrant]] | list[tuple[DeviceGrant, ...]]) -> str:
    """Encode per-container grants (init first, then app) in HAMi's format."""
    return "".join(
        "".join(f"{g.uuid},{g.type},{g.memory_mib},{g.cores_percent}:" for g in c) + ";"
        for c in containers
    )


def _resources(c: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    res = c.get("resources") or {}
    return dict(res.get("limits") or {}), dict(res.get("requests") or {})


def _pod_host(spec: dict[str, Any], where: str) -> tuple[int, int]:
    """Effective pod cpu (milli) / memory (MiB): max(max init, sum app), requests first."""

    def one(c: dict[str, Any], i: str) -> tuple[int, int]:
        lim, req = _resources(c)
        cpu = req.get("cpu", lim.get("cpu"))
        mem = req.get("memory", lim.get("memory"))
        return (
            cpu_milli(cpu, f"{i}.resources.cpu") if cpu is not None else 0,
            memory_mib(mem, f"{i}.resources.memory") if mem is not None else 0,
        )

    app = [one(c, f"{where}.containers[{k}]") for k, c in enumerate(spec.get("containers") or [])]
    init = [
        one(c, f"{where}.initContainers[{k}]")
        for k, c in enumerate(spec.get("initContainers") or [])
    ]
    cpu = max([sum(a[0] for a in app)] + [i[0] for i in init])
    mem = max([sum(a[1] for a in app)] + [i[1] for i in init])
    return cpu, mem


def apply_existing_pods(
    snapshot: ClusterSnapshot, pods: list[dict[str, Any]], configs: list[DeviceModelConfig]
) -> None:
    """Book the usage of existing pods in the snapshot (HAMi ``getNodesUsage``).

    Device usage: pods with ``hami.io/vgpu-node`` (else ``spec.nodeName``), not in a
    terminal phase, from each backend's ``*-devices-allocated`` annotation, collapsed per pod
    (init vs app, §4.1); init entries are ignored once every init container terminated with
    exit code 0. MIG instances come from ``hami.io/vgpu-mig-allocations``. Host cpu/memory of
    every non-terminal pod bound to a node are added to that node.
    Problems with one pod (unknown node/device, malformed annotation) are appended to
    ``snapshot.errors`` and that pod is skipped.
    """
    keys = [c.allocated_annotation for c in configs if c.allocated_annotation]
    keys = list(dict.fromkeys(keys))
    for i, pod in enumerate(pods):
        meta = pod.get("metadata") or {}
        pname = f"{meta.get('namespace', 'default')}/{meta.get('name', f'pods[{i}]')}"
        status = pod.get("status") or {}
        if status.get("phase") in _TERMINAL:
            continue
        spec = pod.get("spec") or {}
        ann = meta.get("annotations") or {}
        node_name = ann.get(NODE_ANNOTATION) or spec.get("nodeName")
        if not node_name:
            continue
        if node_name not in snapshot.nodes:
            if any(k in ann for k in keys):
                snapshot.errors.append(f"pod {pname}: node {node_name!r} not in the snapshot")
            continue
        try:
            cpu, mem = _pod_host(spec, f"pod {pname} spec")
            n_init = len(spec.get("initContainers") or [])
            inits_done = n_init > 0 and all(
                ((s.get("state") or {}).get("terminated") or {}).get("exitCode") == 0
                for s in status.get("initContainerStatuses") or [{}]
            )
            per_container: dict[int, list[DeviceGrant]] = {}
            mig = _mig_map(ann.get(MIG_ANNOTATION), pname)
            for key in keys:
                if key not in ann:
                    continue
                for ci, devs in enumerate(decode_pod_devices(str(ann[key]), f"pod {pname} {key}")):
                    for di, (uuid, typ, m, c) in enumerate(devs):
                        if typ == "AWSNeuron":  # a NeuronCore bit mask: count its cores
                            c = bin(max(c, 0)).count("1")
                        prof, start, size = mig.get((ci, di, uuid), ("", -1, 0))
                        per_container.setdefault(ci, []).append(
                            DeviceGrant(
                                uuid, typ, m, c, mig_profile=prof, mig_start=start, mig_size=size
                            )
                        )
            conts = tuple(
                ContainerAssignment(str(ci), tuple(g), ci < n_init)
                for ci, g in sorted(per_container.items())
                if not (ci < n_init and inits_done)
            )
            apply_assignment(snapshot, PodAssignment(pname, node_name, conts, cpu, mem), +1)
        except ValueError as exc:
            snapshot.errors.append(str(exc))


def _mig_map(value: Any, pname: str) -> dict[tuple[int, int, str], tuple[str, int, int]]:
    if not value:
        return {}
    try:
        data = json.loads(value)
        return {
            (int(e["containerIndex"]), int(e["deviceIndex"]), str(e["gpuUUID"])): (
                str(e["profile"]),
                int(e["placement"]["start"]),
                int(e["placement"]["size"]),
            )
            for e in data
        }
    except (json.JSONDecodeError, KeyError, TypeError, ValueError):
        raise ValueError(f"pod {pname}: malformed {MIG_ANNOTATION}") from None


def _csv(ann: dict[str, Any], key: str) -> tuple[str, ...]:
    if not key or key not in ann:
        return ()
    return tuple(s.strip() for s in str(ann[key]).split(",") if s.strip())


def _drs_request(get: Any, r: str, cfg: DeviceModelConfig, ann: dict[str, Any]) -> DeviceRequest:
    """Enflame DRS (``enflame/device.go`` ``MutateAdmission`` / ``GenerateResourceRequests``):
    ``enflame.com/drs-gcu: N`` is one card with the profile of N slices; otherwise
    ``enflame.com/gcu-memory`` (> 0; GB, or MiB when large: see ``DeviceRequest.drs_memory``)
    and ``enflame.com/gcu-core`` (1..100) pick the smallest covering profile.

    Raises:
        ValueError: a value the webhook refuses, naming the resource.
    """
    pins = {
        "uuids_include": _csv(ann, cfg.use_uuid_annotation),
        "uuids_exclude": _csv(ann, cfg.nouse_uuid_annotation),
    }
    size, mem, core = (
        get(n) for n in (cfg.resource_count, cfg.resource_memory, cfg.resource_cores)
    )
    if size is not None:
        n = plain_int(size, f"{r}.{cfg.resource_count}")
        if n <= 0:
            raise ValueError(f"{r}.{cfg.resource_count}: must be greater than 0")
        return DeviceRequest(vendor=cfg.vendor, count=1, slices=n, **pins)
    m = plain_int(mem, f"{r}.{cfg.resource_memory}") if mem is not None else 0
    c = plain_int(core, f"{r}.{cfg.resource_cores}") if core is not None else 0
    if mem is not None and m <= 0:
        raise ValueError(f"{r}.{cfg.resource_memory}: must be greater than 0")
    if core is not None and not 0 < c <= 100:
        raise ValueError(f"{r}.{cfg.resource_cores}: must be in range (0,100]")
    return DeviceRequest(vendor=cfg.vendor, count=1, drs_memory=m, cores_percent=c, **pins)


NEURON_CORES_PER_DEVICE = 2
"""HAMi's ``maxCoresPerNeuronDevice``: a cores request is split in devices of 2 cores."""


def _neuron_request(get: Any, r: str, cfg: DeviceModelConfig, ann: dict[str, Any]) -> DeviceRequest:
    """AWS Neuron (``awsneuron/device.go`` ``GenerateResourceRequests``): ``neuron: N`` is N
    whole devices; ``neuroncore: C`` is one device with C cores when C <= 2, else C / 2
    whole devices (C must then be even).

    Raises:
        ValueError: a value the webhook refuses, naming the resource.
    """
    pins = {
        "uuids_include": _csv(ann, cfg.use_uuid_annotation),
        "uuids_exclude": _csv(ann, cfg.nouse_uuid_annotation),
    }
    count, cores = get(cfg.resource_count), get(cfg.resource_cores)
    name = cfg.resource_count if count is not None else cfg.resource_cores
    n = plain_int(count if count is not None else cores, f"{r}.{name}")
    if n <= 0:
        raise ValueError(f"{r}.{name}: must be greater than 0")
    if count is not None:
        return DeviceRequest(vendor=cfg.vendor, count=n, **pins)
    per = NEURON_CORES_PER_DEVICE
    if n <= per:
        return DeviceRequest(vendor=cfg.vendor, count=1, cores_percent=n, **pins)
    if n % per:
        raise ValueError(f"{r}.{name}: must be 1 or a multiple of {per}, got {n}")
    return DeviceRequest(vendor=cfg.vendor, count=n // per, cores_percent=per, **pins)


def _container_devices(
    c: dict[str, Any], where: str, ann: dict[str, Any], configs: list[DeviceModelConfig]
) -> tuple[DeviceRequest, ...]:
    lim, req = _resources(c)
    out = []
    for cfg in configs:
        names = [
            n
            for n in (
                cfg.resource_count,
                cfg.resource_memory,
                cfg.resource_memory_percent,
                cfg.resource_cores,
            )
            if n
        ]
        limits_only = cfg.vendor in ("MetaxSGPU", "AMD")

        def get(name: str, cfg: DeviceModelConfig = cfg, limits_only: bool = limits_only) -> Any:
            if not name:
                return None
            if name in lim:
                return lim[name]
            return None if limits_only and name == cfg.resource_count else req.get(name)

        if not any(get(n) is not None for n in names):
            continue
        r = f"{where}.resources.limits"
        if cfg.vendor in ("EnflameDRS", "AWSNeuron"):
            build = _drs_request if cfg.vendor == "EnflameDRS" else _neuron_request
            out.append(build(get, r, cfg, ann))
            continue
        raw_count = get(cfg.resource_count)
        count = (
            plain_int(raw_count, f"{r}.{cfg.resource_count}")
            if raw_count is not None
            else cfg.default_count
        )
        if raw_count is not None and count == 0:
            continue
        mem_raw = get(cfg.resource_memory)
        pct_raw = get(cfg.resource_memory_percent)
        cores_raw = get(cfg.resource_cores)
        mem_mib, pct = _memory(cfg, r, mem_raw, pct_raw)
        if mem_raw is None and pct is None and cfg.default_memory_mib:
            mem_mib = cfg.default_memory_mib
        if cores_raw is not None:
            cores = plain_int(cores_raw, f"{r}.{cfg.resource_cores}")
        elif (
            cfg.exclusive_when_count_only
            and raw_count is not None
            and (mem_raw is None and (pct is None or pct == 100))
            and not cfg.default_memory_mib
        ):
            cores = 100
        else:
            cores = cfg.default_cores_percent
        if cfg.slicing == "whole":
            mem_mib, pct, cores = 0, 100, 100
        if cfg.vendor == "Mthreads" and count > 1:
            mem_mib, pct, cores = 96 * cfg.memory_factor, None, cfg.cores_percent
        modes = _csv(ann, cfg.mode_annotation)
        numa = (
            str(ann.get(cfg.numa_annotation, "")).lower() == "true"
            if cfg.numa_annotation
            else False
        )
        out.append(
            DeviceRequest(
                vendor=cfg.vendor,
                count=count,
                memory_mib=mem_mib,
                memory_percent=pct,
                cores_percent=cores,
                types_include=_csv(ann, cfg.use_type_annotation),
                types_exclude=_csv(ann, cfg.nouse_type_annotation),
                uuids_include=_csv(ann, cfg.use_uuid_annotation),
                uuids_exclude=_csv(ann, cfg.nouse_uuid_annotation),
                numa_bind=numa,
                modes=modes,
                chip=cfg.chip,
                soft_split=cfg.vendor == "Ascend"
                and ann.get("huawei.com/vnpu-mode") == "hami-core",
                qos_policy=str(ann.get("metax-tech.com/sgpu-qos-policy", "best-effort"))
                if cfg.vendor == "MetaxSGPU"
                else "",
            )
        )
    return tuple(out)


def _memory(cfg: DeviceModelConfig, r: str, mem_raw: Any, pct_raw: Any) -> tuple[int, int | None]:
    """``(memory MiB, memory percent or None)`` of a container's device memory limits: the
    memory resource in units of ``memory_factor`` MiB (0 = percent of the card; Metax sGPU
    also takes quantities such as ``4Gi``), else the memory-percent resource.

    Raises:
        ValueError: a value is not an integer or a percentage is above 100 (field named).
    """
    mem_mib, pct = 0, None
    if mem_raw is not None:
        if cfg.vendor == "MetaxSGPU" and isinstance(mem_raw, str) and not mem_raw.strip().isdigit():
            mem_mib = memory_mib(mem_raw, f"{r}.{cfg.resource_memory}")
        else:
            units = plain_int(mem_raw, f"{r}.{cfg.resource_memory}")
            if cfg.memory_factor == 0:
                if units > 100:
                    raise ValueError(
                        f"{r}.{cfg.resource_memory}: {units} % of the card is above 100"
                    )
                pct = units
            else:
                mem_mib = units * cfg.memory_factor
    if pct_raw is not None and mem_raw is None:
        p = plain_int(pct_raw, f"{r}.{cfg.resource_memory_percent}")
        if p > 100:
            raise ValueError(f"{r}.{cfg.resource_memory_percent}: {p} is outside 0..100")
        if p > 0:
            pct = p
    return mem_mib, pct


def _weights(value: Any, where: str) -> tuple[int, int, int]:
    parts = dict(p.split("=", 1) for p in str(value).split(",") if "=" in p)
    try:
        w = (int(parts["slot"]), int(parts["core"]), int(parts["memory"]))
    except (KeyError, ValueError):
        raise ValueError(f"{where}: {value!r} must be slot=<int>,core=<int>,memory=<int>") from None
    if min(w) < 0 or not any(w):
        raise ValueError(f"{where}: weights must be >= 0 and not all 0")
    return w


def pod_request_from_kube(
    manifest: dict[str, Any], configs: list[DeviceModelConfig], where: str = "pod"
) -> PodRequest:
    """Pod manifest (dict) -> PodRequest (init containers first, then app containers).

    HAMi resource names come from the configs; each is read from ``limits`` and falls back to
    ``requests`` (count of Metax sGPU and AMD: limits only). Defaults as HAMi's webhook:
    count-only NVIDIA = whole exclusive GPU (cores 100, memory 100 %); memory/cores without
    count -> ``defaultGPUNum``. Pod annotations: use/nouse type and uuid lists, numa-bind,
    vgpu-mode, ``hami.io/node-scheduler-policy``, ``hami.io/gpu-scheduler-policy`` (single
    policy; comma chains are refused), ``hami.io/device-scoring-weights``,
    ``huawei.com/vnpu-mode``, ``metax-tech.com/sgpu-qos-policy``.

    Raises ValueError naming the field on bad input.
    """
    if not isinstance(manifest, dict):
        raise ValueError(f"{where}: must be a mapping (a Pod manifest)")
    if manifest.get("kind") not in (None, "Pod"):
        raise ValueError(f"{where}.kind: expected Pod, got {manifest.get('kind')!r}")
    meta = manifest.get("metadata") or {}
    spec = manifest.get("spec")
    if not isinstance(spec, dict) or not spec.get("containers"):
        raise ValueError(f"{where}.spec.containers: required")
    ann = meta.get("annotations") or {}
    containers = []
    for kind, init in (("initContainers", True), ("containers", False)):
        for k, c in enumerate(spec.get(kind) or []):
            cw = f"{where}.spec.{kind}[{k}]"
            if not isinstance(c, dict) or not isinstance(c.get("name"), str):
                raise ValueError(f"{cw}.name: required")
            containers.append(
                ContainerRequest(c["name"], _container_devices(c, cw, ann, configs), init)
            )
    cpu, mem = _pod_host(spec, f"{where}.spec")
    node_policy = str(ann.get("hami.io/node-scheduler-policy", ""))
    if node_policy not in ("", "binpack", "spread"):
        raise ValueError(
            f"{where}.metadata.annotations.hami.io/node-scheduler-policy: "
            f"{node_policy!r} not binpack|spread"
        )
    dev_policy = str(ann.get("hami.io/gpu-scheduler-policy", ""))
    if dev_policy not in ("", "binpack", "spread", "topology-aware", "mutex"):
        raise ValueError(
            f"{where}.metadata.annotations.hami.io/gpu-scheduler-policy: "
            f"{dev_policy!r} not binpack|spread|topology-aware|mutex "
            "(comma chains are not supported)"
        )
    weights = None
    if "hami.io/device-scoring-weights" in ann:
        weights = _weights(
            ann["hami.io/device-scoring-weights"],
            f"{where}.metadata.annotations.hami.io/device-scoring-weights",
        )
    selector = spec.get("nodeSelector") or {}
    if not isinstance(selector, dict):
        raise ValueError(f"{where}.spec.nodeSelector: must be a mapping")
    name = str(meta.get("name") or meta.get("generateName") or "pod")
    ns = str(meta.get("namespace") or "")
    return PodRequest(
        name=name,
        cpu_milli=cpu,
        memory_mib=mem,
        containers=tuple(containers),
        node_selector={str(k): str(v) for k, v in selector.items()},
        node_policy=node_policy,
        device_policy=dev_policy,
        device_scoring_weights=weights,
        namespace=ns,
    )


def mig_gpu_instances(annotations: dict[str, Any]) -> dict[tuple[str, int], int]:
    """``{(gpu uuid, placement start): gpu instance id}`` of the MIG instances a pod's
    :data:`MIG_ANNOTATION` names with a ``gpuInstanceID`` (what DCGM exports as ``GPU_I_ID``;
    the device plugin adds ``migUUID``, ``gpuInstanceID`` and ``computeInstanceID`` once it
    created the instances, HAMi ``mig_allocations.go``). Entries without an id yet and
    malformed ones are skipped; a value that is not a JSON list gives ``{}`` (the annotation
    is the device plugin's, never trusted to raise).
    """
    text = annotations.get(MIG_ANNOTATION) if isinstance(annotations, dict) else None
    if not isinstance(text, str) or len(text) > 1_000_000:
        return {}
    try:
        items = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    out: dict[tuple[str, int], int] = {}
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, dict) or not isinstance(item.get("placement"), dict):
            continue
        uuid, gi, start = (
            item.get("gpuUUID"),
            item.get("gpuInstanceID"),
            item["placement"].get("start"),
        )
        if isinstance(uuid, str) and all(
            isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**31 for v in (gi, start)
        ):
            out[(uuid, start)] = gi
    return out
