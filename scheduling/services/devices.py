"""Writes of device rows: telemetry's health verdicts, the cycle's device-model flags."""

from __future__ import annotations

from collections.abc import Mapping

from scheduling.models import Device, DeviceModel

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
    changed = DeviceModel.objects.exclude(error="").exclude(name__in=list(errors)).update(
        error="")
    for name, message in errors.items():
        changed += DeviceModel.objects.filter(name=name).exclude(error=message).update(
            error=message)
    return changed


def set_device_health(device_id: int, *, healthy: bool) -> bool:
    """Set ``Device.healthy`` with a conditional UPDATE.

    An unhealthy device leaves the schedulable pool: the snapshot hands ``healthy`` to the
    placement core. Safe inside the caller's transaction; a device that already has the flag
    is not written.

    Returns:
        True when the flag changed, False when it already had that value (or no such device).
    """
    return bool(Device.objects.filter(pk=device_id).exclude(healthy=healthy).update(
        healthy=healthy))
