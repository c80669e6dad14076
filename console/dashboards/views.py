"""Dashboard pages (server-rendered, login required, tenant-scoped).

Every page reads through selectors and writes through services. A tenant user only ever sees
their own tenants' jobs, names and usage; another tenant's object answers 404 and another
tenant's slices on a device are drawn as "other tenant".
"""

from __future__ import annotations

import csv
from datetime import timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Prefetch
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.functional import cached_property
from django.views.decorators.http import require_POST
from rest_framework.authtoken.models import Token

from console.dashboards import charts, trends
from console.dashboards.filter_choices import job_filter_selects
from console.dashboards.forms import JobSubmitForm
from console.dashboards.job_kind_views import can_resume, can_stop, workload_context
from console.dashboards.live import live_login_required, wants_fragment
from console.dashboards.overview import STATE_COLOURS
from core.exceptions import DomainError, NeverFits
from core.filtersets import AuditFilterSet
from core.models import AuditEntry
from core.tokens import replace_api_token
from scheduling.choices import Backend, JobState
from scheduling.filtersets import JobFilterSet, NodeFilterSet
from scheduling.models import Device, Node, Placement, PlacementDevice
from scheduling.selectors.access import submit_queues, submit_refusal, visible_jobs
from scheduling.selectors.allocation import capacity_by_node
from scheduling.selectors.card_map import PALETTE, device_history, node_card_map, node_list
from scheduling.selectors.job_board import queue_slots
from scheduling.selectors.job_timeline import job_timeline, polls_live
from scheduling.selectors.preemptions import preemption_as_seen
from scheduling.selectors.quota_board import quota_board
from scheduling.selectors.usage_report import month_bounds, recent_months
from scheduling.selectors.user_limits import budget_period
from scheduling.services.consolidation_preview import preview_for
from scheduling.services.cordons import cordon_device, uncordon_device
from scheduling.services.job_kinds import cancel_any_job, service_statuses, submit_job
from telemetry.selectors import device_health_history, node_utilisation, unmatched_mig_series
from telemetry.services.usage_months import read_month
from tenants.models import Tenant
from tenants.selectors import (
    Access,
    action_refusal,
    budgets_of,
    get_roles,
    get_user_tenant_ids,
    get_visible_tenant_ids,
    tenant_access,
)

PAGE_SIZE = 50


class _Paginator(Paginator):
    """Counts the distinct primary keys of the list: a filter set's ``DISTINCT`` (a
    multiple-choice filter) otherwise counts distinct whole rows, five times slower on
    200,000 jobs."""

    @cached_property
    def count(self) -> int:
        return self.object_list.order_by().values("pk").distinct().count()


def _scope(request) -> set[int] | None:
    """Tenants whose objects the pages show the user: the API's read rule
    (``get_visible_tenant_ids``: own tenants and, for a tenant admin, those below)."""
    return get_visible_tenant_ids(request.user)


@login_required
def quotas(request):
    """Per resource group and tenant: nominal, used, borrowed and lent per dimension."""
    return render(request, "dashboards/quotas.html", {"boards": quota_board(_scope(request))})


def _jobs_queryset(request):
    return visible_jobs(request.user).select_related(
        "tenant", "queue__resource_group", "submitted_by"
    )


@live_login_required
def job_list(request):
    """Jobs with filters (the API's JobFilterSet), queue position and estimated start.
    ``?fragment=1`` (the page's live refresh, static/console/live.js) answers the table and
    its pager alone, for the same filters and page."""
    filterset = JobFilterSet(
        request.GET, queryset=_jobs_queryset(request).order_by("-id"), request=request
    )
    fragment = wants_fragment(request)
    if not fragment:
        job_filter_selects(filterset.form, request.user)
    page = _Paginator(filterset.qs, PAGE_SIZE).get_page(request.GET.get("page"))
    jobs = list(page.object_list)
    query = request.GET.copy()
    query.pop("page", None)
    query.pop("fragment", None)
    context = {
        "filter": filterset,
        "page": page,
        "jobs": jobs,
        "slots": queue_slots(jobs),
        "services": service_statuses(jobs),
        "query": query.urlencode(),
        "state_colours": STATE_COLOURS,
    }
    if fragment:
        return render(request, "dashboards/_jobs_live.html", context)
    context["can_submit"] = submit_queues(request.user).exists()
    return render(request, "dashboards/jobs.html", context)


