"""Bounds on what one Node or ResourceSlice may register, and a depth-bounded JSON reader.

A cluster object is input from outside the console: a device plugin bug, an operator's typo or
an attacker with ``nodes/patch`` can write any annotation. The inventory sync reads it through
pydantic schemas (:mod:`scheduling.kube.hami.registration`, :mod:`scheduling.kube.slices`)
whose counts and sizes are bounded by :class:`InventoryLimits`; an object over a bound is
flagged with the bound and the setting that raises it, and nothing of it is built (a node
advertising ``enflame.com/gcu: 2000000`` costs one comparison, not two million device objects).

The defaults sit well above real hardware (8-16 devices per node, HAMi ``deviceSplitCount`` 10,
Cambricon 100 sMLU slots, 141 GiB H200) and well below what the database columns hold
(``PositiveIntegerField`` < 2**31). The services layer builds the limits from the Django
settings named in :data:`SETTINGS` (environment variables of the same names).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, fields
from typing import Any

__all__ = [
    "InventoryLimits",
    "DEFAULT_LIMITS",
    "SETTINGS",
    "load_json",
    "over_bound",
    "check_bound",
]


@dataclass(frozen=True, slots=True)
class InventoryLimits:
    """Per-object bounds of the inventory sync.

    Attributes:
        max_devices_per_node: devices one node may register (all vendors together), and
            devices a capacity-registered vendor may synthesise from one count.
        max_split_count: HAMi ``count`` (tasks per device) of one device.
        max_memory_mib: memory of one device in MiB (HAMi ``devmem``; DRA ``memory``).
        max_cores: cores of one device (HAMi ``devcore``, percent x core scaling, or CUs).
        max_mig_profiles: MIG profiles of one device.
        max_mig_placements: placements of one MIG profile.
        max_json_depth: nesting depth of a JSON annotation value.
        max_annotation_bytes: length of one annotation value the sync parses.
        max_slice_devices: devices (and counter sets) of one ResourceSlice (the API allows 128).
        max_node_cpu_milli / max_node_memory_mib: a node's allocatable CPU / memory.
    """

    max_devices_per_node: int = 256
    max_split_count: int = 10_000
    max_memory_mib: int = 16 * 1024 * 1024
    max_cores: int = 100_000
    max_mig_profiles: int = 64
    max_mig_placements: int = 64
    max_json_depth: int = 32
    max_annotation_bytes: int = 1024 * 1024
    max_slice_devices: int = 128
    max_node_cpu_milli: int = 10**9
    max_node_memory_mib: int = 2**40

    @classmethod
    def from_settings(cls, settings: Any) -> InventoryLimits:
        """Limits from an object with the :data:`SETTINGS` attributes (missing = default)."""
        values = {}
        for f in fields(cls):
            value = getattr(settings, SETTINGS[f.name], None)
            if value is not None:
                values[f.name] = int(value)
        return cls(**values)


SETTINGS = {f.name: f"INVENTORY_{f.name.upper()}" for f in fields(InventoryLimits)}
"""Limit attribute -> Django setting / environment variable (``INVENTORY_MAX_...``)."""

DEFAULT_LIMITS = InventoryLimits()


def over_bound(
    what: str, value: int, limits: InventoryLimits, attribute: str, unit: str = ""
) -> str | None:
    """The error text when ``value`` exceeds ``limits.<attribute>``, else None.

    Example: ``"status.capacity.enflame.com/gcu: 2000000 devices exceed the bound of 256 per
    node (setting INVENTORY_MAX_DEVICES_PER_NODE)"``.
    """
    bound = getattr(limits, attribute)
    if value <= bound:
        return None
    per = " per node" if attribute == "max_devices_per_node" else ""
    return f"{what}: {value}{unit} exceed the bound of {bound}{per} (setting {SETTINGS[attribute]})"


def check_bound(
    what: str, value: int, limits: InventoryLimits, attribute: str, unit: str = ""
) -> None:
    """Raise what :func:`over_bound` reports.

    Raises:
        ValueError: ``value`` exceeds ``limits.<attribute>`` (the message names ``what``).
    """
    error = over_bound(what, value, limits, attribute, unit)
    if error:
        raise ValueError(error)


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_OPEN = str.maketrans("{}", "[]")


def _depth(text: str, stop_above: int | None = None) -> int:
    """Maximum bracket nesting of a JSON text (brackets inside strings do not count); with
    ``stop_above`` the scan ends at the first bracket deeper than it (and returns that
    depth), so a hostile value costs at most its length in C-level regex work plus one
    step per bracket up to the bound."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub('""', text)).translate(_OPEN)
    depth = deepest = 0
    for ch in brackets:
        if ch == "[":
            depth += 1
            if depth > deepest:
                deepest = depth
                if stop_above is not None and depth > stop_above:
                    break
        else:
            depth -= 1
    return deepest


def load_json(text: str, what: str, limits: InventoryLimits = DEFAULT_LIMITS) -> Any:
    """``json.loads`` with the size and depth bounds checked first.

    Raises:
        ValueError: ``"<what>: ..."`` when the text is longer than ``max_annotation_bytes``,
            nested deeper than ``max_json_depth`` or not JSON.
    """
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > limits.max_annotation_bytes:
        raise ValueError(
            f"{what}: {size} bytes exceed the bound of "
            f"{limits.max_annotation_bytes} (setting "
            f"{SETTINGS['max_annotation_bytes']})"
        )
    depth = _depth(text, limits.max_json_depth)
    if depth > limits.max_json_depth:
        raise ValueError(
            f"{what}: JSON nested deeper than {limits.max_json_depth} "
            f"(setting {SETTINGS['max_json_depth']})"
        )
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ValueError(f"{what}: invalid JSON ({exc})") from None
