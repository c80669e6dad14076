"""The pod annotations HAMi's Filter writes for a decision (shared/docs/hami.md §3.2).

``hami.io/vgpu-node`` names the node; per backend present, its to-allocate and allocated keys
carry the same device list (:func:`~scheduling.kube.hami.pods.encode_pod_devices`, containers
init first then app); the backends that need more write their own keys as HAMi's
``PatchAnnotations`` of each does: NVIDIA MIG ``hami.io/vgpu-mig-allocations``, Ascend
``huawei.com/<CommonWord>`` runtime JSON, Enflame DRS card and profile, AWS Neuron core masks
and ids.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from scheduling.devices.schema import DeviceModelConfig
from scheduling.devices.vendors import vendor_traits
from scheduling.kube.hami.pods import MIG_ANNOTATION, NODE_ANNOTATION, encode_pod_devices
from scheduling.placement.types import DeviceGrant, DeviceUsage, PodAssignment

__all__ = ["decision_annotations", "NEURON_COUNT", "NEURON_CORES"]


def _enflame_drs(pa: PodAssignment, devices: Mapping[str, DeviceUsage]) -> dict[str, str]:
    """Enflame DRS ``PatchAnnotations`` (``enflame/device.go``): the first DRS container's
    card index / minor and slice size, and ``assigned-containers`` (container name ->
    ``{"allocated": false, "request": slices, "profileID", "profileName"}``, Go's key
    order). ``enflame.com/gcu-assigned-time`` (a timestamp) is left out."""
    out: dict[str, str] = {}
    assigned: dict[str, dict] = {}
    for c in pa.containers:
        g = next((g for g in c.devices if vendor_traits(g.vendor).drs_profiles), None)
        if g is None:
            continue
        custom = devices[g.uuid].custom if g.uuid in devices else {}
        size = g.slices or 1
        info = {
            "allocated": False,
            "request": size,
            "profileID": str((custom.get("profiles") or {}).get(g.template, "")),
            "profileName": g.template,
        }
        assigned[c.name] = {k: v for k, v in info.items() if v != ""}
        if not out:
            out = {
                "enflame.com/gcu-assigned": "false",
                "enflame.com/gcu-assigned-index": str(custom.get("index", g.index)),
                "enflame.com/gcu-assigned-id": str(custom.get("index", g.index)),
                "enflame.com/gcu-assigned-minor": str(custom.get("minor", g.index)),
                "enflame.com/gcu-request-size": str(size),
            }
    if assigned:
        out["assigned-containers"] = json.dumps(
            dict(sorted(assigned.items())), separators=(",", ":")
        )
    return out


NEURON_COUNT, NEURON_CORES = "aws.amazon.com/neuron", "aws.amazon.com/neuroncore"


def _neuron_mask(g: DeviceGrant, devices: Mapping[str, DeviceUsage]) -> DeviceGrant:
    """A Neuron grant as HAMi writes it: its cores as a NeuronCore bit mask, the device's
    free cores from the lowest bit up (``addCoreUsage``: 1 core on an idle device -> 1, the
    second core -> 2, 2 cores -> 3)."""
    used = devices[g.uuid].used_cores_percent if g.uuid in devices else 0
    return replace(g, cores_percent=((1 << g.cores_percent) - 1) << used)


def _neuron_ids(
    pa: PodAssignment, devices: Mapping[str, DeviceUsage], pod: Mapping[str, Any] | None
) -> dict[str, str]:
    """AWS Neuron ``PatchAnnotations`` (``awsneuron/device.go``): ``AWS_NEURON_IDS`` lists the
    device indices of containers asking ``aws.amazon.com/neuron`` in their limits, else the
    core indices (``cores per device x index + bit``) with ``NEURON_RESOURCE_TYPE``;
    ``NEURON_ALLOCATED`` false and the predicate node. ``NEURON_ALLOC_TIME`` is left out."""
    spec = (pod or {}).get("spec") or {}
    limits = {
        c.get("name"): ((c.get("resources") or {}).get("limits") or {})
        for c in (*(spec.get("initContainers") or ()), *(spec.get("containers") or ()))
    }
    ids: list[str] = []
    out: dict[str, str] = {}
    for c in pa.containers:
        for g in (g for g in c.devices if vendor_traits(g.vendor).neuron_cores):
            if str(limits.get(c.name, {}).get(NEURON_COUNT, "0")) not in ("0", ""):
                ids.append(str(g.index))
                continue
            per = devices[g.uuid].cores_percent if g.uuid in devices else 2
            mask = _neuron_mask(g, devices).cores_percent
            ids += [str(per * g.index + bit) for bit in (0, 1) if mask & (1 << bit)]
            out["NEURON_RESOURCE_TYPE"] = NEURON_CORES
    if ids:
        out.update(
            {
                "AWS_NEURON_IDS": ",".join(ids),
                "NEURON_ALLOCATED": "false",
                "aws.amazon.com/predicate-node": pa.node,
            }
        )
    return out


def decision_annotations(
    pa: PodAssignment,
    configs: list[DeviceModelConfig],
    devices: Mapping[str, DeviceUsage] | None = None,
    pod: Mapping[str, Any] | None = None,
) -> dict[str, str]:
    """Pod annotations HAMi's Filter writes for a decision (shared/docs/hami.md §3.2).

    ``hami.io/vgpu-node``; per backend present, its to-allocate and allocated keys with the
    same value (containers in assignment order: init first, then app); NVIDIA MIG
    ``hami.io/vgpu-mig-allocations``; Ascend ``huawei.com/<CommonWord>`` JSON; Enflame DRS
    card and profile annotations; AWS Neuron core masks and ids (``devices``: the snapshot's
    devices by uuid, before this pod; ``pod``: its manifest).
    """
    devices = devices or {}
    out = {NODE_ANNOTATION: pa.node, **_enflame_drs(pa, devices), **_neuron_ids(pa, devices, pod)}
    for word in sorted({g.type for c in pa.containers for g in c.devices}):
        cfg = _config_of(word, pa, configs)
        if cfg is not None:
            out.update(_backend_annotations(word, cfg, pa, devices))
    mig = _mig_allocations(pa)
    if mig:
        out[MIG_ANNOTATION] = json.dumps(mig, separators=(",", ":"))
    return out


def _config_of(
    word: str, pa: PodAssignment, configs: list[DeviceModelConfig]
) -> DeviceModelConfig | None:
    """The config of the grants of type ``word``: by common word, else (AMD writes the
    product name) the first config of the grants' vendor."""
    cfg = next((c for c in reversed(configs) if c.common_word == word), None)
    if cfg is not None:
        return cfg
    vendor = next((g.vendor for c in pa.containers for g in c.devices if g.type == word), "")
    return next((c for c in configs if c.vendor == vendor), None)