@live_login_required
def job_detail(request, pk: int):
    """One job: request, placements with devices, position/ETA, its state timeline
    (:func:`scheduling.selectors.job_timeline.job_timeline`) and preemptions. ``?fragment=1``
    (the live refresh) answers everything below the page title, by the same access rule; a
    job in a final state is no longer polled."""
    job = get_object_or_404(
        _jobs_queryset(request).prefetch_related(
            "containers",
            "events",
            "preemptions",
            Prefetch(
                "placements",
                queryset=Placement.objects.select_related("node").prefetch_related(
                    Prefetch(
                        "devices", queryset=PlacementDevice.objects.select_related("device__model")
                    )
                ),
            ),
        ),
        pk=pk,
    )
    can_change = tenant_access(request.user, job.tenant_id) == Access.WRITE
    fragment = wants_fragment(request)
    consolidation = None  # the full page only: the preview runs a dry admission cycle
    if (
        not fragment
        and job.state == JobState.QUEUED
        and job.queue.resource_group.consolidation_enabled
    ):
        consolidation = preview_for(job, request.user).sentence()
    return render(
        request,
        "dashboards/_job_live.html" if fragment else "dashboards/job_detail.html",
        {
            "job": job,
            "live": polls_live(job),
            "timeline": job_timeline(job),
            # the page computes its group's ranges now; its 3 s live refresh reads the stored ones
            "slot": queue_slots([job], fresh=not fragment).get(job.pk),
            "can_cancel": job.state
            in (JobState.QUEUED, JobState.ADMITTED, JobState.RUNNING, JobState.STOPPED)
            and can_change,
            "can_stop": can_change and can_stop(job),
            "can_resume": can_change and can_resume(job),
            "can_scale": can_change and job.is_service and job.state == JobState.RUNNING,
            "workload": workload_context(job),
            "preemptions": [
                {
                    "time": p.time,
                    "reason": p.reason,
                    "outcome": p.outcome,
                    **preemption_as_seen(p, platform_admin=request.user.is_superuser),
                }
                for p in job.preemptions.all()
            ],
            "state_colours": STATE_COLOURS,
            "consolidation": consolidation,
        },
    )


@login_required
def job_submit(request):
    """Submit form (members and tenant admins)."""
    why = submit_refusal(request.user)
    if why is not None:
        raise PermissionDenied(why)
    queues = submit_queues(request.user)
    form = JobSubmitForm(
        request.POST or None,
        queues=queues,
        user=request.user,
        initial={"queue": request.GET.get("queue")},
    )
    if request.method == "POST" and form.is_valid():
        data = form.serializer.validated_data
        spec = form.serializer.to_spec()
        spec = type(spec)(**{**spec.__dict__, "source": "ui"})
        try:
            job = submit_job(data["queue"], spec, user=request.user)
        except NeverFits as exc:
            form.add_error(None, f"This job can never run in its queue: {exc.message}")
        else:
            messages.success(request, f"Job {job.name} submitted (id {job.pk}).")
            return redirect("dashboards:job-detail", pk=job.pk)
    return render(request, "dashboards/job_form.html", {"form": form})


@login_required
@require_POST
def job_cancel(request, pk: int):
    """Cancel (member or tenant admin of the job's tenant)."""
    job = get_object_or_404(_jobs_queryset(request), pk=pk)
    why = action_refusal(request.user, job.tenant_id, "cancel")
    if why is not None:
        raise PermissionDenied(why)
    try:
        cancel_any_job(job, user=request.user)
        messages.success(request, f"Job {job.name} cancelled.")
    except DomainError as exc:
        messages.error(request, exc.message)
    return redirect("dashboards:job-detail", pk=job.pk)


