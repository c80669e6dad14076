"""The DeviceModel a reported device belongs to (created when the catalogue has no row), and
the shipped rows a database lacks."""

from __future__ import annotations

from pathlib import Path

from django.core import serializers

from scheduling.devices.matching import model_key
from scheduling.models import DeviceModel
from scheduling.placement.types import DeviceUsage

__all__ = ["SHIPPED_DEVICE_MODELS", "load_missing_device_models", "model_for"]

SHIPPED_DEVICE_MODELS = Path(__file__).resolve().parents[2] / "fixtures" / "device_models.json"
"""The shipped device models (``manage.py loaddata device_models`` loads the same file)."""


def load_missing_device_models() -> int:
    """Create the shipped device models (:data:`SHIPPED_DEVICE_MODELS`) that have no row of
    their name yet; a row that exists is left as it is. ``loaddata`` would overwrite its
    ``config`` and ``family`` (the operator's, set in the admin) with the shipped values and
    clear its ``error`` (issue 29: ``make run`` seeds the demo at every start).

    Returns:
        Number of rows created.
    """
    made = 0
    with SHIPPED_DEVICE_MODELS.open() as fixture:
        for shipped in serializers.deserialize("json", fixture):
            if shipped.object.pk is None:  # no row of that name (the natural key)
                shipped.save()
                made += 1
    return made


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
