"""The JSON forms the console stores of placement-core values, each written once with its
reader beside it (stdlib only):

* ``Placement.assignment``, a placed pod: :func:`assignment_to_json` (the cycle's commit) and
  :func:`assignment_from_json` (the Kubernetes backend building the pod's manifest);
* ``Device.mig_profiles``, the profiles a device can create, in one of two shapes chosen by
  an explicit discriminator, :func:`profile_shape` of the device's vendor (the vendor trait
  ``drs_profiles``; nothing in the rows is guessed):

  - ``"mig"`` (:data:`MIG_SHAPE`), a MIG-mode GPU as registered (HAMi ``migProfiles``):
    :func:`mig_profiles_to_json` / :func:`mig_profiles_from_json`;
  - ``"drs"`` (:data:`DRS_SHAPE`), an Enflame DRS card's profiles of
    ``enflame.com/gcu-drs-capacity``: :func:`drs_profiles_to_json` (from the card's
    ``custom``) / :func:`drs_custom` (back to the placement core's ``custom``).

  Every writer calls :func:`device_profiles_to_json` and every reader
  :func:`device_profiles_from_json` with that shape. The column keeps its name and both
  shapes (renaming it or adding a shape column would be a migration, which this does not
  need: the vendor already tells the shape).

``tests/placement/test_codec.py`` round-trips all three.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduling.devices.vendors import vendor_traits
from scheduling.placement.types import (
    ContainerAssignment,
    DeviceGrant,
    MigPlacement,
    MigProfile,
    PodAssignment,
)

__all__ = [
    "AssignmentError",
    "DRS_SHAPE",
    "MIG_SHAPE",
    "StoredProfiles",
    "device_profiles_from_json",
    "device_profiles_to_json",
    "drs_custom",
    "drs_profiles_to_json",
    "profile_shape",
    "assignment_from_json",
    "assignment_to_json",
    "granted_uuids",
    "mig_profiles_from_json",
    "mig_profiles_to_json",
]


class AssignmentError(ValueError):
    """A stored assignment that cannot be read (a grant whose vendor is unknown)."""


def _grant_to_json(g: DeviceGrant) -> dict[str, Any]:
    out: dict[str, Any] = {
        "uuid": g.uuid,
        "type": g.type,
        "vendor": g.vendor,
        "model": g.model,
        "index": g.index,
        "memory_mib": g.memory_mib,
        "cores_percent": g.cores_percent,
    }
    if g.mig_start >= 0:
        out.update(mig_profile=g.mig_profile, mig_start=g.mig_start, mig_size=g.mig_size)
    if g.template:
        out["template"] = g.template
    if g.slices:
        out["slices"] = g.slices
    if g.counters:
        out["counters"] = [[name, n] for name, n in g.counters]
    return out


def assignment_to_json(pod: PodAssignment) -> dict[str, Any]:
    """A placed pod as ``Placement.assignment``: ``{"pod", "node", "containers": [{"name",
    "init", "devices": [{"uuid", "type", "vendor", "model", "index", "memory_mib",
    "cores_percent"}, plus "mig_profile"/"mig_start"/"mig_size", "template", "slices",
    "counters" ([[name, n], ...]) when set]}]}``. Host CPU and memory are the placement's own
    columns, not part of the JSON."""
    return {
        "pod": pod.pod,
        "node": pod.node,
        "containers": [
            {"name": c.name, "init": c.init, "devices": [_grant_to_json(g) for g in c.devices]}
            for c in pod.containers
        ],
    }


def _grant_from_json(g: Mapping[str, Any], vendor_of: Callable[[str], str | None]) -> DeviceGrant:
    vendor = g.get("vendor") or vendor_of(g["uuid"])
    if not vendor:
        raise AssignmentError(f"device {g['uuid']!r} is not in the inventory")
    return DeviceGrant(
        uuid=g["uuid"],
        type=g.get("type") or "",
        memory_mib=int(g["memory_mib"]),
        cores_percent=int(g["cores_percent"]),
        vendor=vendor,
        index=int(g.get("index", 0)),
        mig_profile=g.get("mig_profile", ""),
        mig_start=int(g.get("mig_start", -1)),
        mig_size=int(g.get("mig_size", 0)),
        template=g.get("template", ""),
        model=g.get("model", ""),
        counters=tuple((str(name), int(n)) for name, n in g.get("counters") or ()),
        slices=int(g.get("slices", 0)),
    )


def assignment_from_json(
    data: Mapping[str, Any] | None,
    *,
    pod: str,
    node: str,
    cpu_milli: int,
    memory_mib: int,
    vendor_of: Callable[[str], str | None],
) -> PodAssignment:
    """Read :func:`assignment_to_json`'s form back. ``pod`` is the name used when the JSON has
    none, ``node`` the placement's node; ``vendor_of(uuid)`` fills a grant stored without a
    vendor (older rows).

    Raises:
        AssignmentError: a grant has no vendor and ``vendor_of`` knows none.
        KeyError / ValueError: a grant lacks ``uuid``, ``memory_mib`` or ``cores_percent``.
    """
    data = data or {}
    containers = tuple(
        ContainerAssignment(
            name=c["name"],
            devices=tuple(_grant_from_json(g, vendor_of) for g in c.get("devices") or ()),
            init=bool(c.get("init")),
        )
        for c in data.get("containers") or ()
    )
    return PodAssignment(
        pod=str(data.get("pod") or pod),
        node=node,
        containers=containers,
        cpu_milli=cpu_milli,
        memory_mib=memory_mib,
    )


def granted_uuids(data: Mapping[str, Any] | None) -> set[str]:
    """The device uuids a stored assignment grants (without reading it whole)."""
    return {g["uuid"] for c in (data or {}).get("containers") or () for g in c.get("devices") or ()}


def mig_profiles_to_json(profiles: tuple[MigProfile, ...] | list[MigProfile]) -> list[dict]:
    """``Device.mig_profiles`` of a MIG GPU: ``[{"name", "memory_mib", "cores_percent",
    "slice_count", "placements": [[start, size], ...]}]``."""
    return [
        {
            "name": p.name,
            "memory_mib": p.memory_mib,
            "cores_percent": p.cores_percent,
            "slice_count": p.slice_count,
            "placements": [[pl.start, pl.size] for pl in p.placements],
        }
        for p in profiles
    ]


def mig_profiles_from_json(rows: object) -> tuple[MigProfile, ...]:
    """:func:`mig_profiles_to_json`'s form back; a malformed entry is skipped (the sync
    validated them when it wrote them)."""
    out = []
    for p in rows if isinstance(rows, list) else ():
        try:
            out.append(
                MigProfile(
                    str(p["name"]),
                    int(p["memory_mib"]),
                    int(p["cores_percent"]),
                    int(p["slice_count"]),
                    tuple(MigPlacement(int(a), int(b)) for a, b in p.get("placements") or ()),
                )
            )
        except (KeyError, TypeError, ValueError):
            continue
    return tuple(out)


def drs_profiles_to_json(custom: dict, index: int) -> list[dict]:
    """An Enflame DRS card's profiles as the inventory stores them with the device
    (``Device.mig_profiles``): ``[{"name": "3g.24gb", "profile_id", "slice_count", "minor"}]``
    from the card's ``custom`` (``profiles`` name -> id, ``minor``); [] for other devices."""
    profiles = custom.get("profiles") if isinstance(custom, dict) else None
    if not isinstance(profiles, dict):
        return []
    minor = str(custom.get("minor", index))
    out = []
    for name, pid in sorted(profiles.items()):
        head = str(name).split(".", 1)[0].rstrip("gG")
        out.append(
            {
                "name": str(name),
                "profile_id": str(pid),
                "slice_count": int(head) if head.isdigit() else 0,
                "minor": minor,
            }
        )
    return out


