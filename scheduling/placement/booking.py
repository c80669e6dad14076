"""Reserve / unreserve: apply or remove a pod's booked usage in a snapshot.

Per pod and device the usage is collapsed as HAMi ``CollapseInitContainerUsage``
(``pkg/device/initContainer.go``, shared/docs/hami.md §4.1): ``memory = max(max over init
containers, sum over app containers)``, same for cores and for shared counters, ``slots =
max(1 if an init container used it, number of app entries)`` where an entry of a
partition (Enflame DRS slices, AWS Neuron cores: ``DeviceGrant.slices``) counts its size
(HAMi ``AddResourceUsage``). MIG instances of app containers are booked;
an init container's instance is booked only when no app container has one on that GPU.
Host CPU/memory of the pod are added to the node. Every change bumps ``Node.version`` and
appends the node name to ``ClusterSnapshot.changed`` (the change journal).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from scheduling.devices.resources import stored_booking_counters
from scheduling.devices.schema import DeviceModelConfig
from scheduling.placement.types import (
    ClusterSnapshot,
    ContainerAssignment,
    DeviceUsage,
    MigInstance,
    PodAssignment,
)

__all__ = [
    "DeviceBooking",
    "apply_assignment",
    "apply_counters",
    "apply_device_usage",
    "apply_migs",
    "collapse",
    "collapse_counters",
]


def apply_device_usage(
    device: DeviceUsage,
    memory_mib: int,
    cores_percent: int,
    slots: int,
    sign: int,
    cfg: DeviceModelConfig | None = None,
) -> None:
    """Add (``sign`` +1) or remove (-1) a stored booking's usage of ``device``: MiB, percent
    of cores and slots, and on a card with DRA shared counters (``device.counters``, ``cfg``
    its model's resolved config) the counters the booking consumes
    (:func:`~scheduling.devices.resources.stored_booking_counters`). The caller touches the
    device's node. The snapshot's booking and release of a placement and the preemption
    search's removal of a victim all go through here, so a victim gives back exactly what
    its release gives back."""
    device.used_memory_mib += sign * memory_mib
    device.used_cores_percent += sign * cores_percent
    device.used_slots += sign * slots
    if cfg is not None and device.counters:
        used = stored_booking_counters(cfg, device.counters, memory_mib, cores_percent)
        apply_counters(device, used, sign)


def apply_counters(device: DeviceUsage, counters: Mapping[str, int], sign: int) -> None:
    """Add (+1) or remove (-1) shared counters ``{name: n}`` a booking consumes on
    ``device`` (``DeviceUsage.used_counters``)."""
    for name, n in counters.items():
        device.used_counters[name] = device.used_counters.get(name, 0) + sign * n


def apply_migs(
    devices: Mapping[str, DeviceUsage], migs: Iterable[tuple[str, MigInstance]], sign: int
) -> None:
    """Add (+1) or remove (-1) stored MIG instances ``(device key, instance)`` on the devices
    of ``devices`` (keys not in it are skipped: a device gone from the snapshot)."""
    for key, instance in migs:
        device = devices.get(key)
        if device is None:
            continue
        if sign > 0:
            device.mig_instances.append(instance)
        elif instance in device.mig_instances:
            device.mig_instances.remove(instance)


@dataclass(frozen=True)
class DeviceBooking:
    """What one pod holds on one device after HAMi's collapse (module docstring): slots
    (entries, a partition counting its size), device memory in MiB, percent of cores, and
    the MIG instances booked."""

    slots: int
    memory_mib: int
    cores_percent: int
    migs: tuple[MigInstance, ...] = ()


def collapse(pa: PodAssignment) -> dict[str, DeviceBooking]:
    """``{uuid: DeviceBooking}`` the pod holds: per container its grants on a device are
    summed, then ``max(max over init containers, sum over app containers)`` for memory,
    cores and slots (at least 1 where any container used it); app containers' MIG instances,
    else the first init container's. The one home of this rule: placement books it,
    admission charges it, accounting stores it."""
    init: dict[str, list[int]] = {}
    app: dict[str, list[int]] = {}
    init_migs: dict[str, list[MigInstance]] = {}
    app_migs: dict[str, list[MigInstance]] = {}
    for c in pa.containers:
        held: dict[str, list[int]] = {}
        for g in c.devices:
            h = held.setdefault(g.uuid, [0, 0, 0])
            h[0], h[1], h[2] = h[0] + (g.slices or 1), h[1] + g.memory_mib, h[2] + g.cores_percent
            if g.mig_start >= 0:
                (init_migs if c.init else app_migs).setdefault(g.uuid, []).append(
                    MigInstance(g.mig_profile, g.mig_start, g.mig_size)
                )
        for uuid, h in held.items():
            acc = (init if c.init else app).setdefault(uuid, [0, 0, 0])
            for k in range(3):
                acc[k] = max(acc[k], h[k]) if c.init else acc[k] + h[k]
    out = {}
    for uuid in init.keys() | app.keys():
        a, b = app.get(uuid, [0, 0, 0]), init.get(uuid, [0, 0, 0])
        migs = app_migs.get(uuid) or init_migs.get(uuid, [])[:1]
        out[uuid] = DeviceBooking(max(a[0], b[0]), max(a[1], b[1]), max(a[2], b[2]), tuple(migs))
    return out


def collapse_counters(pa: PodAssignment) -> dict[str, dict[str, int]]:
    """``{uuid: {counter: n}}`` the pod consumes: max over init containers, sum over app
    containers, the larger of the two per counter (only devices with counted grants)."""
    init: dict[str, dict[str, int]] = {}
    app: dict[str, dict[str, int]] = {}
    for c in pa.containers:
        for g in c.devices:
            acc = (init if c.init else app).setdefault(g.uuid, {})
            for name, n in g.counters:
                acc[name] = max(acc.get(name, 0), n) if c.init else acc.get(name, 0) + n
    out: dict[str, dict[str, int]] = {}
    for uuid in init.keys() | app.keys():
        a, i = app.get(uuid, {}), init.get(uuid, {})
        out[uuid] = {k: max(a.get(k, 0), i.get(k, 0)) for k in a.keys() | i.keys()}
    return out


#: :func:`apply_assignment`'s memo: ``{id(containers): (containers, booked, counted)}``
#: (the tuple held, so its id is not reused while it is here); emptied past the limit.
_COLLAPSED: dict[int, tuple[tuple[ContainerAssignment, ...], dict, dict]] = {}
_COLLAPSED_LIMIT = 64


def _collapsed(
    containers: tuple[ContainerAssignment, ...],
) -> tuple[dict[str, DeviceBooking], dict[str, dict[str, int]]]:
    """:func:`collapse` and :func:`collapse_counters` of a pod with ``containers`` (they read
    nothing else), remembered per tuple object for :func:`apply_assignment`: a placement
    books, releases and books again the very same grants (topology sets, gangs). Read-only:
    callers must not change the dicts."""
    hit = _COLLAPSED.get(id(containers))
    if hit is not None and hit[0] is containers:
        return hit[1], hit[2]
    pa = PodAssignment("", "", containers)
    booked, counted = collapse(pa), collapse_counters(pa)
    if len(_COLLAPSED) >= _COLLAPSED_LIMIT:
        _COLLAPSED.clear()
    _COLLAPSED[id(containers)] = (containers, booked, counted)
    return booked, counted


def apply_assignment(snapshot: ClusterSnapshot, pa: PodAssignment, sign: int) -> None:
    """Add (``sign=1``) or remove (``sign=-1``) a pod's usage.

    Validates everything before changing anything. Raises ValueError naming the node or
    device when the node/device is unknown or a removal would make usage negative.
    """
    node = snapshot.nodes.get(pa.node)
    if node is None:
        raise ValueError(f"pod {pa.pod}: node {pa.node!r} is not in the snapshot")
    booked, counted = _collapsed(pa.containers)
    devs = {}
    for uuid, b in booked.items():
        dev = node.device(uuid)
        if dev is None:
            raise ValueError(f"pod {pa.pod}: device {uuid!r} is not on node {pa.node!r}")
        if sign < 0 and (
            dev.used_slots < b.slots
            or dev.used_memory_mib < b.memory_mib
            or dev.used_cores_percent < b.cores_percent
            or any(m not in dev.mig_instances for m in b.migs)
            or any(dev.used_counters.get(k, 0) < n for k, n in counted.get(uuid, {}).items())
        ):
            raise ValueError(
                f"pod {pa.pod}: unreserve of device {uuid!r} exceeds its booked "
                "usage (was the decision reserved?)"
            )
        devs[uuid] = dev
    if sign < 0 and (node.used_cpu_milli < pa.cpu_milli or node.used_memory_mib < pa.memory_mib):
        raise ValueError(f"pod {pa.pod}: unreserve exceeds node {pa.node!r} cpu/memory usage")
    for uuid, b in booked.items():
        dev = devs[uuid]
        apply_device_usage(dev, b.memory_mib, b.cores_percent, b.slots, sign)
        apply_migs(devs, [(uuid, m) for m in b.migs], sign)
        apply_counters(dev, counted.get(uuid, {}), sign)
    node.used_cpu_milli += sign * pa.cpu_milli
    node.used_memory_mib += sign * pa.memory_mib
    node.version += 1
    snapshot.changed.append(pa.node)
