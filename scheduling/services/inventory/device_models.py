"""The DeviceModel a reported device belongs to (created from the device when new)."""

from __future__ import annotations

from scheduling.choices import SlicingMode
from scheduling.models import DeviceModel
from scheduling.placement.types import Device as CoreDevice

__all__ = ["model_for", "slicing_mode"]


def slicing_mode(dev: CoreDevice) -> str:
    """How a device is shared: template (MIG), unit (Cambricon / Hygon), whole, fractional."""
    if dev.mode == "mig" or dev.mig_profiles:
        return SlicingMode.TEMPLATE
    if dev.vendor in ("MLU", "DCU") and dev.split_count > 1:
        return SlicingMode.UNIT
    if dev.split_count <= 1:
        return SlicingMode.WHOLE
    return SlicingMode.FRACTIONAL


def model_for(dev: CoreDevice, cache: dict[str, DeviceModel]) -> DeviceModel:
    """The DeviceModel named by the registered type (created from the device when new)."""
    name = dev.type or dev.vendor
    model = cache.get(name)
    if model is None:
        model, _ = DeviceModel.objects.get_or_create(name=name, defaults={
            "vendor": dev.vendor, "memory_mib": dev.memory_mib,
            "cores_percent": dev.cores_percent, "split_count": max(1, dev.split_count),
            "slicing_mode": slicing_mode(dev)})
        cache[name] = model
    return model
