"""HAMi's scheduler device config (``device-config.yaml``) -> :class:`HamiConfig`.

:func:`scheduling.devices.hami_files.read_hami_config` detects which of the two files (or a
ConfigMap) it was given:

* a ``ConfigMap`` (``kind: ConfigMap``) -> its ``data["device-config.yaml"]`` text;
* the scheduler's **device-config.yaml** (HAMi v2.10 ``pkg/scheduler/config/config.go``
  ``Config``: top-level ``nvidia``, ``cambricon``, ``hygon``, ``metax``, ``enflame``,
  ``mthreads``, ``iluvatars``, ``kunlun``, ``awsneuron``, ``amd``, ``vastai``, ``biren``,
  ``vnpus``; plus the console's ``nodeSchedulerPolicy`` / ``gpuSchedulerPolicy``);
* the chart's **values.yaml** (``charts/hami/values.yaml``: ``resourceName``,
  ``mluResourceMem``, ``scheduler``, ``devicePlugin``, ``devices``, ``device-config`` ...),
  rendered the way ``templates/scheduler/device-configmap.yaml`` renders it
  (:mod:`scheduling.devices.hami_values`).

HAMi itself ignores unknown keys (yaml.v2, non-strict); the console refuses them, naming the
key (``config nvidia.deviceSplitCont: unknown key``). Keys HAMi knows but that do not change
placement (``overwriteEnv``, ``runtimeClassName``, ``libCudaLogLevel`` ...) are accepted and
ignored. ``nvidia.knownMigGeometries`` (<= v2.9) is accepted with a warning, as HAMi v2.10
ignores it.

Console extensions (documented, not HAMi keys): ``cambricon.memoryFactor`` (the sMLU unit in
MiB, 0 = 1 % of ``memoryAllocatable``), ``cambricon.memoryAllocatable`` (MiB per card) and
``cambricon.models`` (``[{name, resourceMemoryName?, resourceCoreName?, memoryFactor?,
memoryAllocatable?}]``: several MLU models in one cluster, resource names defaulting to the
plugin's ``--enable-device-type`` names).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from scheduling.devices.defaults import (
    ILUVATAR_CHIPS,
    MIG_PROFILE_ALLOWLIST,
    ascend_config,
    default_device_configs,
    iluvatar_config,
)
from scheduling.devices.policies import DEVICE_POLICIES, NODE_POLICIES, policy_word
from scheduling.devices.resources import cambricon_model_resources
from scheduling.devices.schema import ConfigError, DeviceModelConfig, Template

__all__ = [
    "HamiConfig",
    "HamiConfigError",
    "read_device_config",
    "DEVICE_CONFIG_SECTIONS",
    "POLICY_KEYS",
    "NODE_POLICIES",
    "DEVICE_POLICIES",
    "parse_yaml_text",
    "mapping",
    "only_keys",
]


class HamiConfigError(ValueError):
    """A HAMi config file is invalid; the message starts ``config <key path>:``."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        super().__init__(f"config {path}: {message}" if path else f"config: {message}")


@dataclass(frozen=True)
class HamiConfig:
    """Scheduler-level settings plus device configs.

    Attributes:
        devices: one config per enabled backend (per chip for Ascend/Iluvatar, per model for
            ``cambricon.models``).
        node_policy / device_policy: HAMi ``--node-scheduler-policy`` /
            ``--gpu-scheduler-policy``.
        mig_allowlist: ``nvidia.migProfileAllowlist`` as ``((models...), (profiles...))``.
        hami_vnpu_core: ``vnpus.hamiVnpuCore`` (Ascend soft split by default).
        warnings: accepted-but-ignored legacy settings, disabled backends.
        shape: ``"default"`` | ``"device-config"`` | ``"configmap"`` | ``"values"``.
    """

    devices: tuple[DeviceModelConfig, ...]
    node_policy: str = "binpack"
    device_policy: str = "spread"
    mig_allowlist: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = MIG_PROFILE_ALLOWLIST
    hami_vnpu_core: bool = False
    warnings: tuple[str, ...] = ()
    shape: str = "default"


