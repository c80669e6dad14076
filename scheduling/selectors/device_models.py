"""Device model rows -> the device catalogue (HAMi defaults overlaid by every row's config)."""

from __future__ import annotations

from scheduling.devices.overlay import Catalogue, build_catalogue
from scheduling.models import DeviceModel

__all__ = ["get_catalogue"]


def get_catalogue() -> Catalogue:
    """HAMi v2.10 defaults overlaid by every ``DeviceModel`` row's ``config``
    (:func:`scheduling.devices.overlay.build_catalogue`).

    Never raises for a bad row (written before validation existed, or by SQL): its model is
    in ``Catalogue.errors`` (``{name: message}``) and out of ``configs``; the caller flags it
    and keeps its devices out of placement. One query.
    """
    rows = DeviceModel.objects.order_by("vendor", "name").values_list("vendor", "name", "config")
    return build_catalogue(rows)
