"""Aggregates for the overview dashboard: capacity vs allocated by vendor, model and resource
group, queue lengths and top tenants (a fixed number of queries each, except
:func:`capacity_by_group`: one more per resource group). The fragmentation figures are
:mod:`scheduling.selectors.fragmentation` (FGD)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Min, Q, Sum
from django.utils import timezone

from scheduling.accounting import booking_charges
from scheduling.choices import BOOKED_PLACEMENT_STATES, JobState
from scheduling.models import Device, Job, PlacementDevice, Queue
from scheduling.selectors.snapshot import group_devices
from tenants.models import ResourceGroup


@dataclass(frozen=True)
class CapacityRow:
    """Capacity and allocation of a set of devices.

    ``allocated_devices`` is in devices: each device counts its booked share, the larger of
    booked memory / memory and booked cores / cores, capped at 1 (the ``devices`` quota
    charge, :mod:`scheduling.accounting`): a 40 % memory / 30 % cores slice is 0.4 device, a
    whole-device booking is 1. ``*_pct`` are allocation ratios in percent of capacity.
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


@dataclass(frozen=True)
class DeviceLoad:
    model: str
    vendor: str
    memory_mib: int
    share: float
    booked_memory_mib: int
    booked_cores_percent: int


def _device_loads(devices_qs) -> dict[int, DeviceLoad]:
    """``{device id: DeviceLoad}`` of the given devices (two queries)."""
    booked = {
        row[0]: row[1:]
        for row in _booked(devices_qs).values("device_id")
        .annotate(mem=Sum("memory_mib"), cores=Sum("cores_percent"))
        .values_list("device_id", "mem", "cores")
    }
    loads = {}
    for pk, model, vendor, mem_cap, cores_cap in devices_qs.values_list(
        "id", "model__name", "model__vendor", "memory_mib", "cores_percent"
    ):
        mem, cores = booked.get(pk, (0, 0))
        mem, cores = mem or 0, cores or 0
        share = max(mem / mem_cap if mem_cap else 0.0, cores / cores_cap if cores_cap else 0.0)
        loads[pk] = DeviceLoad(model, vendor, mem_cap, min(1.0, share), mem, cores)
    return loads


def _row(label: str, vendor: str, loads) -> CapacityRow:
    loads = list(loads)
    return CapacityRow(
        label=label, vendor=vendor, devices=len(loads),
        memory_mib=sum(d.memory_mib for d in loads),
        allocated_devices=round(sum(d.share for d in loads), 4),
        allocated_memory_mib=sum(d.booked_memory_mib for d in loads),
    )


def present_device_loads() -> dict[int, DeviceLoad]:
    """:class:`DeviceLoad` of every present device, by device id (two queries); pass it to
    :func:`capacity_by_model` / :func:`capacity_by_group` to read the inventory once."""
    return _device_loads(Device.objects.filter(removed_at__isnull=True))


def capacity_by_model(loads: dict[int, DeviceLoad] | None = None) -> list[CapacityRow]:
    """One row per device model with present devices, vendor then model order (two
    queries, none when ``loads`` from :func:`present_device_loads` is given)."""
    if loads is None:
        loads = present_device_loads()
    by_model: dict[tuple[str, str], list[DeviceLoad]] = {}
    for load in loads.values():
        by_model.setdefault((load.vendor, load.model), []).append(load)
    return [_row(model, vendor, loads) for (vendor, model), loads in sorted(by_model.items())]


def capacity_by_group(loads: dict[int, DeviceLoad] | None = None) -> list[CapacityRow]:
    """One row per resource group (its devices may overlap with another group's); one query
    plus one per group, and two more unless ``loads`` is given."""
    if loads is None:
        loads = present_device_loads()
    rows = []
    for group in ResourceGroup.objects.order_by("name"):
        ids = group_devices(group).values_list("id", flat=True)
        rows.append(_row(group.name, group.get_kind_display(),
                         (loads[pk] for pk in ids if pk in loads)))
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
    tenant_id: int = 0


def top_tenants(tenant_ids: set[int] | None, limit: int = 10) -> list[TenantUsageRow]:
    """Tenants by devices held (the ``devices`` charge of their bookings), largest first;
    one query. Only the given tenants (None = all) are returned, so a member never sees
    other tenants."""
    rows = _booked(Device.objects.all())
    if tenant_ids is not None:
        rows = rows.filter(placement__job__tenant_id__in=tenant_ids)
    acc: dict[tuple[int, str], list] = {}
    for tenant_id, tenant, job_id, model, dmem, dcores, mem, cores in rows.values_list(
        "placement__job__tenant_id", "placement__job__tenant__name", "placement__job_id",
        "device__model__name", "device__memory_mib", "device__cores_percent", "memory_mib",
        "cores_percent",
    ):
        entry = acc.setdefault((tenant_id, tenant), [0, 0, set()])
        entry[0] += booking_charges(model, dmem, dcores, mem, cores)[(model, "devices")]
        entry[1] += mem
        entry[2].add(job_id)
    out = [TenantUsageRow(name, milli / 1000.0, mem, len(jobs), tid)
           for (tid, name), (milli, mem, jobs) in acc.items()]
    out.sort(key=lambda r: (-r.devices, r.tenant))
    return out[:limit]