# section -> ((vendor, {HAMi key: config field}), ...), keys HAMi knows and we ignore
_RES = {
    "resourceCountName": "resource_count",
    "resourceMemoryName": "resource_memory",
    "resourceCoreName": "resource_cores",
}
_SECTIONS: dict[str, tuple[tuple[tuple[str, dict[str, str]], ...], frozenset[str]]] = {
    "nvidia": (
        (
            (
                "NVIDIA",
                {
                    **_RES,
                    "resourceMemoryPercentageName": "resource_memory_percent",
                    "resourcePriorityName": "resource_priority",
                    "defaultMemory": "default_memory_mib",
                    "defaultCores": "default_cores_percent",
                    "defaultGPUNum": "default_count",
                    "memoryFactor": "memory_factor",
                    "deviceSplitCount": "split_count",
                    "deviceMemoryScaling": "memory_scaling",
                    "deviceCoreScaling": "core_scaling",
                },
            ),
        ),
        frozenset(
            {
                "overwriteEnv",
                "preConfiguredDeviceMemory",
                "enableNumaTopology",
                "gpuCorePolicy",
                "libCudaLogLevel",
                "runtimeClassName",
                "disableCoreLimit",
                "migProfileAllowlist",
                "knownMigGeometries",
            }
        ),
    ),
    "cambricon": (
        (("MLU", {**_RES, "memoryFactor": "memory_factor", "memoryAllocatable": "memory_mib"}),),
        frozenset({"models"}),
    ),
    "hygon": ((("DCU", {**_RES, "memoryFactor": "memory_factor"}),), frozenset()),
    "metax": (
        (
            ("Metax", {"resourceCountName": "resource_count"}),
            (
                "MetaxSGPU",
                {
                    "resourceVCountName": "resource_count",
                    "resourceVMemoryName": "resource_memory",
                    "resourceVCoreName": "resource_cores",
                },
            ),
        ),
        frozenset({"sgpuTopologyAware"}),
    ),
    "enflame": (
        (
            ("Enflame", {"resourceNameGCU": "resource_count"}),
            (
                "EnflameDRS",
                {
                    "resourceNameDRSGCU": "resource_count",
                    "resourceNameGCUMemory": "resource_memory",
                    "resourceNameGCUCore": "resource_cores",
                },
            ),
        ),
        frozenset({"resourceNameVGCU", "resourceNameVGCUPercentage"}),
    ),
    "mthreads": ((("Mthreads", dict(_RES)),), frozenset()),
    "kunlun": (
        (
            ("Kunlun", {"resourceCountName": "resource_count"}),
            (
                "KunlunVXPU",
                {"resourceVCountName": "resource_count", "resourceVMemoryName": "resource_memory"},
            ),
        ),
        frozenset(),
    ),
    "awsneuron": (
        (
            (
                "AWSNeuron",
                {"resourceCountName": "resource_count", "resourceCoreName": "resource_cores"},
            ),
        ),
        frozenset(),
    ),
    "amd": ((("AMD", dict(_RES)),), frozenset()),
    "vastai": ((("Vastai", {"resourceCountName": "resource_count"}),), frozenset()),
    "biren": ((("Biren", {"resourceCountName": "resource_count"}),), frozenset()),
}
DEVICE_CONFIG_SECTIONS = frozenset({*_SECTIONS, "iluvatars", "vnpus"})
POLICY_KEYS = frozenset({"nodeSchedulerPolicy", "gpuSchedulerPolicy"})
_ILUVATAR_KEYS = {
    "chipName",
    "commonWord",
    "resourceCountName",
    "resourceMemoryName",
    "resourceCoreName",
}
_VNPU_KEYS = {
    "chipName",
    "commonWord",
    "resourceName",
    "resourceMemoryName",
    "resourceCoreName",
    "memoryAllocatable",
    "memoryCapacity",
    "memoryFactor",
    "aiCore",
    "aiCPU",
    "runtimeClassName",
    "overwriteEnv",
    "templates",
    "superPod",
}
_MLU_MODEL_KEYS = {
    "name",
    "resourceMemoryName",
    "resourceCoreName",
    "memoryFactor",
    "memoryAllocatable",
}


