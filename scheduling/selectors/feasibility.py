"""Submit-time truth: can a job ever fit its resource group, whatever the current load?

The group's nodes are taken as they are built (device models, counts, memory, cores,
host CPU and memory, labels) but empty: no usage, every device healthy and uncordoned,
every node schedulable. A job the placement core cannot place there can never run in the
group (9 devices per pod on 8-device nodes, 100 GiB on an 80 GiB card, an Ascend request on
an NVIDIA-only group, a gang larger than the group), so it is refused at submission
instead of waiting forever.

The empty shape and the device catalogue are kept per process and group while the inventory
version (:func:`scheduling.selectors.snapshot_cache.inventory_version`: devices, nodes,
device models) is unchanged, so a submission does not rebuild them (three aggregate queries
instead of a snapshot build). A request shape found to fit is remembered per group for
``FEASIBILITY_FIT_CACHE_S`` seconds (default 10; 0 = off) and not placed again: a burst of
submissions of a few shapes costs no query and no placement run. The check only refuses
early: a job accepted on a remembered verdict just after the group shrank waits in the queue
with the cycle's "does not fit" reason, as any job that cannot be placed now.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace

from django.conf import settings

from scheduling.devices.matching import any_type_matches
from scheduling.models import Job
from scheduling.placement import place
from scheduling.placement.profile import Profile
from scheduling.placement.reasons import DEVICE_MODEL_INVALID
from scheduling.placement.types import ClusterSnapshot, DeviceUsage, NodeInfo, PlacementRequest
from scheduling.selectors.db_placer import unschedulable_reason
from scheduling.selectors.device_models import get_catalogue
from scheduling.selectors.snapshot import build_cluster_snapshot, build_placement_request
from scheduling.selectors.snapshot_cache import inventory_version
from tenants.models import ResourceGroup

__all__ = ["empty_shape", "never_fits_reason"]

_shapes: dict[int, tuple[tuple, ClusterSnapshot, dict]] = {}
_shapes_lock = threading.Lock()
_fits: dict[tuple[int, str], float] = {}
"""``{(group pk, request shape): monotonic time the verdict "fits" expires}``"""
_FITS_MAX = 4096


def _shape_key(request: PlacementRequest) -> str:
    """The request without its names (job and pod ids): equal for jobs of one shape."""
    return repr(replace(request, name="", pods=tuple(replace(p, name="") for p in request.pods)))


def _remember_fit(group_pk: int, key: str) -> None:
    ttl = getattr(settings, "FEASIBILITY_FIT_CACHE_S", 10.0)
    if ttl <= 0:
        return
    with _shapes_lock:
        if len(_fits) >= _FITS_MAX:
            _fits.clear()
        _fits[(group_pk, key)] = time.monotonic() + ttl


def _known_fit(group_pk: int | None, key: str) -> bool:
    expires = _fits.get((group_pk, key)) if group_pk is not None else None
    return expires is not None and expires > time.monotonic()


def empty_shape(snapshot: ClusterSnapshot) -> ClusterSnapshot:
    """A copy of ``snapshot`` with nothing booked, every device healthy and uncordoned and
    every node schedulable (node registration errors are kept: such a node never fits)."""
    nodes = []
    for node in snapshot.nodes.values():
        devices = []
        for d in node.devices:
            fresh = d.clone()
            fresh.used_slots = fresh.used_memory_mib = fresh.used_cores_percent = 0
            fresh.mig_instances = []
            fresh.healthy, fresh.cordoned, fresh.qos_policy = True, False, ""
            devices.append(fresh)
        nodes.append(
            NodeInfo(
                node.name,
                devices,
                node.cpu_milli,
                node.memory_mib,
                0,
                0,
                node.labels,
                True,
                node.pair_scores,
                node.error,
                node.annotations,
            )
        )
    return ClusterSnapshot.from_nodes(nodes)


def _shape_hint(
    job: Job, devices: list[DeviceUsage], per_node: dict[str, int], group: ResourceGroup
) -> str | None:
    """The plainest explanation, when one of the simple checks explains the refusal."""
    for c in job.containers.all():
        if not c.device_count:
            continue
        mine = [
            d
            for d in devices
            if d.vendor.lower() == c.vendor.lower()
            and (not c.device_types or any_type_matches(d.type, c.device_types))
        ]
        if not mine:
            have = sorted({f"{d.vendor} {d.type}" for d in devices}) or ["no devices"]
            wanted = c.vendor + (f" ({', '.join(c.device_types)})" if c.device_types else "")
            return (
                f"container {c.name}: group {group.name} has no {wanted} devices "
                f"(it has {', '.join(have)})"
            )
        most = max(sum(1 for d in mine if d.node == n) for n in per_node)
        if c.device_count > most:
            return (
                f"container {c.name}: asks {c.device_count} {c.vendor} devices per pod; "
                f"the largest node of group {group.name} has {most}"
            )
        biggest = max(d.memory_mib for d in mine)
        if c.device_memory_mib > biggest:
            return (
                f"container {c.name}: asks {c.device_memory_mib} MiB per device; the largest "
                f"{c.vendor} device of group {group.name} has {biggest} MiB"
            )
    return None


def _empty_shape_of(group: ResourceGroup) -> tuple[ClusterSnapshot, dict]:
    """The group's :func:`empty_shape` (the caller's own copy) and the catalogue's resolved
    configs, from this process's cache while the inventory version holds."""
    if group.pk is None:
        snapshot, _ = build_cluster_snapshot(group)
        return empty_shape(snapshot), get_catalogue().configs
    version = inventory_version(group)
    with _shapes_lock:
        cached = _shapes.get(group.pk)
        if cached is None or cached[0] != version:
            catalogue = get_catalogue()
            snapshot, _ = build_cluster_snapshot(group, catalogue)
            cached = (version, empty_shape(snapshot), catalogue.configs)
            _shapes[group.pk] = cached
        return cached[1].clone(), cached[2]


def never_fits_reason(job: Job, group: ResourceGroup) -> str | None:
    """Why ``job`` (containers saved) can never be placed in ``group``, or None when it fits
    the group's empty nodes. Runs the placement core with the live profile (HAMi policies,
    the device models' configs) on :func:`empty_shape` of the group.

    Returns:
        A reason such as ``"container main: asks 9 NVIDIA devices per pod; the largest node
        of group g1 has 8"``, or the core's per-node summary (``"never fits: 0/2 nodes fit;
        2 node(s): Insufficient cpu"``).
    """
    request = build_placement_request(job, group)
    key = _shape_key(request)
    if _known_fit(group.pk, key):
        return None
    empty, configs = _empty_shape_of(group)
    devices = [d for n in empty.nodes.values() for d in n.devices]
    if not empty.nodes:
        return f"group {group.name} has no nodes"
    decision = place(empty, request, Profile(device_configs=configs).build(cache=False))
    if decision.schedulable:
        if group.pk is not None:
            _remember_fit(group.pk, key)
        return None
    if DEVICE_MODEL_INVALID in unschedulable_reason(decision):
        # an operator's broken device-model config is flagged and temporary: the job queues
        # and its pending reason names the model (issue 15), it is not refused for ever
        return None
    per_node = {n: len(node.devices) for n, node in empty.nodes.items()}
    hint = _shape_hint(job, devices, per_node, group)
    return hint or f"never fits group {group.name} even when empty: " + unschedulable_reason(
        decision
    )
