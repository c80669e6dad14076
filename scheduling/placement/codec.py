"""The JSON forms the console stores of placement-core values, each written once with its
reader beside it (stdlib only):

* ``Placement.assignment``, a placed pod: :func:`assignment_to_json` (the cycle's commit) and
  :func:`assignment_from_json` (the Kubernetes backend building the pod's manifest);
* ``Device.mig_profiles`` of a MIG-mode GPU, the profiles it can create:
  :func:`mig_profiles_to_json` (the inventory sync) and :func:`mig_profiles_from_json` (the
  cluster snapshot). An Enflame DRS card keeps its profiles in the same column in the device
  catalogue's own shape (``scheduling.devices.resources.drs_profiles_stored``).

``tests/placement/test_codec.py`` round-trips both.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from scheduling.placement.types import (
    ContainerAssignment,
    DeviceGrant,
    MigPlacement,
    MigProfile,
    PodAssignment,
)

__all__ = [
    "AssignmentError",
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
