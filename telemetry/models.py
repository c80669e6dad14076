"""Telemetry storage: scrape targets, samples and rollups, device health, prices, gauges.

Growth is bounded by retention (see :mod:`telemetry.conf`): raw samples are kept for
``TELEMETRY_RAW_RETENTION_S``, 1-minute rollups for ``TELEMETRY_MINUTE_RETENTION_S`` and 1-hour
rollups for ``TELEMETRY_HOUR_RETENTION_S``. Health events are keyed by the device serial / UUID
(the ``Device`` row keeps its uuid when a device moves to another node) and keep the node name
of the time, so the history survives moves.
"""

from __future__ import annotations

from django.core.validators import MinValueValidator
from django.db import models

from core.models import BaseModel
from telemetry.exporters import EXPORTER_KINDS


class ScrapeStatus(models.TextChoices):
    """Outcome of a target's last scrape."""

    NEVER = "never", "Never scraped"
    OK = "ok", "OK"
    PARTIAL = "partial", "Partial payload"
    BAD_PAYLOAD = "bad_payload", "Bad payload"
    HTTP_ERROR = "http_error", "HTTP error"
    TIMEOUT = "timeout", "Timed out"
    UNREACHABLE = "unreachable", "Unreachable"
    ERROR = "error", "Processing error"


class ScrapeTarget(BaseModel):
    """A Prometheus exposition endpoint of one cluster and its last scrape outcome.

    ``kind`` selects the metric table (:data:`telemetry.exporters.EXPORTER_KINDS`).
    Failures are recorded here and never stop other targets.
    """

    cluster = models.ForeignKey(
        "scheduling.Cluster", on_delete=models.CASCADE, related_name="scrape_targets"
    )
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=32, choices=[(k, k) for k in EXPORTER_KINDS])
    url = models.URLField(max_length=500)
    enabled = models.BooleanField(default=True)
    timeout_s = models.FloatField(default=5.0, validators=[MinValueValidator(0.1)])
    last_scrape_at = models.DateTimeField(null=True, blank=True)
    last_success_at = models.DateTimeField(null=True, blank=True)
    last_status = models.CharField(
        max_length=16, choices=ScrapeStatus.choices, default=ScrapeStatus.NEVER
    )
    last_error = models.TextField(blank=True)
    last_duration_ms = models.PositiveIntegerField(default=0)
    consecutive_failures = models.PositiveIntegerField(default=0)
    last_samples = models.PositiveIntegerField(default=0)
    last_rejected_lines = models.PositiveIntegerField(default=0)
    last_ignored = models.PositiveIntegerField(default=0)
    last_attributed = models.PositiveIntegerField(default=0)
    last_unattributed = models.JSONField(default=dict, blank=True)
    last_conflicts = models.PositiveIntegerField(default=0)
    last_node_mismatches = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["cluster__name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "name"], name="scrapetarget_unique_name")
        ]

    def __str__(self) -> str:
        return f"{self.cluster.name}/{self.name}"


