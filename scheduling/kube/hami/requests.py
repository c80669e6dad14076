"""A Pod manifest -> the placement core's :class:`~scheduling.placement.types.PodRequest`,
read the way HAMi's mutating webhook and device backends read it.

Resource names come from the device configs (``scheduling.devices``); each is read from the
container's ``limits`` and falls back to its ``requests`` (the count of Metax sGPU and AMD:
limits only). Defaults follow HAMi's webhook: count-only NVIDIA = a whole exclusive GPU
(cores 100, memory 100 %); memory/cores without a count -> ``defaultGPUNum``. Enflame DRS and
AWS Neuron have request rules of their own (:func:`_drs_request`, :func:`_neuron_request`).
Pod annotations select devices (use/nouse type and uuid lists, numa-bind, vgpu-mode) and
policies (``hami.io/node-scheduler-policy``, ``hami.io/gpu-scheduler-policy``,
``hami.io/device-scoring-weights``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, TypedDict

from scheduling.devices.defaults import default_device_configs
from scheduling.devices.policies import (
    DEVICE_POLICIES,
    DEVICE_POLICY_ANNOTATION,
    NODE_POLICIES,
    NODE_POLICY_ANNOTATION,
    policy_error,
    policy_word,
)
from scheduling.devices.schema import DeviceModelConfig
from scheduling.devices.vendors import vendor_traits
from scheduling.kube.quantity import cpu_milli, memory_mib, plain_int
from scheduling.placement.types import ContainerRequest, DeviceRequest, PodRequest

__all__ = [
    "pod_request_from_kube",
    "pod_host",
    "NEURON_CORES_PER_DEVICE",
    "DevicePins",
    "device_pins",
    "pin_annotation_names",
]


Reader = Callable[[str], Any]
"""A container's resource value by name (None when absent), see :func:`_reader`."""


class _UuidPins(TypedDict):
    """The device uuids a request accepts / refuses (the pod's use-uuid / nouse-uuid)."""

    uuids_include: tuple[str, ...]
    uuids_exclude: tuple[str, ...]


