"""Vendor plugins (one per HAMi backend family) and the default vendor set.

``build_vendors(configs)`` groups :class:`DeviceModelConfig` s by vendor word and builds the
plugin of each vendor; unknown vendor words get the generic :class:`VendorPlugin`
(HAMi-core style fractional sharing), so a new backend can be added from data alone.
"""

from __future__ import annotations

from scheduling.devices.defaults import default_device_configs
from scheduling.devices.schema import DeviceModelConfig, Template
from scheduling.placement.vendors.amd import AmdPlugin
from scheduling.placement.vendors.ascend import AscendPlugin
from scheduling.placement.vendors.base import VendorPlugin
from scheduling.placement.vendors.cambricon import CambriconPlugin
from scheduling.placement.vendors.enflame import EnflameDRSPlugin, EnflamePlugin
from scheduling.placement.vendors.hygon import HygonPlugin
from scheduling.placement.vendors.iluvatar import IluvatarPlugin
from scheduling.placement.vendors.kunlun import KunlunPlugin, KunlunVXPUPlugin
from scheduling.placement.vendors.metax import MetaxPlugin, MetaxSGPUPlugin
from scheduling.placement.vendors.mthreads import MthreadsPlugin
from scheduling.placement.vendors.neuron import NeuronPlugin
from scheduling.placement.vendors.nvidia import NvidiaPlugin
from scheduling.placement.vendors.vastai import BirenPlugin, VastaiPlugin

__all__ = [
    "VENDOR_PLUGINS",
    "build_vendors",
    "default_vendors",
    "DeviceModelConfig",
    "Template",
    "VendorPlugin",
    "default_device_configs",
]

VENDOR_PLUGINS: dict[str, type[VendorPlugin]] = {
    "NVIDIA": NvidiaPlugin,
    "MLU": CambriconPlugin,
    "DCU": HygonPlugin,
    "Ascend": AscendPlugin,
    "Metax": MetaxPlugin,
    "MetaxSGPU": MetaxSGPUPlugin,
    "Iluvatar": IluvatarPlugin,
    "Enflame": EnflamePlugin,
    "Mthreads": MthreadsPlugin,
    "Kunlun": KunlunPlugin,
    "KunlunVXPU": KunlunVXPUPlugin,
    "AMD": AmdPlugin,
    "EnflameDRS": EnflameDRSPlugin,
    "AWSNeuron": NeuronPlugin,
    "Vastai": VastaiPlugin,
    "Biren": BirenPlugin,
}


def build_vendors(
    configs: list[DeviceModelConfig], hami_parity: bool = False
) -> dict[str, VendorPlugin]:
    """``{vendor word: plugin}`` for the given configs (grouped by ``vendor``; disabled
    backends are left out). ``hami_parity``: answer as HAMi where the console differs."""
    groups: dict[str, list[DeviceModelConfig]] = {}
    for c in configs:
        if c.enabled:
            groups.setdefault(c.vendor, []).append(c)
    out: dict[str, VendorPlugin] = {}
    for vendor, cfgs in groups.items():
        cls = VENDOR_PLUGINS.get(vendor, VendorPlugin)
        plugin = cls(cfgs, hami_parity)
        if cls is VendorPlugin:
            plugin.vendor = vendor
        out[vendor] = plugin
    return out


_DEFAULT: dict[str, VendorPlugin] | None = None


def default_vendors() -> dict[str, VendorPlugin]:
    """Plugins for :func:`default_device_configs` (built once, shared; plugins are
    stateless)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = build_vendors(default_device_configs())
    return _DEFAULT
