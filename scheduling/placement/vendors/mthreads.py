"""Mthreads sGPU (``pkg/device/mthreads/device.go``, shared/docs/hami.md §2.8).

Cores are counted in sixteenths of a GPU: devices register ``cores_percent = 16`` and a
request's ``cores_percent`` carries sixteenths (``mthreads.com/sgpu-core``). Memory unit
512 MiB. ``count > 1`` books whole cards (set by the request parser). Same custom rule as
Metax GPU: later containers only on devices the pod's earlier containers use.
"""

from __future__ import annotations

from scheduling.placement.types import DeviceRequest, DeviceUsage
from scheduling.placement.vendors.base import FitContext, VendorPlugin
from scheduling.placement.vendors.metax import same_devices_rule


class MthreadsPlugin(VendorPlugin):
    """Mthreads backend (vendor word ``Mthreads``)."""

    vendor = "Mthreads"

    def need(self, dev: DeviceUsage, req: DeviceRequest) -> tuple[int, int]:
        mem, _ = super().need(dev, req)
        return mem, min(req.cores_percent, dev.cores_percent)

    def custom_check(
        self, dev: DeviceUsage, req: DeviceRequest, ctx: FitContext, mem: int, cores: int
    ) -> str | None:
        return same_devices_rule(self, dev, ctx)