def _resources(c: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    res = c.get("resources") or {}
    return dict(res.get("limits") or {}), dict(res.get("requests") or {})


def pod_host(spec: dict[str, Any], where: str) -> tuple[int, int]:
    """Effective pod cpu (milli) / memory (MiB): max(max init, sum app), requests first.

    Raises:
        ValueError: a quantity that does not parse (the field named from ``where``).
    """

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


def _csv(ann: dict[str, Any], key: str) -> tuple[str, ...]:
    if not key or key not in ann:
        return ()
    return tuple(s.strip() for s in str(ann[key]).split(",") if s.strip())


def _uuid_pins(ann: dict[str, Any], cfg: DeviceModelConfig) -> _UuidPins:
    return {
        "uuids_include": _csv(ann, cfg.use_uuid_annotation),
        "uuids_exclude": _csv(ann, cfg.nouse_uuid_annotation),
    }


class DevicePins(TypedDict):
    """What a pod's HAMi annotations pin for one vendor's device request: the uuids accepted
    and refused (``<vendor>/use-gpuuuid``, ``<vendor>/nouse-gpuuuid``) and whether all its
    devices share a NUMA node (``nvidia.com/numa-bind``)."""

    uuids_include: tuple[str, ...]
    uuids_exclude: tuple[str, ...]
    numa_bind: bool


@cache
def _vendor_configs() -> dict[str, DeviceModelConfig]:
    """The HAMi default config of each vendor (the first of its configs): the annotation
    names are HAMi's per vendor, whatever a model row overrides."""
    out: dict[str, DeviceModelConfig] = {}
    for cfg in default_device_configs():
        out.setdefault(cfg.vendor, cfg)
    return out


def device_pins(annotations: Mapping[str, Any], vendor: str) -> DevicePins:
    """The pins a pod's (or a job's) annotations put on ``vendor``'s device requests, read
    as :func:`pod_request_from_kube` reads them (comma lists, whitespace trimmed; numa-bind
    ``"true"`` in any case). An unknown vendor has none."""
    cfg = _vendor_configs().get(vendor)
    if cfg is None or not annotations:
        return {"uuids_include": (), "uuids_exclude": (), "numa_bind": False}
    ann = dict(annotations)
    return {**_uuid_pins(ann, cfg), "numa_bind": _numa_bind(ann, cfg)}


@cache
def pin_annotation_names() -> frozenset[str]:
    """Every vendor's use-uuid, nouse-uuid and numa-bind annotation name (HAMi's)."""
    return frozenset(
        name
        for cfg in default_device_configs()
        for name in (cfg.use_uuid_annotation, cfg.nouse_uuid_annotation, cfg.numa_annotation)
        if name
    )


def _drs_request(get: Reader, r: str, cfg: DeviceModelConfig, ann: dict[str, Any]) -> DeviceRequest:
    """Enflame DRS (``enflame/device.go`` ``MutateAdmission`` / ``GenerateResourceRequests``):
    ``enflame.com/drs-gcu: N`` is one card with the profile of N slices; otherwise
    ``enflame.com/gcu-memory`` (> 0; GB, or MiB when large: see ``DeviceRequest.drs_memory``)
    and ``enflame.com/gcu-core`` (1..100) pick the smallest covering profile.

    Raises:
        ValueError: a value the webhook refuses, naming the resource.
    """
    pins = _uuid_pins(ann, cfg)
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


def _neuron_request(
    get: Reader, r: str, cfg: DeviceModelConfig, ann: dict[str, Any]
) -> DeviceRequest:
    """AWS Neuron (``awsneuron/device.go`` ``GenerateResourceRequests``): ``neuron: N`` is N
    whole devices; ``neuroncore: C`` is one device with C cores when C <= 2, else C / 2
    whole devices (C must then be even).

    Raises:
        ValueError: a value the webhook refuses, naming the resource.
    """
    pins = _uuid_pins(ann, cfg)
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


def _reader(c: dict[str, Any], cfg: DeviceModelConfig) -> Reader:
    """Resource values of container ``c`` for ``cfg``: from limits, else from requests (the
    count of Metax sGPU and AMD: limits only, as their backends read it)."""
    lim, req = _resources(c)
    limits_only = vendor_traits(cfg.vendor).count_from_limits_only

    def get(name: str) -> Any:
        if not name:
            return None
        if name in lim:
            return lim[name]
        return None if limits_only and name == cfg.resource_count else req.get(name)

    return get


def _container_devices(
    c: dict[str, Any], where: str, ann: dict[str, Any], configs: list[DeviceModelConfig]
) -> tuple[DeviceRequest, ...]:
    """One DeviceRequest per backend whose resources the container names (a count of 0
    asks for none)."""
    out = []
    for cfg in configs:
        get = _reader(c, cfg)
        names = (
            cfg.resource_count,
            cfg.resource_memory,
            cfg.resource_memory_percent,
            cfg.resource_cores,
        )
        if not any(get(n) is not None for n in names if n):
            continue
        r = f"{where}.resources.limits"
        traits = vendor_traits(cfg.vendor)
        if traits.drs_profiles:
            out.append(_drs_request(get, r, cfg, ann))
        elif traits.neuron_cores:
            out.append(_neuron_request(get, r, cfg, ann))
        elif (request := _device_request(get, r, cfg, ann)) is not None:
            out.append(request)
    return tuple(out)


def _device_request(
    get: Reader, r: str, cfg: DeviceModelConfig, ann: dict[str, Any]
) -> DeviceRequest | None:
    """The request of one backend with HAMi's defaults (None: an explicit count of 0).

    Raises:
        ValueError: a value that is not an integer or a percentage above 100 (field named).
    """
    raw_count = get(cfg.resource_count)
    count = (
        plain_int(raw_count, f"{r}.{cfg.resource_count}")
        if raw_count is not None
        else cfg.default_count
    )
    if raw_count is not None and count == 0:
        return None
    mem_raw = get(cfg.resource_memory)
    mem_mib, pct = _memory(cfg, r, mem_raw, get(cfg.resource_memory_percent))
    if mem_raw is None and pct is None and cfg.default_memory_mib:
        mem_mib = cfg.default_memory_mib
    count_only = raw_count is not None and mem_raw is None and pct in (None, 100)
    cores = _cores(get, r, cfg, count_only)
    if cfg.slicing == "whole":
        mem_mib, pct, cores = 0, 100, 100
    traits = vendor_traits(cfg.vendor)
    if traits.whole_cards_when_multi and count > 1:
        mem_mib, pct, cores = 96 * cfg.memory_factor, None, cfg.cores_percent
    return DeviceRequest(
        vendor=cfg.vendor,
        count=count,
        memory_mib=mem_mib,
        memory_percent=pct,
        cores_percent=cores,
        types_include=_csv(ann, cfg.use_type_annotation),
        types_exclude=_csv(ann, cfg.nouse_type_annotation),
        numa_bind=_numa_bind(ann, cfg),
        modes=_csv(ann, cfg.mode_annotation),
        chip=cfg.chip,
        soft_split=traits.vnpu_templates and ann.get("huawei.com/vnpu-mode") == "hami-core",
        qos_policy=str(ann.get(traits.qos_annotation, "best-effort"))
        if traits.qos_annotation
        else "",
        **_uuid_pins(ann, cfg),
    )


def _cores(get: Reader, r: str, cfg: DeviceModelConfig, count_only: bool) -> int:
    """Cores percent of a request: the cores resource, else 100 for a count-only request of
    a backend that makes it exclusive (NVIDIA, without a default memory), else the default."""
    cores_raw = get(cfg.resource_cores)
    if cores_raw is not None:
        return plain_int(cores_raw, f"{r}.{cfg.resource_cores}")
    if cfg.exclusive_when_count_only and count_only and not cfg.default_memory_mib:
        return 100
    return cfg.default_cores_percent


def _numa_bind(ann: dict[str, Any], cfg: DeviceModelConfig) -> bool:
    if not cfg.numa_annotation:
        return False
    return str(ann.get(cfg.numa_annotation, "")).lower() == "true"


def _memory(cfg: DeviceModelConfig, r: str, mem_raw: Any, pct_raw: Any) -> tuple[int, int | None]:
    """``(memory MiB, memory percent or None)`` of a container's device memory limits: the
    memory resource in units of ``memory_factor`` MiB (0 = percent of the card; Metax sGPU
    also takes quantities such as ``4Gi``), else the memory-percent resource.

    Raises:
        ValueError: a value is not an integer or a percentage is above 100 (field named).
    """
    mem_mib, pct = 0, None
    if mem_raw is not None:
        quantity = vendor_traits(cfg.vendor).memory_quantity
        if quantity and isinstance(mem_raw, str) and not mem_raw.strip().isdigit():
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
    containers = _containers(spec, f"{where}.spec", ann, configs)
    cpu, mem = pod_host(spec, f"{where}.spec")
    node_policy, dev_policy, weights = _policies(ann, f"{where}.metadata.annotations")
    selector = spec.get("nodeSelector") or {}
    if not isinstance(selector, dict):
        raise ValueError(f"{where}.spec.nodeSelector: must be a mapping")
    return PodRequest(
        name=str(meta.get("name") or meta.get("generateName") or "pod"),
        cpu_milli=cpu,
        memory_mib=mem,
        containers=containers,
        node_selector={str(k): str(v) for k, v in selector.items()},
        node_policy=node_policy,
        device_policy=dev_policy,
        device_scoring_weights=weights,
        namespace=str(meta.get("namespace") or ""),
    )


def _containers(
    spec: dict[str, Any], where: str, ann: dict[str, Any], configs: list[DeviceModelConfig]
) -> tuple[ContainerRequest, ...]:
    """The pod's init containers, then its app containers, each with its device requests."""
    containers = []
    for kind, init in (("initContainers", True), ("containers", False)):
        for k, c in enumerate(spec.get(kind) or []):
            cw = f"{where}.{kind}[{k}]"
            if not isinstance(c, dict) or not isinstance(c.get("name"), str):
                raise ValueError(f"{cw}.name: required")
            containers.append(
                ContainerRequest(c["name"], _container_devices(c, cw, ann, configs), init)
            )
    return tuple(containers)


def _policies(ann: dict[str, Any], where: str) -> tuple[str, str, tuple[int, int, int] | None]:
    """``(node policy, device policy, device scoring weights)`` from the pod's annotations
    (``where``: the annotations' path, for messages). The policy words are normalised as
    everywhere (:func:`~scheduling.devices.policies.policy_word`: ``" Spread "`` = spread).

    Raises:
        ValueError: a policy HAMi does not know (a comma chain of device policies included) or
            malformed weights.
    """
    node_policy = policy_word(ann.get(NODE_POLICY_ANNOTATION, ""))
    dev_policy = policy_word(ann.get(DEVICE_POLICY_ANNOTATION, ""))
    for key, word, allowed, note in (
        (NODE_POLICY_ANNOTATION, node_policy, NODE_POLICIES, ""),
        (
            DEVICE_POLICY_ANNOTATION,
            dev_policy,
            DEVICE_POLICIES,
            " (comma chains are not supported)",
        ),
    ):
        # "" = the annotation is absent or empty: the profile's policy
        if word and (error := policy_error(f"{where}.{key}", word, allowed)) is not None:
            raise ValueError(error + note)
    weights = None
    if "hami.io/device-scoring-weights" in ann:
        weights = _weights(
            ann["hami.io/device-scoring-weights"], f"{where}.hami.io/device-scoring-weights"
        )
    return node_policy, dev_policy, weights
