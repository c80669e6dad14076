"""Iluvatar vGPU per chip (``pkg/device/iluvatar/device.go``, shared/docs/hami.md §2.6).

Generic Fit per chip; ``vMem`` unit 256 MiB; ``vCore`` defaults to 0; a request for more
than one device books whole devices (webhook forces ``vCore = count*100``, clamped to 100).
The chip is matched exactly against the registered type.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from scheduling.placement.types import DeviceGrant, DeviceRequest, DeviceUsage
from scheduling.placement.vendors.base import VendorPlugin


class IluvatarPlugin(VendorPlugin):
    """Iluvatar backend (vendor word ``Iluvatar``; chip = ``MR-V100``, ``BI-V150`` ...)."""

    vendor = "Iluvatar"

    def prepare(self, req: DeviceRequest) -> DeviceRequest | str:
        # the webhook's whole devices first: the cores a multi-device request asked are
        # replaced, so they are not checked against the limit
        return super().prepare(req if req.count <= 1 else replace(req, cores_percent=100))

    def annotation_type(self, dev: DeviceUsage) -> str:
        return self.config_for(dev.type).common_word

    def grant(self, dev: DeviceUsage, mem: int, cores: int, **extra: Any) -> DeviceGrant:
        return super().grant(dev, mem, cores, **extra)
