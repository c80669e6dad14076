"""Trend rollups: the console's own time series (overview, group and tenant pages).

Each gauges tick (:func:`record_trends`, called by ``gauges_task``) folds the present value of
every series into its 5-minute and 1-hour :class:`~telemetry.models.TrendRollup` bucket in one
``INSERT .. ON CONFLICT DO UPDATE`` per resolution (count + 1, total + value, min, max), so a
bucket's mean is the mean of the ticks that fell in it. Admission waits are different: they
are events, not gauges; :func:`record_trends` rebuilds the ``wait_s`` buckets of the current
and the previous fine / coarse bucket from the jobs admitted in them (one value per job), so a
repeated tick never counts a job twice.

Series (scope, key, metric; units in :data:`METRIC_UNITS`):

=========================  ==============================  ====================================
scope / key                metrics                         source
=========================  ==============================  ====================================
all / ""                   capacity, allocated, used,      :mod:`scheduling.selectors.allocation`
vendor / vendor name       (devices); queued (jobs),       (the overview's figures), measured
model / model name         pending (devices asked by       utilisation (newest minute, util % /
group / group id           queued jobs), wait_s            100 per device), queued jobs
tenant / tenant id         usage (devices, quota charge)   live bookings (quota charge)
quota / "<tenant>:<group>" usage, nominal (devices)        quota board rule (``devices`` rows)
=========================  ==============================  ====================================

Pruned after ``TELEMETRY_TREND_FINE_RETENTION_S`` / ``TELEMETRY_TREND_COARSE_RETENTION_S``.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.db.models import Count, DurationField, ExpressionWrapper, F, Max, Min, Sum
from django.utils import timezone

from scheduling.accounting import booking_charges
from scheduling.choices import BOOKED_PLACEMENT_STATES, JobState
from scheduling.models import Job, PlacementDevice
from scheduling.selectors.allocation import (
    capacity_by_group,
    capacity_by_model,
    capacity_by_vendor,
    in_group,
    present_device_loads,
)
from scheduling.selectors.demand import job_demands
from telemetry import conf
from telemetry.exporters import UTIL
from telemetry.models import TrendRollup, TrendScope
from telemetry.selectors import TREND_COARSE_S as COARSE_S
from telemetry.selectors import TREND_FINE_S as FINE_S
from telemetry.selectors import latest_device_values
from telemetry.services.rollups import floor_time
from tenants.models import Quota, ResourceGroup

__all__ = ["FINE_S", "COARSE_S", "METRIC_UNITS", "record_trends", "prune_trends"]

RESOLUTIONS = (FINE_S, COARSE_S)
#: Unit of each trend metric (axis labels of the trend charts).
METRIC_UNITS = {
    "capacity": "devices",
    "allocated": "devices",
    "used": "devices",
    "pending": "devices",
    "queued": "jobs",
    "wait_s": "s",
    "usage": "devices",
    "nominal": "devices",
}

Values = dict[tuple[str, str, str], float]

_UPSERT = f"""
INSERT INTO {TrendRollup._meta.db_table}
    (resolution_s, bucket, scope, key, metric, count, total, minimum, maximum)
VALUES (%s, %s, %s, %s, %s, 1, %s, %s, %s)
ON CONFLICT (resolution_s, scope, key, metric, bucket) DO UPDATE SET
    count = {TrendRollup._meta.db_table}.count + 1,
    total = {TrendRollup._meta.db_table}.total + EXCLUDED.total,
    minimum = LEAST({TrendRollup._meta.db_table}.minimum, EXCLUDED.minimum),
    maximum = GREATEST({TrendRollup._meta.db_table}.maximum, EXCLUDED.maximum)
