"""Quota usage of tenants, recomputed from live placements (so it cannot drift)."""

from __future__ import annotations

from collections import defaultdict

from scheduling.accounting import Charges, booking_charges
from scheduling.choices import BOOKED_PLACEMENT_STATES
from scheduling.models import PlacementDevice


def tenant_usage(group_id: int) -> dict[int, Charges]:
    """Usage per tenant in one resource group.

    Returns:
        ``{tenant id: {(flavor, dimension): amount}}`` over placements in state
        reserved/submitted/running of jobs queued in the group; amounts in the dimension's
        unit (milli-devices, MiB, percent).
    """
    rows = PlacementDevice.objects.filter(
        placement__state__in=BOOKED_PLACEMENT_STATES,
        placement__job__queue__resource_group_id=group_id,
    ).values_list(
        "placement__job__tenant_id",
        "device__model__name",
        "device__memory_mib",
        "device__cores_percent",
        "memory_mib",
        "cores_percent",
    )
    usage: dict[int, Charges] = defaultdict(lambda: defaultdict(int))
    for tenant_id, flavor, dev_mem, dev_cores, mem, cores in rows:
        for key, amount in booking_charges(flavor, dev_mem, dev_cores, mem, cores).items():
            usage[tenant_id][key] += amount
    return usage
