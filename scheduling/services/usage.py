"""Stored quota usage and the usage ledger, kept equal to the live placements.

* Admission charges a placement's ``charges`` into ``tenants.QuotaUsage`` in its commit and
  sets ``Placement.charged``.
* Every path that releases a placement (cancel, failure, completion, preemption) only changes
  the placement's state; :func:`settle_released_usage` (run at the start of every admission
  cycle of the group and by the reconcile task, under the group's advisory lock) subtracts
  the charges of charged placements that left the booked states and clears ``charged``.
  So stored usage = Σ charges of charged placements, at every commit.
* :func:`check_usage` recomputes usage from the live bookings (``PlacementDevice`` rows with
  the current flavor mapping) and reports every difference (DESIGN.md §7 invariants).
* :func:`sync_ledger` opens a ledger interval per running placement × device and closes it
  when the placement ends.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from core.locks import ADMISSION_CYCLE, lock_rows, try_xact_lock
from scheduling.admission import Dimension, check_invariants
from scheduling.admission.charges import milli_share
from scheduling.choices import BOOKED_PLACEMENT_STATES
from scheduling.models import Placement, PlacementDevice
from scheduling.selectors.admission import build_admission_snapshot, resolve_flavors
from tenants import services as tenant_services
from tenants.models import LedgerInterval, QuotaUsage, ResourceGroup

logger = logging.getLogger(__name__)


def encode_charges(charges) -> dict[str, int]:
    """``{(flavor, dimension): amount}`` → JSON ``{"flavor|dimension": amount}``."""
    return {f"{f}|{Dimension(d).value}": int(a) for (f, d), a in sorted(charges.items()) if a}


def decode_charges(data: dict) -> dict[tuple[str, str], int]:
    """Inverse of :func:`encode_charges`."""
    out = {}
    for key, amount in (data or {}).items():
        flavor, _, dim = key.rpartition("|")
        out[(flavor, dim)] = int(amount)
    return out


def usage_deltas(rows, sign: int) -> dict[tuple[int, int, str, str], int]:
    """Usage deltas ``{(tenant, group, flavor, dimension): ±amount}`` of placements given as
    ``(tenant id, group id, charges JSON)`` tuples."""
    deltas: dict[tuple[int, int, str, str], int] = defaultdict(int)
    for tenant_id, group_id, charges in rows:
        for (flavor, dim), amount in decode_charges(charges).items():
            deltas[(tenant_id, group_id, flavor, dim)] += sign * amount
    return dict(deltas)


def settle_released_usage(group_id: int) -> int:
    """Subtract from stored usage the charges of the group's placements that left the booked
    states, exactly once each (rows locked, then ``charged`` cleared).

    Must run inside a transaction holding the group's advisory lock.

    Returns:
        Number of placements settled.
    """
    rows = list(
        lock_rows(Placement, skip_locked=True)
        .filter(charged=True, job__queue__resource_group_id=group_id)
        .exclude(state__in=BOOKED_PLACEMENT_STATES)
        .order_by("pk")
        .values_list("pk", "job__tenant_id", "charges")
    )
    if not rows:
        return 0
    Placement.objects.filter(pk__in=[r[0] for r in rows], charged=True).update(charged=False)
    tenant_services.apply_usage_deltas(usage_deltas([(t, group_id, c) for _, t, c in rows], -1))
    return len(rows)


@dataclass
class UsageCheck:
    """Outcome of :func:`check_usage` for one resource group.

    Attributes:
        group_id: the group.
        locked_out: another cycle held the group lock (nothing checked).
        settled: placements settled before checking.
        drift: ``["tenant T, flavor F, DIM: stored S, recomputed R", ...]``.
        violations: every invariant the admission core reports (quota limits, usage drift,
            charge drift between stored charges and bookings), as messages.
        repaired: rows overwritten when ``repair`` was asked.
    """

    group_id: int
    locked_out: bool = False
    settled: int = 0
    drift: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    repaired: int = 0


def _booking_milli(b: PlacementDevice) -> int:
    """Milli-devices charged for booking ``b``: its dominant share of the device's capacity
    (:func:`scheduling.admission.charges.milli_share`, as admission charges it)."""
    return milli_share(b.memory_mib, b.cores_percent, b.device.memory_mib, b.device.cores_percent)


def recomputed_usage(group: ResourceGroup) -> dict[tuple[int, str, str], int]:
    """Usage per ``(tenant id, flavor, dimension)`` recomputed from the live bookings of the
    group's placements (fraction-correct: milli-devices by dominant share)."""
    flavors = resolve_flavors(group)
    usage: dict[tuple[int, str, str], int] = defaultdict(int)
    rows = PlacementDevice.objects.filter(
        placement__state__in=BOOKED_PLACEMENT_STATES, placement__job__queue__resource_group=group
    ).select_related("device__model", "placement__job")
    for b in rows:
        flavor = flavors.flavor_of_model.get(b.device.model.name, b.device.model.name)
        tenant_id = b.placement.job.tenant_id
        usage[(tenant_id, flavor, "devices")] += _booking_milli(b)
        usage[(tenant_id, flavor, "memory_mib")] += b.memory_mib
        usage[(tenant_id, flavor, "cores_percent")] += b.cores_percent
    return {k: v for k, v in usage.items() if v}