class Sample(models.Model):
    """One raw observation, attributed (kept ``TELEMETRY_RAW_RETENTION_S``).

    ``status``: ``attributed`` (placement, job, tenant set), ``device`` (device only) or
    ``unattributed`` (``reason`` says why; ``device_key`` is what the exporter named).
    ``target`` is None for simulated samples.
    """

    time = models.DateTimeField(db_index=True)
    target = models.ForeignKey(ScrapeTarget, null=True, blank=True, on_delete=models.SET_NULL)
    metric = models.CharField(max_length=40)
    value = models.FloatField()
    status = models.CharField(max_length=16)
    reason = models.CharField(max_length=32, blank=True)
    device = models.ForeignKey(
        "scheduling.Device", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    device_key = models.CharField(max_length=128, blank=True)
    placement_id = models.BigIntegerField(null=True, blank=True)
    job = models.ForeignKey(
        "scheduling.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    tenant = models.ForeignKey(
        "tenants.Tenant", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        indexes = [models.Index(fields=["device", "metric", "time"])]

    def __str__(self) -> str:
        return f"{self.metric}={self.value:g} at {self.time:%H:%M:%S} ({self.status})"


class Rollup(models.Model):
    """Aggregate of samples over one bucket (``resolution_s`` 60 or 3600).

    Keyed by (resolution, bucket start, metric, device, job); ``job`` None = device-only
    samples. ``mean`` = ``total / count``.
    """

    resolution_s = models.PositiveIntegerField()
    bucket = models.DateTimeField()
    metric = models.CharField(max_length=40)
    device = models.ForeignKey(
        "scheduling.Device", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    job = models.ForeignKey(
        "scheduling.Job", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    tenant = models.ForeignKey(
        "tenants.Tenant", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    count = models.PositiveIntegerField()
    total = models.FloatField()
    minimum = models.FloatField()
    maximum = models.FloatField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["resolution_s", "bucket", "metric", "device", "job"],
                name="rollup_unique_bucket",
                nulls_distinct=False,
            )
        ]
        indexes = [
            models.Index(fields=["resolution_s", "device", "metric", "bucket"]),
            models.Index(fields=["resolution_s", "job", "bucket"]),
            models.Index(fields=["resolution_s", "bucket"]),
        ]

    def __str__(self) -> str:
        return f"{self.metric} {self.resolution_s}s {self.bucket:%Y-%m-%d %H:%M}"

    @property
    def mean(self) -> float:
        """Mean of the bucket's samples."""
        return self.total / self.count if self.count else 0.0


class RollupWatermark(models.Model):
    """Up to where (exclusive) each resolution has been rolled up."""

    resolution_s = models.PositiveIntegerField(unique=True)
    done_until = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.resolution_s}s until {self.done_until}"


class DeviceHealth(models.Model):
    """Current health verdict of one device as telemetry sees it (one row per serial)."""

    serial = models.CharField(max_length=128, unique=True)
    device = models.OneToOneField(
        "scheduling.Device",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="telemetry_health",
    )
    healthy = models.BooleanField(default=True)
    reasons = models.JSONField(default=dict, blank=True)
    counters = models.JSONField(default=dict, blank=True)
    changed_at = models.DateTimeField(null=True, blank=True)
    checked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.serial} {'healthy' if self.healthy else 'unhealthy'}"


class DeviceHealthEvent(models.Model):
    """An append-only change of a device's health, keyed by serial (kept across node moves)."""

    serial = models.CharField(max_length=128, db_index=True)
    device = models.ForeignKey(
        "scheduling.Device", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    node_name = models.CharField(max_length=253, blank=True)
    cluster_name = models.CharField(max_length=63, blank=True)
    time = models.DateTimeField()
    kind = models.CharField(max_length=32)
    severity = models.CharField(max_length=16)
    value = models.FloatField(default=0)
    message = models.TextField(blank=True)
    source = models.CharField(max_length=100, blank=True)

    class Meta:
        ordering = ["-time", "-id"]
        indexes = [models.Index(fields=["serial", "time"])]

    def __str__(self) -> str:
        return f"{self.serial} {self.kind} at {self.time:%Y-%m-%d %H:%M}"


class DevicePrice(BaseModel):
    """Price of one device-hour of a device model from ``effective_from`` on (admin-edited)."""

    model = models.ForeignKey(
        "scheduling.DeviceModel", on_delete=models.CASCADE, related_name="prices"
    )
    effective_from = models.DateTimeField()
    per_hour = models.DecimalField(
        max_digits=12, decimal_places=4, validators=[MinValueValidator(0)]
    )
    currency = models.CharField(max_length=3, default="USD")

    class Meta:
        ordering = ["model__name", "effective_from"]
        constraints = [
            models.UniqueConstraint(fields=["model", "effective_from"], name="price_unique_from")
        ]

    def __str__(self) -> str:
        return f"{self.model.name} {self.per_hour} {self.currency}/h from {self.effective_from}"


class GroupGauge(models.Model):
    """Latest computed gauges of one resource group (written by a beat task, read by /metrics).

    ``allocation_ratio``: booked cores / capacity cores of present devices (0..1).
    ``fragmentation_rate``: FGD fragment / idle milli-GPU (0..1) of the group's snapshot.
    ``healthy_milli``: healthy, uncordoned present devices × 1000. ``guaranteed_milli``: sum of
    the nominal ``devices`` quotas of the group.
    """

    resource_group = models.OneToOneField(
        "tenants.ResourceGroup", on_delete=models.CASCADE, related_name="telemetry_gauge"
    )
    capacity_milli = models.BigIntegerField(default=0)
    allocation_ratio = models.FloatField(default=0)
    fragmentation_rate = models.FloatField(default=0)
    fragment_milli = models.FloatField(default=0)
    healthy_milli = models.BigIntegerField(default=0)
    guaranteed_milli = models.BigIntegerField(default=0)
    computed_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"gauges of group {self.resource_group_id}"


class DashboardPanel(models.Model):
    """A dashboard aggregate computed by the gauges beat task and read by pages, so no page
    request measures the whole inventory (issue #14).

    ``key``: ``"fragmentation:all"`` (FGD report of the whole inventory with the most
    fragmented nodes), ``"fragmentation:groups:<ids>"`` (the union of these resource groups,
    comma-separated ids in ascending order, one per distinct scope of the users' visible
    tenants), ``"measured-util"`` (mean measured utilisation per device model and vendor,
    percent) or ``"capacity"`` (capacity vs allocation per device model and resource group,
    every queue's length). ``data``: JSON of the panel
    (:func:`scheduling.selectors.fragmentation.report_to_json` for the reports).
    """

    key = models.CharField(max_length=255, unique=True)
    data = models.JSONField(default=dict)
    computed_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.key} at {self.computed_at:%H:%M:%S}"


class UsageMonth(models.Model):
    """GPU-hours, memory GiB-hours, jobs and cost of one tenant on one device model in one
    month: the usage page's rows (``scheduling.selectors.usage_report.monthly_usage`` with
    the cost of ``telemetry.selectors.cost_report``), kept up to date by the rollup task
    (:mod:`telemetry.services.usage_months`) so the page reads them instead of every
    placement of the month. ``cost`` is None when no hour of the row has a price."""

    month = models.DateField()
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="+")
    model = models.CharField(max_length=100)
    vendor = models.CharField(max_length=64, blank=True)
    gpu_hours = models.FloatField(default=0)
    memory_gib_hours = models.FloatField(default=0)
    jobs = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(max_digits=18, decimal_places=2, null=True, blank=True)
    currency = models.CharField(max_length=3, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["month", "tenant", "model"], name="usagemonth_unique_row"
            )
        ]

    def __str__(self) -> str:
        return f"{self.month:%Y-%m} tenant {self.tenant_id} {self.model}"


