"""Aggregates for the overview dashboard: jobs by state, pending jobs grouped by the kind and
resource of their first cause (``Job.pending_causes``), queue lengths and top tenants (a fixed
number of queries each). Capacity vs allocated by vendor, model and resource group is
:mod:`scheduling.selectors.allocation`; fragmentation is
:mod:`scheduling.selectors.fragmentation` (FGD)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Min, Q, Sum
from django.db.models.fields.json import KT
from django.utils import timezone

from scheduling.choices import JobState
from scheduling.models import Job, Queue
from tenants.models import QuotaUsage


def jobs_by_state(tenant_ids: set[int] | None) -> dict[str, int]:
    """``{state: count}`` over the given tenants (None = all), every state present."""
    jobs = Job.objects.all()
    if tenant_ids is not None:
        jobs = jobs.filter(tenant_id__in=tenant_ids)
    counts = dict(jobs.values_list("state").annotate(n=Count("id")).values_list("state", "n"))
    return {state: counts.get(state, 0) for state in JobState.values}


@dataclass(frozen=True)
class PendingGroup:
    """Queued jobs whose first (blocking) cause has one kind and resource (issue 30).

    Attributes:
        kind / resource: of the first cause (``Job.pending_causes[0]``; resource None when
            the rule names none).
        jobs: how many queued jobs.
        causes: the causes of the group's oldest job, ``[{kind, resource, needed, free,
            borrowable, unit, rule}]`` (the first is the headline, the rest its tail).
    """

    kind: str
    resource: str | None
    jobs: int
    causes: list[dict]


def pending_groups(tenant_ids: set[int] | None, limit: int = 10) -> list[PendingGroup]:
    """Queued jobs grouped by the kind and resource of their first cause, largest group
    first (two queries: the counts, then each group's oldest job's causes)."""
    jobs = Job.objects.filter(state=JobState.QUEUED).exclude(pending_causes=[])
    if tenant_ids is not None:
        jobs = jobs.filter(tenant_id__in=tenant_ids)
    jobs = jobs.annotate(cause=KT("pending_causes__0__kind"), res=KT("pending_causes__0__resource"))
    counts = list(
        jobs.values("cause", "res").annotate(n=Count("id")).order_by("-n", "cause", "res")[:limit]
    )
    if not counts:
        return []
    oldest = {
        (row["cause"], row["res"]): row["pending_causes"]
        for row in jobs.order_by("cause", "res", "created", "id")
        .distinct("cause", "res")
        .values("cause", "res", "pending_causes")
    }
    return [
        PendingGroup(row["cause"], row["res"], row["n"], oldest[(row["cause"], row["res"])])
        for row in counts
    ]


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
    tenant_id: int = 0


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
            q.tenant_id,
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
    """Tenants by devices held, largest first: the ``devices`` and ``memory_mib`` charges of
    their bookings from the stored ``QuotaUsage`` (what the admission cycle charged, summed
    over resource groups) and their admitted or running jobs; two queries whatever the number
    of placements. Only the given tenants (None = all) are returned, so a member never sees
    other tenants."""
    usage = QuotaUsage.objects.filter(dimension__in=("devices", "memory_mib"), amount__gt=0)
    jobs = Job.objects.filter(state__in=(JobState.ADMITTED, JobState.RUNNING))
    if tenant_ids is not None:
        usage = usage.filter(tenant_id__in=tenant_ids)
        jobs = jobs.filter(tenant_id__in=tenant_ids)
    acc: dict[tuple[int, str], dict[str, int]] = {}
    for tid, name, dimension, amount in (
        usage.values("tenant_id", "tenant__name", "dimension")
        .annotate(total=Sum("amount"))
        .values_list("tenant_id", "tenant__name", "dimension", "total")
    ):
        acc.setdefault((tid, name), {})[dimension] = amount
    counts = dict(jobs.values("tenant_id").annotate(n=Count("id")).values_list("tenant_id", "n"))
    out = [
        TenantUsageRow(
            name, d.get("devices", 0) / 1000.0, d.get("memory_mib", 0), counts.get(tid, 0), tid
        )
        for (tid, name), d in acc.items()
    ]
    out.sort(key=lambda r: (-r.devices, r.tenant))
    return out[:limit]
