"""Writes of single device rows that other apps ask for (telemetry's health verdicts)."""

from __future__ import annotations

from scheduling.models import Device

__all__ = ["set_device_health"]


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
