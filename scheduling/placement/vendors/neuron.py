"""AWS Neuron (``pkg/device/awsneuron/device.go``; research notes §3.10).

A device registers ``cores_percent`` = NeuronCores per device (HAMi learns it from
``aws.amazon.com/neuroncore`` / ``aws.amazon.com/neuron`` capacity, at most 2) and
``split_count`` = the same number. A request is either devices (``count``, whole devices)
or cores (``cores_percent`` = NeuronCores; more than one device's worth must be a multiple
of it, the codec splits it into ``count`` whole devices).

* One device: the generic Fit - the first device (in device order) with enough free cores;
  the grant books ``cores`` cores and one slot per core (``DeviceGrant.slices``).
* Several devices: whole idle healthy devices at consecutive positions of the node's
  device list (HAMi ``graphSelect``): on ``inf*`` instance types
  (``DeviceUsage.custom["AWSNodeType"]``, the node label ``node.kubernetes.io/instance-type``)
  the first run at any start (a ring of Inferentia chips); otherwise only 1, 4, 8 or 16
  devices at starts aligned to the count. No run -> ``NumaNotFit``.
"""

from __future__ import annotations

from typing import Any

from scheduling.placement import reasons as R
from scheduling.placement.types import DeviceGrant, DeviceRequest, DeviceUsage, NodeInfo
from scheduling.placement.vendors.base import FitContext, FitResult, VendorPlugin


def neuron_run(devs: list[DeviceUsage], free: set[str], count: int) -> list[DeviceUsage] | None:
    """HAMi ``graphSelect``: ``count`` consecutive free devices (module doc)."""
    if not devs:
        return None
    node_type = str(devs[0].custom.get("AWSNodeType", ""))
    ring = "inf" in node_type or "Inf" in node_type
    if not ring and count not in (1, 4, 8, 16):
        return None
    step = 1 if ring else count
    for start in range(0, len(devs) - count + 1, step):
        run = devs[start : start + count]
        if all(d.uuid in free for d in run):
            return run
    return None


class NeuronPlugin(VendorPlugin):
    """AWS Neuron backend (vendor word ``AWSNeuron``)."""

    vendor = "AWSNeuron"

    def need(self, dev: DeviceUsage, req: DeviceRequest) -> tuple[int, int]:
        if req.count > 1:
            return dev.memory_mib, dev.cores_percent
        return 0, min(req.cores_percent or dev.cores_percent, dev.cores_percent)

    def custom_check(
        self, dev: DeviceUsage, req: DeviceRequest, ctx: FitContext, mem: int, cores: int
    ) -> str | None:
        o = ctx.overlay.get(dev.uuid)
        if req.count > 1 and dev.used_slots + (o.slots if o else 0) > 0:
            return R.EXCLUSIVE_DEVICE_ALLOCATE_CONFLICT
        return None

    def grant(self, dev: DeviceUsage, mem: int, cores: int, **extra: Any) -> DeviceGrant:
        extra.setdefault("slices", max(1, cores))
        return super().grant(dev, mem, cores, **extra)

    def collect_all(self, req: DeviceRequest, ctx: FitContext) -> bool:
        return req.count > 1

    def select_from(
        self, node: NodeInfo, passing: list[list[DeviceGrant]], req: DeviceRequest, ctx: FitContext
    ) -> list[DeviceGrant] | None:
        grants = {g.uuid: g for gs in passing for g in gs}
        run = neuron_run(self.candidates(node, req), set(grants), req.count)
        return None if run is None else [grants[d.uuid] for d in run]

    def fit(self, node: NodeInfo, req: DeviceRequest, ctx: FitContext) -> FitResult:
        res = super().fit(node, req, ctx)
        if (
            res.grants is None
            and req.count > 1
            and R.CARD_NOT_FOUND_CUSTOM_FILTER_RULE in res.reason
        ):
            total = len(self.candidates(node, req))
            return FitResult(None, R.gen_reason({R.NUMA_NOT_FIT: 1}, total))
        return res
