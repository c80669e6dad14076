"""AMD GPU (HAMi's ``docs/develop/amd-vgpu.md``, shared/docs/hami.md §2.10).

Devices register ``cores_percent`` = total compute units (e.g. 304). A request's
``cores_percent`` is a percentage (1..100, default 100) converted per device to
``max(1, total_CU * pct // 100)`` compute units; the grant books CUs (as HAMi writes them in
the annotation). The "100 % cores needs an idle device" rule does not apply (HAMi's rule
needs ``devcore == 100``, §9.8); a CU-exhausted device refuses 0-CU tasks as usual.
"""

from __future__ import annotations

from typing import Any

from scheduling.placement.types import DeviceGrant, DeviceRequest, DeviceUsage
from scheduling.placement.vendors.base import VendorPlugin


class AmdPlugin(VendorPlugin):
    """AMD backend (vendor word ``AMD``; annotation TYPE = registered product name)."""

    vendor = "AMD"

    def need(self, dev: DeviceUsage, req: DeviceRequest) -> tuple[int, int]:
        mem, pct = super().need(dev, req)
        return mem, max(1, dev.cores_percent * pct // 100) if pct > 0 else 0

    def annotation_type(self, dev: DeviceUsage) -> str:
        return dev.type

    def grant(self, dev: DeviceUsage, mem: int, cores: int, **extra: Any) -> DeviceGrant:
        return super().grant(dev, mem, cores, **extra)
