"""Pods: HAMi allocation annotations <-> grants and the usage of existing pods; a manifest ->
request is :mod:`.requests` (:func:`pod_request_from_kube` is re-exported here).

Annotation encoding (``EncodePodSingleDevice``, shared/docs/hami.md §3.2)::

    value := container* ; container := device* ";" ; device := UUID "," TYPE "," MEM "," CORES ":"

one entry per container, init containers first, then app containers; a container without
devices is an empty entry. MEM is MiB after the memory factor, CORES percent (AMD: CUs).
"""

from __future__ import annotations

import json
from typing import Any, TypeGuard

from scheduling.devices.defaults import default_device_configs
from scheduling.devices.schema import DeviceModelConfig
from scheduling.devices.vendors import vendor_traits
from scheduling.kube.hami.requests import pod_host, pod_request_from_kube
from scheduling.placement.booking import apply_assignment
from scheduling.placement.types import (
    ClusterSnapshot,
    ContainerAssignment,
    DeviceGrant,
    PodAssignment,
)

__all__ = [
    "decode_pod_devices",
    "encode_pod_devices",
    "apply_existing_pods",
    "pod_request_from_kube",
    "NODE_ANNOTATION",
    "MIG_ANNOTATION",
    "mig_gpu_instances",
]

NODE_ANNOTATION = "hami.io/vgpu-node"
MIG_ANNOTATION = "hami.io/vgpu-mig-allocations"
_TERMINAL = ("Succeeded", "Failed")


def decode_pod_devices(
    value: str, where: str = "annotation"
) -> list[list[tuple[str, str, int, int]]]:
    """Decode to ``[[(uuid, type, memory_mib, cores), ...] per container]`` keeping empty
    container entries. Raises ValueError naming ``where`` on a malformed device."""
    if value == "":
        return []
    parts = value.split(";")
    if parts and parts[-1] == "":
        parts = parts[:-1]
    out = []
    for ci, part in enumerate(parts):
        devs = []
        for entry in (e for e in part.split(":") if e != ""):
            f = entry.split(",")
            if len(f) != 4 or not f[0]:
                raise ValueError(
                    f"{where}: container {ci} device {entry!r} is not UUID,TYPE,MEM,CORES"
                )
            try:
                devs.append((f[0], f[1], int(f[2]), int(f[3])))
            except ValueError:
                raise ValueError(
                    f"{where}: container {ci} device {entry!r} has non-integer MEM/CORES"
                ) from None
        out.append(devs)
    return out


def encode_pod_devices(containers: list[list[DeviceGrant]] | list[tuple[DeviceGrant, ...]]) -> str:
    """Encode per-container grants (init first, then app) in HAMi's format."""
    return "".join(
        "".join(f"{g.uuid},{g.type},{g.memory_mib},{g.cores_percent}:" for g in c) + ";"
        for c in containers
    )


def apply_existing_pods(
    snapshot: ClusterSnapshot, pods: list[dict[str, Any]], configs: list[DeviceModelConfig]
) -> list[dict[str, Any]]:
    """Book the usage of existing pods in the snapshot (HAMi ``getNodesUsage``).

    Device usage: pods with ``hami.io/vgpu-node`` (else ``spec.nodeName``), not in a
    terminal phase, from each backend's ``*-devices-allocated`` annotation, collapsed per pod
    (init vs app, §4.1); init entries are ignored once every init container terminated with
    exit code 0. MIG instances come from ``hami.io/vgpu-mig-allocations``. Host cpu/memory of
    every non-terminal pod bound to a node are added to that node.

    A grant naming a device its node does not register is not booked (HAMi matches pod
    devices to the node's devices by id and skips the others) but returned, so the caller
    can show it; the pod's other grants are booked. Other problems with one pod (unknown
    node, malformed annotation) are appended to ``snapshot.errors`` and that pod is skipped.

    Returns:
        The unmatched grants, in pod order: ``[{"pod": "<namespace>/<name>", "node",
        "container" (index, init first), "uuid", "type", "memory_mib", "cores_percent"}]``.
    """
    keys = [c.allocated_annotation for c in configs if c.allocated_annotation]
    keys = list(dict.fromkeys(keys))
    unmatched: list[dict[str, Any]] = []
    for i, pod in enumerate(pods):
        meta = pod.get("metadata") or {}
        pname = f"{meta.get('namespace', 'default')}/{meta.get('name', f'pods[{i}]')}"
        status = pod.get("status") or {}
        if status.get("phase") in _TERMINAL:
            continue
        spec = pod.get("spec") or {}
        ann = meta.get("annotations") or {}
        node_name = ann.get(NODE_ANNOTATION) or spec.get("nodeName")
        if not node_name:
            continue
        if node_name not in snapshot.nodes:
            if any(k in ann for k in keys):
                snapshot.errors.append(f"pod {pname}: node {node_name!r} not in the snapshot")
            continue
        try:
            cpu, mem = pod_host(spec, f"pod {pname} spec")
            n_init = len(spec.get("initContainers") or [])
            inits_done = n_init > 0 and all(
                ((s.get("state") or {}).get("terminated") or {}).get("exitCode") == 0
                for s in status.get("initContainerStatuses") or [{}]
            )
            per_container = _allocated_grants(ann, keys, pname)
            unmatched.extend(_drop_unmatched(snapshot, node_name, pname, per_container))
            conts = tuple(
                ContainerAssignment(str(ci), tuple(g), ci < n_init)
                for ci, g in sorted(per_container.items())
                if not (ci < n_init and inits_done)
            )
            apply_assignment(snapshot, PodAssignment(pname, node_name, conts, cpu, mem), +1)
        except ValueError as exc:
            snapshot.errors.append(str(exc))
    return unmatched