class UsageMonthStatus(models.Model):
    """When the :class:`UsageMonth` rows of a month (first day) were computed; a month whose
    rows were computed before it ended is computed again by the next rollup."""

    month = models.DateField(unique=True)
    computed_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.month:%Y-%m} at {self.computed_at}"


class CapacityAlert(models.Model):
    """A resource group whose healthy capacity fell below the sum of its guarantees.

    ``flavor`` is ``"*"`` for the whole group or a device model name for a per-model quota.
    Open while ``resolved_at`` is None.
    """

    resource_group = models.ForeignKey(
        "tenants.ResourceGroup", on_delete=models.CASCADE, related_name="capacity_alerts"
    )
    flavor = models.CharField(max_length=100, default="*")
    opened_at = models.DateTimeField()
    resolved_at = models.DateTimeField(null=True, blank=True)
    healthy_milli = models.BigIntegerField()
    guaranteed_milli = models.BigIntegerField()
    message = models.TextField(blank=True)

    class Meta:
        ordering = ["-opened_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["resource_group", "flavor"],
                condition=models.Q(resolved_at__isnull=True),
                name="capacityalert_one_open",
            )
        ]

    def __str__(self) -> str:
        return self.message or f"alert {self.pk}"


class IdleJobFlag(models.Model):
    """A running job that has held its devices idle longer than the threshold."""

    job = models.OneToOneField("scheduling.Job", on_delete=models.CASCADE, related_name="+")
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="+")
    idle_since = models.DateTimeField()
    flagged_at = models.DateTimeField()
    used_cores_percent = models.FloatField(default=0)
    allocated_cores_percent = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["idle_since"]

    def __str__(self) -> str:
        return f"job {self.job_id} idle since {self.idle_since}"


class CycleStats(models.Model):
    """Cumulative admission-cycle figures per resource group (for /metrics across processes).

    ``buckets`` holds cumulative counts per histogram upper bound (seconds, as strings).
    """

    group_name = models.CharField(max_length=63, unique=True)
    cycles = models.PositiveBigIntegerField(default=0)
    duration_sum_s = models.FloatField(default=0)
    buckets = models.JSONField(default=dict)
    admitted = models.PositiveBigIntegerField(default=0)
    preempted = models.PositiveBigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.group_name}: {self.cycles} cycles"


class TrendScope(models.TextChoices):
    """What a :class:`TrendRollup` series is about (and how its ``key`` reads)."""

    ALL = "all", "Whole inventory (key empty)"
    GROUP = "group", "Resource group (key: group id)"
    VENDOR = "vendor", "Vendor (key: vendor name)"
    MODEL = "model", "Device model (key: model name)"
    TENANT = "tenant", "Tenant (key: tenant id)"
    QUOTA = "quota", "Tenant in a resource group (key: '<tenant id>:<group id>')"


class TrendRollup(models.Model):
    """One bucket of a console time series: the trends of the overview, group and tenant pages.

    Written by :mod:`telemetry.services.trends` at two resolutions (``resolution_s`` 300 and
    3600): each recorded value adds 1 to ``count`` and itself to ``total`` and widens
    ``minimum`` / ``maximum``, so ``mean = total / count``. Gauges (capacity, allocated, used,
    queued, pending demand, usage, nominal quota) are recorded by the gauges beat task every
    tick; admission waits (``wait_s``) once per admitted job. Metric units are in
    :data:`telemetry.services.trends.METRIC_UNITS`. Pruned after
    ``TELEMETRY_TREND_FINE_RETENTION_S`` / ``TELEMETRY_TREND_COARSE_RETENTION_S``.
    """

    resolution_s = models.PositiveIntegerField()
    bucket = models.DateTimeField()
    scope = models.CharField(max_length=8, choices=TrendScope.choices)
    key = models.CharField(max_length=128, blank=True)
    metric = models.CharField(max_length=24)
    count = models.PositiveIntegerField()
    total = models.FloatField()
    minimum = models.FloatField()
    maximum = models.FloatField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["resolution_s", "scope", "key", "metric", "bucket"],
                name="trendrollup_unique_bucket",
            )
        ]
        indexes = [models.Index(fields=["resolution_s", "bucket"])]

    def __str__(self) -> str:
        return f"{self.scope}:{self.key} {self.metric} {self.resolution_s}s {self.bucket:%H:%M}"

    @property
    def mean(self) -> float:
        """Mean of the bucket's values."""
        return self.total / self.count if self.count else 0.0
