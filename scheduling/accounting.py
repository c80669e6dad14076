"""Fraction-correct charges of device bookings (pure; no Django).

A booking of ``memory_mib`` MiB and ``cores_percent`` % on a device of ``device_memory_mib`` MiB
and ``device_cores_percent`` % is charged, under the device's model (the quota flavor):

* ``memory_mib``: the booked MiB (a percentage request was already turned into MiB of the device
  it landed on by the placement core);
* ``cores_percent``: the booked percent (two devices × 20 % = 40);
* ``devices``: milli-devices = ceil(1000 × max(memory share, cores share)); a whole device is 1000.
"""

from __future__ import annotations

from scheduling.admission.charges import milli_share
from scheduling.placement.booking import collapse
from scheduling.placement.types import PodAssignment

Charges = dict[tuple[str, str], int]
DIMENSIONS = ("devices", "memory_mib", "cores_percent")


def booking_charges(
    flavor: str,
    device_memory_mib: int,
    device_cores_percent: int,
    memory_mib: int,
    cores_percent: int,
) -> Charges:
    """Charges of one device booking as ``{(flavor, dimension): amount}``.

    The milli-device share is the admission core's
    (:func:`scheduling.admission.charges.milli_share`, integer ceiling), so dashboards,
    reports and admission agree to the unit.
    """
    milli = milli_share(memory_mib, cores_percent, device_memory_mib, device_cores_percent)
    return {
        (flavor, "devices"): milli,
        (flavor, "memory_mib"): memory_mib,
        (flavor, "cores_percent"): cores_percent,
    }


def collapse_pod_bookings(pod: PodAssignment) -> dict[str, tuple[int, int, int]]:
    """Per-device booking of one placed pod, HAMi's collapse rule.

    The placement core's :func:`scheduling.placement.booking.collapse` (the usage
    ``reserve`` books in a snapshot): for each device, memory and cores = max(max over init
    containers, sum over app containers); slots = max(1 if an init container used it, number
    of app containers on it) (HAMi ``CollapseInitContainerUsage``,
    pkg/device/initContainer.go).

    Returns:
        ``{device uuid: (memory_mib, cores_percent, slots)}``.
    """
    return {uuid: (b.memory_mib, b.cores_percent, b.slots) for uuid, b in collapse(pod).items()}
