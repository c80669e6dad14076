"""Hygon DCU vDCU (``pkg/device/hygon/device.go``, shared/docs/hami.md §2.3).

Generic Fit: memory in MiB (x ``memoryFactor``), cores percent defaulting to 100, devices
registered in the legacy ``id,count,mem,core,type,numa,health`` format with ``count = 4``.
"""

from __future__ import annotations

from scheduling.placement.vendors.base import VendorPlugin


class HygonPlugin(VendorPlugin):
    """Hygon DCU backend (vendor word ``DCU``)."""

    vendor = "DCU"
