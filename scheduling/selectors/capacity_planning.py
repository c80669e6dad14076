"""Capacity planning of a resource group: the demand that waited, and what more devices of a
model would have absorbed.

Inputs over a window ``[start, end)``:

* the **ledger** (:class:`tenants.models.LedgerInterval`): device-hours the group's jobs
  actually held, per device model (served demand; ``devices_milli`` x overlap);
* the **queue history**: every job of the group's queues that waited in the window, from
  ``created`` to ``admitted_at`` (or ``end`` while still queued), with the devices it asks
  (:func:`scheduling.selectors.demand.job_demands`: pods x containers x count x share).

``pending_device_hours`` = sum over those jobs of devices x waiting hours inside the window.

What-if (:func:`capacity_what_if`): adding ``n`` devices of ``model`` to the group. A job is
*eligible* when every device container of it accepts the model (its task classes' allowed
types include it). The extra devices are a fluid pool: at each instant they serve up to ``n``
devices of the eligible demand then waiting, so the absorbed demand is the integral of
``min(n, eligible pending devices(t))`` over the window. This is an upper bound of the
waiting the devices would have removed (it ignores gang shape and placement), stated as such
on the page; ``jobs_fit`` counts the eligible jobs whose whole request fits in ``n`` devices
(those could have started at once on the new devices).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q

from scheduling.models import Job
from scheduling.selectors.demand import JobDemand, PresentModels, job_demands
from tenants.models import LedgerInterval, ResourceGroup

__all__ = ["GroupDemand", "WhatIf", "group_demand", "capacity_what_if"]


@dataclass(frozen=True)
class WhatIf:
    """Effect of ``added`` devices of ``model`` on the window's waiting demand.

    Attributes:
        model, added: the hypothetical devices.
        eligible_jobs: waiting jobs whose containers all accept ``model``.
        eligible_device_hours: their pending device-hours.
        absorbed_device_hours: pending device-hours the fluid pool would have served (bound).
        jobs_fit: eligible jobs asking no more than ``added`` devices.
    """

    model: str
    added: int
    eligible_jobs: int
    eligible_device_hours: float
    absorbed_device_hours: float
    jobs_fit: int

    def absorbed_pct(self, pending: float) -> float:
        """Absorbed share of ``pending`` device-hours, percent."""
        return 100.0 * self.absorbed_device_hours / pending if pending else 0.0


@dataclass(frozen=True)
class GroupDemand:
    """Served and waiting demand of a group over ``[start, end)``.

    Attributes:
        served_device_hours: ledger device-hours per device model.
        pending_device_hours: waiting demand (module docstring).
        waited_jobs: jobs that waited in the window.
        mean_wait_s: mean wait of the jobs admitted in the window (None without any).
        waits: the window's waiting jobs (demand and wait interval), for what-ifs.
    """

    start: datetime
    end: datetime
    served_device_hours: dict[str, float]
    pending_device_hours: float
    waited_jobs: int
    mean_wait_s: float | None
    waits: tuple[tuple[JobDemand, datetime, datetime], ...]


def _overlap_h(a: datetime, b: datetime, start: datetime, end: datetime) -> float:
    return max(0.0, (min(b, end) - max(a, start)).total_seconds()) / 3600.0


def group_demand(
    group: ResourceGroup, start: datetime, end: datetime, models: PresentModels | None = None
) -> GroupDemand:
    """Served (ledger) and waiting (queue history) demand of ``group`` in ``[start, end)``.
    Three queries (four without ``models``)."""
    served: dict[str, float] = defaultdict(float)
    for model, milli, a, b in LedgerInterval.objects.filter(
        Q(end__isnull=True) | Q(end__gt=start), resource_group_id=group.pk, start__lt=end
    ).values_list("device_model", "devices_milli", "start", "end"):
        served[model] += milli / 1000 * _overlap_h(a, b or end, start, end)
    jobs = (
        Job.objects.filter(
            Q(admitted_at__isnull=True) | Q(admitted_at__gt=start),
            queue__resource_group=group,
            created__lt=end,
        )
        .exclude(admitted_at__isnull=True, state__in=("cancelled", "failed", "succeeded"))
        .order_by("pk")
    )
    waits = []
    pending = 0.0
    admitted_waits = []
    for d in job_demands(jobs, models):
        until = min(d.admitted_at or end, end)
        if until <= max(d.created, start) or not d.tasks:
            continue
        waits.append((d, d.created, until))
        pending += d.devices * _overlap_h(d.created, until, start, end)
        if d.admitted_at and start <= d.admitted_at < end:
            admitted_waits.append((d.admitted_at - d.created).total_seconds())
    return GroupDemand(
        start,
        end,
        dict(sorted(served.items())),
        round(pending, 4),
        len(waits),
        sum(admitted_waits) / len(admitted_waits) if admitted_waits else None,
        tuple(waits),
    )


def capacity_what_if(demand: GroupDemand, model: str, added: int) -> WhatIf:
    """What ``added`` devices of ``model`` would have absorbed (module docstring; no query).

    Raises:
        ValueError: ``added`` below 1.
    """
    if added < 1:
        raise ValueError(f"added devices must be at least 1, got {added}")
    events: list[tuple[datetime, float]] = []
    eligible = fit = 0
    hours = 0.0
    for d, a, b in demand.waits:
        if not all(not t.gpu_types or model in t.gpu_types for t in d.tasks):
            continue
        a, b = max(a, demand.start), min(b, demand.end)
        if b <= a:
            continue
        eligible += 1
        fit += d.devices <= added
        hours += d.devices * (b - a).total_seconds() / 3600.0
        events += [(a, d.devices), (b, -d.devices)]
    events.sort()
    absorbed, level, last = 0.0, 0.0, None
    for when, delta in events:
        if last is not None and level > 0:
            absorbed += min(added, level) * (when - last).total_seconds() / 3600.0
        level += delta
        last = when
    return WhatIf(model, added, eligible, round(hours, 4), round(absorbed, 4), fit)
