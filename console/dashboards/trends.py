"""Trend charts of the pages (overview, resource group, tenant, device) and the group page.

Every trend chart reads its series from the trend rollups
(:func:`telemetry.selectors.trend_series`: one query per page section) and is drawn by the
chart layer (:mod:`console.dashboards.charts`). Figures whose values come from the demo's
simulated devices carry the chart layer's "simulated data" badge.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import get_object_or_404, render
from django.utils import timezone

from console.dashboards.charts import RANGES, Axis, Mark, Series, bar_chart, pick_range, time_series
from scheduling.choices import Backend
from scheduling.models import Cluster, Queue
from scheduling.selectors.allocation import capacity_by_group, present_device_loads
from scheduling.selectors.calibration import annotate_calibration, calibration_of
from scheduling.selectors.capacity_planning import capacity_what_if, group_demand
from scheduling.selectors.consolidation import moves_in_window
from scheduling.selectors.demand import PresentModels
from scheduling.selectors.fragmentation import groups_for_tenants
from telemetry.selectors import device_health_history, device_utilisation, trend_series
from tenants.models import ResourceGroup, Tenant
from tenants.selectors import get_visible_tenant_ids

ALLOC, USED, CAPACITY, QUEUED, PENDING, WAIT = (
    "#2563eb",
    "#16a34a",
    "#667085",
    "#d97706",
    "#9333ea",
    "#0891b2",
)
#: Devices a what-if adds, per model (the capacity planning table's columns).
WHAT_IF_ADDED = (1, 4, 8)
SEVERITY = {"critical": "critical", "error": "critical", "warning": "warning"}


def window(range_key: str, now: datetime | None = None) -> tuple[datetime, datetime]:
    """``(start, end)`` of a range key of :data:`RANGES` ending now."""
    end = now or timezone.now()
    return end - RANGES[range_key], end


def simulated_inventory() -> bool:
    """True when any present cluster is simulated (its telemetry comes from the simulator)."""
    return Cluster.objects.filter(backend=Backend.SIMULATED).exists()


def _pts(points) -> list:
    return [(p.time, p.mean) for p in points]


def scope_trend_charts(
    scope: str, key: str, prefix: str, start: datetime, end: datetime, simulated: bool
) -> list[dict]:
    """Allocation vs utilisation vs capacity, queue depth and admission wait of one scope
    (``all`` / ``group``), one rollup query."""
    metrics = ("capacity", "allocated", "used", "queued", "pending", "wait_s")
    s = trend_series(scope, [key], metrics, start, end)
    alloc = time_series(
        f"{prefix}-alloc",
        [
            Series("allocated", _pts(s[(key, "allocated")]), kind="area", colour=ALLOC),
            Series("measured utilisation", _pts(s[(key, "used")]), colour=USED),
            Series("capacity", _pts(s[(key, "capacity")]), kind="dashed", colour=CAPACITY),
        ],
        title="Allocation vs utilisation vs capacity",
        axes=[Axis("devices")],
        start=start,
        end=end,
        simulated=simulated,
        note="Allocated: booked device shares; utilisation: measured busy share of the "
        "devices (device-equivalents); capacity: present devices.",
    )
    queue = time_series(
        f"{prefix}-queue",
        [
            Series("queued jobs", _pts(s[(key, "queued")]), kind="area", colour=QUEUED),
            Series("devices asked", _pts(s[(key, "pending")]), colour=PENDING, axis=1),
        ],
        title="Queue depth",
        axes=[Axis("jobs"), Axis("devices")],
        start=start,
        end=end,
    )
    waits = s[(key, "wait_s")]
    wait = time_series(
        f"{prefix}-wait",
        [
            Series(
                "min..max",
                [(p.time, p.minimum, p.maximum) for p in waits],
                kind="range",
                colour=WAIT,
            ),
            Series("mean wait", _pts(waits), colour=WAIT),
        ],
        title="Wait before admission",
        axes=[Axis("s", name="wait (s)")],
        start=start,
        end=end,
        note="Per bucket: jobs admitted in it, created → admitted.",
    )
    return [alloc, queue, wait]


def tenant_quota_charts(tenant: Tenant, start: datetime, end: datetime) -> list[dict]:
    """Usage against nominal ``devices`` quota over time, one chart per resource group where
    the tenant has a quota or a queue (one rollup query)."""
    groups = list(groups_for_tenants({tenant.pk}))
    keys = [f"{tenant.pk}:{g.pk}" for g in groups]
    s = trend_series("quota", keys, ("usage", "nominal"), start, end)
    return [
        time_series(
            f"quota-{g.pk}",
            [
                Series("usage", _pts(s[(k, "usage")]), kind="area", colour=ALLOC),
                Series("nominal quota", _pts(s[(k, "nominal")]), kind="dashed", colour=CAPACITY),
            ],
            title=f"{g.name}: devices used vs nominal quota",
            axes=[Axis("devices")],
            start=start,
            end=end,
            height=200,
        )
        for g, k in zip(groups, keys, strict=True)
    ]


DEVICE_METRICS = (
    ("util", "Utilisation", " %", 100.0),
    ("memory_used", "Memory used", "MiB", None),
    ("temperature", "Temperature", "°C", None),
    ("power", "Power", "W", None),
)


def device_charts(device, start: datetime | None = None, end: datetime | None = None) -> list[dict]:
    """Utilisation, memory, temperature and power of a device (mean line, min..max band)
    with its health events in the window marked on every chart."""
    end = end or timezone.now()
    start = start or end - timedelta(hours=6)
    history = device_health_history(device.uuid)
    marks = [
        Mark(e.time, e.kind, SEVERITY.get(e.severity, "info"))
        for e in (history.events if history else [])
        if start <= e.time <= end
    ]
    simulated = device.node.cluster.backend == Backend.SIMULATED
    out = []
    for metric, points in device_utilisation(device.pk, start, end).items():
        slug, title, unit, top = next(
            (m for m in DEVICE_METRICS if m[0] in metric), (metric, metric, "", None)
        )
        out.append(
            time_series(
                f"device-{slug.replace('_', '-')}",
                [
                    Series(
                        "min..max", [(p.time, p.minimum, p.maximum) for p in points], kind="range"
                    ),
                    Series(title.lower(), _pts(points)),
                ],
                title=title,
                axes=[Axis(unit, max=top)],
                start=start,
                end=end,
                marks=marks,
                simulated=simulated,
                height=200,
            )
        )
    return out


def _visible_group(request, pk: int) -> ResourceGroup:
    group = get_object_or_404(ResourceGroup, pk=pk)
    tenant_ids = get_visible_tenant_ids(request.user)
    if tenant_ids is not None and group not in groups_for_tenants(tenant_ids):
        raise Http404("No such resource group.")
    return group


def _planning(group: ResourceGroup, start: datetime, end: datetime) -> dict:
    models = PresentModels.present()
    demand = group_demand(group, start, end, models)
    names = sorted(m for m in models.vendor if not group.device_models or m in group.device_models)
    rows = [(m, [capacity_what_if(demand, m, n) for n in WHAT_IF_ADDED]) for m in names]
    cells = [w for _m, row in rows for w in row]
    chart = (
        bar_chart(
            "planning",
            [f"+{w.added} {w.model}" for w in cells],
            [
                Series(
                    "absorbed", [w.absorbed_device_hours for w in cells], kind="bar", colour=ALLOC
                )
            ],
            title="Waiting device-hours absorbed by added devices (upper bound; bar end = all "
            "that waited)",
            unit="device-h",
            capacity=[demand.pending_device_hours] * len(cells),
        )
        if cells and demand.pending_device_hours >= 0.01
        else None
    )
    return {"demand": demand, "what_if": rows, "added": WHAT_IF_ADDED, "planning": chart}


@login_required
def group_detail(request, pk: int):
    """A resource group: capacity now, trends over 6 h / 24 h / 7 d, tenants' quota use over
    time and capacity planning (tenant users: groups where their tenants have a quota or a
    queue; 404 otherwise)."""
    group = _visible_group(request, pk)
    range_key = pick_range(request.GET.get("range"))
    start, end = window(range_key)
    (row,) = capacity_by_group(present_device_loads(), [group])
    tenant_ids = get_visible_tenant_ids(request.user)
    tenants = list(Tenant.objects.filter(quotas__resource_group=group).distinct().order_by("name"))
    if tenant_ids is not None:
        tenants = [t for t in tenants if t.pk in tenant_ids]
    keys = [f"{t.pk}:{group.pk}" for t in tenants]
    usage = trend_series("quota", keys, ("usage",), start, end)
    tenant_chart = time_series(
        "group-tenants",
        [
            Series(t.name, _pts(usage[(k, "usage")]), kind="area", stack="use")
            for t, k in zip(tenants, keys, strict=True)
        ],
        title="Devices used per tenant (stacked)",
        axes=[Axis("devices")],
        start=start,
        end=end,
    )
    return render(
        request,
        "dashboards/group_detail.html",
        {
            "group": group,
            "row": row,
            "range": range_key,
            "trends": scope_trend_charts(
                "group", str(group.pk), "group", start, end, simulated_inventory()
            ),
            "tenant_chart": tenant_chart,
            "moves_last_hour": moves_in_window([group.pk], timezone.now()).get(group.pk, 0),
            **_planning(group, start, end),
            **_calibration(group, tenant_ids),
        },
    )


def _calibration(group: ResourceGroup, tenant_ids: set[int] | None) -> dict:
    """The group's queues the user may see with their start-estimate calibration (issue 30:
    share of started jobs that started inside the first window shown for them), one query,
    and its chart (``calibration_chart`` None while no job of them started after a window)."""
    queues = Queue.objects.filter(resource_group=group).select_related("tenant")
    if tenant_ids is not None:
        queues = queues.filter(tenant_id__in=tenant_ids)
    rows = [
        (str(q), calibration_of(q))
        for q in annotate_calibration(queues.order_by("tenant__name", "name"))
    ]
    shown = [(name, c) for name, c in rows if c.started]
    chart = None
    if shown:
        chart = bar_chart(
            "group-eta-calibration",
            [name for name, _ in shown],
            [
                Series(
                    "started inside its window",
                    [round(100 * (c.share or 0), 1) for _, c in shown],
                    kind="bar",
                    colour=USED,
                )
            ],
            title="Jobs that started inside their estimated window",
            unit="%",
            capacity=[100.0] * len(shown),
            note="Per queue: of the jobs that started after an estimate was shown, the share "
            "that started inside the first window shown for them.",
        )
    return {"calibration_rows": rows, "calibration_chart": chart}
