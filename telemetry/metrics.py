"""The console's own Prometheus metrics, served by django_prometheus at ``/metrics``.

Figures are read from the database at scrape time (so the web process shows what the Celery
workers did, without prometheus_client multiprocess mode):

=================================================  =======  ======================================
metric                                             type     labels
=================================================  =======  ======================================
``console_queue_depth``                            gauge    resource_group, tenant (queued jobs)
``console_pending_jobs``                           gauge    resource_group, reason (category)
``console_admissions_total``                       counter  resource_group (``admitted`` events)
``console_preemptions_total``                      counter  resource_group (``preempted`` events)
``console_admission_cycle_duration_seconds``       hist.    resource_group (via record_cycle)
``console_allocation_ratio``                       gauge    resource_group (allocated/devices 0..1)
``console_capacity_devices``                       gauge    vendor, model (present devices)
``console_allocated_devices``                      gauge    vendor, model (allocated shares)
``console_fragmentation_rate``                     gauge    resource_group (FGD, 0..1)
``console_fragment_gpus``                          gauge    resource_group (FGD fragment, GPUs)
``console_healthy_capacity_gpus``                  gauge    resource_group
``console_guaranteed_gpus``                        gauge    resource_group (sum of nominal)
``console_unhealthy_devices``                      gauge    vendor, model
``console_scrape_target_up``                       gauge    cluster, target, kind
``console_unattributed_series``                    gauge    cluster, target, reason (last
                                                            scrape; ``mig_unmatched``: MIG series
                                                            no booking holds)
``console_idle_jobs``                              gauge    tenant
``console_unmatched_bookings``                     gauge    cluster, node (bookings on devices
                                                            the node no longer registers)
=================================================  =======  ======================================

Allocation (ratio per group, capacity and allocated devices per vendor and model) is read at
scrape time from :mod:`scheduling.selectors.allocation`, the selector of the overview, the
nodes list and the quotas page, so every place shows the same figure. The other per-group
gauges come from :class:`~telemetry.models.GroupGauge` rows written by the ``gauges_task``
beat task (fragmentation needs a snapshot, too costly per scrape).
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.db.models import Count
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import REGISTRY

from core.locks import lock_rows
from scheduling.models import Device, Job, JobEvent
from scheduling.selectors.allocation import (
    capacity_by_group,
    capacity_by_model,
    present_device_loads,
)
from scheduling.selectors.unmatched import unmatched_bookings_by_node
from telemetry.models import CycleStats, GroupGauge, IdleJobFlag, ScrapeTarget
from tenants.models import ResourceGroup
from tenants.selectors import budgets_of

logger = logging.getLogger(__name__)

CYCLE_BUCKETS_S = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
#: ``(GroupGauge field, metric name, help)``; ``*_milli`` fields are exported in GPUs.
GROUP_GAUGES = (
    (
        "fragmentation_rate",
        "console_fragmentation_rate",
        "FGD fragmentation rate of idle GPU (0..1).",
    ),
    ("fragment_milli", "console_fragment_gpus", "FGD fragment amount in GPUs."),
    ("healthy_milli", "console_healthy_capacity_gpus", "Healthy, uncordoned devices."),
    ("guaranteed_milli", "console_guaranteed_gpus", "Sum of nominal device quotas."),
)


def on_admission_cycle(sender, *, group_name, duration_s, admitted, preempted, **kwargs):
    """Receiver of ``scheduling.signals.admission_cycle_finished``: :func:`record_cycle`."""
    record_cycle(group_name, duration_s, admitted=admitted, preempted=preempted)


def reason_category(reason: str) -> str:
    """A bounded label for a free-text pending reason (see scheduling/services/cycle.py).

    Returns one of ``no_quota``, ``quota``, ``unschedulable``, ``strict_fifo``,
    ``conflict``, ``none`` or ``other``.
    """
    text = reason.strip().lower()
    if not text:
        return "none"
    if "has no quota" in text:
        return "no_quota"
    if "nominal" in text or "borrow" in text or "quota" in text:
        return "quota"
    if "nodes fit" in text or "no node" in text:
        return "unschedulable"
    if "strictfifo" in text:
        return "strict_fifo"
    if "conflict" in text or "changed" in text:
        return "conflict"
    return "other"


def record_cycle(group_name: str, duration_s: float, admitted: int = 0, preempted: int = 0):
    """Record one admission cycle (called by the cycle owner, any process).

    Args:
        group_name: the resource group's name.
        duration_s: wall time of the cycle, seconds.
        admitted: jobs admitted in the cycle.
        preempted: jobs preempted in the cycle.
    """
    with transaction.atomic():
        stats, _ = lock_rows(CycleStats).get_or_create(group_name=group_name)
        stats.cycles += 1
        stats.duration_sum_s += max(0.0, duration_s)
        stats.admitted += max(0, admitted)
        stats.preempted += max(0, preempted)
        buckets = dict(stats.buckets)
        for bound in CYCLE_BUCKETS_S:
            if duration_s <= bound:
                buckets[str(bound)] = buckets.get(str(bound), 0) + 1
        stats.buckets = buckets
        stats.save()


class ConsoleCollector:
    """prometheus_client custom collector reading the console's state (bounded queries)."""

    def describe(self):
        return []  # no describe-time DB access (registration happens at start-up)

    def collect(self):
        try:
            yield from _families()
        except Exception:  # noqa: BLE001 - /metrics must answer even when the DB does not
            logger.exception("console metrics collection failed")


