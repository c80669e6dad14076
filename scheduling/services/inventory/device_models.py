"""The DeviceModel a reported device belongs to (created when the catalogue has no row)."""

from __future__ import annotations

from scheduling.devices.matching import model_key
from scheduling.models import DeviceModel
from scheduling.placement.types import DeviceUsage

__all__ = ["model_for"]


def _load(cache: dict[str, DeviceModel]) -> None:
    """Every row under ``<vendor>/<model key>`` of its name, its ``chip`` and its aliases
    (``NVIDIA-A100-SXM4-80GB`` and the registered ``NVIDIA A100-SXM4-80GB`` are one model)."""
    for m in DeviceModel.objects.order_by("pk"):
        config = m.config if isinstance(m.config, dict) else {}
        names = [m.name, config.get("chip")]
        aliases = config.get("aliases")
        if isinstance(aliases, list):
            names.extend(aliases)
        for n in names:
            if isinstance(n, str) and n:
                cache.setdefault(f"{m.vendor}/{model_key(n)}", m)
    cache.setdefault("", DeviceModel())  # loaded marker


def model_for(dev: DeviceUsage, cache: dict[str, DeviceModel]) -> DeviceModel:
    """The DeviceModel of a reported device: the row of the same vendor whose name, chip or
    alias is the registered type's model (:func:`~scheduling.devices.matching.model_key`),
    else a new row named by the type with an empty overlay (HAMi's defaults for the vendor;
    the device keeps its registered memory, cores and share count on its own row).

    Args:
        cache: per-sync cache, filled on first use (rows created in a rolled-back savepoint
            must be dropped by the caller).
    """
    if "" not in cache:
        _load(cache)
    name = dev.type or dev.vendor
    key = f"{dev.vendor}/{model_key(name)}"
    model = cache.get(key)
    if model is None:
        model, _ = DeviceModel.objects.get_or_create(name=name, defaults={"vendor": dev.vendor})
        cache[key] = model
    return model