def mapping(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise HamiConfigError(path, "must be a mapping")
    return value


def only_keys(data: Mapping[str, Any], known: set[str] | frozenset[str], path: str) -> None:
    for k in data:
        if k not in known:
            raise HamiConfigError(
                f"{path}.{k}" if path else str(k),
                f"unknown key (known: {', '.join(sorted(known))})",
            )


def _value(field: str, v: Any, path: str) -> Any:
    if field.startswith("resource_"):
        if not isinstance(v, str) or not v:
            raise HamiConfigError(path, "must be a non-empty string")
        return v
    if field in ("memory_scaling", "core_scaling"):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
            raise HamiConfigError(path, "must be a positive number")
        return float(v)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise HamiConfigError(path, "must be an integer >= 0")
    return v


def _apply(
    cfg: DeviceModelConfig, values: Mapping[str, Any], keys: dict[str, str], path: str
) -> DeviceModelConfig:
    changes = {f: _value(f, values[k], f"{path}.{k}") for k, f in keys.items() if k in values}
    if not changes:
        return cfg
    for field, value in list(changes.items()):
        # devices synthesised from node capacity follow the renamed resource (HAMi reads
        # capacity[resourceCoreName] for Cambricon/Mthreads, [resourceCountName] otherwise)
        if cfg.capacity_resource and getattr(cfg, field) == cfg.capacity_resource:
            changes["capacity_resource"] = value
    if cfg.vendor in ("NVIDIA", "DCU") and "memory_factor" in changes:
        changes["memory_factor"] = max(1, changes["memory_factor"])  # HAMi: factor <= 1 -> 1
    try:
        return cfg.replace(**changes)
    except ConfigError as exc:
        key = next(iter(exc.errors))
        raise HamiConfigError(path, f"{key}: {exc.errors[key]}") from None


def _int(v: Any, path: str, minimum: int = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
        raise HamiConfigError(path, f"must be an integer >= {minimum}")
    return v


def _str(v: Any, path: str) -> str:
    if not isinstance(v, str) or not v:
        raise HamiConfigError(path, "must be a non-empty string")
    return v


def _str_list(v: Any, path: str) -> list[str]:
    """``v`` as a non-empty list of non-empty strings; HamiConfigError at ``path`` if not."""
    if not isinstance(v, list) or not v or not all(isinstance(x, str) and x for x in v):
        raise HamiConfigError(path, "must be a non-empty list of strings")
    return v


def _entries(
    items: Any, name: str, keys: frozenset[str] | set[str], *, shape: str = "must be a list"
) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """``(path, mapping)`` per entry of the list ``items`` at ``name``, each a mapping of only
    ``keys``. Raises HamiConfigError naming the path of what is not."""
    if not isinstance(items, list):
        raise HamiConfigError(name, shape)
    for i, v in enumerate(items):
        path = f"{name}[{i}]"
        v = mapping(v, path)
        only_keys(v, keys, path)
        yield path, v


def _iluvatars(items: Any) -> list[DeviceModelConfig]:
    out = []
    for path, v in _entries(items, "iluvatars", _ILUVATAR_KEYS):
        chip = _str(v.get("chipName"), f"{path}.chipName")
        cw = _str(v.get("commonWord", chip), f"{path}.commonWord")
        base = iluvatar_config(chip, cw)
        out.append(_apply(base, v, dict(_RES), path))
    return out


def _templates(items: Any, path: str) -> tuple[Template, ...]:
    if not isinstance(items, list) or not items:
        raise HamiConfigError(path, "must be a non-empty list")
    out = []
    for j, t in enumerate(items):
        tp = f"{path}[{j}]"
        t = mapping(t, tp)
        only_keys(t, {"name", "memory", "aiCore", "aiCPU"}, tp)
        out.append(
            Template(
                name=_str(t.get("name"), f"{tp}.name"),
                memory_mib=_int(t.get("memory"), f"{tp}.memory", 1),
                cores_percent=_int(t.get("aiCore", 0), f"{tp}.aiCore"),
                cpus=_int(t.get("aiCPU", 0), f"{tp}.aiCPU"),
            )
        )
    return tuple(out)


def _vnpus(value: Any) -> tuple[list[DeviceModelConfig], bool]:
    """``vnpus``: v2.10 mapping ``{hamiVnpuCore, configs}`` or the older list."""
    core = False
    items = value
    if isinstance(value, Mapping):
        only_keys(value, {"hamiVnpuCore", "configs"}, "vnpus")
        core = value.get("hamiVnpuCore", False)
        if not isinstance(core, bool):
            raise HamiConfigError("vnpus.hamiVnpuCore", "must be a boolean")
        items = value.get("configs", [])
    out = []
    for path, v in _entries(
        items, "vnpus", _VNPU_KEYS, shape="must be a list or {hamiVnpuCore, configs}"
    ):
        cw = _str(v.get("commonWord"), f"{path}.commonWord")
        alloc = _int(v.get("memoryAllocatable"), f"{path}.memoryAllocatable", 1)
        res = (
            _str(v.get("resourceName", f"huawei.com/{cw}"), f"{path}.resourceName"),
            _str(
                v.get("resourceMemoryName", f"huawei.com/{cw}-memory"), f"{path}.resourceMemoryName"
            ),
            _str(v.get("resourceCoreName", f"huawei.com/{cw}-core"), f"{path}.resourceCoreName"),
        )
        super_pod = v.get("superPod", False)
        if not isinstance(super_pod, bool):
            raise HamiConfigError(f"{path}.superPod", "must be a boolean")
        out.append(
            ascend_config(
                cw,
                _str(v.get("chipName", cw), f"{path}.chipName"),
                alloc,
                _int(v.get("memoryCapacity", alloc), f"{path}.memoryCapacity", 1),
                _int(v.get("aiCore", 100), f"{path}.aiCore"),
                _templates(v.get("templates"), f"{path}.templates"),
                super_pod,
                res,
                max(1, _int(v.get("memoryFactor", 1), f"{path}.memoryFactor")),
            )
        )
    return [c.model_copy(update={"enabled": True}) for c in out], core


def _mlu_models(base: DeviceModelConfig, items: Any) -> list[DeviceModelConfig]:
    out = []
    for path, v in _entries(items, "cambricon.models", _MLU_MODEL_KEYS):
        name = _str(v.get("name"), f"{path}.name")
        mem, cores = cambricon_model_resources(name)
        cfg = base.replace(
            chip=name, resource_memory=mem, resource_cores=cores, capacity_resource=cores
        )
        out.append(
            _apply(
                cfg,
                v,
                {
                    "resourceMemoryName": "resource_memory",
                    "resourceCoreName": "resource_cores",
                    "memoryFactor": "memory_factor",
                    "memoryAllocatable": "memory_mib",
                },
                path,
            )
        )
    return out


def _mig_allowlist(value: Any) -> tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]:
    if not isinstance(value, list):
        raise HamiConfigError("nvidia.migProfileAllowlist", "must be a list")
    out = []
    for i, e in enumerate(value):
        path = f"nvidia.migProfileAllowlist[{i}]"
        e = mapping(e, path)
        only_keys(e, {"models", "profiles"}, path)
        models = _str_list(e.get("models"), f"{path}.models")
        profiles = _str_list(e.get("profiles"), f"{path}.profiles")
        bad = [p for p in profiles if "g." not in p or not p.split("g.", 1)[0].isdigit()]
        if bad:
            raise HamiConfigError(f"{path}.profiles", f"{bad[0]!r} is not <n>g.<memory>")
        out.append((tuple(models), tuple(profiles)))
    return tuple(out)


def _policies(data: Mapping[str, Any]) -> tuple[str, str]:
    node = policy_word(data.get("nodeSchedulerPolicy", "binpack"))
    dev = policy_word(data.get("gpuSchedulerPolicy", "spread"))
    if node not in NODE_POLICIES:
        raise HamiConfigError("nodeSchedulerPolicy", f"{node!r} not binpack|spread")
    if dev not in DEVICE_POLICIES:
        raise HamiConfigError(
            "gpuSchedulerPolicy", f"{dev!r} not binpack|spread|topology-aware|mutex"
        )
    return node, dev


def _sections(data: Mapping[str, Any], out: list[DeviceModelConfig]) -> list[str]:
    """Apply the per-backend sections in place; returns warnings."""
    warnings = []
    for section, (targets, ignored) in _SECTIONS.items():
        if section not in data:
            continue
        values = mapping(data[section], section)
        only_keys(values, {k for _, keys in targets for k in keys} | ignored, section)
        for vendor, keys in targets:
            out[:] = [
                _apply(c, values, keys, section) if c.vendor == vendor and not c.chip else c
                for c in out
            ]
    nvidia = data.get("nvidia") or {}
    if "knownMigGeometries" in nvidia:
        warnings.append(
            "nvidia.knownMigGeometries is ignored since HAMi v2.10 (use migProfileAllowlist)"
        )
    if "models" in (data.get("cambricon") or {}):
        mlu = next(c for c in out if c.vendor == "MLU" and not c.chip)
        out.extend(_mlu_models(mlu, data["cambricon"]["models"]))
    return warnings


def read_device_config(data: Mapping[str, Any] | None, shape: str = "device-config") -> HamiConfig:
    """Read the scheduler's ``device-config.yaml`` (parsed). Raises :class:`HamiConfigError`."""
    data = mapping(data or {}, "")
    only_keys(data, DEVICE_CONFIG_SECTIONS | POLICY_KEYS, "")
    out = [c for c in default_device_configs() if c.vendor not in ("Ascend", "Iluvatar")]
    warnings = _sections(data, out)
    core = False
    if "vnpus" in data:
        ascend, core = _vnpus(data["vnpus"])
    else:
        ascend = [c for c in default_device_configs() if c.vendor == "Ascend"]
    out.extend(ascend)
    if "iluvatars" in data:
        out.extend(c.model_copy(update={"enabled": True}) for c in _iluvatars(data["iluvatars"]))
    else:
        out.extend(iluvatar_config(c).model_copy(update={"enabled": True}) for c in ILUVATAR_CHIPS)
    allowlist = MIG_PROFILE_ALLOWLIST
    if "migProfileAllowlist" in (data.get("nvidia") or {}):
        allowlist = _mig_allowlist(data["nvidia"]["migProfileAllowlist"])
    node, dev = _policies(data)
    return HamiConfig(tuple(out), node, dev, allowlist, core, tuple(warnings), shape)


def parse_yaml_text(text: Any, path: str) -> Any:
    """Parse an embedded YAML document (a ConfigMap's ``device-config.yaml``, the chart's
    ``device-config.content``). PyYAML is imported here only."""
    if not isinstance(text, str):
        raise HamiConfigError(path, "must be a YAML string")
    import yaml  # noqa: PLC0415 - only embedded documents need it; keeps the cores yaml-free

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise HamiConfigError(path, f"invalid YAML ({str(exc).splitlines()[0]})") from None
