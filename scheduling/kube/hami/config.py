"""HAMi configuration by Helm value names -> :class:`DeviceModelConfig` list and policies.

Accepted shape (every key optional; unknown keys raise ValueError naming them)::

    {"nodeSchedulerPolicy": "binpack", "gpuSchedulerPolicy": "spread",
     "nvidia": {"resourceCountName", "resourceMemoryName", "resourceMemoryPercentageName",
                "resourceCoreName", "defaultMemory", "defaultCores", "defaultGPUNum",
                "deviceSplitCount", "deviceMemoryScaling", "deviceCoreScaling",
                "memoryFactor"},
     "cambricon": {"resourceCountName", "resourceMemoryName", "resourceCoreName",
                   "memoryFactor" (sMLU unit MiB; 0 = 1 % of the card),
                   "memoryAllocatable" (MiB per card)},
     "hygon": {"resourceCountName", "resourceMemoryName", "resourceCoreName",
               "memoryFactor"},
     "vnpus": [{"commonWord", "chipName", "resourceName", "resourceMemoryName",
                "memoryAllocatable", "memoryCapacity", "aiCore",
                "templates": [{"name", "memory"}]}],
     "iluvatars": [{"chipName", "commonWord", "resourceCountName", "resourceMemoryName",
                    "resourceCoreName"}],
     "metax" | "metaxsgpu" | "enflame" | "mthreads" | "kunlun" | "kunlunvxpu" | "amd":
        {"resourceCountName", "resourceMemoryName", "resourceCoreName", "memoryFactor",
         "deviceSplitCount", "memoryAllocatable"}}

Names follow ``charts/hami/values.yaml`` and ``device-configmap.yaml`` (HAMi v2.10.0).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from scheduling.placement.vendors.config import DeviceModelConfig, Template, default_device_configs

__all__ = ["HamiConfig", "config_from_helm"]

_COMMON = {"resourceCountName": "resource_count", "resourceMemoryName": "resource_memory",
           "resourceMemoryPercentageName": "resource_memory_percent",
           "resourceCoreName": "resource_cores", "defaultMemory": "default_memory_mib",
           "defaultCores": "default_cores_percent", "defaultGPUNum": "default_count",
           "deviceSplitCount": "split_count", "deviceMemoryScaling": "memory_scaling",
           "deviceCoreScaling": "core_scaling", "memoryFactor": "memory_factor",
           "memoryAllocatable": "memory_mib"}
_SECTIONS = {"nvidia": "NVIDIA", "cambricon": "MLU", "hygon": "DCU", "metax": "Metax",
             "metaxsgpu": "MetaxSGPU", "enflame": "Enflame", "mthreads": "Mthreads",
             "kunlun": "Kunlun", "kunlunvxpu": "KunlunVXPU", "amd": "AMD"}


@dataclass(frozen=True)
class HamiConfig:
    """Scheduler-level settings plus device configs."""

    devices: tuple[DeviceModelConfig, ...]
    node_policy: str = "binpack"
    device_policy: str = "spread"


def _section(cfg: DeviceModelConfig, values: dict[str, Any], where: str) -> DeviceModelConfig:
    if not isinstance(values, dict):
        raise ValueError(f"config {where}: must be a mapping")
    args = {}
    for k, v in values.items():
        if k not in _COMMON:
            raise ValueError(f"config {where}.{k}: unknown key (known: "
                             f"{', '.join(sorted(_COMMON))})")
        target = _COMMON[k]
        if target in ("memory_scaling", "core_scaling"):
            if not isinstance(v, (int, float)) or v <= 0:
                raise ValueError(f"config {where}.{k}: must be a positive number")
            args[target] = float(v)
        elif target.startswith("resource_"):
            if not isinstance(v, str):
                raise ValueError(f"config {where}.{k}: must be a string")
            args[target] = v
        else:
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ValueError(f"config {where}.{k}: must be an integer >= 0")
            args[target] = v
    return replace(cfg, **args)


def config_from_helm(values: dict[str, Any] | None) -> HamiConfig:
    """Build a :class:`HamiConfig` from Helm-named values (module doc). None = defaults.

    Raises ValueError naming the offending key.
    """
    values = values or {}
    if not isinstance(values, dict):
        raise ValueError("config: must be a mapping")
    known = {"nodeSchedulerPolicy", "gpuSchedulerPolicy", "vnpus", "iluvatars", *_SECTIONS}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"config: unknown key(s) {', '.join(unknown)}")
    base = default_device_configs()
    by_vendor: dict[str, list[DeviceModelConfig]] = {}
    for c in base:
        by_vendor.setdefault(c.vendor, []).append(c)
    out: list[DeviceModelConfig] = []
    for section, vendor in _SECTIONS.items():
        for c in by_vendor[vendor]:
            out.append(_section(c, values[section], section) if section in values else c)
    if "vnpus" in values:
        out.extend(_vnpus(values["vnpus"]))
    else:
        out.extend(by_vendor["Ascend"])
    if "iluvatars" in values:
        out.extend(_iluvatars(values["iluvatars"]))
    else:
        out.extend(by_vendor["Iluvatar"])
    node_policy = values.get("nodeSchedulerPolicy", "binpack")
    device_policy = values.get("gpuSchedulerPolicy", "spread")
    if node_policy not in ("binpack", "spread"):
        raise ValueError(f"config nodeSchedulerPolicy: {node_policy!r} not binpack|spread")
    if device_policy not in ("binpack", "spread", "topology-aware", "mutex"):
        raise ValueError(f"config gpuSchedulerPolicy: {device_policy!r} not "
                         "binpack|spread|topology-aware|mutex")
    return HamiConfig(tuple(out), node_policy, device_policy)


def _vnpus(items: Any) -> list[DeviceModelConfig]:
    if not isinstance(items, list):
        raise ValueError("config vnpus: must be a list")
    out = []
    for i, v in enumerate(items):
        where = f"vnpus[{i}]"
        if not isinstance(v, dict) or not isinstance(v.get("commonWord"), str):
            raise ValueError(f"config {where}: needs a string commonWord")
        cw = v["commonWord"]
        tpls = v.get("templates", [])
        if not isinstance(tpls, list) or not tpls:
            raise ValueError(f"config {where}.templates: must be a non-empty list")
        templates = []
        for j, t in enumerate(tpls):
            if not isinstance(t, dict) or not isinstance(t.get("name"), str) \
                    or not isinstance(t.get("memory"), int):
                raise ValueError(f"config {where}.templates[{j}]: needs name and int memory")
            templates.append(Template(t["name"], t["memory"]))
        mem = v.get("memoryAllocatable")
        if not isinstance(mem, int) or mem <= 0:
            raise ValueError(f"config {where}.memoryAllocatable: must be a positive integer")
        cap = v.get("memoryCapacity", mem)
        ai = v.get("aiCore", 100)
        smallest = min(t.memory_mib for t in templates)
        out.append(DeviceModelConfig(
            vendor="Ascend", common_word=cw, chip=cw,
            resource_count=v.get("resourceName", f"huawei.com/{cw}"),
            resource_memory=v.get("resourceMemoryName", f"huawei.com/{cw}-memory"),
            resource_cores=f"huawei.com/{cw}-core", memory_mib=mem, memory_capacity_mib=cap,
            cores_percent=ai, templates=tuple(templates), slicing="template",
            split_count=max(1, mem // smallest),
            register_annotation=f"hami.io/node-register-{cw}",
            handshake_annotation=f"hami.io/node-handshake-{cw}",
            to_allocate_annotation=f"hami.io/{cw}-devices-to-allocate",
            allocated_annotation=f"hami.io/{cw}-devices-allocated",
            use_uuid_annotation=f"hami.io/use-{cw}-uuid",
            nouse_uuid_annotation=f"hami.io/no-use-{cw}-uuid"))
    return out


def _iluvatars(items: Any) -> list[DeviceModelConfig]:
    if not isinstance(items, list):
        raise ValueError("config iluvatars: must be a list")
    out = []
    for i, v in enumerate(items):
        chip = v.get("chipName") if isinstance(v, dict) else None
        if not isinstance(chip, str):
            raise ValueError(f"config iluvatars[{i}]: needs a string chipName")
        cw = v.get("commonWord", chip)
        out.append(DeviceModelConfig(
            vendor="Iluvatar", common_word=cw, chip=chip,
            resource_count=v.get("resourceCountName", f"iluvatar.ai/{chip}-vgpu"),
            resource_memory=v.get("resourceMemoryName", f"iluvatar.ai/{chip}.vMem"),
            resource_cores=v.get("resourceCoreName", f"iluvatar.ai/{chip}.vCore"),
            memory_factor=256, register_annotation=f"hami.io/node-{chip}-register",
            handshake_annotation=f"hami.io/node-handshake-{chip}",
            to_allocate_annotation=f"hami.io/{chip}-devices-to-allocate",
            allocated_annotation=f"hami.io/{chip}-devices-allocated",
            use_uuid_annotation=f"hami.io/use-{chip}-uuid",
            nouse_uuid_annotation=f"hami.io/no-use-{chip}-uuid"))
    return out
