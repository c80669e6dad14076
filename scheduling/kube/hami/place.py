"""``place_from_kube``: one HAMi-conformant placement from Kubernetes objects (pure); the
annotations HAMi would write for it come from :mod:`.decision`."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from scheduling.devices.hami_files import read_hami_config
from scheduling.devices.schema import DeviceModelConfig
from scheduling.devices.vendors import vendor_traits
from scheduling.kube.hami.decision import decision_annotations
from scheduling.kube.hami.nodes import snapshot_from_kube
from scheduling.kube.hami.pods import apply_existing_pods, pod_request_from_kube
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


def _as_hami_reads(configs: list[DeviceModelConfig]) -> list[DeviceModelConfig]:
    """``configs`` without the ``use-*type`` / ``nouse-*type`` annotations of the backends
    whose annotations HAMi v2.10 defines but never reads
    (:attr:`~scheduling.devices.vendors.VendorTraits.hami_reads_type_annotations`):
    ``place`` ignores them as HAMi does, the console's own cycle honours them."""
    return [
        c.model_copy(update={"use_type_annotation": "", "nouse_type_annotation": ""})
        if not vendor_traits(c.vendor).hami_reads_type_annotations
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
        ``{"schedulable": False, "reasons": {node: reason}}``; either with
        ``"unmatched_bookings"`` when existing pods book devices their node does not
        register (not counted, as HAMi does not count them; listed as
        :func:`~scheduling.kube.hami.pods.apply_existing_pods` returns them).

    Raises:
        ValueError: bad input, the message names the input (nodes/pods/pod/config) and field.
    """
    cfg = read_hami_config(config)
    configs = list(cfg.devices)
    snapshot = snapshot_from_kube(_items(nodes_json, "nodes"), configs, now)
    unmatched = apply_existing_pods(snapshot, _items(pods_json, "pods"), configs)
    pod = pod_request_from_kube(pod_manifest, _as_hami_reads(configs))
    profile = Profile(
        node_policy=node_policy or cfg.node_policy,
        device_policy=device_policy or cfg.device_policy,
        device_configs=tuple(configs),
        hami_parity=True,
    )
    decision = place(snapshot, PlacementRequest(pod.name, (pod,)), profile)
    extra = {"unmatched_bookings": unmatched} if unmatched else {}
    if not decision.schedulable:
        return {"schedulable": False, "reasons": dict(decision.reasons), **extra}
    pa = decision.pods[0]
    devices = {d.uuid: d for n in snapshot.nodes.values() for d in n.devices}
    return {
        "schedulable": True,
        "node": pa.node,
        "containers": _containers_json(pa),
        "annotations": decision_annotations(pa, configs, devices, pod_manifest),
        "node_scores": {k: round(v, 6) for k, v in decision.node_scores.items()},
        **extra,
    }


def _containers_json(pa: PodAssignment) -> list[dict[str, Any]]:
    """``[{"name", "devices": [{"uuid", "type" (the registered model), "memory_mib",
    "cores_percent"}]}]`` of the assignment's containers (init first, then app)."""
    return [
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
    ]
