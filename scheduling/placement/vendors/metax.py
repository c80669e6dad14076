"""Metax whole GPU and sGPU (``pkg/device/metax/device.go``, ``sdevice.go``; hami.md §2.5).

* ``Metax`` (whole GPU): devices have split count 1; a request books the whole card
  (memory 100 %, cores 100). Custom rule: a pod's later containers may only use devices its
  earlier containers already use (``CardNotFoundCustomFilterRule``, §9.9).
* ``MetaxSGPU``: generic fractional Fit, except cores above 100 are not clamped (they fail)
  and a shared (non-exclusive) request may only join a used device whose QoS policy equals
  the pod's (an empty device policy accepts any; an idle device, or one this pod's earlier
  container took, has the pod's policy; ``checkDeviceQos`` and ``AddResourceUsage``,
  sdevice.go:310-330, 528-556) -> ``CardNotFoundCustomFilterRule``. HAMi types
  every sGPU ``Metax-SGPU`` whatever its model (``convertMetaxSDeviceToHAMIDevice``,
  metax/protocol.go:112), so under parity every registered sGPU is offered to a request.
"""

from __future__ import annotations

from scheduling.placement import reasons as R
from scheduling.placement.types import DeviceRequest, DeviceUsage
from scheduling.placement.vendors.base import FitContext, VendorPlugin


def same_devices_rule(plugin: VendorPlugin, dev: DeviceUsage, ctx: FitContext) -> str | None:
    """Later containers of a pod only on devices (of this vendor) its earlier ones use."""
    if not ctx.pod_devices:
        return None
    mine = {d.uuid for d in ctx.node.devices if d.vendor == plugin.vendor}
    earlier = ctx.pod_devices & mine
    if earlier and dev.uuid not in earlier:
        return R.CARD_NOT_FOUND_CUSTOM_FILTER_RULE
    return None


class MetaxPlugin(VendorPlugin):
    """Metax whole-GPU backend (vendor word ``Metax``)."""

    vendor = "Metax"

    def custom_check(
        self, dev: DeviceUsage, req: DeviceRequest, ctx: FitContext, mem: int, cores: int
    ) -> str | None:
        return same_devices_rule(self, dev, ctx)


class MetaxSGPUPlugin(VendorPlugin):
    """Metax sGPU backend (vendor word ``MetaxSGPU``, annotation TYPE ``Metax-SGPU``)."""

    vendor = "MetaxSGPU"

    def need(self, dev: DeviceUsage, req: DeviceRequest) -> tuple[int, int]:
        if req.memory_mib > 0:
            return req.memory_mib, req.cores_percent
        pct = 100 if req.memory_percent is None else req.memory_percent
        return dev.memory_mib * pct // 100, req.cores_percent

    def hami_type(self, dev: DeviceUsage) -> str:
        return self.default.common_word

    def custom_check(
        self, dev: DeviceUsage, req: DeviceRequest, ctx: FitContext, mem: int, cores: int
    ) -> str | None:
        if cores >= 100 or not req.qos_policy:
            return None
        o = ctx.overlay.get(dev.uuid)
        if not dev.used_slots or (o is not None and o.slots):
            return None  # idle, or this pod's own policy since its earlier container
        if dev.qos_policy and dev.qos_policy != req.qos_policy:
            return R.CARD_NOT_FOUND_CUSTOM_FILTER_RULE
        return None
