"""Resource tables the manifest builders, the inventory and placement need, computed from a
resolved :class:`DeviceModelConfig` (never hard-coded per vendor elsewhere).

Memory units (Cambricon sMLU arithmetic, research notes §3.2; HAMi ``memoryFactor``):

* :func:`unit_mib`: MiB per memory-resource unit = ``memory_factor``, or when it is 0,
  ``floor(allocatable / 100)`` with allocatable = ``memory_mib`` of the model, else the
  card's registered memory (unit 0 = 1 % of the card). MLU590 (79872 MiB) -> 798.
* :func:`units_for`: units a per-device request of ``memory_mib`` asks for:
  ``ceil(max(memory_mib, min_slice_mib) / unit)``; 0 MiB -> 0 units.
* :func:`memory_for_units`: the reverse, ``units x unit`` MiB.
* :func:`charged_memory_mib`: what a request is booked and charged at,
  ``memory_for_units(units_for(...))``: 4096 MiB on an MLU590 at unit 0 -> 6 units ->
  4788 MiB.
* :func:`plugin_devices_per_card`: kubelet devices the plugin registers per card for the
  memory resource (``floor(card / unit)``, or 100 at unit 0) - checked against
  ``max_plugin_devices`` by the inventory.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from scheduling.devices.schema import ConfigError, DeviceModelConfig, DraSpec, Template
from scheduling.devices.vendors import vendor_traits

__all__ = [
    "MAX_CORES_PERCENT",
    "CORE_LIMIT_WORDS",
    "cores_limit_error",
    "ResourceNames",
    "resource_names",
    "unit_mib",
    "units_for",
    "memory_for_units",
    "charged_memory_mib",
    "plugin_devices_per_card",
    "cambricon_resource_base",
    "cambricon_model_resources",
    "cambricon_model_of_resource",
    "dra_device_class",
    "card_counters",
    "template_counters",
    "stored_booking_counters",
    "counter_set_name",
    "template_share_count",
]


MAX_CORES_PERCENT = 100
"""Most cores a device request may ask per device, percent (``nvidia.com/gpucores`` and the
resources of the vendors that share HAMi's generic Fit)."""
CORE_LIMIT_WORDS = "core limit can't exceed {limit}"
"""HAMi's words for a request above the limit (see :func:`cores_limit_error`)."""


def cores_limit_error(cores: int, vendor: str, resource: str = "") -> str:
    """Why a request of ``cores`` per device of ``vendor`` may not be placed, in HAMi's words
    ("" when it may), ``"<resource> <cores>: core limit can't exceed 100"``: above
    :data:`MAX_CORES_PERCENT` for a vendor whose cores HAMi clamps
    (:attr:`~scheduling.devices.vendors.VendorTraits.cores_clamped`). HAMi's Fit logs exactly
    that and books 100 % (step 8, ``pkg/device/nvidia/device.go``, the same in the Cambricon,
    Hygon, Iluvatar and Ascend backends); the console refuses such a request instead of
    silently giving it a whole device's cores (issue 29)."""
    if cores <= MAX_CORES_PERCENT or not vendor_traits(vendor).cores_clamped:
        return ""
    words = CORE_LIMIT_WORDS.format(limit=MAX_CORES_PERCENT)
    return f"{resource + ' ' if resource else ''}{cores}: {words}"


@dataclass(frozen=True, slots=True)
class ResourceNames:
    """Container resource names of one model ("" = the model has none).

    Attributes:
        count / memory / memory_percent / cores / priority: HAMi resources.
        whole: count resource of the vendor's own device plugin (whole devices).
    """

    count: str
    memory: str = ""
    memory_percent: str = ""
    cores: str = ""
    priority: str = ""
    whole: str = ""


def resource_names(cfg: DeviceModelConfig) -> ResourceNames:
    """The model's resource names."""
    return ResourceNames(
        cfg.resource_count,
        cfg.resource_memory,
        cfg.resource_memory_percent,
        cfg.resource_cores,
        cfg.resource_priority,
        cfg.whole_resource,
    )


def unit_mib(cfg: DeviceModelConfig, card_memory_mib: int = 0) -> int:
    """MiB per memory-resource unit (module doc).

    Raises:
        ConfigError: unit 0 and neither the model's ``memory_mib`` nor ``card_memory_mib``.
    """
    if cfg.memory_factor > 0:
        return cfg.memory_factor
    alloc = cfg.memory_mib or card_memory_mib
    if alloc <= 0:
        raise ConfigError(
            {
                "memory_factor": "0 (1 % units) needs memory_mib (allocatable MiB "
                "per card) or a registered card memory"
            },
            f"device model {cfg.chip or cfg.vendor}",
        )
    return max(1, alloc // 100)


def units_for(cfg: DeviceModelConfig, memory_mib: int, card_memory_mib: int = 0) -> int:
    """Memory-resource units for a per-device request of ``memory_mib`` (module doc).

    Raises:
        ValueError: negative memory; ConfigError as :func:`unit_mib`.
    """
    if memory_mib < 0:
        raise ValueError(f"memory_mib must be >= 0, got {memory_mib}")
    if memory_mib == 0:
        return 0
    unit = unit_mib(cfg, card_memory_mib)
    return math.ceil(max(memory_mib, cfg.min_slice_mib) / unit)


def memory_for_units(cfg: DeviceModelConfig, units: int, card_memory_mib: int = 0) -> int:
    """MiB of ``units`` memory-resource units."""
    if units < 0:
        raise ValueError(f"units must be >= 0, got {units}")
    return units * unit_mib(cfg, card_memory_mib)


def charged_memory_mib(cfg: DeviceModelConfig, memory_mib: int, card_memory_mib: int = 0) -> int:
    """MiB a request of ``memory_mib`` is booked and charged at (rounded up to the minimum
    slice, then to whole units)."""
    return memory_for_units(cfg, units_for(cfg, memory_mib, card_memory_mib), card_memory_mib)


def plugin_devices_per_card(cfg: DeviceModelConfig, card_memory_mib: int) -> int:
    """Kubelet devices a device plugin registers per card for the memory resource: Cambricon
    dynamic-smlu ``floor(M / unit)`` or 100 at unit 0; other slicers ``split_count``."""
    if cfg.slicing == "smlu":
        if cfg.memory_factor == 0:
            return 100
        return (cfg.memory_mib or card_memory_mib) // cfg.memory_factor
    return cfg.split_count


_MLU = re.compile(r"^cambricon\.com/([a-z0-9-]+)\.smlu\.(vmemory|vcore)$")


def cambricon_resource_base(model: str) -> str:
    """Resource prefix the Cambricon plugin uses with ``--enable-device-type``
    (``server.go:543-576``): ``cambricon.com/`` + the model lower-cased up to its first
    ``-`` (``MLU370-X8`` -> ``cambricon.com/mlu370``); ``MLU270-X5K`` keeps its suffix."""
    m = model.strip().lower()
    if m == "mlu270-x5k":
        return "cambricon.com/mlu270-x5k"
    return "cambricon.com/" + m.split("-", 1)[0]


def cambricon_model_resources(model: str) -> tuple[str, str]:
    """(``vmemory``, ``vcore``) resource names of a Cambricon model in dynamic-smlu mode."""
    base = cambricon_resource_base(model)
    return f"{base}.smlu.vmemory", f"{base}.smlu.vcore"


def cambricon_model_of_resource(name: str) -> str | None:
    """The model prefix named by a per-model sMLU resource (``cambricon.com/mlu370.smlu.vcore``
    -> ``"mlu370"``); None for the model-less ``cambricon.com/mlu.smlu.*`` and others."""
    m = _MLU.match(name)
    if m is None or m.group(1) == "mlu":
        return None
    return m.group(1)


def dra_device_class(cfg: DeviceModelConfig) -> str:
    """The DeviceClass a claim for this model names ("" = no DRA driver configured)."""
    if cfg.dra is None:
        return ""
    model = re.sub(r"[\s/]+", "-", (cfg.chip or cfg.common_word).strip().lower())
    return cfg.dra.device_class.replace("{model}", model)


def counter_set_name(spec: DraSpec, *, minor: int = 0, index: int = 0, uuid: str = "") -> str:
    """Name of a card's shared counter set ("" when the driver publishes none)."""
    return (
        spec.counter_set.replace("{minor}", str(minor))
        .replace("{index}", str(index))
        .replace("{uuid}", uuid)
    )


def card_counters(
    cfg: DeviceModelConfig, card_memory_mib: int = 0, card_cores: int = 0
) -> dict[str, int]:
    """Shared counters of one card: the DRA spec's, else ``{"memory": MiB, "cores": n}``
    (allocatable memory of the model, else the card's registered memory)."""
    if cfg.dra is not None and cfg.dra.counters:
        return dict(cfg.dra.counters)
    return {"memory": cfg.memory_mib or card_memory_mib, "cores": card_cores or cfg.cores_percent}


def template_share_count(cfg: DeviceModelConfig, card_memory_mib: int = 0) -> int:
    """Shares of a card the template table allows: allocatable memory // smallest template
    (the Ascend plugin's ``VDeviceCount``); 0 when the model has no templates."""
    smallest = min((t.memory_mib for t in cfg.templates if t.memory_mib > 0), default=0)
    if not smallest:
        return 0
    return max(1, (cfg.memory_mib or card_memory_mib) // smallest)


def template_counters(tpl: Template) -> dict[str, int]:
    """Counters one partition of ``tpl`` consumes: its own, else its memory and cores."""
    if tpl.counters:
        return dict(tpl.counters)
    return {"memory": tpl.memory_mib, "cores": tpl.cores_percent}


def stored_booking_counters(
    cfg: DeviceModelConfig, card_counters: Mapping[str, int], memory_mib: int, cores_percent: int
) -> dict[str, int]:
    """Shared counters a stored device booking (``PlacementDevice``: MiB and percent of
    cores, no template name) consumes on a card with ``card_counters`` (a DRA partitionable
    device: the ResourceSlice's ``sharedCounters``, each partition's ``consumesCounters``,
    KEP-4815): those of ``cfg``'s template of that memory, else ``{"memory": MiB, "cores":
    percent}``; only the counters the card has. The one home of this rule: the snapshot
    books and releases placements with it, the preemption search takes victims out with it."""
    tpl = next((t for t in cfg.templates if t.memory_mib == memory_mib), None)
    used = template_counters(tpl) if tpl else {"memory": memory_mib, "cores": cores_percent}
    return {name: n for name, n in used.items() if name in card_counters}
