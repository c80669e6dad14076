"""Device identity: the console's key of a registered device, its HAMi id and its serial.

DESIGN.md §1: a device is keyed by its hardware serial / UUID, never a per-node index. Most
HAMi registrations already carry a UUID (NVIDIA, Ascend die id, Metax sGPU, AMD). Hygon is
the exception (hami-v2.10.md §3.4, §9.6):

* the DCU device plugin since 2025-07 (``dcu-vgpu-device-plugin`` master) registers
  ``DCU-<serial>`` with the index as a separate field: the key is that id;
* the released plugin (v1.0.6) registers ``DCU-<index>`` (7 fields), so ``DCU-0`` repeats on
  every node. Its serial comes from a *serial source*: the node annotation
  :data:`DCU_SERIALS_ANNOTATION` (JSON ``{"<index>": "<serial>"}`` or
  ``"<index>=<serial>,..."``), node labels ``<DCU_SERIAL_LABEL_PREFIX><index>: <serial>``
  (what a device-plugin side-car or an operator writes; upstream defines none), or the DCU
  exporter (``device_id`` = the bare serial, ``minor_number`` = the index), remembered by the
  console's serial map (``DeviceSerial``). Keyed ``DCU-<serial>`` - the same key the new
  plugin registers, so a node that upgrades its plugin keeps its rows - with ``hami_id``
  ``DCU-<index>`` (what HAMi's annotations name on that node).
* an index-based id with no serial source yet is keyed ``<node>/DCU-<index>`` (unique, usable,
  reported as a warning); once a source names the serial the row is re-keyed, bookings kept.

An id ``DCU-<x>`` is index-based when ``x`` is a decimal number of at most 4 digits (HIP
device indices; real serials carry letters, e.g. ``T8R1380013061601``); the index used for the
serial lookup is ``x`` (the plugin's ``DvInd``, which the exporter calls ``minor_number``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass

from scheduling.devices.vendors import vendor_traits
from scheduling.placement.types import DeviceUsage

__all__ = [
    "Identity",
    "DCU_SERIALS_ANNOTATION",
    "DCU_SERIAL_LABEL_PREFIX",
    "DCU_PREFIX",
    "node_serials",
    "device_identity",
    "legacy_index",
    "bare_serial",
    "provisional_key",
]

DCU_SERIALS_ANNOTATION = "console.llmops.io/dcu-serials"
DCU_SERIAL_LABEL_PREFIX = "console.llmops.io/dcu-serial-"
DCU_PREFIX = "DCU-"
_MAX_SERIAL = 120
_MAX_KEY = 128


@dataclass(frozen=True, slots=True)
class Identity:
    """How one registered device is stored.

    Attributes:
        key: ``DeviceUsage.uuid`` (the console's key).
        hami_id: the registration id when it differs from ``key`` ("" otherwise).
        serial: hardware serial ("" when no source names it).
        serial_source: ``registration`` | ``annotation`` | ``label`` | ``exporter`` | "".
        warning: set when the device could not be identified by serial.
    """

    key: str
    hami_id: str = ""
    serial: str = ""
    serial_source: str = ""
    warning: str = ""


def legacy_index(uuid: str) -> int | None:
    """The index of an index-based Hygon id (``DCU-3`` -> 3), else None."""
    if not uuid.startswith(DCU_PREFIX):
        return None
    rest = uuid[len(DCU_PREFIX) :]
    return int(rest) if rest.isdigit() and len(rest) <= 4 else None


def bare_serial(uuid: str) -> str:
    """The serial of a serial-based Hygon id (``DCU-T8R13`` -> ``T8R13``), else ""."""
    if uuid.startswith(DCU_PREFIX) and legacy_index(uuid) is None:
        return uuid[len(DCU_PREFIX) :]
    return ""


def _serial(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip() or len(value.strip()) > _MAX_SERIAL:
        raise ValueError(f"{where}: {value!r} is not a serial number")
    return value.strip()


def _annotation_pairs(text: str) -> list[tuple[object, object]]:
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise ValueError(f"{DCU_SERIALS_ANNOTATION}: invalid JSON ({exc})") from None
        if not isinstance(data, dict):
            raise ValueError(f"{DCU_SERIALS_ANNOTATION}: expected a JSON object")
        return list(data.items())
    # "serial=node/minor" pairs; an entry without "=" is a serial with an empty value
    entries = (x.strip() for x in text.split(","))
    return [(key, value) for key, _, value in (p.partition("=") for p in entries if p)]


def node_serials(
    annotations: Mapping[str, str], labels: Mapping[str, str]
) -> dict[int, tuple[str, str]]:
    """Serials a Node names for its DCUs: ``{index: (serial, source)}``; labels win over the
    annotation (a label is per card, the annotation a list that may lag).

    Raises:
        ValueError: a malformed annotation or label (the message names it).
    """
    out: dict[int, tuple[str, str]] = {}
    text = annotations.get(DCU_SERIALS_ANNOTATION, "")
    for idx, serial in _annotation_pairs(text) if text else ():
        if not str(idx).strip().isdigit():
            raise ValueError(f"{DCU_SERIALS_ANNOTATION}: index {idx!r} is not a number")
        out[int(str(idx))] = (_serial(serial, f"{DCU_SERIALS_ANNOTATION}[{idx}]"), "annotation")
    for key, value in labels.items():
        if key.startswith(DCU_SERIAL_LABEL_PREFIX):
            idx = key[len(DCU_SERIAL_LABEL_PREFIX) :]
            if not idx.isdigit():
                raise ValueError(f"label {key}: index {idx!r} is not a number")
            out[int(idx)] = (_serial(value, f"label {key}"), "label")
    return out


def device_identity(
    dev: DeviceUsage, named: Mapping[int, tuple[str, str]], seen: Mapping[int, str]
) -> Identity:
    """The identity of one registered device (rules in the module docstring).

    Args:
        dev: the device as parsed from its node's registration (``uuid`` = registered id).
        named: the node's own serial sources (:func:`node_serials`).
        seen: ``{index: serial}`` last seen on this node by other sources (the serial map).
    """
    if not vendor_traits(dev.vendor).serial_identity:
        return Identity(dev.uuid)
    serial = bare_serial(dev.uuid)
    if serial:
        return Identity(dev.uuid, "", serial, "registration")
    index = legacy_index(dev.uuid)
    if index is None:
        return Identity(dev.uuid)
    if index in named:
        serial, source = named[index]
    elif index in seen:
        serial, source = seen[index], "exporter"
    else:
        key = provisional_key(dev.node, dev.uuid)
        return Identity(
            key,
            dev.uuid,
            warning=(
                f"Node {dev.node}: {dev.uuid} is an index-based id and no serial source names "
                f"card {index}; keyed {key} until one does (annotation "
                f"{DCU_SERIALS_ANNOTATION}, label {DCU_SERIAL_LABEL_PREFIX}{index} or the DCU "
                "exporter)"
            ),
        )
    return Identity(f"{DCU_PREFIX}{serial}", dev.uuid, serial, source)


def provisional_key(node: str, hami_id: str) -> str:
    """``<node>/<hami id>``, the key of an index-based id no serial source names yet (the
    node part hashed when the whole would not fit the 128-character key)."""
    key = f"{node}/{hami_id}"
    if len(key) <= _MAX_KEY:
        return key
    return f"{hashlib.sha256(node.encode()).hexdigest()[:16]}/{hami_id}"
