"""Writes of device rows: telemetry's health verdicts, the cycle's device-model flags."""

from __future__ import annotations

from collections.abc import Mapping

from scheduling.models import Device, DeviceModel
from scheduling.services.cordons import clear_unhealthy, mark_unhealthy

__all__ = ["set_device_health", "flag_device_models"]


def flag_device_models(errors: Mapping[str, str]) -> int:
    """Store the catalogue's verdict on each model: ``DeviceModel.error`` = the message for
    a model whose config does not resolve, "" for the others (conditional UPDATEs: rows
    that already say so are not written).

    Args:
        errors: ``{model name: message}`` (:attr:`scheduling.devices.overlay.Catalogue.errors`).

    Returns:
        Number of rows changed.
    """
    changed = DeviceModel.objects.exclude(error="").exclude(name__in=list(errors)).update(error="")
    for name, message in errors.items():
        changed += (
            DeviceModel.objects.filter(name=name).exclude(error=message).update(error=message)
        )
    return changed


def set_device_health(device_id: int, *, healthy: bool, reason: str = "") -> bool:
    """The console's health verdict on a device (telemetry, operator clearing).

    Unhealthy: the device leaves the schedulable pool, stays unhealthy across inventory syncs
    (``console_unhealthy``), is cordoned in its cluster and its jobs are drained by
    ``DEVICE_DRAIN_POLICY`` (:func:`scheduling.services.cordons.mark_unhealthy`). Healthy:
    the console's verdict and its health cordon are lifted. Safe inside the caller's
    transaction (the cluster write-back runs after commit).

    Returns:
        True when the verdict changed, False when it already had that value (or no such
        device).
    """
    if not healthy:
        return mark_unhealthy(device_id, reason or "marked unhealthy by telemetry")
    changed = clear_unhealthy(device_id)
    return (
        bool(Device.objects.filter(pk=device_id).exclude(healthy=True).update(healthy=True))
        or changed
    )