def _families():
    """Every console metric family, read from the database at scrape time."""
    yield from _queue_families()
    yield from _event_families()
    yield from _cycle_histogram()
    yield from _allocation_families()
    yield from _group_gauges()
    yield from _health_families()
    yield from _budget_families()


def _budget_families():
    """Budget state per tenant, budget and user ("" = the whole tenant), in the budget's
    unit (issue 33; one query)."""
    labels = ["tenant", "budget", "user", "unit"]
    families = {
        field: GaugeMetricFamily(f"console_budget_{field}", text, labels=labels)
        for field, text in (
            ("amount", "Budget per period."),
            ("spent", "Spent in the current period (device-hours or money)."),
            ("committed", "What the running jobs commit until their runtime bound."),
            ("forecast", "Spent plus the current burn rate to the period's end."),
        )
    }
    for budget in budgets_of(None):
        key = [
            budget.tenant.name,
            budget.name,
            budget.user.username if budget.user else "",
            budget.unit,
        ]
        for field, family in families.items():
            family.add_metric(key, float(getattr(budget, field)))
    yield from families.values()


def _queue_families():
    """Queue depth per group and tenant; pending jobs per group and reason category."""
    depth = GaugeMetricFamily(
        "console_queue_depth",
        "Queued jobs per resource group and tenant.",
        labels=["resource_group", "tenant"],
    )
    pending: dict[tuple[str, str], int] = {}
    rows = (
        Job.objects.filter(state="queued")
        .values("queue__resource_group__name", "tenant__name", "pending_reason")
        .annotate(n=Count("id"))
    )
    per_tenant: dict[tuple[str, str], int] = {}
    for row in rows:
        group = row["queue__resource_group__name"]
        key = (group, row["tenant__name"])
        per_tenant[key] = per_tenant.get(key, 0) + row["n"]
        reason_key = (group, reason_category(row["pending_reason"]))
        pending[reason_key] = pending.get(reason_key, 0) + row["n"]
    for (group, tenant), n in sorted(per_tenant.items()):
        depth.add_metric([group, tenant], n)
    yield depth
    reasons = GaugeMetricFamily(
        "console_pending_jobs",
        "Queued jobs per resource group and pending-reason category.",
        labels=["resource_group", "reason"],
    )
    for (group, reason), n in sorted(pending.items()):
        reasons.add_metric([group, reason], n)
    yield reasons


def _event_families():
    """Admission and preemption counters per resource group."""
    events = (
        JobEvent.objects.filter(kind__in=["admitted", "preempted"])
        .values("job__queue__resource_group__name", "kind")
        .annotate(n=Count("id"))
    )
    admissions = CounterMetricFamily(
        "console_admissions", "Jobs admitted.", labels=["resource_group"]
    )
    preemptions = CounterMetricFamily(
        "console_preemptions", "Jobs preempted.", labels=["resource_group"]
    )
    for row in sorted(events, key=lambda r: (r["kind"], r["job__queue__resource_group__name"])):
        target = admissions if row["kind"] == "admitted" else preemptions
        target.add_metric([row["job__queue__resource_group__name"]], row["n"])
    yield admissions
    yield preemptions