def _backend_annotations(
    word: str, cfg: DeviceModelConfig, pa: PodAssignment, devices: Mapping[str, DeviceUsage]
) -> dict[str, str]:
    """The to-allocate / allocated keys of one backend (and Ascend's runtime JSON)."""
    value = encode_pod_devices(
        [
            [
                _neuron_mask(g, devices) if vendor_traits(g.vendor).neuron_cores else g
                for g in c.devices
                if g.type == word
            ]
            for c in pa.containers
        ]
    )
    out = {key: value for key in (cfg.to_allocate_annotation, cfg.allocated_annotation) if key}
    if vendor_traits(cfg.vendor).vnpu_templates:
        out[f"huawei.com/{word}"] = _ascend_runtime(word, pa)
    return out


def _ascend_runtime(word: str, pa: PodAssignment) -> str:
    """Ascend ``huawei.com/<CommonWord>``: the JSON list of RuntimeInfo of the pod's grants of
    type ``word``; its fields are all ``omitempty`` (ascend/device.go:60-65)."""
    return json.dumps(
        [
            {
                k: v
                for k, v in (
                    ("UUID", g.uuid),
                    ("temp", g.template),
                    ("memory", g.memory_mib),
                    ("core", g.cores_percent),
                )
                if v
            }
            for c in pa.containers
            for g in c.devices
            if g.type == word
        ],
        separators=(",", ":"),
    )


def _mig_allocations(pa: PodAssignment) -> list[dict[str, Any]]:
    """NVIDIA MIG instances of the pod as ``hami.io/vgpu-mig-allocations`` lists them
    (container index, NVIDIA device index within the container, GPU uuid, profile and
    placement)."""
    return [
        {
            "containerIndex": ci,
            "deviceIndex": di,
            "gpuUUID": g.uuid,
            "profile": g.mig_profile,
            "placement": {"start": g.mig_start, "size": g.mig_size},
        }
        for ci, c in enumerate(pa.containers)
        for di, g in enumerate(x for x in c.devices if vendor_traits(x.vendor).mig)
        if g.mig_start >= 0
    ]
