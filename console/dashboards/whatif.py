"""The what-if simulation page (DESIGN.md §9): pick a resource group (its recent jobs) or upload
an Alibaba pod list, choose policies and quotas, run it in a worker with a progress bar, and
compare allocation, waits and fairness side by side.

Who: platform admins (every group) and tenant admins (the groups where their tenants have a
quota or a queue). A tenant admin sees other tenants of a group's workload as one
"other tenants" row, never by name.
"""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render

from console.dashboards.charts import Axis, Series, bar_chart, time_series
from console.dashboards.live import live_login_required, wants_fragment
from core.exceptions import DomainError
from scheduling.models import SimulationRun, SimulationState
from scheduling.selectors.fragmentation import groups_for_tenants
from scheduling.services.whatif import MAX_TRACE_BYTES, POLICY_NAMES, create_run
from tenants.models import ResourceGroup, Tenant
from tenants.selectors import admin_tenant_ids, administers_a_tenant

OTHER = "other tenants"
DEFAULT_POLICIES = ("FragGuard", "BestFit")


class SimulationForm(forms.Form):
    """A what-if request; the service validates policies, quotas and the trace."""

    group = forms.ModelChoiceField(
        queryset=ResourceGroup.objects.none(),
        to_field_name="name",
        label="Resource group (its nodes; its recent jobs without a trace)",
    )
    policies = forms.MultipleChoiceField(
        choices=[(p, p) for p in POLICY_NAMES],
        widget=forms.CheckboxSelectMultiple,
        initial=list(DEFAULT_POLICIES),
        label="Placement policies to compare",
    )
    use_group_quotas = forms.BooleanField(
        required=False, label="Start from the group's nominal device quotas"
    )
    quotas = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        label="Quotas, one 'tenant = devices' per line (empty: none; for a trace the tenants "
        "are its qos classes)",
    )
    trace = forms.FileField(
        required=False, label="Alibaba openb_pod_list CSV (optional, at most 5 MiB)"
    )

    def __init__(self, *args, groups, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["group"].queryset = groups

    def clean_trace(self):
        upload = self.cleaned_data.get("trace")
        if upload is None:
            return ""
        if upload.size > MAX_TRACE_BYTES:
            raise forms.ValidationError("larger than 5 MiB")
        try:
            return upload.read().decode("utf-8")
        except UnicodeDecodeError:
            raise forms.ValidationError("not UTF-8 text") from None


def _visible_groups(user):
    if not administers_a_tenant(user):
        raise PermissionDenied("Simulations are for platform and tenant admins.")
    admin_ids = admin_tenant_ids(user)
    groups = groups_for_tenants(admin_ids)
    return ResourceGroup.objects.filter(pk__in=[g.pk for g in groups]).order_by("name")


def _runs(user):
    runs = SimulationRun.objects.select_related("resource_group", "created_by")
    return runs if user.is_superuser else runs.filter(created_by=user)


@login_required
def simulation_page(request):
    """The form and the user's recent runs; POST starts a run (400 with field errors)."""
    groups = _visible_groups(request.user)
    form = SimulationForm(request.POST or None, request.FILES or None, groups=groups)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            data = form.cleaned_data
            try:
                run = create_run(
                    user=request.user,
                    group=data["group"],
                    policies=data["policies"],
                    quotas_text=data["quotas"],
                    trace_name=getattr(request.FILES.get("trace"), "name", ""),
                    trace_text=data["trace"],
                    use_group_quotas=data["use_group_quotas"],
                )
            except DomainError as exc:
                field = (
                    "quotas"
                    if exc.message.startswith("quota")
                    else "trace"
                    if exc.message.startswith("trace")
                    else "policies"
                    if exc.message.startswith("policies")
                    else "group"
                )
                form.add_error(field, exc.message)
            else:
                messages.success(request, f"Simulation {run.pk} queued.")
                return redirect("dashboards:simulation-detail", pk=run.pk)
        status = 400
    return render(
        request,
        "dashboards/simulations.html",
        {"form": form, "runs": _runs(request.user)[:20]},
        status=status,
    )


def _mask(result: dict, visible: set[str] | None) -> dict:
    """Per-tenant rows of names outside ``visible`` merged into one "other tenants" row."""
    if visible is None:
        return result
    out = {**result, "policies": []}
    for pol in result.get("policies", []):
        tenants: dict[str, dict] = {}
        for name, t in pol["tenants"].items():
            key = name if name in visible else OTHER
            row = tenants.setdefault(
                key,
                {
                    "pods": 0,
                    "started": 0,
                    "gpu_hours": 0.0,
                    "asked_gpu_hours": 0.0,
                    "wait_sum": 0.0,
                },
            )
            row["pods"] += t["pods"]
            row["started"] += t["started"]
            row["gpu_hours"] += t["gpu_hours"]
            row["asked_gpu_hours"] += t["asked_gpu_hours"]
            row["wait_sum"] += (t["mean_wait_s"] or 0) * t["started"]
        for row in tenants.values():
            row["mean_wait_s"] = row["wait_sum"] / row["started"] if row["started"] else None
            del row["wait_sum"]
        out["policies"].append({**pol, "tenants": tenants})
    out["workload"] = {
        **result.get("workload", {}),
        "tenants": sorted(
            {n if n in visible else OTHER for n in result.get("workload", {}).get("tenants", [])}
        ),
    }
    return out


def _charts(run: SimulationRun, result: dict) -> list[dict]:
    pols = result["policies"]
    names = [p["policy"] for p in pols]
    origin = run.created
    alloc = time_series(
        "sim-allocation",
        [
            Series(p["policy"], [(origin + timedelta(seconds=t), v) for t, v in p["allocation"]])
            for p in pols
        ],
        title="Allocation over simulated time",
        axes=[Axis(" %", max=100)],
        note="Time axis: simulated time, starting at the first arrival (drawn from the run's "
        "creation).",
    )
    summary = bar_chart(
        "sim-waits",
        names,
        [
            Series("mean wait", [p["mean_wait_s"] for p in pols], kind="bar"),
            Series("p95 wait", [p["p95_wait_s"] for p in pols], kind="bar"),
        ],
        title="Queueing delay per policy",
        unit="s",
    )
    fairness = bar_chart(
        "sim-fairness",
        names,
        [Series("Jain's index", [p["fairness"] for p in pols], kind="bar")],
        title="Fairness: Jain's index over the tenants' served / asked GPU-hours (1 = equal)",
        unit="",
        capacity=[1.0] * len(names),
    )
    tenants = sorted({t for p in pols for t in p["tenants"]})
    per_tenant = bar_chart(
        "sim-tenant-waits",
        tenants,
        [
            Series(
                p["policy"],
                [p["tenants"].get(t, {}).get("mean_wait_s") or 0 for t in tenants],
                kind="bar",
            )
            for p in pols
        ],
        title="Mean wait per tenant",
        unit="s",
    )
    return [alloc, summary, fairness, per_tenant]


@live_login_required
def simulation_detail(request, pk: int):
    """One run: progress while it runs (the block refreshes itself), then the comparison."""
    run = get_object_or_404(_runs(request.user), pk=pk)
    visible = None
    if not request.user.is_superuser:
        visible = set(
            Tenant.objects.filter(pk__in=admin_tenant_ids(request.user) or []).values_list(
                "name", flat=True
            )
        )
    result = _mask(run.result, visible) if run.state == SimulationState.DONE else {}
    context = {
        "run": run,
        "result": result,
        "charts": _charts(run, result) if result.get("policies") else [],
    }
    template = (
        "dashboards/_simulation_body.html"
        if wants_fragment(request)
        else "dashboards/simulation_detail.html"
    )
    return render(request, template, context)