@login_required
def nodes(request):
    """Nodes with devices, booked share and health (filter: the API's NodeFilterSet). The
    list is filtered, ordered and paged on the node rows alone; only the page's nodes get
    their device counts and bookings (so the page costs the same with 10 or 10,000 nodes)."""
    plain = Node.objects.select_related("cluster").order_by("cluster__name", "name")
    filterset = NodeFilterSet(request.GET, queryset=plain, request=request)
    page = _Paginator(filterset.qs, PAGE_SIZE).get_page(request.GET.get("page"))
    ids = [n.pk for n in page.object_list]
    annotated = {n.pk: n for n in node_list().filter(pk__in=ids)}
    page.object_list = [annotated[pk] for pk in ids if pk in annotated]
    return render(
        request,
        "dashboards/nodes.html",
        {"filter": filterset, "page": page, "allocation": capacity_by_node(ids)},
    )


@live_login_required
def node_detail(request, pk: int):
    """Card map: each device with its memory and cores slices coloured by tenant/job
    (``?fragment=1``: the map and its legend alone, for the live refresh)."""
    node = get_object_or_404(Node.objects.select_related("cluster"), pk=pk)
    cards = node_card_map(node, _scope(request))
    legend = {}
    for card in cards:
        for s in card.slices:
            legend.setdefault(s.tenant, s.colour)
    if wants_fragment(request):  # the card map's live refresh
        return render(
            request,
            "dashboards/_card_map_live.html",
            {"cards": cards, "legend": sorted(legend.items())},
        )
    return render(
        request,
        "dashboards/node_detail.html",
        {
            "node": node,
            "cards": cards,
            "legend": sorted(legend.items()),
            # Measured utilisation mixes every tenant's work: platform admins only.
            "util_chart": _node_util_chart(node) if request.user.is_superuser else None,
        },
    )


def _node_util_chart(node):
    points = node_utilisation(node.pk)
    return charts.time_series(
        "node-util",
        [
            charts.Series(
                "min..max", [(p.time, p.minimum, p.maximum) for p in points], kind="range"
            ),
            charts.Series("mean utilisation", [(p.time, p.mean) for p in points]),
        ],
        title="Mean device utilisation, last 6 h",
        axes=[charts.Axis(" %", max=100)],
        start=timezone.now() - timedelta(hours=6),
        end=timezone.now(),
        height=200,
        simulated=node.cluster.backend == Backend.SIMULATED,
    )


@login_required
def device_detail(request, uuid: str):
    """A device by serial/UUID: current slices and its booking history across nodes."""
    device = get_object_or_404(Device.objects.select_related("model", "node__cluster"), uuid=uuid)
    tenant_ids = _scope(request)
    cards = node_card_map(device.node, tenant_ids)
    card = next(c for c in cards if c.device.pk == device.pk)
    return render(
        request,
        "dashboards/device_detail.html",
        {
            "device": device,
            "card": card,
            "history": device_history(device, tenant_ids),
            "health": device_health_history(device.uuid),
            # Measured utilisation mixes every tenant's work: platform admins only.
            "charts": trends.device_charts(device) if request.user.is_superuser else [],
            "unmatched_mig": unmatched_mig_series(device.pk, timezone.now() - timedelta(hours=1))
            if request.user.is_superuser
            else 0,
        },
    )


@login_required
@require_POST
def device_cordon(request, uuid: str):
    """Platform admins cordon a device: no new work here, HAMi / DRA told, jobs drained by
    the chosen policy (:func:`scheduling.services.cordons.cordon_device`)."""
    if not request.user.is_superuser:
        raise PermissionDenied("Only platform administrators cordon devices.")
    device = get_object_or_404(Device.objects.select_related("node__cluster"), uuid=uuid)
    policy = request.POST.get("drain", "wait")
    try:
        cordon_device(
            device, reason=request.POST.get("reason", "")[:200], user=request.user, policy=policy
        )
    except ValueError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Device {device.uuid} cordoned ({policy}).")
    return redirect("dashboards:device-detail", uuid=device.uuid)


@login_required
@require_POST
def device_uncordon(request, uuid: str):
    """Platform admins lift the console's cordon of a device."""
    if not request.user.is_superuser:
        raise PermissionDenied("Only platform administrators uncordon devices.")
    device = get_object_or_404(Device.objects.select_related("node__cluster"), uuid=uuid)
    uncordon_device(device, user=request.user)
    messages.success(request, f"Device {device.uuid} uncordoned.")
    return redirect("dashboards:device-detail", uuid=device.uuid)


