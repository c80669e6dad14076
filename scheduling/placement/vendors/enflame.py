"""Enflame whole GCU (``pkg/device/enflame/gcu.go``, docs/hami.md §2.7).

Whole cards only: devices have split count 1, requests book the whole card (memory 100 %,
cores 100), so only idle cards pass. DRS hardware partitions (``enflame.com/drs-gcu``) are
not modelled by this core.
"""

from __future__ import annotations

from scheduling.placement.vendors.base import VendorPlugin


class EnflamePlugin(VendorPlugin):
    """Enflame GCU backend (vendor word ``Enflame``)."""

    vendor = "Enflame"
