"""Inventory sync, step 1 (no database writes): listed Node and ResourceSlice dicts -> what
each node reports, both sources merged, with the problems found on the way.

Rules:

* A node without ``metadata.name`` or listed twice is skipped and named in ``errors``; a node
  whose registration cannot be read is in ``errored`` (its devices stay as they were) with
  its error; a NotReady node is not an error (its devices are still listed).
* A device reported by both sources on the same node is one device; the source matching the
  cluster's submission mode wins (``dra`` -> the ResourceSlice, otherwise the annotation),
  keeping the HAMi type when the slice has none.
* A ResourceSlice device on a node that is not listed is skipped (named in ``errors``).
* Each registered device is keyed by identity (:func:`scheduling.kube.identity.device_identity`):
  its UUID, or for Hygon ``DCU-<serial>`` with the serial from the registration id, the
  node's serial annotation / labels or the serial map (``serials_seen``, fed by exporters).
  An index-based id no source names is keyed by node and flagged with a warning.
* ``where`` lists, per key, the nodes reporting it; more than one is a conflict the write
  step reports and never merges.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from scheduling.devices.defaults import default_device_configs
from scheduling.devices.overlay import Catalogue
from scheduling.devices.resources import plugin_devices_per_card, template_share_count
from scheduling.devices.schema import DeviceModelConfig
from scheduling.kube.identity import Identity, device_identity, node_serials
from scheduling.kube.inventory import (
    DRIVER_VENDORS,
    dra_devices_to_placement,
    nodes_to_snapshot,
    slices_to_inventory,
)
from scheduling.kube.limits import InventoryLimits
from scheduling.placement.types import DeviceUsage, NodeInfo

__all__ = [
    "Reported",
    "Sighting",
    "InventoryPlan",
    "plan_inventory",
    "valid_nodes",
    "plugin_device_warnings",
    "template_share_notes",
]


@dataclass
class Reported:
    """One device as this sync sees it: the parsed device, its source (``hami`` / ``dra``),
    for a DRA device ``<driver>/<pool>/<name>``, and its identity (``key`` = the row's uuid,
    ``hami_id`` when the registration names it otherwise, ``serial``, ``warning``)."""

    dev: DeviceUsage
    source: str
    dra_name: str = ""
    identity: Identity | None = None
    note: str = ""
    """A problem of the registration the row keeps in ``Device.error`` (e.g. a share count
    the template table overrides)."""

    @property
    def key(self) -> str:
        return self.identity.key if self.identity else self.dev.uuid


@dataclass(frozen=True, slots=True)
class Sighting:
    """A serial read on a node: ``(vendor, serial, node, index, source)``."""

    vendor: str
    serial: str
    node: str
    index: int
    source: str


@dataclass
class InventoryPlan:
    """What one sync will write.

    Attributes:
        nodes: parsed nodes by name (errored ones included, without devices).
        errored: names of nodes whose registration could not be read.
        per_node: ``{node: {uuid: Reported}}``.
        where: ``{uuid: [node names reporting it]}`` (sorted).
        partitions: DRA partition devices seen (not stored).
        broken_pools: ``{(driver, pool): error}`` of pools with an unreadable slice.
        slice_list_failed: the ResourceSlice list itself failed (DRA devices stay).
        errors: problems in the order: node errors, slice errors, cross-source notes.
        warnings: devices identified by node and index only (no serial source yet); models
            whose device plugin would register too many kubelet devices on a node.
        sightings: serials the registrations and node annotations / labels named.
    """

    nodes: dict[str, NodeInfo]
    errored: set[str]
    per_node: dict[str, dict[str, Reported]]
    where: dict[str, list[str]]
    partitions: int = 0
    broken_pools: Mapping[tuple[str, str], str] = field(default_factory=dict)
    slice_list_failed: bool = False
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    sightings: list[Sighting] = field(default_factory=list)

    @property
    def duplicates(self) -> dict[str, list[str]]:
        """``{uuid: nodes}`` of uuids reported by more than one node."""
        return {u: ns for u, ns in self.where.items() if len(ns) > 1}


def valid_nodes(objs: list[Any], errors: list[str]) -> list[dict]:
    """Node dicts with a string ``metadata.name``, first copy of each name (others are
    named in ``errors``)."""
    seen: set[str] = set()
    out = []
    for i, obj in enumerate(objs):
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        name = meta.get("name") if isinstance(meta, dict) else None
        if not isinstance(name, str) or not name:
            errors.append(f"Node #{i}: no metadata.name; skipped")
            continue
        if name in seen:
            errors.append(f"Node {name}: listed twice; second copy skipped")
            continue
        seen.add(name)
        out.append(obj)
    return out


def _merge_dra(
    plan: InventoryPlan, inv, prefer_dra: bool, configs: Sequence[DeviceModelConfig] | None
) -> None:
    dra_by_key = {
        (d.node, d.uuid or f"{d.pool}/{d.name}"): d for d in inv.devices if not d.is_partition
    }
    # drivers the catalogue's models name (a Cambricon / Hygon driver configured per model)
    vendors = {**DRIVER_VENDORS, **{c.dra.driver: c.vendor for c in configs or () if c.dra}}
    for dev in dra_devices_to_placement(inv, vendors):
        if dev.node not in plan.nodes:
            plan.errors.append(
                f"ResourceSlice device {dev.uuid} is on node {dev.node!r}, "
                "which is not listed; skipped"
            )
            continue
        d = dra_by_key.get((dev.node, dev.uuid))
        dra_name = f"{d.driver}/{d.pool}/{d.name}" if d else ""
        here = plan.per_node[dev.node]
        if dev.uuid in here and not prefer_dra:
            continue
        if dev.uuid in here:
            dev.type = dev.type or here[dev.uuid].dev.type
        here[dev.uuid] = Reported(dev, "dra", dra_name, Identity(dev.uuid))


def _identify(
    plan: InventoryPlan, name: str, node: NodeInfo, serials_seen: Mapping[int, str]
) -> None:
    """Key the node's registered devices by identity; record the serials it names."""
    try:
        named = node_serials(node.annotations, node.labels)
    except ValueError as exc:
        plan.errors.append(f"Node {name}: {exc}; serial sources ignored")
        named = {}
    for index, (serial, source) in sorted(named.items()):
        plan.sightings.append(Sighting("DCU", serial, name, index, source))
    for dev in node.devices:
        ident = device_identity(dev, named, serials_seen)
        if ident.warning:
            plan.warnings.append(ident.warning)
        if ident.serial_source == "registration":
            plan.sightings.append(
                Sighting(dev.vendor, ident.serial, name, dev.index, "registration")
            )
        plan.per_node[name][ident.key] = Reported(dev, "hami", "", ident)


