"""Cambricon MLU dynamic sMLU (``pkg/device/cambricon/device.go``, shared/docs/hami.md §2.2).

Fit is the generic one. The memory unit is configurable (``DeviceModelConfig.memory_factor``,
HAMi 256 MiB): ``vmemory * unit`` MiB. Unit 0 means 1 % granularity: ``vmemory`` is a
percentage of the card, i.e. memory per unit = card memory / 100 (integer division on the
registered memory). Cores default to 100 when ``vcore`` is absent; an explicit 0 is a 0-core
request. Per-card memory is the configured allocatable memory (``memory_mib``) or, when 0,
derived from node capacity (see ``hami.nodes``).
"""

from __future__ import annotations

from scheduling.placement.vendors.base import VendorPlugin


class CambriconPlugin(VendorPlugin):
    """Cambricon sMLU backend (vendor word ``MLU``)."""

    vendor = "MLU"
