"""ResourceSlices (resource.k8s.io v1 / v1beta2 / v1beta1) -> plain DRA inventory records.

Each slice is checked by a pydantic schema (:class:`SliceIn`; the v1beta1 ``devices[].basic``
wrapper is unwrapped) bounded by :class:`~scheduling.kube.limits.InventoryLimits`: a slice that
does not fit (a ``spec`` that is not a mapping, a generation that is not a number, a negative
or absurd quantity, more devices than the bound) is named in :attr:`DraInventory.errors` and
its pool in :attr:`DraInventory.broken_pools`, so the inventory keeps that pool's devices as
they were (flagged) while every other slice is read.

Each device becomes a :class:`DraDevice` (driver, pool, node, attributes, ``memory_mib`` /
``cores_percent`` capacities, ``allowMultipleAllocations``, counter consumption) and each
``sharedCounters`` set a :class:`CounterSet`. Devices of a pool whose slices disagree on
``pool.generation`` keep only the newest generation (KEP-4381: older-generation slices are
being replaced). Devices with a ``NoExecute``/``NoSchedule`` taint are unavailable.
:func:`dra_devices_to_placement` turns whole physical devices (not partitions) into
``placement.types.Device``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr

from scheduling.kube.hami.registration import validate
from scheduling.kube.limits import DEFAULT_LIMITS, InventoryLimits, over_bound
from scheduling.kube.quantity import parse_quantity
from scheduling.placement.types import DeviceUsage

__all__ = [
    "DraDevice",
    "CounterSet",
    "DraInventory",
    "SliceIn",
    "parse_quantity",
    "slices_to_inventory",
    "dra_devices_to_placement",
    "DRIVER_VENDORS",
]

DRIVER_VENDORS: Mapping[str, str] = {
    "hami-core-gpu.project-hami.io": "NVIDIA",
    "gpu.nvidia.com": "NVIDIA",
    "ascend.project-hami.io": "Ascend",
    "gpu.amd.com": "AMD",
}
"""DRA driver name -> vendor word (``DeviceUsage.vendor``)."""

MIB = 1024 * 1024


# -- schema ------------------------------------------------------------------------------------

Name = Annotated[StrictStr, Field(min_length=1, max_length=253)]
Quantity = StrictStr | int | float


class _In(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class _Value(_In):
    value: Quantity


Int64 = Annotated[int, Field(ge=-(2**63), lt=2**63)]


class _Attribute(_In):
    string: StrictStr | None = None
    int_: Int64 | None = Field(None, alias="int")
    bool_: StrictBool | None = Field(None, alias="bool")
    version: StrictStr | None = None


class _Consumption(_In):
    counterSet: Name  # noqa: N815 - the API's key
    counters: dict[str, _Value] | None = None


class _Taint(_In):
    key: StrictStr = ""
    effect: StrictStr = ""


class _Body(_In):
    attributes: dict[str, _Attribute] | None = None
    capacity: dict[str, _Value] | None = None
    allowMultipleAllocations: StrictBool | None = None  # noqa: N815
    consumesCounters: list[_Consumption] | None = None  # noqa: N815
    taints: list[_Taint] | None = None


class _SliceDevice(_Body):
    name: Name
    basic: _Body | None = None  # v1beta1


class _CounterSet(_In):
    name: Name
    counters: dict[str, _Value] | None = None


class _Pool(_In):
    name: Name
    generation: Annotated[int, Field(ge=0)] = 0


class _Spec(_In):
    driver: Name
    pool: _Pool
    nodeName: StrictStr | None = None  # noqa: N815
    devices: list[_SliceDevice] | None = None
    sharedCounters: list[_CounterSet] | None = None  # noqa: N815


class _Meta(_In):
    name: StrictStr = "?"


class SliceIn(_In):
    """The parts of a ResourceSlice the inventory reads."""

    metadata: _Meta = _Meta()
    spec: _Spec


# -- records -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CounterSet:
    """A ``sharedCounters`` entry: counter name -> value (as Decimal)."""

    driver: str
    pool: str
    name: str
    counters: Mapping[str, Decimal]


@dataclass(frozen=True, slots=True)
class DraDevice:
    """One device published in a ResourceSlice.

    Attributes:
        driver / pool / name: identity (``<driver>/<pool>/<name>``).
        node: ``spec.nodeName`` of the slice ("" for network-attached / node selector pools).
        attributes: attribute name (domain prefix dropped when it is the driver's) -> value
            (string / int / bool / version string).
        memory_mib: ``capacity.memory`` in MiB (floor), 0 when absent.
        cores_percent: ``capacity.cores`` (HAMi drivers: percent), 0 when absent.
        capacity: every capacity, name -> Decimal value.
        allow_multiple: ``allowMultipleAllocations`` (consumable capacity, KEP-5075).
        consumes: counter consumption ``{counterSet: {counter: Decimal}}`` (partitions).
        available: False when tainted NoSchedule/NoExecute.
    """

    driver: str
    pool: str
    name: str
    node: str
    attributes: Mapping[str, Any]
    memory_mib: int
    cores_percent: int
    capacity: Mapping[str, Decimal]
    allow_multiple: bool
    consumes: Mapping[str, Mapping[str, Decimal]] = field(default_factory=dict)
    available: bool = True

    @property
    def uuid(self) -> str:
        """The ``uuid`` attribute, or "" when the driver publishes none."""
        return str(self.attributes.get("uuid", ""))

    @property
    def is_partition(self) -> bool:
        """True for a device that consumes shared counters (MIG / vNPU partition)."""
        return bool(self.consumes)


@dataclass(frozen=True, slots=True)
class DraInventory:
    """Devices and counter sets of all slices, plus per-slice problems.

    Attributes:
        broken_pools: ``{(driver, pool): error}`` of pools with a slice that could not be
            read; their devices are not all listed (keep what the inventory had).
    """

    devices: tuple[DraDevice, ...]
    counter_sets: tuple[CounterSet, ...]
    errors: tuple[str, ...] = ()
    broken_pools: Mapping[tuple[str, str], str] = field(default_factory=dict)


# -- reading -----------------------------------------------------------------------------------


def _attr_value(v: _Attribute) -> Any:
    for k in ("string", "int_", "bool_", "version"):
        if getattr(v, k) is not None:
            return getattr(v, k)
    return None


_TEXT_BOUNDS = {"uuid": 128, "productName": 100, "model": 100, "type": 100}
"""Attributes the inventory stores, and the length of their database column."""


def _quantities(
    values: Mapping[str, _Value] | None, where: str, limits: InventoryLimits
) -> dict[str, Decimal]:
    out = {}
    for k, v in (values or {}).items():
        q = parse_quantity(v.value, f"{where}.{k}")
        if k == "memory" and q > Decimal(limits.max_memory_mib) * MIB:
            raise ValueError(
                over_bound(f"{where}.{k}", int(q // MIB), limits, "max_memory_mib", " MiB")
            )
        if k != "memory" and q > limits.max_memory_mib * MIB:
            raise ValueError(f"{where}.{k}: {v.value!r} is beyond any device")
        out[k] = q
    return out


def _device(spec: _Spec, d: _SliceDevice, i: int, limits: InventoryLimits) -> DraDevice:
    body = d.basic or d
    where = f"spec.devices[{i}]"
    attrs = {}
    for k, v in (body.attributes or {}).items():
        short = k[len(spec.driver) + 1 :] if k.startswith(spec.driver + "/") else k
        attrs[short] = _attr_value(v)
    for k, bound in _TEXT_BOUNDS.items():
        if isinstance(attrs.get(k), str) and len(attrs[k]) > bound:
            raise ValueError(f"{where}.attributes.{k}: longer than {bound} characters")
    if len(f"{spec.driver}/{spec.pool.name}/{d.name}") > 400:
        raise ValueError(f"{where}: <driver>/<pool>/<name> longer than 400 characters")
    cap = _quantities(body.capacity, f"{where}.capacity", limits)
    consumes = {
        c.counterSet: _quantities(c.counters, f"{where}.consumesCounters", limits)
        for c in body.consumesCounters or ()
    }
    return DraDevice(
        driver=spec.driver,
        pool=spec.pool.name,
        name=d.name,
        node=spec.nodeName or "",
        attributes=attrs,
        memory_mib=int(cap.get("memory", Decimal(0)) // MIB),
        cores_percent=int(cap.get("cores", Decimal(0))),
        capacity=cap,
        allow_multiple=bool(body.allowMultipleAllocations),
        consumes=consumes,
        available=not any(t.effect in ("NoSchedule", "NoExecute") for t in body.taints or ()),
    )


def _read(s: SliceIn, limits: InventoryLimits) -> tuple[list[DraDevice], list[CounterSet]]:
    spec = s.spec
    n = len(spec.devices or ()) + len(spec.sharedCounters or ())
    error = over_bound("spec.devices", n, limits, "max_slice_devices", " devices")
    if error:
        raise ValueError(error + " per slice")
    counters = [
        CounterSet(
            spec.driver,
            spec.pool.name,
            cs.name,
            _quantities(cs.counters, f"spec.sharedCounters[{j}].counters", limits),
        )
        for j, cs in enumerate(spec.sharedCounters or ())
    ]
    return [_device(spec, d, i, limits) for i, d in enumerate(spec.devices or ())], counters


def _pool_key(raw: Any) -> tuple[str, str] | None:
    spec = raw.get("spec") if isinstance(raw, Mapping) else None
    pool = spec.get("pool") if isinstance(spec, Mapping) else None
    driver = spec.get("driver") if isinstance(spec, Mapping) else None
    name = pool.get("name") if isinstance(pool, Mapping) else None
    if isinstance(driver, str) and driver and isinstance(name, str) and name:
        return driver, name
    return None


def _slice_name(raw: Any) -> str:
    meta = raw.get("metadata") if isinstance(raw, Mapping) else None
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return name if isinstance(name, str) and name else "?"


def slices_to_inventory(
    slices: Iterable[Mapping[str, Any]], limits: InventoryLimits = DEFAULT_LIMITS
) -> DraInventory:
    """ResourceSlices (any of v1 / v1beta2 / v1beta1 shapes) -> :class:`DraInventory`.

    A slice that does not fit :class:`SliceIn` (or a bound) is skipped and named in
    ``errors`` (``"ResourceSlice <name>: <field>: <problem>"``), its pool in
    ``broken_pools``; the rest is kept.
    """
    parsed: list[SliceIn] = []
    errors: list[str] = []
    broken: dict[tuple[str, str], str] = {}
    for raw in slices:
        name = _slice_name(raw)
        key = _pool_key(raw)
        try:
            if key is None:
                raise ValueError("missing driver or pool name")
            parsed.append(validate(SliceIn, raw, "", limits))
        except ValueError as exc:
            errors.append(f"ResourceSlice {name}: {exc}")
            if key is not None:
                broken.setdefault(key, errors[-1])
    newest: dict[tuple[str, str], int] = {}
    for s in parsed:
        key = (s.spec.driver, s.spec.pool.name)
        newest[key] = max(newest.get(key, 0), s.spec.pool.generation)
    devices: list[DraDevice] = []
    counters: list[CounterSet] = []
    for s in parsed:
        if s.spec.pool.generation < newest[(s.spec.driver, s.spec.pool.name)]:
            continue
        try:
            devs, sets = _read(s, limits)
        except ValueError as exc:
            errors.append(f"ResourceSlice {s.metadata.name}: {exc}")
            broken.setdefault((s.spec.driver, s.spec.pool.name), errors[-1])
            continue
        devices.extend(devs)
        counters.extend(sets)
    devices.sort(key=lambda x: (x.node, x.driver, x.pool, x.name))
    return DraInventory(tuple(devices), tuple(counters), tuple(errors), broken)


def dra_devices_to_placement(
    inv: DraInventory, vendors: Mapping[str, str] = DRIVER_VENDORS
) -> list[DeviceUsage]:
    """Whole physical DRA devices -> ``placement.types.Device`` (partitions are skipped).

    uuid = ``uuid`` attribute (else ``<pool>/<name>``), index = ``minor`` / ``index``
    attribute, type = ``productName`` (else ``model``, else ``type``), memory/cores from the
    capacities (cores default 100 when the driver publishes none), ``split_count`` = 100 for
    ``allowMultipleAllocations`` devices (sharing bounded by capacity, not slots) else 1,
    ``healthy`` = not tainted. Devices of drivers not in ``vendors`` are skipped.
    """
    out = []
    for d in inv.devices:
        vendor = vendors.get(d.driver)
        if vendor is None or d.is_partition or not d.node:
            continue
        a = d.attributes
        index = a.get("minor", a.get("index", 0))
        out.append(
            DeviceUsage(
                uuid=d.uuid or f"{d.pool}/{d.name}",
                node=d.node,
                index=int(index) if isinstance(index, (int, str)) and str(index).isdigit() else 0,
                type=str(a.get("productName") or a.get("model") or a.get("type") or ""),
                vendor=vendor,
                memory_mib=d.memory_mib,
                cores_percent=d.cores_percent or 100,
                split_count=100 if d.allow_multiple else 1,
                healthy=d.available,
                mode="dra",
            )
        )
    return out