"""  # noqa: S608 - only the model's own table name is interpolated; values are parameters


def _inventory_values(loads, now: datetime) -> Values:
    """Capacity / allocated / used per scope all, vendor, model and group."""
    out: Values = {}
    util = latest_device_values(loads, now=now)
    used_by_device = {pk: v[UTIL] / 100.0 for pk, v in util.items() if UTIL in v}
    models = capacity_by_model(loads)
    groups = list(ResourceGroup.objects.order_by("pk"))
    scoped = [(TrendScope.MODEL, r.label, r) for r in models]
    scoped += [(TrendScope.VENDOR, r.label, r) for r in capacity_by_vendor(models)]
    scoped += [
        (TrendScope.GROUP, str(g.pk), r)
        for g, r in zip(
            sorted(groups, key=lambda g: g.name), capacity_by_group(loads, groups), strict=True
        )
    ]
    for scope, key, row in scoped:
        out[(scope, key, "capacity")] = row.devices
        out[(scope, key, "allocated")] = row.allocated_devices
    out[(TrendScope.ALL, "", "capacity")] = sum(r.devices for r in models)
    out[(TrendScope.ALL, "", "allocated")] = round(sum(r.allocated_devices for r in models), 4)
    used: dict[tuple[str, str], float] = defaultdict(float)
    for pk, load in loads.items():
        value = used_by_device.get(pk, 0.0)
        used[(TrendScope.ALL, "")] += value
        used[(TrendScope.VENDOR, load.vendor)] += value
        used[(TrendScope.MODEL, load.model)] += value
        for g in groups:
            if in_group(load, g):
                used[(TrendScope.GROUP, str(g.pk))] += value
    for out_scope, out_key, metric in list(out):
        if metric == "capacity":
            out[(out_scope, out_key, "used")] = round(used.get((out_scope, out_key), 0.0), 4)
    return out


def _queue_values() -> Values:
    """Queued jobs and the devices they ask, per group and in all."""
    out: Values = defaultdict(float)
    out[(TrendScope.ALL, "", "queued")] = 0
    out[(TrendScope.ALL, "", "pending")] = 0.0
    for g in ResourceGroup.objects.values_list("pk", flat=True):
        out[(TrendScope.GROUP, str(g), "queued")] = 0
        out[(TrendScope.GROUP, str(g), "pending")] = 0.0
    for d in job_demands(Job.objects.filter(state=JobState.QUEUED).order_by("pk")):
        for scope, key in ((TrendScope.ALL, ""), (TrendScope.GROUP, str(d.group_id))):
            out[(scope, key, "queued")] += 1
            out[(scope, key, "pending")] += round(d.devices, 4)
    return dict(out)


def _tenant_values() -> Values:
    """Usage (devices quota charge) per tenant and per tenant in a group; nominal
    ``devices`` quota per tenant in a group (every flavor summed)."""
    out: Values = defaultdict(float)
    for gid, tid, flavor, dmem, dcores, mem, cores in PlacementDevice.objects.filter(
        placement__state__in=BOOKED_PLACEMENT_STATES
    ).values_list(
        "placement__job__queue__resource_group_id",
        "placement__job__tenant_id",
        "device__model__name",
        "device__memory_mib",
        "device__cores_percent",
        "memory_mib",
        "cores_percent",
    ):
        milli = booking_charges(flavor, dmem, dcores, mem, cores)[(flavor, "devices")]
        out[(TrendScope.TENANT, str(tid), "usage")] += milli / 1000
        out[(TrendScope.QUOTA, f"{tid}:{gid}", "usage")] += milli / 1000
    for tid, gid, nominal in Quota.objects.filter(dimension="devices").values_list(
        "tenant_id", "resource_group_id", "nominal"
    ):
        out[(TrendScope.QUOTA, f"{tid}:{gid}", "nominal")] += nominal / 1000
        out.setdefault((TrendScope.QUOTA, f"{tid}:{gid}", "usage"), 0.0)
        out.setdefault((TrendScope.TENANT, str(tid), "usage"), 0.0)
    return dict(out)


def _rebuild_waits(resolution_s: int, start: datetime, end: datetime) -> int:
    """Replace the ``wait_s`` buckets of ``[start, end)`` from the jobs admitted in it."""
    wait = ExpressionWrapper(F("admitted_at") - F("created"), output_field=DurationField())
    jobs = Job.objects.filter(admitted_at__gte=start, admitted_at__lt=end).annotate(w=wait)
    rows = []
    for b in range(int(start.timestamp()), int(end.timestamp()), resolution_s):
        bucket = datetime.fromtimestamp(b, tz=start.tzinfo)
        in_bucket = jobs.filter(
            admitted_at__gte=bucket, admitted_at__lt=bucket + timedelta(seconds=resolution_s)
        )
        for scope, key, agg in [
            (
                TrendScope.ALL,
                "",
                in_bucket.aggregate(n=Count("pk"), s=Sum("w"), lo=Min("w"), hi=Max("w")),
            )
        ] + [
            (TrendScope.GROUP, str(r["queue__resource_group_id"]), r)
            for r in in_bucket.values("queue__resource_group_id")
            .annotate(n=Count("pk"), s=Sum("w"), lo=Min("w"), hi=Max("w"))
            .order_by()
        ]:
            if agg["n"]:
                rows.append(
                    TrendRollup(
                        resolution_s=resolution_s,
                        bucket=bucket,
                        scope=scope,
                        key=key,
                        metric="wait_s",
                        count=agg["n"],
                        total=agg["s"].total_seconds(),
                        minimum=agg["lo"].total_seconds(),
                        maximum=agg["hi"].total_seconds(),
                    )
                )
    TrendRollup.objects.filter(
        resolution_s=resolution_s, metric="wait_s", bucket__gte=start, bucket__lt=end
    ).delete()
    TrendRollup.objects.bulk_create(rows)
    return len(rows)


def record_trends(*, now: datetime | None = None) -> int:
    """Fold the present values into their buckets (module docstring); returns the number of
    series values recorded. Also prunes expired buckets."""
    now = now or timezone.now()
    values: Values = {}
    values.update(_inventory_values(present_device_loads(), now))
    values.update(_queue_values())
    values.update(_tenant_values())
    with transaction.atomic(), connection.cursor() as cursor:
        for resolution in RESOLUTIONS:
            bucket = floor_time(now, resolution)
            cursor.executemany(
                _UPSERT,
                [
                    (resolution, bucket, str(scope), key, metric, float(v), float(v), float(v))
                    for (scope, key, metric), v in values.items()
                ],
            )
            _rebuild_waits(
                resolution,
                bucket - timedelta(seconds=resolution),
                bucket + timedelta(seconds=resolution),
            )
    prune_trends(now=now)
    return len(values)


def prune_trends(*, now: datetime | None = None) -> int:
    """Delete buckets older than the retention of their resolution; returns rows deleted."""
    now = now or timezone.now()
    deleted = 0
    for resolution, setting in (
        (FINE_S, "TELEMETRY_TREND_FINE_RETENTION_S"),
        (COARSE_S, "TELEMETRY_TREND_COARSE_RETENTION_S"),
    ):
        deleted += TrendRollup.objects.filter(
            resolution_s=resolution, bucket__lt=now - timedelta(seconds=conf.get(setting))
        ).delete()[0]
    return deleted