def _month(request) -> str:
    months = recent_months()
    month = request.GET.get("month") or months[0]
    try:
        month_bounds(month)
    except ValueError:
        raise Http404("month must be YYYY-MM") from None
    return month


@login_required
def usage(request):
    """GPU-hours (and cost when priced) per tenant and device model in one month, from the
    monthly rows the rollup task keeps (:mod:`telemetry.services.usage_months`)."""
    month = _month(request)
    tenant_ids = _scope(request)
    rows, currency = read_month(month, tenant_ids)  # stored by the rollup task
    model_names = sorted({r.model for r in rows})
    tenants = sorted({r.tenant for r in rows})
    hours = {(r.tenant, r.model): round(r.gpu_hours, 2) for r in rows}
    costs = [r.cost for r in rows if r.cost is not None]
    return render(
        request,
        "dashboards/usage.html",
        {
            "rows": rows,
            "month": month,
            "months": recent_months(),
            "currency": currency,
            "total_gpu_hours": sum(r.gpu_hours for r in rows),
            "total_cost": sum(costs) if costs else None,
            "chart": charts.bar_chart(
                "usage-chart",
                tenants,
                [
                    charts.Series(
                        m,
                        [hours.get((t, m), 0) for t in tenants],
                        kind="bar",
                        colour=PALETTE[i % 10],
                        stack="gpu-h",
                    )
                    for i, m in enumerate(model_names)
                ],
                title=f"GPU-hours per tenant in {month}",
                unit="GPU-h",
            ),
            "model_colours": [(m, PALETTE[i % 10]) for i, m in enumerate(model_names)],
            "budgets": [
                {"row": b, "period": budget_period(b)}
                for b in budgets_of(get_user_tenant_ids(request.user))
            ],  # the current period's state, of the user's own tenants (issue 33)
        },
    )


@login_required
def usage_csv(request):
    """The usage page as CSV (one row per tenant and model)."""
    month = _month(request)
    response = HttpResponse(content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="usage-{month}.csv"'
    writer = csv.writer(response)
    writer.writerow(
        [
            "month",
            "tenant",
            "vendor",
            "model",
            "gpu_hours",
            "memory_gib_hours",
            "jobs",
            "cost",
            "currency",
        ]
    )
    tenant_ids = _scope(request)
    rows, currency = read_month(month, tenant_ids)
    for r in rows:
        writer.writerow(
            [
                month,
                r.tenant,
                r.vendor,
                r.model,
                f"{r.gpu_hours:.4f}",
                f"{r.memory_gib_hours:.4f}",
                r.jobs,
                "" if r.cost is None else f"{r.cost:.2f}",
                "" if r.cost is None else currency,
            ]
        )
    return response


@login_required
def tokens(request):
    """The user's API token: show, create / regenerate, revoke."""
    token = Token.objects.filter(user=request.user).first()
    if request.method == "POST":
        create = request.POST.get("action") == "create"
        token = replace_api_token(request.user, create=create, source="ui")
        messages.success(
            request,
            "New token created; the old one no longer works." if create else "Token revoked.",
        )
        return redirect("dashboards:tokens")
    return render(
        request,
        "dashboards/tokens.html",
        {
            "token": token,
            "memberships": get_roles(request.user),
            "tenants": dict(
                Tenant.objects.filter(memberships__user=request.user).values_list("pk", "name")
            ),
        },
    )


@login_required
def audit_log(request):
    """Every state-changing action (platform admins only; others get 403)."""
    if not request.user.is_superuser:
        raise PermissionDenied("The audit log is for platform admins.")
    filterset = AuditFilterSet(
        request.GET, queryset=AuditEntry.objects.order_by("-time", "-id"), request=request
    )
    page = _Paginator(filterset.qs, PAGE_SIZE).get_page(request.GET.get("page"))
    return render(
        request, "dashboards/audit.html", {"filter": filterset, "page": page, "now": timezone.now()}
    )
