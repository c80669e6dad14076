"""Aggregates for the overview dashboard (a fixed number of queries per resource group)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Sum

from scheduling.choices import BOOKED_PLACEMENT_STATES, JobState
from scheduling.models import Device, Job, PlacementDevice
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