def _cycle_histogram():
    """Admission cycle wall time per resource group (stored buckets)."""
    hist = HistogramMetricFamily(
        "console_admission_cycle_duration_seconds",
        "Admission cycle wall time.",
        labels=["resource_group"],
    )
    for stats in CycleStats.objects.order_by("group_name"):
        cumulative = [(str(b), float(stats.buckets.get(str(b), 0))) for b in CYCLE_BUCKETS_S] + [
            ("+Inf", float(stats.cycles))
        ]
        hist.add_metric([stats.group_name], cumulative, stats.duration_sum_s)
    yield hist


def _group_gauges():
    """Per resource group gauges (GROUP_GAUGES); milli values in whole units."""
    groups = dict(ResourceGroup.objects.values_list("pk", "name"))
    gauges = {
        field: GaugeMetricFamily(name, help_text, labels=["resource_group"])
        for field, name, help_text in GROUP_GAUGES
    }
    for gauge in GroupGauge.objects.all():
        name = groups.get(gauge.resource_group_id)
        if name is None:
            continue
        for field, family in gauges.items():
            value = getattr(gauge, field)
            if field.endswith("milli"):
                value = value / 1000.0
            family.add_metric([name], value)
    yield from gauges.values()


def _health_families():
    """Unhealthy devices, scrape target status, unmatched bookings and idle-job flags."""
    unhealthy = GaugeMetricFamily(
        "console_unhealthy_devices", "Present devices marked unhealthy.", labels=["vendor", "model"]
    )
    for row in (
        Device.objects.filter(removed_at__isnull=True, healthy=False)
        .values("model__vendor", "model__name")
        .annotate(n=Count("id"))
        .order_by("model__vendor", "model__name")
    ):
        unhealthy.add_metric([row["model__vendor"], row["model__name"]], row["n"])
    yield unhealthy

    up = GaugeMetricFamily(
        "console_scrape_target_up",
        "1 when the target's last scrape got usable samples.",
        labels=["cluster", "target", "kind"],
    )
    unattributed = GaugeMetricFamily(
        "console_unattributed_series",
        "Samples of the target's last scrape attributed to no placement, by reason "
        "(mig_unmatched: a MIG instance no booking of the console holds).",
        labels=["cluster", "target", "reason"],
    )
    for target in ScrapeTarget.objects.filter(enabled=True).select_related("cluster"):
        ok = 1 if target.last_status in ("ok", "partial") else 0
        up.add_metric([target.cluster.name, target.name, target.kind], ok)
        counts = target.last_unattributed if isinstance(target.last_unattributed, dict) else {}
        for reason, n in sorted(counts.items()):
            unattributed.add_metric([target.cluster.name, target.name, str(reason)], n)
    yield up
    yield unattributed

    unmatched = GaugeMetricFamily(
        "console_unmatched_bookings",
        "Booked placements holding devices their node no longer registers (the node takes "
        "nothing new until they end or are rebound).",
        labels=["cluster", "node"],
    )
    for row in unmatched_bookings_by_node():
        unmatched.add_metric([row.cluster, row.node], row.bookings)
    yield unmatched

    idle = GaugeMetricFamily("console_idle_jobs", "Jobs flagged idle.", labels=["tenant"])
    for row in (
        IdleJobFlag.objects.values("tenant__name").annotate(n=Count("id")).order_by("tenant__name")
    ):
        idle.add_metric([row["tenant__name"]], row["n"])
    yield idle


def _allocation_families():
    """Allocation per group, vendor and model from the allocation selector (three queries)."""
    loads = present_device_loads()
    ratio = GaugeMetricFamily(
        "console_allocation_ratio",
        "Allocated device shares / present devices of the group (0..1); a device's share is "
        "the larger of its booked memory and cores shares.",
        labels=["resource_group"],
    )
    for row in capacity_by_group(loads):
        ratio.add_metric([row.label], row.allocation_ratio)
    yield ratio
    capacity = GaugeMetricFamily(
        "console_capacity_devices", "Present devices.", labels=["vendor", "model"]
    )
    allocated = GaugeMetricFamily(
        "console_allocated_devices",
        "Allocated device shares (devices).",
        labels=["vendor", "model"],
    )
    for row in capacity_by_model(loads):
        capacity.add_metric([row.vendor, row.label], row.devices)
        allocated.add_metric([row.vendor, row.label], row.allocated_devices)
    yield capacity
    yield allocated


_registered: ConsoleCollector | None = None


def register_collector() -> None:
    """Register :class:`ConsoleCollector` once in the default registry (idempotent)."""
    global _registered
    if _registered is not None:
        return
    collector = ConsoleCollector()
    REGISTRY.register(collector)
    _registered = collector
