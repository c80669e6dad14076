"""A few hours of history for the built-in demo, so a fresh console's charts show hours of
data, not its first minutes (``manage.py seed_demo_history``, run by ``make run`` after
``seed_demo``; issue 30).

For the window ``[end - hours, end)``, ``end`` = now rounded down to 5 minutes, it writes what
the live demo would have written, from the demo's own inventory, queues and quotas
(:mod:`scheduling.services.demo`):

* **finished jobs** (``Job.source`` :data:`SOURCE`): per present demo device either whole-device
  jobs one after another or two lanes of slices (each at most half the card's memory and
  cores, so no device is ever overbooked), in a random queue of the device's resource group;
  each with its container, placement, device booking, job events and closed ledger interval
  (:func:`scheduling.services.usage.sync_ledger`); 90 % succeeded, the rest failed;
* **1-minute device rollups** (one value per minute): the simulator's numbers for these pods
  (:mod:`telemetry.synthetic`: pod util / memory per booking, device util, memory,
  temperature and power, attributed to the job when it alone held the device); the rollup
  task makes the hour rollups from them;
* **trend rollups** (5-minute and 1-hour buckets) of every series
  :func:`telemetry.services.trends.record_trends` writes (capacity, allocated, used, queued,
  pending, wait, tenant usage, nominal quota), one value per minute;
* the usage page's month rows of the months in the window
  (:func:`telemetry.services.usage_months.compute_month`).

Only the demo, only once: nothing is written unless the demo cluster (simulated, named
:data:`scheduling.services.demo.DEMO_CLUSTER`) exists, and nothing when jobs of
:data:`SOURCE` exist already (a second start changes nothing). Deterministic for a given
``end`` (seeded RNG).
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cached_property

from django.db import connection, transaction
from django.utils import timezone

from scheduling.accounting import booking_charges
from scheduling.choices import Backend, JobKind, JobState, PlacementState
from scheduling.models import Device, Job, JobContainer, JobEvent, Placement, PlacementDevice, Queue
from scheduling.services.demo import DEMO_CLUSTER
from scheduling.services.usage import sync_ledger
from telemetry.exporters import POD_MEM_USED, POD_UTIL, UTIL
from telemetry.models import Rollup, TrendRollup, TrendScope
from telemetry.selectors import TREND_COARSE_S, TREND_FINE_S
from telemetry.services.rollups import floor_time
from telemetry.services.usage_months import compute_month
from telemetry.synthetic import device_values, pod_values
from tenants.models import Quota, ResourceGroup

__all__ = ["SOURCE", "MAX_HOURS", "HistoryCounts", "seed_demo_history"]

#: ``Job.source`` of the history's jobs (the idempotence mark).
SOURCE = "demo-history"
#: Longest history: the retention of the 5-minute trend buckets and of the 1-minute rollups.
MAX_HOURS = 48
MINUTE = 60
_STATES = (PlacementState.SUCCEEDED,) * 9 + (PlacementState.FAILED,)
_NAMES = ("finetune", "eval", "pretrain", "embed", "sweep", "distill")


@dataclass(frozen=True)
class HistoryCounts:
    """What one call wrote: jobs, device rollups (1-minute rows), trend rollups (rows) and
    the hours covered (0 everywhere when nothing was written)."""

    jobs: int = 0
    rollups: int = 0
    trend_rollups: int = 0
    hours: float = 0.0


@dataclass(frozen=True)
class _Device:
    pk: int
    uuid: str
    node_id: int
    model: str
    vendor: str
    memory_mib: int
    cores_percent: int
    group_id: int


@dataclass
class _Run:
    """One finished single-pod job of the history on one device."""

    device: _Device
    queue: Queue
    name: str
    memory_mib: int
    cores_percent: int
    created: datetime
    admitted: datetime
    ended: datetime
    state: str
    job_id: int = 0
    placement_id: int = 0

    @property
    def started(self) -> datetime:
        return self.admitted + timedelta(seconds=3)

    @cached_property
    def share(self) -> float:
        """Allocated share of the device (:mod:`scheduling.selectors.allocation`'s rule)."""
        d = self.device
        return min(1.0, max(self.memory_mib / d.memory_mib, self.cores_percent / d.cores_percent))

    @cached_property
    def charge(self) -> float:
        """Quota charge in devices (:func:`scheduling.accounting.booking_charges`)."""
        d = self.device
        charges = booking_charges(
            d.model, d.memory_mib, d.cores_percent, self.memory_mib, self.cores_percent
        )
        return charges[(d.model, "devices")] / 1000


def seed_demo_history(hours: float = 6, *, now: datetime | None = None) -> HistoryCounts:
    """Write ``hours`` of demo history ending at ``now`` rounded down to 5 minutes (module
    docstring).

    Args:
        hours: length of the history, 0 < hours <= :data:`MAX_HOURS` (0 writes nothing).
        now: the present (default: now).

    Returns:
        :class:`HistoryCounts` of what was written (all 0 outside the demo or when the
        history exists).

    Raises:
        ValueError: ``hours`` negative or above :data:`MAX_HOURS`.
    """
    if not 0 <= hours <= MAX_HOURS:
        raise ValueError(f"hours must be between 0 and {MAX_HOURS}, got {hours}")
    end = floor_time(now or timezone.now(), TREND_FINE_S)
    start = floor_time(end - timedelta(hours=hours), MINUTE)
    with transaction.atomic():
        devices = _demo_devices()
        if not hours or not devices or Job.objects.filter(source=SOURCE).exists():
            return HistoryCounts()
        runs = _plan(devices, _queues_by_group(), start, end, random.Random(int(end.timestamp())))  # noqa: S311 - sample data
        _write_jobs(runs)
        rollups, util = _write_device_rollups(devices, runs, start, end)
        trend_rows = _write_trends(devices, runs, util, start, end)
        sync_ledger(end)
    for month in sorted({f"{t:%Y-%m}" for t in (start, end - timedelta(seconds=1))}):
        compute_month(month, end)
    return HistoryCounts(len(runs), rollups, trend_rows, (end - start).total_seconds() / 3600)


def _demo_devices() -> list[_Device]:
    """Present devices of the demo cluster that belong to a resource group (its model is
    one of the group's models), in pk order."""
    groups = {m: g.pk for g in ResourceGroup.objects.order_by("pk") for m in g.device_models}
    rows = Device.objects.filter(
        node__cluster__name=DEMO_CLUSTER,
        node__cluster__backend=Backend.SIMULATED,
        removed_at__isnull=True,
        node__removed_at__isnull=True,
    ).order_by("pk")
    return [
        _Device(pk, uuid, node, model, vendor, mem, cores, groups[model])
        for pk, uuid, node, model, vendor, mem, cores in rows.values_list(
            "pk", "uuid", "node_id", "model__name", "model__vendor", "memory_mib", "cores_percent"
        )
        if model in groups and mem and cores
    ]


def _queues_by_group() -> dict[int, list[Queue]]:
    out: dict[int, list[Queue]] = defaultdict(list)
    for queue in Queue.objects.order_by("pk"):
        out[queue.resource_group_id].append(queue)
    return out


def _plan(
    devices: list[_Device],
    queues: dict[int, list[Queue]],
    start: datetime,
    end: datetime,
    rng: random.Random,
) -> list[_Run]:
    """Jobs one after another on each device: one lane of whole-device jobs, or (half the
    devices) two lanes of slices of at most half the card each. Jobs run 15-100 minutes
    with gaps of up to 20; the last one of a lane ends before ``end``."""
    runs = []
    for d in devices:
        if not queues.get(d.group_id):
            continue
        whole = rng.random() < 0.5
        for _lane in range(1 if whole else 2):
            t = start + timedelta(minutes=rng.uniform(0, 30))
            while end - t >= timedelta(minutes=10):
                minutes = min(
                    rng.uniform(15, 100), (end - t).total_seconds() / 60 - rng.uniform(1, 5)
                )
                mem = (
                    d.memory_mib
                    if whole
                    else min(rng.choice((4096, 8192, 16384)), d.memory_mib // 2)
                )
                cores = d.cores_percent if whole else rng.choice((20, 30, 50))
                wait = rng.choice((2, 5, 10, 30, 60, 120, 420)) * rng.uniform(0.5, 1.5)
                queue = rng.choice(queues[d.group_id])
                runs.append(
                    _Run(
                        device=d,
                        queue=queue,
                        name=f"{rng.choice(_NAMES)}-{rng.randrange(10_000):04d}",
                        memory_mib=mem,
                        cores_percent=cores,
                        created=t - timedelta(seconds=wait),
                        admitted=t,
                        ended=t + timedelta(minutes=minutes),
                        state=rng.choice(_STATES),
                    )
                )
                t += timedelta(minutes=minutes + rng.uniform(0, 20))
    return runs


def _write_jobs(runs: list[_Run]) -> None:
    """Jobs, containers, placements, device bookings and events of ``runs`` (bulk inserts;
    ``created`` / event times set afterwards, since inserts stamp them with now)."""
    jobs = Job.objects.bulk_create(
        [
            Job(
                tenant_id=r.queue.tenant_id,
                queue=r.queue,
                name=r.name,
                state=r.state,
                cpu_milli=4000,
                host_memory_mib=16384,
                duration_s=round((r.ended - r.started).total_seconds()),
                source=SOURCE,
                kind=JobKind.BATCH,
                admitted_at=r.admitted,
                started_at=r.started,
                finished_at=r.ended,
            )
            for r in runs
        ]
    )
    for job, r in zip(jobs, runs, strict=True):
        r.job_id = job.pk
    _set_times(Job, "created", [(r.created, r.job_id) for r in runs])
    JobContainer.objects.bulk_create(
        JobContainer(
            job_id=r.job_id,
            name="main",
            vendor=r.device.vendor,
            device_count=1,
            device_memory_mib=r.memory_mib if r.cores_percent < r.device.cores_percent else 0,
            memory_percent=100 if r.cores_percent >= r.device.cores_percent else None,
            cores_percent=r.cores_percent,
            device_types=[r.device.model],
        )
        for r in runs
    )
    _write_placements(runs)
    _write_events(runs)


def _write_placements(runs: list[_Run]) -> None:
    """The placement and device booking of each run (one pod on one device)."""
    placements = Placement.objects.bulk_create(
        Placement(
            job_id=r.job_id,
            node_id=r.device.node_id,
            state=r.state,
            cpu_milli=4000,
            host_memory_mib=16384,
            backend_ref=f"{r.name}-{r.job_id}-0",
            submitted_at=r.admitted + timedelta(seconds=1),
            started_at=r.started,
            ended_at=r.ended,
        )
        for r in runs
    )
    for p, r in zip(placements, runs, strict=True):
        r.placement_id = p.pk
    _set_times(Placement, "created", [(r.admitted, r.placement_id) for r in runs])
    PlacementDevice.objects.bulk_create(
        PlacementDevice(
            placement_id=r.placement_id,
            device_id=r.device.pk,
            memory_mib=r.memory_mib,
            cores_percent=r.cores_percent,
        )
        for r in runs
    )


def _write_events(runs: list[_Run]) -> None:
    ends: dict[str, str] = {
        PlacementState.SUCCEEDED: "all pods succeeded",
        PlacementState.FAILED: "pod failed",
    }
    timeline = [
        (r.job_id, when, kind, message)
        for r in runs
        for when, kind, message in (
            (r.created, JobState.QUEUED, f"queued in {r.queue.name}"),
            (r.admitted, JobState.ADMITTED, f"admitted on {r.device.model}"),
            (r.started, JobState.RUNNING, "all pods running"),
            (r.ended, r.state, ends[r.state]),
        )
    ]
    events = JobEvent.objects.bulk_create(
        JobEvent(job_id=job, kind=kind, message=message) for job, _, kind, message in timeline
    )
    _set_times(
        JobEvent,
        "time",
        [(when, e.pk) for e, (_, when, _, _) in zip(events, timeline, strict=True)],
    )


def _set_times(model, column: str, pairs: list[tuple[datetime, int]]) -> None:
    """Set ``column`` of the rows ``[(time, pk)]`` (one pipelined statement per row; the
    inserts stamped auto_now_add columns with now)."""
    table, col = (connection.ops.quote_name(n) for n in (model._meta.db_table, column))
    with connection.cursor() as cursor:
        cursor.executemany(f"UPDATE {table} SET {col} = %s WHERE id = %s", pairs)  # noqa: S608


def _minutes(start: datetime, end: datetime):
    t = start
    while t < end:
        yield t
        t += timedelta(seconds=MINUTE)


def _holders(runs: list[_Run]) -> dict[int, list[_Run]]:
    by_device: dict[int, list[_Run]] = defaultdict(list)
    for r in runs:
        by_device[r.device.pk].append(r)
    return by_device


def _device_minute(d: _Device, holders: list[_Run], t: datetime) -> tuple[list, dict]:
    """Pod rows ``(metric, value, job, tenant)`` and the device values of one minute
    (the simulator's rule, :func:`telemetry.services.synthetic.synthetic_tick`)."""
    on = [r for r in holders if r.started <= t < r.ended]
    pods, loads = [], []
    for r in on:
        load = pod_values(
            r.placement_id, r.memory_mib, r.cores_percent, (t - r.started).total_seconds()
        )
        loads.append(load)
        pods.append((POD_UTIL, load.util_percent, r))
        pods.append((POD_MEM_USED, load.memory_used_mib, r))
    elapsed = (t - on[0].started).total_seconds() if on else t.timestamp()
    return pods, {"on": on, "values": device_values(loads, d.pk, elapsed)}


def _copy(model, columns: tuple[str, ...], rows: list[tuple]) -> int:
    """Insert ``rows`` (tuples of ``columns``) into ``model``'s table with one COPY (far
    faster than INSERTs for the ~100 000 rows of six hours). Returns the row count."""
    quote = connection.ops.quote_name
    sql = f"COPY {quote(model._meta.db_table)} ({', '.join(map(quote, columns))}) FROM STDIN"
    with connection.cursor() as cursor, cursor.cursor.copy(sql) as copy:
        for row in rows:
            copy.write_row(row)
    return len(rows)


def _write_device_rollups(
    devices: list[_Device], runs: list[_Run], start: datetime, end: datetime
) -> tuple[int, dict[tuple[int, datetime], float]]:
    """1-minute rollups of every demo device and history pod over ``[start, end)``, one
    value per minute, written with one COPY (the table's unique key holds: one row per
    minute, metric, device and job). Returns the rows written and each device's
    utilisation (percent) per minute."""
    holders = _holders(runs)
    util: dict[tuple[int, datetime], float] = {}
    rows: list[tuple] = []
    for d in devices:
        for t in _minutes(start, end):
            pods, dev = _device_minute(d, holders[d.pk], t)
            util[(d.pk, t)] = dev["values"][UTIL]
            only = dev["on"][0] if len(dev["on"]) == 1 else None
            values = [(m, v, r.job_id, r.queue.tenant_id) for m, v, r in pods]
            values += [
                (m, v, only.job_id, only.queue.tenant_id) if only else (m, v, None, None)
                for m, v in dev["values"].items()
            ]
            rows += [(MINUTE, t, m, d.pk, job, tenant, 1, v, v, v) for m, v, job, tenant in values]
    columns = ("resolution_s", "bucket", "metric", "device_id", "job_id", "tenant_id")
    written = _copy(Rollup, (*columns, "count", "total", "minimum", "maximum"), rows)
    return written, util


class _Buckets:
    """Trend buckets being built: per (resolution, bucket, scope, key, metric) the count,
    total, minimum and maximum of the values added (the trend rollup's fields)."""

    def __init__(self) -> None:
        self.acc: dict[tuple, list[float]] = {}

    def add(self, t: datetime, scope: str, key: str, metric: str, value: float) -> None:
        ts = int(t.timestamp())
        for resolution in (TREND_FINE_S, TREND_COARSE_S):
            k = (resolution, ts - ts % resolution, str(scope), key, metric)
            cell = self.acc.get(k)
            if cell is None:
                self.acc[k] = [1, value, value, value]
            else:
                cell[0] += 1
                cell[1] += value
                cell[2] = min(cell[2], value)
                cell[3] = max(cell[3], value)

    COLUMNS = (
        "resolution_s",
        "bucket",
        "scope",
        "key",
        "metric",
        "count",
        "total",
        "minimum",
        "maximum",
    )

    def rows(self) -> list[tuple]:
        """Rows of :attr:`COLUMNS`."""
        return [
            (
                res,
                datetime.fromtimestamp(bucket, tz=UTC),
                scope,
                key,
                metric,
                n,
                round(total, 4),
                round(lo, 4),
                round(hi, 4),
            )
            for (res, bucket, scope, key, metric), (n, total, lo, hi) in self.acc.items()
        ]


def _inventory_minute(devices, on_device, util, t) -> dict[tuple[str, str, str], float]:
    """Capacity, allocated and used devices per scope (all, vendor, model, group) at ``t``
    (what :func:`telemetry.services.trends.record_trends` records from the inventory)."""
    out: dict[tuple[str, str, str], float] = defaultdict(float)
    for d in devices:
        on = [r for r in on_device[d.pk] if r.started <= t < r.ended]
        mem, cores = sum(r.memory_mib for r in on), sum(r.cores_percent for r in on)
        share = min(1.0, max(mem / d.memory_mib, cores / d.cores_percent))
        for scope, key in (
            (TrendScope.ALL, ""),
            (TrendScope.VENDOR, d.vendor),
            (TrendScope.MODEL, d.model),
            (TrendScope.GROUP, str(d.group_id)),
        ):
            out[(scope, key, "capacity")] += 1
            out[(scope, key, "allocated")] += share
            out[(scope, key, "used")] += util[(d.pk, t)] / 100.0
    return out


def _demand_minute(runs: list[_Run], groups: list[int], nominal: dict, t: datetime):
    """Queued jobs and the devices they ask (all, per group); usage per tenant and per
    tenant in a group (quota charge, devices) and the nominal quota, at ``t``."""
    out: dict[tuple[str, str, str], float] = defaultdict(float)
    for scope, key in [(TrendScope.ALL, "")] + [(TrendScope.GROUP, str(g)) for g in groups]:
        out[(scope, key, "queued")] = 0
        out[(scope, key, "pending")] = 0.0
    for key, devices in nominal.items():
        out[(TrendScope.QUOTA, key, "nominal")] = devices
        out[(TrendScope.QUOTA, key, "usage")] = 0.0
        out[(TrendScope.TENANT, key.split(":")[0], "usage")] = 0.0
    for r in runs:
        group = str(r.device.group_id)
        if r.created <= t < r.admitted:
            for scope, key in ((TrendScope.ALL, ""), (TrendScope.GROUP, group)):
                out[(scope, key, "queued")] += 1
                out[(scope, key, "pending")] += r.share
        elif r.started <= t < r.ended:
            tenant = str(r.queue.tenant_id)
            out[(TrendScope.TENANT, tenant, "usage")] += r.charge
            out[(TrendScope.QUOTA, f"{tenant}:{group}", "usage")] += r.charge
    return out


def _write_trends(devices, runs, util, start: datetime, end: datetime) -> int:
    """Trend rollups of ``[start, end)``: the gauges once per minute, the admission waits
    once per job (one COPY). Returns the rows written."""
    nominal: dict[str, float] = defaultdict(float)
    for tid, gid, amount in Quota.objects.filter(dimension="devices").values_list(
        "tenant_id", "resource_group_id", "nominal"
    ):
        nominal[f"{tid}:{gid}"] += amount / 1000
    groups = list(ResourceGroup.objects.order_by("pk").values_list("pk", flat=True))
    on_device = _holders(runs)
    buckets = _Buckets()
    for t in _minutes(start, end):
        values = _inventory_minute(devices, on_device, util, t)
        values.update(_demand_minute(runs, groups, nominal, t))
        for (scope, key, metric), value in values.items():
            buckets.add(t, scope, key, metric, round(value, 4))
    for r in runs:
        if start <= r.admitted < end:
            wait = (r.admitted - r.created).total_seconds()
            for scope, key in ((TrendScope.ALL, ""), (TrendScope.GROUP, str(r.device.group_id))):
                buckets.add(r.admitted, scope, key, "wait_s", wait)
    return _copy(TrendRollup, _Buckets.COLUMNS, buckets.rows())