def drs_custom(rows: object, index: int) -> dict:
    """The placement core's ``custom`` of an Enflame DRS card from its stored profiles
    (:func:`drs_profiles_to_json`): ``profiles``, ``maxSlice`` (the largest profile's slices),
    ``index`` and ``minor``; malformed entries are skipped."""
    good = (
        [r for r in rows if isinstance(r, dict) and "profile_id" in r]
        if isinstance(rows, list)
        else []
    )
    return {
        "profiles": {str(r["name"]): str(r["profile_id"]) for r in good},
        "maxSlice": max((int(r.get("slice_count") or 0) for r in good), default=0),
        "index": str(index),
        "minor": str(good[0].get("minor", index)) if good else "",
    }


MIG_SHAPE = "mig"
DRS_SHAPE = "drs"


def profile_shape(vendor: str) -> str:
    """The shape of ``Device.mig_profiles`` for a device of ``vendor``: :data:`DRS_SHAPE` when
    its vendor trait ``drs_profiles`` is set (Enflame DRS), else :data:`MIG_SHAPE`."""
    return DRS_SHAPE if vendor_traits(vendor).drs_profiles else MIG_SHAPE


@dataclass(frozen=True)
class StoredProfiles:
    """``Device.mig_profiles`` read in its ``shape``: ``mig`` the MIG profiles (``"mig"``),
    ``drs`` the placement core's ``custom`` of a DRS card (``"drs"``; None otherwise)."""

    shape: str
    mig: tuple[MigProfile, ...] = ()
    drs: dict | None = field(default=None)


def device_profiles_to_json(
    shape: str,
    *,
    mig: tuple[MigProfile, ...] | list[MigProfile] = (),
    custom: dict | None = None,
    index: int = 0,
) -> list[dict]:
    """``Device.mig_profiles`` of one device in ``shape``: its MIG profiles ``mig``, or the DRS
    profiles of its ``custom`` (``index``: the card's index, its ``minor`` by default).

    Raises:
        ValueError: ``shape`` is neither :data:`MIG_SHAPE` nor :data:`DRS_SHAPE`.
    """
    if shape == MIG_SHAPE:
        return mig_profiles_to_json(mig)
    if shape == DRS_SHAPE:
        return drs_profiles_to_json(custom or {}, index)
    raise ValueError(f"unknown profile shape {shape!r}")


def device_profiles_from_json(rows: object, shape: str, *, index: int = 0) -> StoredProfiles:
    """:func:`device_profiles_to_json`'s form back, read in ``shape`` (malformed rows skipped).

    Raises:
        ValueError: ``shape`` is neither :data:`MIG_SHAPE` nor :data:`DRS_SHAPE`.
    """
    if shape == MIG_SHAPE:
        return StoredProfiles(shape, mig=mig_profiles_from_json(rows))
    if shape == DRS_SHAPE:
        return StoredProfiles(shape, drs=drs_custom(rows, index))
    raise ValueError(f"unknown profile shape {shape!r}")
