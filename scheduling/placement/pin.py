"""Pins: a job's next placement held to a planned target (pure core).

Consolidation (:mod:`scheduling.placement.consolidation`) plans where each moved job
restarts; the job is then requeued and placed again by a later admission cycle. A pin keeps
that placement on the planned target while it still fits:

* devices: HAMi pins a pod to devices with the ``nvidia.com/use-gpuuuid`` annotation (the
  vendor's ``use-gpuuuid`` annotation), read into the device request's ``uuids_include``;
  here every device request of a pinned container gets ``uuids_include`` = the devices the
  plan granted to that container (device uuids are unique in a cluster, so a pod with
  devices is pinned to the planned node too);
* node, for a pod the plan gave no device: ``nodeSelector`` on the well-known label
  ``kubernetes.io/hostname`` when the planned node carries it (a node without that label
  leaves such a pod unpinned).

A pin is stored as JSON (:meth:`PodPin.to_json`, one object per pod in pod order).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from scheduling.placement.types import ClusterSnapshot, Decision, PlacementRequest, PodRequest

__all__ = ["HOSTNAME_LABEL", "PodPin", "pin_request", "pins_from_json", "pins_of"]

#: Kubernetes well-known node label naming the node (kubernetes.io/docs/reference/labels-
#: annotations-taints/#kubernetesiohostname).
HOSTNAME_LABEL = "kubernetes.io/hostname"


@dataclass(frozen=True, slots=True)
class PodPin:
    """Where one pod was planned.

    Attributes:
        node: node name.
        devices: ``((container name, (device uuid, ...)), ...)``, containers with devices
            only, in the planned decision's order.
    """

    node: str
    devices: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def to_json(self) -> dict:
        """``{"node": "n1", "devices": {"main": ["GPU-a", "GPU-b"]}}``."""
        return {"node": self.node, "devices": {name: list(uuids) for name, uuids in self.devices}}


def pins_of(decision: Decision) -> tuple[PodPin, ...]:
    """The pins of a planned decision, one per pod in pod order."""
    return tuple(
        PodPin(
            pod.node,
            tuple(
                (c.name, tuple(dict.fromkeys(g.uuid for g in c.devices)))
                for c in pod.containers
                if c.devices
            ),
        )
        for pod in decision.pods
    )


def pins_from_json(data: object) -> tuple[PodPin, ...]:
    """Read :meth:`PodPin.to_json` objects back.

    Raises:
        ValueError: ``data`` is not a list of such objects (node a non-empty string, devices
            a mapping of container names to lists of uuid strings).
    """
    if not isinstance(data, list):
        raise ValueError("a pin is a list of pods")
    out = []
    for index, pod in enumerate(data):
        node = pod.get("node") if isinstance(pod, Mapping) else None
        devices = pod.get("devices", {}) if isinstance(pod, Mapping) else None
        if not isinstance(node, str) or not node or not isinstance(devices, Mapping):
            raise ValueError(f"pod {index}: needs a node name and a devices mapping")
        pairs = []
        for name, uuids in devices.items():
            if not isinstance(uuids, list) or not all(isinstance(u, str) and u for u in uuids):
                raise ValueError(f"pod {index}, container {name}: devices must be uuid strings")
            pairs.append((str(name), tuple(uuids)))
        out.append(PodPin(node, tuple(pairs)))
    return tuple(out)


def pin_request(
    request: PlacementRequest, pins: Sequence[PodPin], cluster: ClusterSnapshot
) -> PlacementRequest | None:
    """``request`` with pod ``i`` held to ``pins[i]`` (module docstring).

    Returns:
        The pinned request, or None when the pins do not describe this request (another pod
        count, an app container with device requests and no planned devices, planned devices
        for a container the pod does not have, or a planned node not in ``cluster``).
    """
    if len(pins) != len(request.pods):
        return None
    pods = []
    for pod, pin in zip(request.pods, pins, strict=True):
        pinned = _pin_pod(pod, pin, cluster)
        if pinned is None:
            return None
        pods.append(pinned)
    return replace(request, pods=tuple(pods))


def _pin_pod(pod: PodRequest, pin: PodPin, cluster: ClusterSnapshot) -> PodRequest | None:
    node = cluster.nodes.get(pin.node)
    planned = dict(pin.devices)
    names = {c.name for c in pod.containers if c.devices}
    if node is None or not set(planned) <= names:
        return None
    containers = []
    for container in pod.containers:
        if not container.devices:
            containers.append(container)
            continue
        uuids = planned.get(container.name)
        if not uuids:
            if container.init:  # HAMi books an init container on its pod's devices
                containers.append(container)
                continue
            return None
        devices = tuple(replace(dr, uuids_include=uuids) for dr in container.devices)
        containers.append(replace(container, devices=devices))
    selector = dict(pod.node_selector)
    hostname = node.labels.get(HOSTNAME_LABEL)
    if not planned and hostname is not None:
        selector[HOSTNAME_LABEL] = hostname
    return replace(pod, containers=tuple(containers), node_selector=selector)
