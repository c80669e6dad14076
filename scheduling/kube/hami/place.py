"""``place_from_kube``: one HAMi-conformant placement from Kubernetes objects (pure)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from scheduling.devices.hami_files import read_hami_config
from scheduling.devices.schema import DeviceModelConfig
from scheduling.kube.hami.nodes import snapshot_from_kube
from scheduling.kube.hami.pods import (
    MIG_ANNOTATION,
    NODE_ANNOTATION,
    apply_existing_pods,
    encode_pod_devices,
    pod_request_from_kube,
)
from scheduling.placement.profile import Profile
from scheduling.placement.runner import place
from scheduling.placement.types import DeviceGrant, DeviceUsage, PlacementRequest, PodAssignment

__all__ = ["place_from_kube", "decision_annotations"]


def _items(data: Any, what: str) -> list[dict[str, Any]]:
    if isinstance(data, dict) and "items" in data:
        data = data["items"]
    if not isinstance(data, list) or not all(isinstance(x, dict) for x in data):
        raise ValueError(f"{what}: expected a list of objects or a List with 'items'")
    return data


def _enflame_drs(pa: PodAssignment, devices: Mapping[str, DeviceUsage]) -> dict[str, str]:
    """Enflame DRS ``PatchAnnotations`` (``enflame/device.go``): the first DRS container's
    card index / minor and slice size, and ``assigned-containers`` (container name ->
    ``{"allocated": false, "request": slices, "profileID", "profileName"}``, Go's key
    order). ``enflame.com/gcu-assigned-time`` (a timestamp) is left out."""
    out: dict[str, str] = {}
    assigned: dict[str, dict] = {}
    for c in pa.containers:
        g = next((g for g in c.devices if g.vendor == "EnflameDRS"), None)
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
        for g in (g for g in c.devices if g.vendor == "AWSNeuron"):
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
    """Pod annotations HAMi's Filter writes for a decision (docs/hami.md §3.2).

    ``hami.io/vgpu-node``; per backend present, its to-allocate and allocated keys with the
    same value (containers in assignment order: init first, then app); NVIDIA MIG
    ``hami.io/vgpu-mig-allocations``; Ascend ``huawei.com/<CommonWord>`` JSON; Enflame DRS
    card and profile annotations; AWS Neuron core masks and ids (``devices``: the snapshot's
    devices by uuid, before this pod; ``pod``: its manifest).
    """
    devices = devices or {}
    out = {NODE_ANNOTATION: pa.node, **_enflame_drs(pa, devices), **_neuron_ids(pa, devices, pod)}
    by_word = {c.common_word: c for c in configs}
    words = sorted({g.type for c in pa.containers for g in c.devices})
    for word in words:
        cfg = by_word.get(word)
        if cfg is None:  # AMD writes the product name: find the config by vendor
            vendor = next(
                (g.vendor for c in pa.containers for g in c.devices if g.type == word), ""
            )
            cfg = next((c for c in configs if c.vendor == vendor), None)
        if cfg is None:
            continue
        value = encode_pod_devices(
            [
                [
                    _neuron_mask(g, devices) if g.vendor == "AWSNeuron" else g
                    for g in c.devices
                    if g.type == word
                ]
                for c in pa.containers
            ]
        )
        for key in (cfg.to_allocate_annotation, cfg.allocated_annotation):
            if key:
                out[key] = value
        if cfg.vendor == "Ascend":
            # RuntimeInfo's fields are all ``omitempty`` (ascend/device.go:60-65)
            out[f"huawei.com/{word}"] = json.dumps(
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
    mig = [
        {
            "containerIndex": ci,
            "deviceIndex": di,
            "gpuUUID": g.uuid,
            "profile": g.mig_profile,
            "placement": {"start": g.mig_start, "size": g.mig_size},
        }
        for ci, c in enumerate(pa.containers)
        for di, g in enumerate(x for x in c.devices if x.vendor == "NVIDIA")
        if g.mig_start >= 0
    ]
    if mig:
        out[MIG_ANNOTATION] = json.dumps(mig, separators=(",", ":"))
    return out


UNREAD_BY_HAMI = ("MLU",)
"""Backends whose ``use-*type`` / ``nouse-*type`` pod annotations HAMi v2.10 defines but never
reads (Cambricon's ``checkType`` only compares the request type, cambricon/device.go:243-248);
``place`` ignores them as HAMi does, the console's own cycle honours them."""


def _as_hami_reads(configs: list[DeviceModelConfig]) -> list[DeviceModelConfig]:
    return [
        c.model_copy(update={"use_type_annotation": "", "nouse_type_annotation": ""})
        if c.vendor in UNREAD_BY_HAMI
        else c
        for c in configs
    ]


def place_from_kube(
    nodes_json: Any,
    pods_json: Any,
    pod_manifest: Any,
    node_policy: str | None = None,
    device_policy: str | None = None,
    config: dict[str, Any] | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Place one pod the way HAMi would, from Kubernetes objects.

    Args:
        nodes_json: Node objects (list or NodeList dict) with HAMi annotations.
        pods_json: existing Pod objects (list or PodList); their allocations are usage.
        pod_manifest: the Pod to place.
        node_policy / device_policy: override the config's (HAMi defaults binpack / spread).
        config: HAMi's chart ``values.yaml``, the scheduler's ``device-config.yaml`` or its
            ConfigMap, parsed (``scheduling.devices.hami_files.read_hami_config``).
        now: current time for handshake staleness (None = no staleness check).

    Returns:
        ``{"schedulable": True, "node", "containers": [{"name", "devices": [{"uuid", "type",
        "memory_mib", "cores_percent"}]}], "annotations": {...}, "node_scores": {...}}``
        (containers init first then app; ``type`` = registered device model), or
        ``{"schedulable": False, "reasons": {node: reason}}``.

    Raises:
        ValueError: bad input, the message names the input (nodes/pods/pod/config) and field.
    """
    cfg = read_hami_config(config)
    configs = list(cfg.devices)
    snapshot = snapshot_from_kube(_items(nodes_json, "nodes"), configs, now)
    apply_existing_pods(snapshot, _items(pods_json, "pods"), configs)
    pod = pod_request_from_kube(pod_manifest, _as_hami_reads(configs))
    profile = Profile(
        node_policy=node_policy or cfg.node_policy,
        device_policy=device_policy or cfg.device_policy,
        device_configs=tuple(configs),
        hami_parity=True,
    )
    decision = place(snapshot, PlacementRequest(pod.name, (pod,)), profile)
    if not decision.schedulable:
        return {"schedulable": False, "reasons": dict(decision.reasons)}
    pa = decision.pods[0]
    return {
        "schedulable": True,
        "node": pa.node,
        "containers": [
            {
                "name": c.name,
                "devices": [
                    {
                        "uuid": g.uuid,
                        "type": g.model,
                        "memory_mib": g.memory_mib,
                        "cores_percent": g.cores_percent,
                    }
                    for g in c.devices
                ],
            }
            for c in pa.containers
        ],
        "annotations": decision_annotations(
            pa,
            configs,
            {d.uuid: d for n in snapshot.nodes.values() for d in n.devices},
            pod_manifest,
        ),
        "node_scores": {k: round(v, 6) for k, v in decision.node_scores.items()},
    }
