"""Group gauges (allocation, FGD fragmentation, healthy capacity vs guarantees) and the
capacity alerts they open and resolve."""

from __future__ import annotations

import logging
from collections import defaultdict
from datetime import datetime

from django.db import IntegrityError, transaction
from django.utils import timezone

from core.events import CAPACITY_ALERT, emit
from scheduling.selectors.allocation import capacity_by_group, in_group, present_device_loads
from scheduling.selectors.fragmentation import group_fragmentation, load_inventory
from scheduling.selectors.job_board import store_start_ranges
from scheduling.services.estimates import record_start_estimates
from telemetry.models import CapacityAlert, GroupGauge
from telemetry.services.panels import compute_panels
from tenants.models import Quota, ResourceGroup

logger = logging.getLogger(__name__)

__all__ = ["compute_group_gauges"]


def compute_group_gauges(*, now: datetime | None = None) -> list[GroupGauge]:
    """Allocation ratio (:mod:`scheduling.selectors.allocation`), FGD fragmentation
    (:func:`~scheduling.selectors.fragmentation.group_fragmentation`, the overview's figures),
    healthy capacity and guarantees per resource group; open / resolve
    :class:`CapacityAlert` rows (whole group and per flavor); then the overview's panels
    (:func:`telemetry.services.panels.compute_panels`). The inventory is read once for all
    of it."""
    now = now or timezone.now()
    groups = list(ResourceGroup.objects.order_by("pk"))
    loads = present_device_loads()
    inventory = load_inventory()
    allocation = {row.label: row for row in capacity_by_group(loads, groups)}
    guarantees: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for group_id, flavor, nominal in Quota.objects.filter(dimension="devices").values_list(
        "resource_group_id", "flavor", "nominal"
    ):
        guarantees[group_id][flavor] += nominal
    out = []
    for group in groups:
        frag = group_fragmentation(group, inventory=inventory).totals
        healthy_by_model: dict[str, int] = defaultdict(int)
        for d in loads.values():
            if d.usable and in_group(d, group):
                healthy_by_model[d.model] += 1000
        guaranteed = guarantees[group.pk]
        total_guaranteed = sum(guaranteed.values())
        healthy = sum(healthy_by_model.values())
        row = allocation[group.name]
        gauge, _ = GroupGauge.objects.update_or_create(
            resource_group=group,
            defaults={
                "capacity_milli": 1000 * row.devices,
                "allocation_ratio": row.allocation_ratio,
                "fragmentation_rate": frag.rate_percent / 100.0,
                "fragment_milli": frag.fragment_milli,
                "healthy_milli": healthy,
                "guaranteed_milli": total_guaranteed,
                "computed_at": now,
            },
        )
        out.append(gauge)
        checks = {"*": (healthy, total_guaranteed)}
        for flavor, amount in guaranteed.items():
            if flavor != "*":
                checks[flavor] = (healthy_by_model.get(flavor, 0), amount)
        for flavor, (have, need) in checks.items():
            _update_alert(group, flavor, have, need, now)
    compute_panels(inventory, loads, groups, now)
    # the jobs pages' estimated starts, and each job's first window (calibration, issue 30)
    record_start_estimates(store_start_ranges(now), now)
    return out


def _update_alert(
    group: ResourceGroup, flavor: str, healthy: int, guaranteed: int, now: datetime
) -> None:
    open_alert = CapacityAlert.objects.filter(
        resource_group=group, flavor=flavor, resolved_at__isnull=True
    ).first()
    short = healthy < guaranteed
    if short and open_alert is None:
        message = (
            f"group {group.name}, flavor {flavor}: healthy capacity {healthy / 1000:g} devices "
            f"below guaranteed {guaranteed / 1000:g}"
        )
        try:
            with transaction.atomic():
                CapacityAlert.objects.create(
                    resource_group=group,
                    flavor=flavor,
                    opened_at=now,
                    healthy_milli=healthy,
                    guaranteed_milli=guaranteed,
                    message=message,
                )
        except IntegrityError:  # capacityalert_one_open: another gauges run opened it first
            return
        logger.warning("capacity alert: %s", message)
        emit(
            CAPACITY_ALERT,
            tenant_id=None,
            payload={
                "resource_group": group.name,
                "flavor": flavor,
                "healthy_devices": healthy / 1000,
                "guaranteed_devices": guaranteed / 1000,
                "message": message,
            },
        )
    elif short and open_alert is not None:
        CapacityAlert.objects.filter(pk=open_alert.pk).update(
            healthy_milli=healthy, guaranteed_milli=guaranteed
        )
    elif open_alert is not None:
        CapacityAlert.objects.filter(pk=open_alert.pk).update(resolved_at=now)
