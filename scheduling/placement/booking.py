"""Reserve / unreserve: apply or remove a pod's booked usage in a snapshot.

Per pod and device the usage is collapsed as HAMi ``CollapseInitContainerUsage``
(``pkg/device/initContainer.go``, docs/hami.md §4.1): ``memory = max(max over init
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

from scheduling.placement.types import ClusterSnapshot, DeviceUsage, MigInstance, PodAssignment

__all__ = ["apply_assignment", "apply_device_usage", "apply_migs", "collapse", "collapse_counters"]


def apply_device_usage(
    device: DeviceUsage, memory_mib: int, cores_percent: int, slots: int, sign: int
) -> None:
    """Add (``sign`` +1) or remove (-1) a stored booking's usage of ``device``: MiB, percent
    of cores and slots (the caller touches the device's node)."""
    device.used_memory_mib += sign * memory_mib
    device.used_cores_percent += sign * cores_percent
    device.used_slots += sign * slots


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


def collapse(pa: PodAssignment) -> dict[str, tuple[int, int, int, list[MigInstance]]]:
    """``{uuid: (slots, memory_mib, cores_percent, mig instances)}`` booked by the pod."""
    acc: dict[str, list] = {}
    for c in pa.containers:
        for g in c.devices:
            a = acc.setdefault(g.uuid, [0, 0, 0, 0, 0, 0, [], []])
            # init_mem_max, init_cores_max, init_slots, app_mem, app_cores, app_slots, app_mig,
            # init_mig
            mig = MigInstance(g.mig_profile, g.mig_start, g.mig_size) if g.mig_start >= 0 else None
            if c.init:
                a[0] = max(a[0], g.memory_mib)
                a[1] = max(a[1], g.cores_percent)
                a[2] = max(a[2], g.slices or 1)
                if mig:
                    a[7].append(mig)
            else:
                a[3] += g.memory_mib
                a[4] += g.cores_percent
                a[5] += g.slices or 1
                if mig:
                    a[6].append(mig)
    out = {}
    for uuid, a in acc.items():
        migs = a[6] if a[6] else a[7][:1]
        out[uuid] = (max(a[2], a[5]), max(a[0], a[3]), max(a[1], a[4]), migs)
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


def apply_assignment(snapshot: ClusterSnapshot, pa: PodAssignment, sign: int) -> None:
    """Add (``sign=1``) or remove (``sign=-1``) a pod's usage.

    Validates everything before changing anything. Raises ValueError naming the node or
    device when the node/device is unknown or a removal would make usage negative.
    """
    node = snapshot.nodes.get(pa.node)
    if node is None:
        raise ValueError(f"pod {pa.pod}: node {pa.node!r} is not in the snapshot")
    booked = collapse(pa)
    counted = collapse_counters(pa)
    devs = {}
    for uuid, (slots, mem, cores, migs) in booked.items():
        dev = node.device(uuid)
        if dev is None:
            raise ValueError(f"pod {pa.pod}: device {uuid!r} is not on node {pa.node!r}")
        if sign < 0 and (
            dev.used_slots < slots
            or dev.used_memory_mib < mem
            or dev.used_cores_percent < cores
            or any(m not in dev.mig_instances for m in migs)
            or any(dev.used_counters.get(k, 0) < n for k, n in counted.get(uuid, {}).items())
        ):
            raise ValueError(
                f"pod {pa.pod}: unreserve of device {uuid!r} exceeds its booked "
                "usage (was the decision reserved?)"
            )
        devs[uuid] = dev
    if sign < 0 and (node.used_cpu_milli < pa.cpu_milli or node.used_memory_mib < pa.memory_mib):
        raise ValueError(f"pod {pa.pod}: unreserve exceeds node {pa.node!r} cpu/memory usage")
    for uuid, (slots, mem, cores, migs) in booked.items():
        dev = devs[uuid]
        dev.used_slots += sign * slots
        dev.used_memory_mib += sign * mem
        dev.used_cores_percent += sign * cores
        for m in migs:
            if sign > 0:
                dev.mig_instances.append(m)
            else:
                dev.mig_instances.remove(m)
        for k, n in counted.get(uuid, {}).items():
            dev.used_counters[k] = dev.used_counters.get(k, 0) + sign * n
    node.used_cpu_milli += sign * pa.cpu_milli
    node.used_memory_mib += sign * pa.memory_mib
    node.version += 1
    snapshot.changed.append(pa.node)
