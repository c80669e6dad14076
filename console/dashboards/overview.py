"""The overview page: capacity vs allocation by vendor, model and resource group, FGD
fragmentation, measured utilisation, jobs, queues and top tenants.

Nothing here reads the inventory device by device or the jobs row by row: the panels that
need all of them (capacity vs allocation per model and group, queue lengths, fragmentation of
the whole inventory or of the user's resource groups, measured utilisation) are the ones the
gauges beat task stored (:mod:`telemetry.services.panels`), and the rest are small
aggregates (jobs by state, pending jobs by cause, top tenants from the stored quota usage), so the
page's query count and time do not grow with the numbers of nodes, devices and jobs
(issue #14).
"""

from __future__ import annotations

from django.shortcuts import render

from console.dashboards import charts, trends
from console.dashboards.live import live_login_required, wants_fragment
from scheduling.selectors.allocation import CapacityRow, capacity_by_vendor
from scheduling.selectors.fragmentation import groups_for_tenants, report_from_json
from scheduling.selectors.overview import QueueLength, jobs_by_state, pending_groups, top_tenants
from telemetry.services.panels import ALL_KEY, CAPACITY_KEY, UTIL_KEY, read_panel, scope_key
from tenants.models import ResourceGroup
from tenants.selectors import get_visible_tenant_ids

STATE_COLOURS = {
    "queued": "#d97706",
    "admitted": "#0891b2",
    "running": "#16a34a",
    "succeeded": "#6b7280",
    "failed": "#dc2626",
    "cancelled": "#9ca3af",
    "stopped": "#a16207",
}
ALLOC_COLOUR = "#2563eb"
#: The job figures at the top of the overview: ``(state, label)``. ``admitted`` counts jobs
#: admitted whose pods are not running yet (scheduling.choices.JobState), not every job
#: ever admitted: a running job is counted under ``running`` only.
JOB_FIGURES = (
    ("queued", "queued jobs, waiting for admission"),
    ("admitted", "admitted jobs not running yet: devices reserved, pods starting"),
    ("running", "running jobs"),
)


def _capacity_chart(chart_id: str, rows, title: str) -> dict:
    """Allocated vs capacity, one row per model / group, each on its own scale (a small model
    is never a sliver beside a large one)."""
    return charts.bar_chart(
        chart_id,
        [r.label for r in rows],
        [
            charts.Series(
                "allocated",
                [round(r.allocated_devices, 2) for r in rows],
                kind="bar",
                colour=ALLOC_COLOUR,
            )
        ],
        title=title,
        unit="devices",
        capacity=[r.devices for r in rows],
        independent=True,
    )


def _fragmentation(request) -> dict:
    """FGD fragmentation by the rule of ``GET /api/fragmentation/``: a platform admin gets the
    whole inventory and the most fragmented nodes with their stranded devices; anyone else the
    union of the groups where their (visible) tenants have a quota or a queue, and no node
    detail. Read from the panels the gauges task stored (one query)."""
    if request.user.is_superuser:
        data, computed_at = read_panel(ALL_KEY)
        report = report_from_json(data)
        return {
            "frag": report,
            "frag_nodes": report.nodes,
            "frag_scope": "all nodes",
            "frag_at": computed_at,
        }
    groups = groups_for_tenants(get_visible_tenant_ids(request.user))
    data, computed_at = read_panel(scope_key(g.pk for g in groups))
    return {
        "frag": report_from_json(data),
        "frag_nodes": None,
        "frag_scope": "your resource groups",
        "frag_at": computed_at,
    }


def _charts(models, groups, jobs, tenants) -> dict:
    return {
        "model_chart": _capacity_chart(
            "model-capacity", models, "Allocated vs capacity per device model"
        ),
        "group_chart": _capacity_chart(
            "group-capacity", groups, "Allocated vs capacity per resource group"
        ),
        "jobs_chart": charts.donut(
            "jobs-donut",
            [(s, n, STATE_COLOURS[s]) for s, n in jobs.items()],
            title="Jobs by state",
            unit="jobs",
        ),
        "tenant_chart": charts.bar_chart(
            "tenant-devices",
            [t.tenant for t in tenants],
            [charts.Series("devices held", [round(t.devices, 2) for t in tenants], kind="bar")],
            title="Devices held per tenant",
            unit="devices",
        ),
    }


@live_login_required
def overview(request):
    """Capacity vs allocated by vendor, model and group; FGD fragmentation; queues; top
    tenants (module docstring: a fixed number of queries)."""
    tenant_ids = get_visible_tenant_ids(request.user)
    capacity, capacity_at = read_panel(CAPACITY_KEY)
    models = [CapacityRow(**r) for r in capacity["models"]]
    groups = [CapacityRow(**r) for r in capacity["groups"]]
    queues = [
        QueueLength(**q)
        for q in capacity["queues"]
        if tenant_ids is None or q["tenant_id"] in tenant_ids
    ]
    total_devices = sum(r.devices for r in models)
    allocated = sum(r.allocated_devices for r in models)
    jobs = jobs_by_state(tenant_ids)
    tenants = top_tenants(tenant_ids)
    context = {
        "vendors": capacity_by_vendor(models),
        "models": models,
        "groups": groups,
        **_fragmentation(request),
        "jobs": jobs,
        "job_figures": [(state, label, jobs[state]) for state, label in JOB_FIGURES],
        "pending_groups": pending_groups(tenant_ids),
        "queues": queues[:15],
        "capacity_at": capacity_at,
        "tenants": tenants,
        "total_devices": total_devices,
        "allocated_devices": allocated,
        "allocation_pct": 100.0 * allocated / total_devices if total_devices else 0.0,
        "scope": "all tenants" if tenant_ids is None else "your tenants",
        "group_ids": dict(ResourceGroup.objects.values_list("name", "pk")),
        "state_colours": STATE_COLOURS,
        "used": read_panel(UTIL_KEY)[0],
        **_charts(models, groups, jobs, tenants),
    }
    if wants_fragment(request):
        return render(request, "dashboards/_overview_live.html", context)
    range_key = charts.pick_range(request.GET.get("range"))
    start, end = trends.window(range_key)
    simulated = trends.simulated_inventory()
    context.update(
        {
            "range": range_key,
            "simulated": simulated,
            "trends": trends.scope_trend_charts("all", "", "overview", start, end, simulated),
        }
    )
    return render(request, "dashboards/overview.html", context)
