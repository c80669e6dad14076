"""Device resource tables and per-model resolution for the manifest builders
(:mod:`scheduling.kube.manifests`): HAMi resource names per vendor (the fallback when a grant's
model is not in the catalogue), whole-device plugin resources, DRA drivers, and the
catalogue lookups that give a grant's model its own names, memory unit, use-uuid key and DRA
driver / device class (docs/devices.md)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from scheduling.devices.defaults import default_device_configs
from scheduling.devices.overlay import Catalogue
from scheduling.devices.resources import dra_device_class, unit_mib
from scheduling.devices.schema import ConfigError, DeviceModelConfig
from scheduling.devices.vendors import HAMI_RESOURCES, HamiResources, ascend_family, vendor_traits
from scheduling.placement.types import DeviceGrant, PodAssignment

__all__ = [
    "ManifestError",
    "DraDriver",
    "DEFAULT_DRA_DRIVERS",
    "HamiResources",
    "HAMI_RESOURCES",
    "WHOLE_RESOURCES",
    "whole_resource",
    "model_resources",
    "hami_container_resources",
    "ascend_family",
    "dra_drivers_for",
]


class ManifestError(ValueError):
    """The placement cannot be expressed in the requested mode (message says why)."""


@dataclass(frozen=True, slots=True)
class DraDriver:
    """How to ask one DRA driver for devices (per vendor).

    Attributes:
        driver: driver name (ResourceSlice ``spec.driver``; CEL attribute domain).
        device_class: DeviceClass name requests use.
        consumable_capacity: devices have ``allowMultipleAllocations`` and capacities
            ``memory`` (bytes) / ``cores`` (percent) that requests consume (KEP-5075).
        uuid_attribute: device attribute holding the physical device uuid.
        parent_attribute / profile_attribute: attributes of partition devices (MIG, vNPU
            templates) naming the parent uuid and the profile/template; "" = the driver has
            no partition devices.
        memory_capacity / cores_capacity: capacity names.
    """

    driver: str
    device_class: str
    consumable_capacity: bool = True
    uuid_attribute: str = "uuid"
    parent_attribute: str = "parentUUID"
    profile_attribute: str = "profile"
    memory_capacity: str = "memory"
    cores_capacity: str = "cores"


def _default_dra_drivers() -> dict[str, DraDriver]:
    out: dict[str, DraDriver] = {}
    for cfg in default_device_configs():
        d = cfg.dra
        if d is None or cfg.vendor in out:
            continue
        # a per-model class ("npu-{model}...") has no vendor-wide name: the driver's is used
        cls = d.driver if "{model}" in d.device_class else d.device_class
        out[cfg.vendor] = DraDriver(
            d.driver,
            cls,
            d.consumable_capacity,
            d.uuid_attribute,
            d.parent_attribute,
            d.profile_attribute,
            d.memory_capacity,
            d.cores_capacity,
        )
    return out


DEFAULT_DRA_DRIVERS: Mapping[str, DraDriver] = _default_dra_drivers()
"""Vendor word -> DraDriver of the drivers HAMi ships (the catalogue's HAMi defaults:
``hami-core-gpu.project-hami.io`` for NVIDIA, ``ascend.project-hami.io`` for Ascend): the
fallback for a grant whose model the catalogue does not know; other vendors must be
configured per model (``dra``)."""


def _whole_resources() -> dict[str, str]:
    out: dict[str, str] = {}
    for cfg in default_device_configs():
        if cfg.whole_resource and cfg.vendor not in out:
            # a per-chip backend whose plugin names the chip family (Ascend MindX): the
            # family's place in the name is ``{family}``; the catalogue names each chip's
            family = ascend_family(cfg.common_word) if vendor_traits(cfg.vendor).per_chip else ""
            out[cfg.vendor] = (
                cfg.whole_resource.replace(family, "{family}") if family else cfg.whole_resource
            )
    return out


WHOLE_RESOURCES: Mapping[str, str] = _whole_resources()
"""Vendor word -> count resource of the vendor's own (non-HAMi) device plugin, from the
catalogue's HAMi defaults (``whole_resource``): the fallback for a grant whose model the
catalogue does not know. Ascend's MindX plugin names it by chip family
(``huawei.com/Ascend910``, ``huawei.com/Ascend310P``)."""


def whole_resource(
    vendor: str, chip: str, grants: list[DeviceGrant], catalogue: Catalogue | None
) -> str:
    """The whole-device count resource of the grants' model: the catalogue's resolved
    ``whole_resource``, else :data:`WHOLE_RESOURCES`.

    Raises:
        ManifestError: a vendor without a device-plugin resource name.
    """
    cfg = (
        catalogue.for_device(vendor, grants[0].model or grants[0].type)
        if catalogue is not None
        else None
    )
    if cfg is not None and cfg.whole_resource:
        return cfg.whole_resource
    name = WHOLE_RESOURCES.get(vendor)
    if name is None:
        raise ManifestError(f"vendor {vendor!r} has no device-plugin resource name")
    return name.format(family=ascend_family(chip or grants[0].type))


def model_resources(
    vendor: str, chip: str, grants: list[DeviceGrant], catalogue: Catalogue | None
) -> HamiResources:
    """HAMi resource names and memory unit of the grants' model: the catalogue's resolved
    config of the model (per-model names such as ``cambricon.com/mlu590.smlu.vmemory``, the
    model's ``memory_factor`` incl. 0 = 1 % of ``memory_mib``), else the vendor's table entry.

    Raises:
        ManifestError: unknown vendor, grants of several models in one vendor group, or a
            model whose memory unit cannot be computed.
    """
    res = HAMI_RESOURCES.get(vendor)
    if res is None:
        raise ManifestError(f"vendor {vendor!r} has no HAMi resource names")
    if catalogue is None:
        return res
    cfgs = {
        id(c): c
        for c in (catalogue.for_device(vendor, g.model or g.type) for g in grants)
        if c is not None
    }
    if len(cfgs) > 1:
        raise ManifestError(
            f"vendor {vendor!r}: grants of several models in one container "
            f"({sorted({g.model or g.type for g in grants})})"
        )
    if not cfgs:
        return res
    cfg: DeviceModelConfig = next(iter(cfgs.values()))
    try:
        # a suffixed value is written in MiB whatever the model's bare-number unit
        unit = unit_mib(cfg) if cfg.resource_memory and not res.memory_suffix else 1
    except ConfigError as exc:
        raise ManifestError(f"model {cfg.chip or vendor}: {exc}") from None
    return HamiResources(
        cfg.resource_count or res.count,
        cfg.resource_memory,
        cfg.resource_cores,
        memory_unit_mib=unit,
        memory_suffix=res.memory_suffix,
        cores_per_device=res.cores_per_device,
        use_uuid=cfg.use_uuid_annotation or res.use_uuid,
    )


def hami_container_resources(
    vendor: str,
    chip: str,
    grants: list[DeviceGrant],
    annotations: dict[str, str],
    res: HamiResources,
) -> dict[str, str]:
    if "{chip}" in res.count and not chip:
        raise ManifestError(f"vendor {vendor!r} grants need the chip common word as type")
    traits = vendor_traits(vendor)
    if any(g.mig_profile for g in grants) and not traits.mig:
        raise ManifestError(f"MIG profiles are NVIDIA only (vendor {vendor!r})")
    out = {res.count.format(chip=chip): str(len(grants))}
    # HAMi books the same memory / cores on every device of a container request (one
    # ContainerDeviceRequest per vendor); with unequal grants the smallest is requested, so
    # HAMi's own fit never needs more than our placement booked on any device.
    mem = min(g.memory_mib for g in grants)
    cores = min(g.cores_percent for g in grants)
    if traits.vnpu_templates:
        soft = any(not g.template and g.cores_percent < 100 for g in grants)
        if soft:
            annotations["huawei.com/vnpu-mode"] = "hami-core"
        elif all(g.cores_percent >= 100 and not g.template for g in grants):
            return out  # whole NPUs: count only (webhook books the whole card)
        if len(grants) > 1 and not soft:
            raise ManifestError("Ascend vNPU templates are single-device (hami.md §2.4)")
        out[res.memory.format(chip=chip)] = str(mem)
        if soft and cores > 0:
            out[res.cores.format(chip=chip)] = str(cores)
        return out
    if traits.neuron_cores:
        # several devices are whole devices; one device asks its NeuronCores (1 or 2)
        if len(grants) > 1:
            return out
        return {res.cores: str(max(1, grants[0].cores_percent))}
    if traits.drs_profiles:
        # one card per container; the profile by its slice count (HAMi's direct request)
        if len(grants) > 1:
            raise ManifestError("Enflame DRS slices are one device per container (§2.7)")
        return {res.count: str(grants[0].slices or 1)}
    if res.memory and mem > 0:
        units = math.ceil(mem / res.memory_unit_mib)
        out[res.memory.format(chip=chip)] = f"{units}{res.memory_suffix}"
    if res.cores and cores > 0:
        value = math.ceil(cores * res.cores_per_device / 100)
        out[res.cores.format(chip=chip)] = str(value)
    if traits.mig and any(g.mig_profile for g in grants):
        annotations["nvidia.com/vgpu-mode"] = "mig"
    return out


def dra_drivers_for(
    assignment: PodAssignment,
    catalogue: Catalogue,
    fallback: Mapping[str, DraDriver] = DEFAULT_DRA_DRIVERS,
) -> dict[str, DraDriver]:
    """Vendor -> :class:`DraDriver` of the granted models, from each model's ``dra`` spec in
    the catalogue (driver, device class with ``{model}`` filled in, consumable capacity,
    attribute and capacity names); vendors whose model has none keep ``fallback``'s.

    Raises:
        ManifestError: one vendor's grants in the pod name models with different drivers or
            device classes (one request set per vendor cannot serve both).
    """
    out: dict[str, DraDriver] = {}
    for c in assignment.containers:
        for g in c.devices:
            cfg = catalogue.for_device(g.vendor, g.model or g.type)
            if cfg is None or cfg.dra is None:
                continue
            d = cfg.dra
            drv = DraDriver(
                d.driver,
                dra_device_class(cfg),
                d.consumable_capacity,
                d.uuid_attribute,
                d.parent_attribute,
                d.profile_attribute,
                d.memory_capacity,
                d.cores_capacity,
            )
            if out.setdefault(g.vendor, drv) != drv:
                raise ManifestError(
                    f"vendor {g.vendor!r}: grants of models with different "
                    f"DRA drivers or device classes in one pod"
                )
    return {**fallback, **out}
