"""``place_from_kube``: one HAMi-conformant placement from Kubernetes objects (pure)."""

from __future__ import annotations

import json
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
from scheduling.placement.types import PlacementRequest, PodAssignment

__all__ = ["place_from_kube", "decision_annotations"]


def _items(data: Any, what: str) -> list[dict[str, Any]]:
    if isinstance(data, dict) and "items" in data:
        data = data["items"]
    if not isinstance(data, list) or not all(isinstance(x, dict) for x in data):
        raise ValueError(f"{what}: expected a list of objects or a List with 'items'")
    return data


def decision_annotations(pa: PodAssignment, configs: list[DeviceModelConfig]) -> dict[str, str]:
    """Pod annotations HAMi's Filter writes for a decision (docs/hami.md §3.2).

    ``hami.io/vgpu-node``; per backend present, its to-allocate and allocated keys with the
    same value (containers in assignment order: init first, then app); NVIDIA MIG
    ``hami.io/vgpu-mig-allocations``; Ascend ``huawei.com/<CommonWord>`` JSON.
    """
    out = {NODE_ANNOTATION: pa.node}
    by_word = {c.common_word: c for c in configs}
    words = sorted({g.type for c in pa.containers for g in c.devices})
    for word in words:
        cfg = by_word.get(word)
        if cfg is None:  # AMD writes the product name: find the config by vendor
            vendor = next((g.vendor for c in pa.containers for g in c.devices if g.type == word),
                          "")
            cfg = next((c for c in configs if c.vendor == vendor), None)
        if cfg is None:
            continue
        value = encode_pod_devices([[g for g in c.devices if g.type == word]
                                    for c in pa.containers])
        for key in (cfg.to_allocate_annotation, cfg.allocated_annotation):
            if key:
                out[key] = value
        if cfg.vendor == "Ascend":
            out[f"huawei.com/{word}"] = json.dumps(
                [{"UUID": g.uuid, "temp": g.template, "memory": g.memory_mib,
                  "core": g.cores_percent}
                 for c in pa.containers for g in c.devices if g.type == word],
                separators=(",", ":"))
    mig = [{"containerIndex": ci, "deviceIndex": di, "gpuUUID": g.uuid,
            "profile": g.mig_profile, "placement": {"start": g.mig_start, "size": g.mig_size}}
           for ci, c in enumerate(pa.containers)
           for di, g in enumerate(x for x in c.devices if x.vendor == "NVIDIA")
           if g.mig_start >= 0]
    if mig:
        out[MIG_ANNOTATION] = json.dumps(mig, separators=(",", ":"))
    return out


def place_from_kube(nodes_json: Any, pods_json: Any, pod_manifest: Any,
                    node_policy: str | None = None, device_policy: str | None = None,
                    config: dict[str, Any] | None = None,
                    now: datetime | None = None) -> dict[str, Any]:
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
    pod = pod_request_from_kube(pod_manifest, configs)
    profile = Profile(node_policy=node_policy or cfg.node_policy,
                      device_policy=device_policy or cfg.device_policy,
                      device_configs=tuple(configs), hami_parity=True)
    decision = place(snapshot, PlacementRequest(pod.name, (pod,)), profile)
    if not decision.schedulable:
        return {"schedulable": False, "reasons": dict(decision.reasons)}
    pa = decision.pods[0]
    return {
        "schedulable": True,
        "node": pa.node,
        "containers": [
            {"name": c.name,
             "devices": [{"uuid": g.uuid, "type": g.model, "memory_mib": g.memory_mib,
                          "cores_percent": g.cores_percent} for g in c.devices]}
            for c in pa.containers],
        "annotations": decision_annotations(pa, configs),
        "node_scores": {k: round(v, 6) for k, v in decision.node_scores.items()},
    }
