"""Aggregates for the overview dashboard: capacity vs allocated by vendor, model and resource
group, fragmentation, queue lengths and top tenants (a fixed number of queries each, except
:func:`capacity_by_group`: two per resource group)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Min, Q, Sum
from django.utils import timezone

from scheduling.choices import BOOKED_PLACEMENT_STATES, JobState
from scheduling.models import Device, Job, PlacementDevice, Queue
from scheduling.selectors.snapshot import group_devices
from tenants.models import ResourceGroup


@dataclass(frozen=True)
class CapacityRow:
    """Capacity and allocation of a set of devices.

    ``allocated_devices`` is in devices (cores booked / 100, so 0.47 for a 47 % slice);
    ``*_pct`` are allocation ratios in percent of capacity.
    """

    label: str
    vendor: str
    devices: int
    memory_mib: int
    allocated_devices: float
    allocated_memory_mib: int

    @property
    def allocated_pct(self) -> float:
        return 100.0 * self.allocated_devices / self.devices if self.devices else 0.0

    @property
    def memory_pct(self) -> float:
        return 100.0 * self.allocated_memory_mib / self.memory_mib if self.memory_mib else 0.0


def _booked(devices_qs):
    return PlacementDevice.objects.filter(
        placement__state__in=BOOKED_PLACEMENT_STATES, device__in=devices_qs
    )


def capacity_by_model() -> list[CapacityRow]:
    """One row per device model with present devices."""
    present = Device.objects.filter(removed_at__isnull=True)
    booked = {
        row["device__model__name"]: row
        for row in _booked(present)
        .values("device__model__name")
        .annotate(cores=Sum("cores_percent"), mem=Sum("memory_mib"))
    }
    rows = []
    for row in (
        present.values("model__name", "model__vendor")
        .annotate(n=Count("id"), mem=Sum("memory_mib"), cores=Sum("cores_percent"))
        .order_by("model__vendor", "model__name")
    ):
        b = booked.get(row["model__name"], {})
        rows.append(
            CapacityRow(
                label=row["model__name"],
                vendor=row["model__vendor"],
                devices=row["n"],
                memory_mib=row["mem"] or 0,
                allocated_devices=(b.get("cores") or 0) / 100.0,
                allocated_memory_mib=b.get("mem") or 0,
            )
        )
    return rows


def capacity_by_group() -> list[CapacityRow]:
    """One row per resource group (its devices may overlap with another group's)."""
    rows = []
    for group in ResourceGroup.objects.order_by("name"):
        devices = group_devices(group)
        cap = devices.aggregate(n=Count("id"), mem=Sum("memory_mib"))
        used = _booked(devices).aggregate(cores=Sum("cores_percent"), mem=Sum("memory_mib"))
        rows.append(
            CapacityRow(
                label=group.name,
                vendor=group.get_kind_display(),
                devices=cap["n"] or 0,
                memory_mib=cap["mem"] or 0,
                allocated_devices=(used["cores"] or 0) / 100.0,
                allocated_memory_mib=used["mem"] or 0,
            )
        )
    return rows


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


def capacity_by_vendor(model_rows: list[CapacityRow]) -> list[CapacityRow]:
    """Vendor totals of :func:`capacity_by_model` rows (no query)."""
    totals: dict[str, list] = {}
    for row in model_rows:
        t = totals.setdefault(row.vendor, [0, 0, 0.0, 0])
        t[0] += row.devices
        t[1] += row.memory_mib
        t[2] += row.allocated_devices
        t[3] += row.allocated_memory_mib
    return [
        CapacityRow(vendor, vendor, n, mem, alloc, alloc_mem)
        for vendor, (n, mem, alloc, alloc_mem) in sorted(totals.items())
    ]


@dataclass(frozen=True)
class Fragmentation:
    """How much free device capacity is stranded on partly booked devices.

    Over present, healthy, uncordoned devices: ``free_devices`` = free cores / 100 (in
    devices); ``stranded_devices`` = the part of it on devices that already carry a booking
    (usable by fractional requests only, not by whole-device requests); ``whole_free`` =
    devices with no booking at all. ``fragmentation_pct`` = stranded / free × 100 (0 when
    nothing is free). The same idea as FGD's fragmentation measure (fgd.md), simplified to
    "free capacity a whole-device request cannot use".
    """

    devices: int
    whole_free: int
    partial: int
    full: int
    free_devices: float
    stranded_devices: float

    @property
    def fragmentation_pct(self) -> float:
        return 100.0 * self.stranded_devices / self.free_devices if self.free_devices else 0.0


def fragmentation() -> Fragmentation:
    """:class:`Fragmentation` of the whole inventory (two queries)."""
    usable = Device.objects.filter(removed_at__isnull=True, healthy=True, cordoned=False)
    caps = dict(usable.values_list("id", "cores_percent"))
    booked = dict(
        _booked(usable).values("device_id").annotate(c=Sum("cores_percent"))
        .values_list("device_id", "c")
    )
    whole_free = partial = full = 0
    free = stranded = 0.0
    for device_id, cap in caps.items():
        used = min(booked.get(device_id) or 0, cap)
        left = (cap - used) / 100.0
        free += left
        if used == 0:
            whole_free += 1
        elif used >= cap:
            full += 1
        else:
            partial += 1
            stranded += left
    return Fragmentation(len(caps), whole_free, partial, full, free, stranded)


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
            q.pk, q.tenant.name, q.name, q.resource_group.name, q.queued, q.live,
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


def top_tenants(tenant_ids: set[int] | None, limit: int = 10) -> list[TenantUsageRow]:
    """Tenants by booked devices (cores / 100), largest first; one query.

    Only the given tenants (None = all) are returned, so a member never sees other tenants.
    """
    rows = _booked(Device.objects.all())
    if tenant_ids is not None:
        rows = rows.filter(placement__job__tenant_id__in=tenant_ids)
    out = [
        TenantUsageRow(r["placement__job__tenant__name"], (r["cores"] or 0) / 100.0,
                       r["mem"] or 0, r["jobs"])
        for r in rows.values("placement__job__tenant__name").annotate(
            cores=Sum("cores_percent"), mem=Sum("memory_mib"),
            jobs=Count("placement__job", distinct=True),
        )
    ]
    out.sort(key=lambda r: (-r.devices, r.tenant))
    return out[:limit]
