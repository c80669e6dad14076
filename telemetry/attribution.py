"""Attribution of observations to devices, placements, jobs and tenants (pure; no Django).

Rules (DESIGN.md §1: the pod-to-device mapping comes from the console's own allocation, not from
what an exporter guesses):

1. The device is found by the UUID / serial labels (each candidate tried in order, against the
   console's key and the device's hardware serial: the Hygon exporter's ``device_id`` is the
   bare serial of ``DCU-<serial>``). A series whose labels name no known device is resolved by
   ``(node, index)`` when it carries both (Cambricon's synthetic HAMi ids, a Hygon card whose
   serial the inventory does not know yet); otherwise it is unattributed
   (``no_device_label`` without id labels, ``unknown_device`` with unknown ones).
   A node label that disagrees with the device's node counts a ``node_mismatch`` (the serial
   wins: devices keep their identity across node moves).
2. A device-scope series goes to the placement that books the device when exactly one does;
   on an idle or shared device it stays a device-only sample.
3. A MIG series (``GPU_I_ID``) is joined on (device UUID, GPU instance id) against the
   console's own bookings: it goes to the booking holding that GPU instance on the device
   (two tenants on one MIG GPU are told apart), whatever its pod label says. With no such
   booking it is unattributed, ``mig_unmatched`` (counted on the target, the device page and
   ``/metrics``): never charged to a booking of the whole device, which holds no instance.
   A pod-scope series goes to the booking whose pod name equals the exporter's pod label
   *and* books that device; otherwise (no pod label, or a label naming a pod that does not
   book the device) to the device's only booking; with none it is ``no_placement``, with
   several ``ambiguous``.
4. Whenever the exporter's pod label disagrees with the console's placement, a ``conflict`` is
   counted (shown on the target), never trusted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from telemetry.exporters import POD, Observation

__all__ = [
    "DeviceRef",
    "BookingRef",
    "Inventory",
    "AttributedSample",
    "AttributionResult",
    "attribute",
    "MIG_UNMATCHED",
]

ATTRIBUTED, DEVICE_ONLY, UNATTRIBUTED = "attributed", "device", "unattributed"
MIG_UNMATCHED = "mig_unmatched"
"""Reason of a MIG series whose (device, GPU instance) no booking of the console holds."""


@dataclass(frozen=True, slots=True)
class DeviceRef:
    """A device of the inventory: database id, key (UUID / ``DCU-<serial>``), current node
    name, index and hardware serial ("" = unknown)."""

    device_id: int
    uuid: str
    node: str
    index: int = 0
    serial: str = ""


@dataclass(frozen=True, slots=True)
class BookingRef:
    """A live placement booking one device.

    Attributes:
        placement_id, job_id, tenant_id: database ids.
        pod: the pod name the console gave the placement (``Placement.backend_ref``).
        device_id: the booked device.
        gpu_instances: MIG GPU instance ids (DCGM ``GPU_I_ID``) the booking holds on it.
    """

    placement_id: int
    job_id: int
    tenant_id: int
    pod: str
    device_id: int
    gpu_instances: tuple[str, ...] = ()


@dataclass
class Inventory:
    """Lookup tables for one attribution pass.

    Attributes:
        by_key: UUID / serial → device.
        by_node_index: ``(node name, index)`` → device.
        bookings: device id → live bookings of it.
    """

    by_key: dict[str, DeviceRef] = field(default_factory=dict)
    by_node_index: dict[tuple[str, int], DeviceRef] = field(default_factory=dict)
    bookings: dict[int, list[BookingRef]] = field(default_factory=dict)

    @classmethod
    def build(cls, devices: Iterable[DeviceRef], bookings: Iterable[BookingRef]) -> Inventory:
        """Index devices and bookings."""
        inv = cls()
        devices = list(devices)
        for device in devices:
            inv.by_key[device.uuid] = device
            inv.by_node_index[(device.node, device.index)] = device
        for device in devices:  # a serial never shadows another device's key
            if device.serial:
                inv.by_key.setdefault(device.serial, device)
        for booking in bookings:
            inv.bookings.setdefault(booking.device_id, []).append(booking)
        return inv


@dataclass(frozen=True, slots=True)
class AttributedSample:
    """An observation with its attribution.

    Attributes:
        metric, value: canonical metric and value.
        status: ``attributed`` (to a placement), ``device`` (device only) or ``unattributed``.
        reason: why unattributed ("" otherwise).
        device_id: resolved device (None when unresolved).
        device_key: the id the exporter gave (for display of unattributed series).
        placement_id, job_id, tenant_id: the holder when attributed.
    """

    metric: str
    value: float
    status: str
    reason: str = ""
    device_id: int | None = None
    device_key: str = ""
    placement_id: int | None = None
    job_id: int | None = None
    tenant_id: int | None = None


@dataclass
class AttributionResult:
    """All samples of a pass and the counters shown on the target."""

    samples: list[AttributedSample] = field(default_factory=list)
    unattributed: Counter = field(default_factory=Counter)
    conflicts: int = 0
    node_mismatches: int = 0

    @property
    def attributed(self) -> int:
        """Number of samples attributed to a placement."""
        return sum(1 for s in self.samples if s.status == ATTRIBUTED)

    @property
    def unattributed_total(self) -> int:
        """Number of samples that could not be attributed to a device or placement."""
        return sum(self.unattributed.values())


def _resolve(obs: Observation, inv: Inventory) -> tuple[DeviceRef | None, str]:
    for key in obs.device_keys:
        device = inv.by_key.get(key)
        if device is not None:
            return device, ""
    if obs.node and obs.index.isdigit():
        device = inv.by_node_index.get((obs.node, int(obs.index)))
        return (device, "") if device else (None, "unknown_device")
    return None, "unknown_device" if obs.device_keys else "no_device_label"


def _claimed_pod(claim: str) -> str:
    return claim.rsplit("/", 1)[-1]


def _held(metric: str, value: float, device: DeviceRef, booking: BookingRef) -> AttributedSample:
    return AttributedSample(
        metric,
        value,
        ATTRIBUTED,
        "",
        device.device_id,
        device.uuid,
        booking.placement_id,
        booking.job_id,
        booking.tenant_id,
    )


def _mig_sample(
    obs: Observation,
    device: DeviceRef,
    bookings: list[BookingRef],
    claim: str,
    out: AttributionResult,
) -> AttributedSample:
    """Rule 3 for a MIG series: the booking holding (device, GPU instance ``obs.mig``), else
    unattributed ``mig_unmatched`` (counted in ``out``); a pod label naming another pod is a
    conflict."""
    holders = [b for b in bookings if obs.mig in b.gpu_instances]
    if claim and not any(b.pod == claim for b in holders):
        out.conflicts += 1
    if holders:
        return _held(obs.metric, obs.value, device, holders[0])
    out.unattributed[MIG_UNMATCHED] += 1
    return AttributedSample(
        obs.metric, obs.value, UNATTRIBUTED, MIG_UNMATCHED, device.device_id, device.uuid
    )


def attribute(observations: Sequence[Observation], inv: Inventory) -> AttributionResult:
    """Attribute observations (rules in the module docstring).

    Args:
        observations: canonical observations of one payload (or one simulated tick).
        inv: the inventory and live bookings at the sample time.

    Returns:
        One :class:`AttributedSample` per observation, in order, plus counters.
    """
    out = AttributionResult()
    for obs in observations:
        device, reason = _resolve(obs, inv)
        key = obs.device_keys[0] if obs.device_keys else f"{obs.node}#{obs.index}".strip("#")
        if device is None:
            out.unattributed[reason] += 1
            out.samples.append(
                AttributedSample(obs.metric, obs.value, UNATTRIBUTED, reason, device_key=key)
            )
            continue
        if obs.node and obs.node != device.node:
            out.node_mismatches += 1
        bookings = inv.bookings.get(device.device_id, [])
        claim = _claimed_pod(obs.pod_claim) if obs.pod_claim else ""
        if obs.mig:
            out.samples.append(_mig_sample(obs, device, bookings, claim, out))
            continue
        named = [b for b in bookings if claim and b.pod == claim]
        if claim and not named:
            out.conflicts += 1
        if named:
            out.samples.append(_held(obs.metric, obs.value, device, named[0]))
        elif len(bookings) == 1:
            out.samples.append(_held(obs.metric, obs.value, device, bookings[0]))
        elif obs.scope == POD:
            why = "ambiguous" if bookings else "no_placement"
            out.unattributed[why] += 1
            out.samples.append(
                AttributedSample(
                    obs.metric, obs.value, UNATTRIBUTED, why, device.device_id, device.uuid
                )
            )
        else:
            out.samples.append(
                AttributedSample(
                    obs.metric, obs.value, DEVICE_ONLY, "", device.device_id, device.uuid
                )
            )
    return out