def plugin_device_warnings(
    name: str, node: NodeInfo, configs: Sequence[DeviceModelConfig]
) -> list[str]:
    """Warnings for models whose device plugin would register more kubelet devices on the
    node than the model's ``max_plugin_devices`` (kubelet's ListAndWatch reply for one
    resource is one gRPC message of at most 4 MiB, kubernetes#109304): e.g. Cambricon sMLU
    memory in 1 MiB units registers one device per MiB of every card."""
    catalogue = Catalogue(tuple(configs))
    per_model: dict[str, tuple[DeviceModelConfig, int]] = {}
    for dev in node.devices:
        cfg = catalogue.for_device(dev.vendor, dev.type)
        if cfg is None:
            continue
        key = cfg.chip or cfg.vendor
        _cfg, n = per_model.get(key, (cfg, 0))
        per_model[key] = (cfg, n + plugin_devices_per_card(cfg, dev.memory_mib))
    return [
        f"Node {name}: model {key} would register {n} device-plugin devices for "
        f"{cfg.resource_memory or cfg.resource_count}, over its bound of "
        f"{cfg.max_plugin_devices} (max_plugin_devices; kubelet refuses a ListAndWatch "
        "reply over 4 MiB): raise the memory unit (memory_factor) or the bound"
        for key, (cfg, n) in sorted(per_model.items())
        if n > cfg.max_plugin_devices
    ]


def template_share_notes(
    name: str, node: NodeInfo, configs: Sequence[DeviceModelConfig]
) -> dict[str, str]:
    """``{uuid: note}`` of registered devices of template-sliced models (Ascend vNPU) whose
    share count contradicts the model's template table (allocatable memory // smallest
    template, the plugin's ``VDeviceCount``): the table wins, the device's split count is
    set to it and the note names both counts."""
    catalogue = Catalogue(tuple(configs))
    notes = {}
    for dev in node.devices:
        cfg = catalogue.for_device(dev.vendor, dev.type)
        if cfg is None or cfg.slicing != "template":
            continue
        shares = template_share_count(cfg, dev.memory_mib)
        if shares and dev.split_count != shares:
            notes[dev.uuid] = (
                f"registered {dev.split_count} shares but the {cfg.chip} "
                f"template table gives {shares}; the table wins"
            )
            dev.split_count = shares
    return notes


def plan_inventory(
    node_objs: list[Any],
    slices: list[Any],
    *,
    prefer_dra: bool,
    now: datetime,
    limits: InventoryLimits,
    slice_error: str | None = None,
    serials_seen: Mapping[str, Mapping[int, str]] | None = None,
    configs: Sequence[DeviceModelConfig] | None = None,
) -> InventoryPlan:
    """Parse, identify and merge (see the module docstring). Never raises for bad input.

    Args:
        serials_seen: ``{node name: {index: serial}}`` of Hygon cards from the serial map.
        configs: the device catalogue's resolved configs (HAMi defaults overlaid by the
            ``DeviceModel`` rows: per-model Cambricon capacities, units, allocatable memory);
            None = HAMi's defaults.
    """
    errors: list[str] = []
    snap = nodes_to_snapshot(
        valid_nodes(list(node_objs), errors), now=now, limits=limits, configs=configs
    )
    errored = {
        name
        for name, node in snap.nodes.items()
        if node.error and not node.error.startswith("node not Ready")
    }
    errors.extend(f"Node {name}: {snap.nodes[name].error}" for name in sorted(errored))
    inv = slices_to_inventory(slices, limits)
    errors.extend(inv.errors)
    if slice_error:
        errors.append(slice_error)
    plan = InventoryPlan(
        nodes=dict(snap.nodes),
        errored=errored,
        per_node=defaultdict(dict),
        where={},
        partitions=sum(1 for d in inv.devices if d.is_partition),
        broken_pools=dict(inv.broken_pools),
        slice_list_failed=bool(slice_error),
        errors=errors,
    )
    for name in sorted(snap.nodes):
        notes = template_share_notes(name, snap.nodes[name], configs or default_device_configs())
        _identify(plan, name, snap.nodes[name], (serials_seen or {}).get(name, {}))
        for rep in plan.per_node[name].values():
            if rep.dev.uuid in notes:
                rep.note = notes[rep.dev.uuid]
                plan.warnings.append(f"Node {name}: device {rep.dev.uuid}: {rep.note}")
        plan.warnings.extend(
            plugin_device_warnings(name, snap.nodes[name], configs or default_device_configs())
        )
    _merge_dra(plan, inv, prefer_dra, configs)
    where: dict[str, list[str]] = defaultdict(list)
    for name in sorted(plan.per_node):
        for key in plan.per_node[name]:
            where[key].append(name)
    plan.where = dict(where)
    return plan
