"""Enflame DRS cards of a node: the ``enflame.com/gcu-drs-capacity`` annotation -> devices.

The Enflame device plugin writes (``pkg/device/enflame/device.go`` ``GetNodeDevices``,
HAMi v2.10)::

    {"devices": [{"index": "0", "minor": "0", "capacity": 6}, ...],
     "profiles": {"1g.8gb": "<profile id>", "3g.24gb": "...", "6g.48gb": "..."}}

Each entry is one card: id ``<node>-enflame-drs-<index>``, ``Count`` = its ``capacity``
(slices), ``Devmem`` = the largest profile's GB x 1024 MiB (the largest slice count when no
profile names a size in GB), ``Devcore`` 100, type ``Enflame``; ``custom`` keeps
``profiles``, ``maxSlice`` (the largest profile's slice count), ``index`` and ``minor``
(``minor`` defaults to the index), which :mod:`scheduling.placement.vendors.enflame` and the
pod annotations read. ``index`` that is not a number falls back to the entry's position, as
in HAMi. Bounds: the device count per node and the per-device slice count
(:class:`~scheduling.kube.limits.InventoryLimits`).
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StrictStr

from scheduling.devices.schema import DeviceModelConfig
from scheduling.kube.hami.registration import validate
from scheduling.kube.limits import DEFAULT_LIMITS, InventoryLimits, load_json, over_bound
from scheduling.placement.types import DeviceUsage

__all__ = ["ENFLAME_DRS_ANNOTATION", "parse_drs_capacity"]

ENFLAME_DRS_ANNOTATION = "enflame.com/gcu-drs-capacity"
_PROFILE = re.compile(r"^\s*(\d+)g\.(\d+)gb\s*$", re.IGNORECASE)
_SIZE = re.compile(r"^\s*(\d+)g?\s*$", re.IGNORECASE)


class _In(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class _DrsDeviceIn(_In):
    index: Annotated[StrictStr, Field(max_length=16)] = ""
    minor: Annotated[StrictStr, Field(max_length=16)] = ""
    capacity: Annotated[int, Field(ge=1, le=1024)] | Annotated[StrictStr, Field(max_length=8)]


class _DrsCapacityIn(_In):
    devices: list[_DrsDeviceIn] = Field(default_factory=list)
    profiles: dict[
        Annotated[StrictStr, Field(max_length=64)], Annotated[StrictStr, Field(max_length=128)]
    ] = Field(default_factory=dict)


def _size_and_gb(name: str) -> tuple[int, int]:
    """HAMi ``parseProfile``: ``"3g.24gb"`` -> (3, 24); (size, 0) without GB; (0, 0) bad."""
    m = _PROFILE.match(name)
    if m:
        return int(m[1]), int(m[2])
    head = name.split(".", 1)
    s = _SIZE.match(head[0]) if len(head) == 2 else None
    return (int(s[1]), 0) if s else (0, 0)


def _capacity(raw: int | str, where: str) -> int:
    value = raw if isinstance(raw, int) else int(raw) if raw.strip().isdigit() else 0
    if not 1 <= value <= 1024:
        raise ValueError(f"{where}.capacity: {raw!r} is not a slice count in 1..1024")
    return value


def parse_drs_capacity(
    value: str, node: str, cfg: DeviceModelConfig, limits: InventoryLimits = DEFAULT_LIMITS
) -> list[DeviceUsage]:
    """The node's DRS cards (module docstring).

    Raises:
        ValueError: malformed JSON or fields, no valid profile, a bad capacity, more cards
            than the bound; the message starts with the annotation's name.
    """
    what = ENFLAME_DRS_ANNOTATION
    spec = validate(_DrsCapacityIn, load_json(value, what, limits), what, limits)
    error = over_bound(what, len(spec.devices), limits, "max_devices_per_node", " devices")
    if error:
        raise ValueError(error)
    sizes = [_size_and_gb(name) for name in spec.profiles]
    max_slice = max((s for s, _ in sizes), default=0)
    if max_slice <= 0:
        raise ValueError(f"{what}.profiles: no valid DRS profile (<n>g.<m>gb)")
    max_gb = max((gb for _, gb in sizes), default=0) or max_slice
    out = []
    for pos, d in enumerate(spec.devices):
        index = int(d.index) if d.index.isdigit() else pos
        count = _capacity(d.capacity, f"{what}.devices[{pos}]")
        out.append(
            DeviceUsage(
                f"{node}-enflame-drs-{index}",
                node,
                index,
                cfg.common_word,
                cfg.vendor,
                max_gb * 1024,
                100,
                count,
                custom={
                    "profiles": dict(spec.profiles),
                    "maxSlice": max_slice,
                    "index": str(index),
                    "minor": d.minor.strip() or str(index),
                },
            )
        )
    return out
