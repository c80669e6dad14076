"""DeviceFit: HAMi device placement for all containers of a pod (PreFilter + Filter).

PreFilter normalises every :class:`DeviceRequest` once per pod with its vendor plugin
(webhook-like defaults, template rounding) and stores a :class:`PreparedPod`. Filter fits
the pod on a node exactly as HAMi ``scoreNode`` does (shared/docs/hami.md §4.2):
init containers each on a fresh copy of the node usage; app containers sequentially on one
copy (each container's grants are added before the next is fitted). The resulting
:class:`NodeFit` is stored per node for Score plugins and the runner.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduling.devices.policies import DEVICE_POLICIES, policy_word
from scheduling.placement.framework import SUCCESS, Code, CycleState, NodeFit, StateKey, Status
from scheduling.placement.plugins import names
from scheduling.placement.types import (
    ClusterSnapshot,
    ContainerRequest,
    DeviceGrant,
    DeviceRequest,
    NodeInfo,
    PodRequest,
)
from scheduling.placement.vendors import VendorPlugin, default_vendors
from scheduling.placement.vendors.base import FitContext, Usage


@dataclass(slots=True)
class PreparedPod:
    """Per-pod data computed in PreFilter.

    Attributes:
        containers: (container, normalised device requests) in pod order.
        has_devices: any container requests devices.
        policy: effective device policy.
        weights: effective (slot, core, memory) device-score weights.
        min_devices: ``{(vendor, chip): max count of one request}`` for a cheap node skip.
    """

    containers: list[tuple[ContainerRequest, tuple[DeviceRequest, ...]]]
    has_devices: bool
    policy: str
    weights: tuple[int, int, int]
    min_devices: dict[tuple[str, str], int]


PREPARED: StateKey[PreparedPod] = StateKey("DeviceFit/prepared")
FITS: StateKey[dict[str, NodeFit]] = StateKey("DeviceFit/fits")


def add_usage(
    overlay: dict[str, Usage], grants: list[DeviceGrant] | tuple[DeviceGrant, ...]
) -> None:
    """Add grants to a pending-usage overlay (one slot per grant, a partition its size)."""
    for g in grants:
        u = overlay.get(g.uuid)
        if u is None:
            u = overlay[g.uuid] = Usage()
        u.slots += g.slices or 1
        u.memory_mib += g.memory_mib
        u.cores_percent += g.cores_percent
        if g.mig_start >= 0:
            u.mig.append((g.mig_start, g.mig_size))
        for name, n in g.counters:
            u.counters[name] = u.counters.get(name, 0) + n


def fit_pod(
    node: NodeInfo, prepared: PreparedPod, vendors: dict[str, VendorPlugin]
) -> NodeFit | str:
    """Fit all containers of a pod on ``node``. Returns the NodeFit or the reason."""
    app_overlay: dict[str, Usage] = {}
    pod_devices: set[str] = set()
    out: list[tuple[DeviceGrant, ...]] = []
    used_vendors: set[str] = set()
    for container, reqs in prepared.containers:
        if not reqs:
            out.append(())
            continue
        overlay = {} if container.init else app_overlay
        ctx = FitContext(
            node,
            overlay,
            prepared.policy,
            prepared.weights,
            set() if container.init else pod_devices,
        )
        grants: list[DeviceGrant] = []
        for req in reqs:
            res = vendors[req.vendor].fit(node, req, ctx)
            if res.grants is None:
                return res.reason
            grants.extend(res.grants)
            add_usage(overlay, res.grants)
            used_vendors.add(req.vendor)
        if not container.init:
            pod_devices.update(g.uuid for g in grants)
        out.append(tuple(grants))
    fit = NodeFit(out)
    if used_vendors:
        lists = [list(c) for c in out]
        fit.extra_score = sum(vendors[v].node_score(node, lists) for v in sorted(used_vendors))
    return fit


class DeviceFit:
    """The HAMi device Filter. Args: ``vendors`` ({vendor word: plugin}), ``device_policy``,
    ``device_scoring_weights`` (profile defaults; pods may override)."""

    name = names.DEVICE_FIT
    node_local = True

    def __init__(
        self,
        vendors: dict[str, VendorPlugin] | None = None,
        device_policy: str = "spread",
        device_scoring_weights: tuple[int, int, int] = (1, 1, 1),
        **_: object,
    ) -> None:
        device_policy = policy_word(device_policy)
        if device_policy not in DEVICE_POLICIES:
            raise ValueError(f"device policy {device_policy!r} not in {DEVICE_POLICIES}")
        self.vendors = vendors if vendors is not None else default_vendors()
        self.device_policy = device_policy
        self.weights = device_scoring_weights

    def pre_filter(self, state: CycleState, pod: PodRequest, snapshot: ClusterSnapshot) -> Status:
        policy = pod.device_policy or self.device_policy
        if policy not in DEVICE_POLICIES:
            return Status(
                Code.ERROR, f"pod {pod.name}: unknown device policy {policy!r}", self.name
            )
        weights = pod.device_scoring_weights or self.weights
        if len(weights) != 3 or min(weights) < 0 or not any(weights):
            return Status(
                Code.ERROR,
                f"pod {pod.name}: device scoring weights {weights} "
                "must be three ints >= 0, not all 0",
                self.name,
            )
        slot_weight, core_weight, memory_weight = weights
        containers = []
        min_devices: dict[tuple[str, str], int] = {}
        has = False
        for c in pod.containers:
            reqs = []
            for r in c.devices:
                plugin = self.vendors.get(r.vendor)
                if plugin is None:
                    return Status(
                        Code.ERROR,
                        f"pod {pod.name} container {c.name}: unknown device vendor {r.vendor!r}",
                        self.name,
                    )
                p = plugin.prepare(r)
                if isinstance(p, str):
                    return Status(Code.UNRESOLVABLE, f"container {c.name}: {p}", self.name)
                reqs.append(p)
                key = (p.vendor, p.chip)
                min_devices[key] = max(min_devices.get(key, 0), 1)
                has = True
            containers.append((c, tuple(reqs)))
        state.write(
            PREPARED,
            PreparedPod(
                containers, has, policy, (slot_weight, core_weight, memory_weight), min_devices
            ),
        )
        state.write(FITS, {})
        if not has:
            return Status(Code.SKIP, "", self.name)
        return SUCCESS

    def filter(self, state: CycleState, pod: PodRequest, node: NodeInfo) -> Status:
        prepared = state.read(PREPARED)
        if not prepared.has_devices:
            state.read(FITS)[node.name] = NodeFit([() for _ in prepared.containers])
            return SUCCESS
        devs = node.devices
        for vendor, chip in prepared.min_devices:
            if not any(d.vendor == vendor and (not chip or d.type == chip) for d in devs):
                return Status(
                    Code.UNRESOLVABLE,
                    f"NodeInsufficientDevice: no {chip or vendor} devices on node",
                    self.name,
                )
        res = fit_pod(node, prepared, self.vendors)
        if isinstance(res, str):
            return Status(Code.UNSCHEDULABLE, res, self.name)
        state.read(FITS)[node.name] = res
        return SUCCESS
