"""HAMi's chart ``values.yaml`` -> :class:`HamiConfig`, rendered as the chart renders the
scheduler's device ConfigMap (``charts/hami/templates/scheduler/device-configmap.yaml``,
HAMi v2.10.0; key list from ``charts/hami/values.yaml``).

* ``device-config.content`` (non-empty) replaces the whole device config, as in the chart;
* else ``resourceName``/``resourceMem``/... -> ``nvidia.resource*Name``,
  ``mluResource*`` -> ``cambricon``, ``dcuResource*`` -> ``hygon``, ``metaxResource*`` ->
  ``metax.resourceV*``, ``enflameResourceName*`` -> ``enflame``, ``kunlunResource*`` ->
  ``kunlun``, ``vastaiResourceName``, ``birenResourceName``;
  ``devicePlugin.deviceSplitCount``/``deviceMemoryScaling``/``deviceCoreScaling`` ->
  ``nvidia``; chart <= v2.4 ``scheduler.defaultMem``/``defaultCores``/``defaultGPUNum`` ->
  ``nvidia.defaultMemory``/``defaultCores``/``defaultGPUNum``;
* policies from ``scheduler.defaultSchedulerPolicy.{nodeSchedulerPolicy,gpuSchedulerPolicy}``;
* ``devices.ascend.enabled`` / ``devices.iluvatar.enabled`` (chart default false) switch those
  backends (HAMi's ``--enable-ascend`` / ``--enable-iluvatar``); a disabled backend is left
  out of the config with a warning, ``devices.ascend.hamiVnpuCore`` -> ``vnpus``.

Every other chart key is known and ignored (images, services, tolerations ...); a key the
chart does not have is an error naming it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduling.devices.hami_config import (
    HamiConfig,
    HamiConfigError,
    mapping,
    only_keys,
    parse_yaml_text,
    read_device_config,
)

__all__ = ["VALUES_KEYS", "read_chart_values"]

# chart key -> (device-config section, key)
_RESOURCE_KEYS = {
    "resourceName": ("nvidia", "resourceCountName"),
    "resourceMem": ("nvidia", "resourceMemoryName"),
    "resourceMemPercentage": ("nvidia", "resourceMemoryPercentageName"),
    "resourceCores": ("nvidia", "resourceCoreName"),
    "resourcePriority": ("nvidia", "resourcePriorityName"),
    "mluResourceName": ("cambricon", "resourceCountName"),
    "mluResourceMem": ("cambricon", "resourceMemoryName"),
    "mluResourceCores": ("cambricon", "resourceCoreName"),
    "dcuResourceName": ("hygon", "resourceCountName"),
    "dcuResourceMem": ("hygon", "resourceMemoryName"),
    "dcuResourceCores": ("hygon", "resourceCoreName"),
    "metaxResourceName": ("metax", "resourceVCountName"),
    "metaxResourceMem": ("metax", "resourceVMemoryName"),
    "metaxResourceCore": ("metax", "resourceVCoreName"),
    "enflameResourceNameDRSGCU": ("enflame", "resourceNameDRSGCU"),
    "enflameResourceNameGCUMemory": ("enflame", "resourceNameGCUMemory"),
    "enflameResourceNameGCUCore": ("enflame", "resourceNameGCUCore"),
    "kunlunResourceName": ("kunlun", "resourceCountName"),
    "kunlunResourceVCountName": ("kunlun", "resourceVCountName"),
    "kunlunResourceVMemoryName": ("kunlun", "resourceVMemoryName"),
    "vastaiResourceName": ("vastai", "resourceCountName"),
    "birenResourceName": ("biren", "resourceCountName"),
}
_IGNORED_TOP = {
    "global",
    "nameOverride",
    "fullnameOverride",
    "namespaceOverride",
    "schedulerName",
    "podSecurityPolicy",
    "mockDevicePlugin",
    "legacyMetrics",
    "prometheus",
    "metaxsGPUTopologyAware",
}
VALUES_KEYS = frozenset(
    {*_RESOURCE_KEYS, *_IGNORED_TOP, "scheduler", "devicePlugin", "devices", "device-config"}
)

_SCHEDULER_KEYS = {
    "nodeName",
    "overwriteEnv",
    "defaultSchedulerPolicy",
    "metricsBindAddress",
    "forceOverwriteDefaultScheduler",
    "livenessProbe",
    "leaderElect",
    "replicas",
    "kubeScheduler",
    "extender",
    "nodeLockExpire",
    "podAnnotations",
    "tolerations",
    "admissionWebhook",
    "certManager",
    "patch",
    "service",
    "nodeLabelSelector",
    "defaultMem",
    "defaultCores",
    "defaultGPUNum",
}
_LEGACY_DEFAULTS = {
    "defaultMem": "defaultMemory",
    "defaultCores": "defaultCores",
    "defaultGPUNum": "defaultGPUNum",
}
_PLUGIN_KEYS = {
    "enabled",
    "gpuOperatorToolkitReady",
    "image",
    "monitor",
    "deviceSplitCount",
    "deviceMemoryScaling",
    "deviceCoreScaling",
    "enableNumaTopology",
    "preConfiguredDeviceMemory",
    "nodeConfiguration",
    "runtimeClassName",
    "createRuntimeClass",
    "migStrategy",
    "disablecorelimit",
    "passDeviceSpecsEnabled",
    "deviceListStrategy",
    "nvidiaHookPath",
    "nvidiaDriverRoot",
    "gdrcopyEnabled",
    "gdsEnabled",
    "mofedEnabled",
    "extraArgs",
    "extraEnvs",
    "service",
    "pluginPath",
    "libPath",
    "podAnnotations",
    "hostPID",
    "hostNetwork",
    "securityContext",
    "nvidiaNodeSelector",
    "tolerations",
    "updateStrategy",
    "resources",
}
_PLUGIN_TO_NVIDIA = ("deviceSplitCount", "deviceMemoryScaling", "deviceCoreScaling")
_DEVICES_KEYS = {
    "nvidia": {"gpuCorePolicy", "libCudaLogLevel"},
    "ascend": {
        "enabled",
        "image",
        "imagePullPolicy",
        "extraArgs",
        "nodeSelector",
        "tolerations",
        "runtimeClassName",
        "hamiVnpuCore",
        "customresources",
    },
    "iluvatar": {"enabled", "customresources"},
    **{
        v: {"enabled", "customresources"}
        for v in ("amd", "awsneuron", "kunlun", "enflame", "mthreads", "vastai", "biren")
    },
}


def _scheduler(values: Mapping[str, Any], dc: dict[str, Any]) -> None:
    sched = mapping(values.get("scheduler") or {}, "scheduler")
    only_keys(sched, _SCHEDULER_KEYS, "scheduler")
    policy = mapping(sched.get("defaultSchedulerPolicy") or {}, "scheduler.defaultSchedulerPolicy")
    only_keys(
        policy, {"nodeSchedulerPolicy", "gpuSchedulerPolicy"}, "scheduler.defaultSchedulerPolicy"
    )
    dc.update(policy)
    for old, new in _LEGACY_DEFAULTS.items():
        if old in sched:
            dc.setdefault("nvidia", {})[new] = sched[old]


def _devices(values: Mapping[str, Any]) -> tuple[dict[str, bool], bool]:
    devices = mapping(values.get("devices") or {}, "devices")
    only_keys(devices, set(_DEVICES_KEYS), "devices")
    enabled: dict[str, bool] = {"ascend": False, "iluvatar": False}
    for vendor, section in devices.items():
        section = mapping(section or {}, f"devices.{vendor}")
        only_keys(section, _DEVICES_KEYS[vendor], f"devices.{vendor}")
        if vendor in enabled and "enabled" in section:
            if not isinstance(section["enabled"], bool):
                raise HamiConfigError(f"devices.{vendor}.enabled", "must be a boolean")
            enabled[vendor] = section["enabled"]
    core = (devices.get("ascend") or {}).get("hamiVnpuCore", False)
    if not isinstance(core, bool):
        raise HamiConfigError("devices.ascend.hamiVnpuCore", "must be a boolean")
    return enabled, core


def _render(values: Mapping[str, Any]) -> dict[str, Any]:
    """The device config the chart template renders from ``values`` (module doc)."""
    content = mapping(values.get("device-config") or {}, "device-config")
    only_keys(content, {"content"}, "device-config")
    if content.get("content"):
        parsed = parse_yaml_text(content["content"], "device-config.content")
        return dict(mapping(parsed or {}, "device-config.content"))
    dc: dict[str, Any] = {}
    for key, (section, hami_key) in _RESOURCE_KEYS.items():
        if key in values:
            dc.setdefault(section, {})[hami_key] = values[key]
    plugin = mapping(values.get("devicePlugin") or {}, "devicePlugin")
    only_keys(plugin, _PLUGIN_KEYS, "devicePlugin")
    for key in _PLUGIN_TO_NVIDIA:
        if key in plugin:
            dc.setdefault("nvidia", {})[key] = plugin[key]
    return dc


def read_chart_values(values: Mapping[str, Any]) -> HamiConfig:
    """Read HAMi's chart ``values.yaml`` (parsed). Raises :class:`HamiConfigError`."""
    values = mapping(values, "")
    only_keys(values, VALUES_KEYS, "")
    dc = _render(values)
    _scheduler(values, dc)
    enabled, core = _devices(values)
    if core:
        vnpus = dc.get("vnpus")
        if isinstance(vnpus, Mapping):
            dc["vnpus"] = {**vnpus, "hamiVnpuCore": True}
    cfg = read_device_config(dc, "values")
    warnings = list(cfg.warnings)
    devices = []
    for c in cfg.devices:
        switch = {"Ascend": "ascend", "Iluvatar": "iluvatar"}.get(c.vendor)
        if switch and not enabled[switch]:
            continue
        devices.append(c)
    for switch, on in enabled.items():
        if not on:
            warnings.append(
                f"devices.{switch}.enabled is false: HAMi does not place {switch} requests"
            )
    return HamiConfig(
        tuple(devices),
        cfg.node_policy,
        cfg.device_policy,
        cfg.mig_allowlist,
        cfg.hami_vnpu_core or core,
        tuple(warnings),
        "values",
    )