def check_usage(group_id: int, *, repair: bool = False) -> UsageCheck:
    """Settle released placements, then compare stored usage with usage recomputed from live
    placements and run the admission core's invariant checker on the group.

    Args:
        group_id: the resource group.
        repair: overwrite drifted stored rows with the recomputed amounts (logged).

    Returns:
        The findings (empty lists = usage is exact and every invariant holds).
    """
    report = UsageCheck(group_id)
    with transaction.atomic():
        if not try_xact_lock(ADMISSION_CYCLE, group_id):
            report.locked_out = True
            return report
        group = ResourceGroup.objects.get(pk=group_id)
        report.settled = settle_released_usage(group_id)
        want = recomputed_usage(group)
        have = {
            (u.tenant_id, u.flavor, u.dimension): u.amount
            for u in QuotaUsage.objects.filter(resource_group=group)
            if u.amount
        }
        names = dict(group.quotas.values_list("tenant_id", "tenant__name"))
        for key in sorted(set(want) | set(have)):
            if want.get(key, 0) != have.get(key, 0):
                tenant = names.get(key[0], str(key[0]))
                report.drift.append(
                    f"tenant {tenant}, flavor {key[1]}, {key[2]}: stored {have.get(key, 0)}, "
                    f"recomputed {want.get(key, 0)}"
                )
        ctx = build_admission_snapshot(group, timezone.now())
        report.violations = [v.message for v in check_invariants(ctx.snapshot)]
        if repair and report.drift:
            report.repaired = tenant_services.replace_usage(group_id, want)
    for line in report.drift:
        logger.warning("usage drift in group %s: %s", group_id, line)
    for line in report.violations:
        logger.warning("invariant broken in group %s: %s", group_id, line)
    return report


def sync_ledger(now: datetime | None = None) -> tuple[int, int]:
    """Open a ledger interval for every placement × device that ran and has none (start =
    the placement's ``started_at``; already closed when the placement has ended), and close
    the open intervals of placements that ended (end = ``ended_at``, else now).

    Idempotent. Returns:
        ``(opened, closed)``.
    """
    now = now or timezone.now()
    known = LedgerInterval.objects.values("placement_id")
    missing = (
        PlacementDevice.objects.filter(placement__started_at__isnull=False)
        .exclude(placement_id__in=known)
        .select_related("placement__job__queue", "device__model")
        .order_by("placement_id", "device_id")
    )
    entries = []
    flavor_maps: dict[int, dict[str, str]] = {}
    for b in missing[:5000]:
        p = b.placement
        start = p.started_at
        if start is None:  # excluded by the query; narrows the type
            continue
        group = p.job.queue.resource_group_id
        if group not in flavor_maps:
            flavor_maps[group] = resolve_flavors(
                ResourceGroup.objects.get(pk=group)
            ).flavor_of_model
        model = b.device.model.name
        ended = None if p.state in BOOKED_PLACEMENT_STATES else (p.ended_at or now)
        entries.append(
            tenant_services.LedgerEntry(
                tenant_id=p.job.tenant_id,
                resource_group_id=group,
                job_id=p.job_id,
                placement_id=p.pk,
                device_uuid=b.device.uuid,
                device_model=b.device.model.name,
                flavor=flavor_maps[group].get(model, model),
                devices_milli=_booking_milli(b),
                memory_mib=b.memory_mib,
                cores_percent=b.cores_percent,
                start=start,
                end=max(ended, start) if ended else None,
            )
        )
    opened = tenant_services.open_ledger_intervals(entries)
    ends = dict(
        Placement.objects.filter(
            pk__in=LedgerInterval.objects.filter(end__isnull=True).values("placement_id")
        )
        .exclude(state__in=BOOKED_PLACEMENT_STATES)
        .values_list("pk", "ended_at")
    )
    closed = tenant_services.close_ledger_intervals({pk: end or now for pk, end in ends.items()})
    return opened, closed


def close_ledger_for(placement_ids: list[int], end) -> int:
    """Close the open intervals of ``placement_ids`` at ``end`` (preemption path)."""
    return tenant_services.close_ledger_intervals(dict.fromkeys(placement_ids, end))
