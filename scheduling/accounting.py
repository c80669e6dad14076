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


def collapse_pod_bookings(pod) -> dict[str, tuple[int, int, int]]:
    """Per-device booking of one placed pod (a ``PodAssignment``), HAMi's collapse rule.

    For each device: memory and cores = max(max over init containers, sum over app
    containers); slots = max(1 if an init container used it, number of app containers on it)
    (HAMi ``CollapseInitContainerUsage``, pkg/device/initContainer.go).

    Returns:
        ``{device uuid: (memory_mib, cores_percent, slots)}``.
    """
    app: dict[str, list[int]] = {}
    init: dict[str, list[int]] = {}
    for container in pod.containers:
        target = init if container.init else app
        for grant in container.devices:
            entry = target.setdefault(grant.uuid, [0, 0, 0])
            if container.init:
                entry[0] = max(entry[0], grant.memory_mib)
                entry[1] = max(entry[1], grant.cores_percent)
                entry[2] = 1
            else:
                entry[0] += grant.memory_mib
                entry[1] += grant.cores_percent
                entry[2] += 1
    out: dict[str, tuple[int, int, int]] = {}
    for uuid in app.keys() | init.keys():
        a = app.get(uuid, [0, 0, 0])
        i = init.get(uuid, [0, 0, 0])
        out[uuid] = (max(a[0], i[0]), max(a[1], i[1]), max(a[2], i[2]))
    return out
