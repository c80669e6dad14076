"""Fraction-correct quota charges computed from a placement.

A job's exact charge depends on the devices it landed on, so quota is charged from the
placement's :class:`~scheduling.placement.types.DeviceGrant` values, not from the request:

* ``memory_mib``: the MiB booked on each device (a memory percentage was already resolved
  against the device it landed on by the placement core).
* ``cores_percent``: the percent booked on each device, summed over devices
  (2 devices x 20 % = 40).
* ``devices`` (milli-devices): per device, the dominant fraction of the device the pod
  holds, ``min(1000, max(ceil(1000 * cores / device cores), ceil(1000 * memory_mib /
  device memory_mib)))``. With the usual 100-percent devices this is ``cores_percent x 10``
  unless the memory share is larger; a whole-device grant (100 % cores, full memory) is
  1000. A grant of 0 MiB and 0 % (a bare time-slice) charges 0.

Per pod and per device, container grants are first collapsed as HAMi does, by the placement
core's :func:`scheduling.placement.booking.collapse` (the one home of HAMi's
``CollapseInitContainerUsage``, pkg/device/initContainer.go): the charge is ``max(largest init
container, sum of app containers)``, separately for memory and cores, because init containers
run one after another before the app containers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from scheduling.admission.types import AdmissionInputError, Dimension, FlavorResource, GroupSpec
from scheduling.placement.booking import collapse
from scheduling.placement.types import Decision, PodAssignment


class DeviceInfo(Protocol):
    """What :func:`charges_for` needs to know about a device (``placement.types.Device``
    satisfies it): its model string and its capacity."""

    @property
    def type(self) -> str: ...  # noqa: D102
    @property
    def memory_mib(self) -> int: ...  # noqa: D102
    @property
    def cores_percent(self) -> int: ...  # noqa: D102


def _ceil_div(numerator: int, denominator: int) -> int:
    return -(-numerator // denominator)


def device_milli(memory_mib: int, cores_percent: int, device: DeviceInfo) -> int:
    """Milli-devices charged for holding ``memory_mib`` and ``cores_percent`` of ``device``
    (:func:`milli_share` of its capacity)."""
    return milli_share(memory_mib, cores_percent, device.memory_mib, device.cores_percent)


def milli_share(
    memory_mib: int, cores_percent: int, capacity_memory_mib: int, capacity_cores_percent: int
) -> int:
    """Milli-devices for ``memory_mib`` MiB and ``cores_percent`` % of a device of the given
    capacity: ``min(1000, max(ceil(1000*cores/capacity cores), ceil(1000*mem/capacity mem)))``;
    a capacity of 0 in a dimension ignores that dimension."""
    share = 0
    if capacity_cores_percent > 0:
        share = max(share, _ceil_div(1000 * cores_percent, capacity_cores_percent))
    if capacity_memory_mib > 0:
        share = max(share, _ceil_div(1000 * memory_mib, capacity_memory_mib))
    return min(1000, share)


def charges_for_pods(
    pods: Iterable[PodAssignment], devices: Mapping[str, DeviceInfo], group: GroupSpec
) -> dict[FlavorResource, int]:
    """Exact charges of placed pods, per ``(flavor, dimension)``.

    Args:
        pods: pod assignments (from a placement ``Decision``).
        devices: device info by uuid (at least every granted device).
        group: the resource group; its flavors map device models to flavor names.

    Returns:
        ``{(flavor, dimension): amount}`` with ``devices`` in milli-devices,
        ``memory_mib`` in MiB and ``cores_percent`` in percent; zero amounts are kept for
        every flavor touched so callers see all three dimensions.

    Raises:
        AdmissionInputError: a granted device is missing from ``devices`` or its model is
            not covered by any flavor of the group.
    """
    charges: dict[FlavorResource, int] = {}
    for pod in pods:
        for uuid, booking in collapse(pod).items():
            memory_mib, cores_percent = booking.memory_mib, booking.cores_percent
            device = devices.get(uuid)
            if device is None:
                raise AdmissionInputError(f"pod {pod.pod}: granted device {uuid} is unknown")
            flavor = group.flavor_of(device.type)
            if flavor is None:
                raise AdmissionInputError(
                    f"pod {pod.pod}: device {uuid} model {device.type!r} is in no flavor of "
                    f"group {group.name}"
                )
            for dim, amount in (
                (Dimension.DEVICES, device_milli(memory_mib, cores_percent, device)),
                (Dimension.MEMORY_MIB, memory_mib),
                (Dimension.CORES_PERCENT, cores_percent),
            ):
                charges[(flavor, dim)] = charges.get((flavor, dim), 0) + amount
    return charges


def charges_for(
    decision: Decision, devices: Mapping[str, DeviceInfo], group: GroupSpec
) -> dict[FlavorResource, int]:
    """Exact charges of a schedulable placement ``Decision`` (see the module docstring).

    Raises:
        AdmissionInputError: the decision is not schedulable, or see
            :func:`charges_for_pods`.
    """
    if not decision.schedulable:
        raise AdmissionInputError("cannot charge an unschedulable placement decision")
    return charges_for_pods(decision.pods, devices, group)
