"""Quotas (nominal quota, borrowing and lending limits per flavor), aggregate caps, stored
usage and the usage ledger."""

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models

from core.models import BaseModel
from tenants.choices import Dimension
from tenants.models.groups import ResourceGroup
from tenants.models.tenancy import ANY_FLAVOR, Tenant, slug_validator

# PostgreSQL bigint: the largest quota amount (nominal, borrowing or lending limit) the
# database stores; the quota services refuse more, so every writer (API, pages) shares it.
MAX_QUOTA_AMOUNT = 2**63 - 1


class Quota(BaseModel):
    """Nominal quota of one tenant × resource group × flavor × dimension (Kueue semantics).

    ``nominal`` is in the dimension's unit (milli-devices, MiB, percent of a device).
    ``borrowing_limit``: how much above nominal the tenant may borrow from the cohort
    (``None`` = unlimited). ``lending_limit``: how much of the unused nominal may be lent
    (``None`` = all of it). An exclusive group neither lends nor borrows.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="quotas")
    resource_group = models.ForeignKey(
        ResourceGroup, on_delete=models.CASCADE, related_name="quotas"
    )
    flavor = models.CharField(max_length=100, default=ANY_FLAVOR)
    dimension = models.CharField(max_length=16, choices=Dimension.choices)
    nominal = models.BigIntegerField(validators=[MinValueValidator(0)])
    borrowing_limit = models.BigIntegerField(
        null=True, blank=True, validators=[MinValueValidator(0)]
    )
    lending_limit = models.BigIntegerField(null=True, blank=True, validators=[MinValueValidator(0)])

    class Meta:
        ordering = ["tenant__name", "resource_group__name", "flavor", "dimension"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "resource_group", "flavor", "dimension"],
                name="quota_unique_tenant_group_flavor_dimension",
            )
        ]

    def __str__(self) -> str:
        return f"{self.tenant}/{self.resource_group}/{self.flavor}/{self.dimension}={self.nominal}"

    def clean(self) -> None:
        if self.lending_limit is not None and self.lending_limit > self.nominal:
            raise ValidationError({"lending_limit": "Must not exceed nominal."})


class AggregateCap(BaseModel):
    """A hard cap on a tenant's total usage (own + descendants) in one resource group and one
    dimension, over a set of flavors (a model family) or over every flavor (``flavors`` empty:
    a per-tenant cap). Borrowed usage counts too.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="caps")
    resource_group = models.ForeignKey(ResourceGroup, on_delete=models.CASCADE, related_name="caps")
    name = models.CharField(max_length=63, validators=[slug_validator])
    dimension = models.CharField(max_length=16, choices=Dimension.choices)
    limit = models.BigIntegerField(validators=[MinValueValidator(0)])
    flavors = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["tenant__name", "resource_group__name", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "resource_group", "name"], name="cap_unique_tenant_group_name"
            )
        ]

    def __str__(self) -> str:
        return f"{self.tenant}/{self.resource_group}/{self.name}<={self.limit} {self.dimension}"

    def clean(self) -> None:
        if not isinstance(self.flavors, list) or not all(
            isinstance(f, str) and f for f in self.flavors
        ):
            raise ValidationError({"flavors": "A list of flavor names (empty = every flavor)."})


class QuotaUsage(models.Model):
    """Stored usage of one tenant × resource group × flavor × dimension (own jobs only).

    Changed only by ``tenants.services.apply_usage_deltas`` (admission commit, preemption,
    settlement of released placements) and ``replace_usage`` (drift repair), rows locked in
    (tenant, group, flavor, dimension) order. It must always equal the
    sum of the charges of the tenant's live placements; ``scheduling.services.usage`` checks
    that and reports any drift.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="usage")
    resource_group = models.ForeignKey(
        ResourceGroup, on_delete=models.CASCADE, related_name="usage"
    )
    flavor = models.CharField(max_length=100)
    dimension = models.CharField(max_length=16, choices=Dimension.choices)
    amount = models.BigIntegerField(default=0)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["tenant_id", "resource_group_id", "flavor", "dimension"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "resource_group", "flavor", "dimension"],
                name="usage_unique_tenant_group_flavor_dimension",
            )
        ]

    def __str__(self) -> str:
        return f"{self.tenant_id}/{self.resource_group_id}/{self.flavor}/{self.dimension}"


class LedgerInterval(models.Model):
    """One immutable allocation interval: a job of a tenant held a share of one device from
    ``start`` to ``end`` (open while ``end`` is null; closed once, never changed again).

    Amounts: ``devices_milli`` (dominant share of the device, 1000 = whole), ``memory_mib``,
    ``cores_percent``. ``placement_id``/``job_id`` and ``device_uuid`` are plain values, so the
    history survives deleted jobs and devices. GPU-hours = devices_milli / 1000 × hours.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="ledger")
    resource_group_id = models.BigIntegerField(null=True, blank=True)
    job_id = models.BigIntegerField(db_index=True)
    placement_id = models.BigIntegerField()
    device_uuid = models.CharField(max_length=128)
    device_model = models.CharField(max_length=100)
    flavor = models.CharField(max_length=100)
    devices_milli = models.PositiveIntegerField()
    memory_mib = models.PositiveIntegerField()
    cores_percent = models.PositiveIntegerField()
    start = models.DateTimeField()
    end = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["start", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["placement_id", "device_uuid"], name="ledger_unique_placement_device"
            ),
            models.CheckConstraint(
                condition=models.Q(end__isnull=True) | models.Q(end__gte=models.F("start")),
                name="ledger_end_after_start",
            ),
        ]
        indexes = [models.Index(fields=["tenant", "start"])]

    def __str__(self) -> str:
        return f"{self.tenant_id} job {self.job_id} on {self.device_uuid} from {self.start}"

    def save(self, *args, **kwargs):
        """Insert only: an interval is written once (open) and closed through
        ``tenants.services.close_ledger_intervals`` (a conditional UPDATE on ``end IS NULL``)."""
        if self.pk is not None:
            raise ValidationError("ledger intervals are immutable")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ValidationError("ledger intervals are immutable")