def _drop_unmatched(
    snapshot: ClusterSnapshot, node: str, pname: str, per_container: dict[int, list[DeviceGrant]]
) -> list[dict[str, Any]]:
    """Take the grants on devices ``node`` does not register out of ``per_container``
    (in place) and return them as :func:`apply_existing_pods` reports them."""
    info = snapshot.nodes[node]
    out: list[dict[str, Any]] = []
    for ci, grants in sorted(per_container.items()):
        kept = [g for g in grants if info.device(g.uuid) is not None]
        out.extend(
            {
                "pod": pname,
                "node": node,
                "container": ci,
                "uuid": g.uuid,
                "type": g.type,
                "memory_mib": g.memory_mib,
                "cores_percent": g.cores_percent,
            }
            for g in grants
            if info.device(g.uuid) is None
        )
        per_container[ci] = kept
    return out


_CORE_MASK_WORDS = frozenset(
    c.common_word for c in default_device_configs() if vendor_traits(c.vendor).neuron_cores
)
"""HAMi type words whose allocation entries carry a NeuronCore bit mask as their cores."""


def _allocated_grants(
    ann: dict[str, Any], keys: list[str], pname: str
) -> dict[int, list[DeviceGrant]]:
    """The grants of a pod's ``*-devices-allocated`` annotations ``keys`` by container index
    (MIG placement from ``hami.io/vgpu-mig-allocations``; an AWS Neuron entry's cores are a
    NeuronCore bit mask, counted).

    Raises:
        ValueError: a malformed annotation (naming the pod and the key).
    """
    per_container: dict[int, list[DeviceGrant]] = {}
    mig = _mig_map(ann.get(MIG_ANNOTATION), pname)
    for key in keys:
        if key not in ann:
            continue
        for ci, devs in enumerate(decode_pod_devices(str(ann[key]), f"pod {pname} {key}")):
            for di, (uuid, typ, m, c) in enumerate(devs):
                if typ in _CORE_MASK_WORDS:  # a NeuronCore bit mask: count its cores
                    c = bin(max(c, 0)).count("1")
                prof, start, size = mig.get((ci, di, uuid), ("", -1, 0))
                per_container.setdefault(ci, []).append(
                    DeviceGrant(uuid, typ, m, c, mig_profile=prof, mig_start=start, mig_size=size)
                )
    return per_container


def _mig_map(value: Any, pname: str) -> dict[tuple[int, int, str], tuple[str, int, int]]:
    if not value:
        return {}
    try:
        data = json.loads(value)
        return {
            (int(e["containerIndex"]), int(e["deviceIndex"]), str(e["gpuUUID"])): (
                str(e["profile"]),
                int(e["placement"]["start"]),
                int(e["placement"]["size"]),
            )
            for e in data
        }
    except (json.JSONDecodeError, KeyError, TypeError, ValueError):
        raise ValueError(f"pod {pname}: malformed {MIG_ANNOTATION}") from None


def mig_gpu_instances(annotations: dict[str, Any]) -> dict[tuple[str, int], int]:
    """``{(gpu uuid, placement start): gpu instance id}`` of the MIG instances a pod's
    :data:`MIG_ANNOTATION` names with a ``gpuInstanceID`` (what DCGM exports as ``GPU_I_ID``;
    the device plugin adds ``migUUID``, ``gpuInstanceID`` and ``computeInstanceID`` once it
    created the instances, HAMi ``mig_allocations.go``). Entries without an id yet and
    malformed ones are skipped; a value that is not a JSON list gives ``{}`` (the annotation
    is the device plugin's, never trusted to raise).
    """
    text = annotations.get(MIG_ANNOTATION) if isinstance(annotations, dict) else None
    if not isinstance(text, str) or len(text) > 1_000_000:
        return {}
    try:
        items = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    out: dict[tuple[str, int], int] = {}
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, dict) or not isinstance(item.get("placement"), dict):
            continue
        uuid, gi, start = (
            item.get("gpuUUID"),
            item.get("gpuInstanceID"),
            item["placement"].get("start"),
        )
        if isinstance(uuid, str) and _int32(gi) and _int32(start):
            out[(uuid, start)] = gi
    return out


def _int32(value: object) -> TypeGuard[int]:
    """A JSON integer (not a boolean) in 0 .. 2**31 - 1."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31
