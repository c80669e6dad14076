"""Aggregates for the overview dashboard: jobs by state, pending reasons, queue lengths and top
tenants (a fixed number of queries each). Capacity vs allocated by vendor, model and resource
group is :mod:`scheduling.selectors.allocation`; fragmentation is
:mod:`scheduling.selectors.fragmentation` (FGD)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Min, Q
from django.utils import timezone

from scheduling.accounting import booking_charges
from scheduling.choices import BOOKED_PLACEMENT_STATES, JobState
from scheduling.models import Job, PlacementDevice, Queue


def jobs_by_state(tenant_ids: set[int] | None) -> dict[str, int]:
    """``{state: count}`` over the given tenants (None = all), every state present."""
    jobs = Job.objects.all()
    if tenant_ids is not None:
        jobs = jobs.filter(tenant_id__in=tenant_ids)
    counts = dict(jobs.values_list("state").annotate(n=Count("id")).values_list("state", "n"))
    return {state: counts.get(state, 0) for state in JobState.values}


def pending_reasons(tenant_ids: set[int] | None, limit: int = 10) -> list[tuple[str, int]]:
    """Most frequent pending reasons of queued jobs, ``[(reason, count)]``."""
    jobs = Job.objects.filter(state=JobState.QUEUED).exclude(pending_reason="")
    if tenant_ids is not None:
        jobs = jobs.filter(tenant_id__in=tenant_ids)
    return list(
        jobs.values("pending_reason")
        .annotate(n=Count("id"))
        .order_by("-n", "pending_reason")
        .values_list("pending_reason", "n")[:limit]
    )


@dataclass(frozen=True)
class QueueLength:
    """Jobs of one queue by state (``queued`` waiting, ``admitted``+``running`` live)."""

    queue_id: int
    tenant: str
    name: str
    resource_group: str
    queued: int
    live: int
    oldest_queued_s: float | None


def queue_lengths(tenant_ids: set[int] | None, now=None) -> list[QueueLength]:
    """Per queue: queued and live job counts, age of the oldest queued job (two queries).

    Returns queues of the given tenants (None = all), longest queue first.
    """
    now = now or timezone.now()
    queues = Queue.objects.select_related("tenant", "resource_group").annotate(
        queued=Count("jobs", filter=Q(jobs__state=JobState.QUEUED)),
        live=Count("jobs", filter=Q(jobs__state__in=[JobState.ADMITTED, JobState.RUNNING])),
        oldest=Min("jobs__created", filter=Q(jobs__state=JobState.QUEUED)),
    )
    if tenant_ids is not None:
        queues = queues.filter(tenant_id__in=tenant_ids)
    rows = [
        QueueLength(
            q.pk,
            q.tenant.name,
            q.name,
            q.resource_group.name,
            q.queued,
            q.live,
            (now - q.oldest).total_seconds() if q.oldest else None,
        )
        for q in queues
    ]
    rows.sort(key=lambda r: (-r.queued, -r.live, r.tenant, r.name))
    return rows


@dataclass(frozen=True)
class TenantUsageRow:
    """Devices and device memory a tenant holds now (booked placements)."""

    tenant: str
    devices: float
    memory_mib: int
    jobs: int
    tenant_id: int = 0


def top_tenants(tenant_ids: set[int] | None, limit: int = 10) -> list[TenantUsageRow]:
    """Tenants by devices held (the ``devices`` charge of their bookings), largest first;
    one query. Only the given tenants (None = all) are returned, so a member never sees
    other tenants."""
    rows = PlacementDevice.objects.filter(placement__state__in=BOOKED_PLACEMENT_STATES)
    if tenant_ids is not None:
        rows = rows.filter(placement__job__tenant_id__in=tenant_ids)
    acc: dict[tuple[int, str], list] = {}
    for tenant_id, tenant, job_id, model, dmem, dcores, mem, cores in rows.values_list(
        "placement__job__tenant_id",
        "placement__job__tenant__name",
        "placement__job_id",
        "device__model__name",
        "device__memory_mib",
        "device__cores_percent",
        "memory_mib",
        "cores_percent",
    ):
        entry = acc.setdefault((tenant_id, tenant), [0, 0, set()])
        entry[0] += booking_charges(model, dmem, dcores, mem, cores)[(model, "devices")]
        entry[1] += mem
        entry[2].add(job_id)
    out = [
        TenantUsageRow(name, milli / 1000.0, mem, len(jobs), tid)
        for (tid, name), (milli, mem, jobs) in acc.items()
    ]
    out.sort(key=lambda r: (-r.devices, r.tenant))
    return out[:limit]
