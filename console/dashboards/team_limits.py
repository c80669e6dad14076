"""The tenant page's limits below the tenant (issue 33): per-user limits with each user's
usage (over-limit rows marked) and the budgets with their state; the tenant's admin (or a
platform admin) sets them here through ``tenants.services``, as the API does
(``/api/user-limits/``, ``/api/budgets/``). Shown to the tenant's own members (they name
members, as the member list does); never to another tenant or a parent tenant's admin."""

from __future__ import annotations

from decimal import Decimal

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from core.exceptions import DomainError
from scheduling.selectors.user_limits import UserUsage, budget_period, over_limits, user_usage
from tenants import services
from tenants.choices import GPU_HOURS, BudgetAction, BudgetPeriod
from tenants.models import Budget, Tenant, UserLimit
from tenants.selectors import (
    budgets_of,
    can_manage_limits,
    device_model_names,
    get_user_tenant_ids,
    price_currencies,
    user_limits_of,
)

EVERY_MEMBER = ""


def _members(tenant: Tenant) -> list[tuple[str, str]]:
    return [(EVERY_MEMBER, "every member (default)")] + [
        (m.user.username, m.user.username)
        for m in tenant.memberships.select_related("user").order_by("user__username")
    ]


class UserLimitForm(forms.Form):
    """One user's limits; ``max_devices`` in devices (device-equivalents, 0.001 steps)."""

    user = forms.ChoiceField(required=False)
    max_running_jobs = forms.IntegerField(min_value=0, max_value=2**31 - 1, required=False)
    max_queued_jobs = forms.IntegerField(min_value=0, max_value=2**31 - 1, required=False)
    max_devices = forms.DecimalField(min_value=0, max_digits=15, decimal_places=3, required=False)
    device_model = forms.CharField(max_length=100, required=False)

    def __init__(self, tenant: Tenant, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["user"].choices = _members(tenant)


class BudgetForm(forms.Form):
    """A budget of the tenant (user empty) or of one member."""

    name = forms.SlugField(max_length=63)
    user = forms.ChoiceField(required=False)
    unit = forms.CharField(max_length=9, initial=GPU_HOURS)
    amount = forms.DecimalField(min_value=0, max_digits=14, decimal_places=2)
    period = forms.ChoiceField(choices=BudgetPeriod.choices, initial=BudgetPeriod.MONTH)
    window_start = forms.DateTimeField(required=False)
    window_end = forms.DateTimeField(required=False)
    soft_threshold_percent = forms.IntegerField(min_value=1, max_value=100, initial=80)
    hard_action = forms.ChoiceField(choices=BudgetAction.choices, initial=BudgetAction.NOTIFY)

    def __init__(self, tenant: Tenant, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["user"].choices = _members(tenant)


def limits_context(request, tenant: Tenant) -> dict:
    """Template context of the limits and budgets cards (empty for who may not see them)."""
    member_of = get_user_tenant_ids(request.user)
    if member_of is not None and tenant.pk not in member_of:
        return {"show_limits": False}
    manage = can_manage_limits(request.user, tenant)
    usage = user_usage({tenant.pk})
    limits = []
    for row in user_limits_of({tenant.pk}):
        used = usage.get((tenant.pk, row.user_id), UserUsage()) if row.user_id else None
        limits.append(
            {
                "row": row,
                "used": used,
                "devices_used": used.devices_of(row.device_model) / 1000 if used else None,
                "max_devices": None
                if row.max_devices_milli is None
                else row.max_devices_milli / 1000,
                "over": over_limits(row, used) if used else [],
            }
        )
    budgets = [{"row": b, "period": budget_period(b)} for b in budgets_of({tenant.pk})]
    return {
        "show_limits": True,
        "manage_limits": manage,
        "user_limits": limits,
        "budgets": budgets,
        "limit_form": UserLimitForm(tenant),
        "budget_form": BudgetForm(tenant),
    }


def _user(tenant: Tenant, username: str):
    if not username:
        return None
    member = tenant.memberships.select_related("user").filter(user__username=username).first()
    if member is None:
        raise DomainError(f"user: not a member of tenant {tenant.name}")
    return member.user


def _set_limit(request, tenant: Tenant) -> None:
    form = UserLimitForm(tenant, request.POST)
    if not form.is_valid():
        raise DomainError("; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items()))
    data = form.cleaned_data
    devices = data["max_devices"]
    row = services.set_user_limit(
        tenant=tenant,
        user=_user(tenant, data["user"]),
        max_running_jobs=data["max_running_jobs"],
        max_queued_jobs=data["max_queued_jobs"],
        max_devices_milli=None if devices is None else int(devices * 1000),
        device_model=data["device_model"] or "",
        device_models=device_model_names(),
        actor=request.user,
    )
    messages.success(request, f"Limits of {row.user or 'every member'} saved.")
    used = user_usage({tenant.pk}).get((tenant.pk, row.user_id)) if row.user_id else None
    for line in over_limits(row, used) if used else []:
        messages.warning(request, f"{line}: the limit acts on new admissions only.")


def _create_budget(request, tenant: Tenant) -> None:
    form = BudgetForm(tenant, request.POST)
    if not form.is_valid():
        raise DomainError("; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items()))
    data = dict(form.cleaned_data)
    data["user"] = _user(tenant, data["user"])
    data["amount"] = Decimal(data["amount"])
    budget = services.create_budget(
        tenant=tenant, currencies=price_currencies(), actor=request.user, **data
    )
    messages.success(request, f"Budget {budget.name} created.")


def _pk(request) -> int:
    raw = request.POST.get("pk", "")
    if not raw.isdigit() or not 0 < int(raw) < 2**63:
        raise DomainError("pk: a positive integer id is required")
    return int(raw)


@login_required
@require_POST
def team_limits_post(request, name: str):
    """Set a user's limits, create a budget, or delete either (``action``: ``limit``,
    ``budget``, ``delete-limit``, ``delete-budget``); bad input is told in a message."""
    mine = get_user_tenant_ids(request.user)
    tenants = Tenant.objects.all() if mine is None else Tenant.objects.filter(pk__in=mine)
    tenant = get_object_or_404(tenants, name=name)  # not a member: 404
    if not can_manage_limits(request.user, tenant):
        raise PermissionDenied("Limits and budgets are set by the tenant's admin.")
    action = request.POST.get("action", "")
    try:
        if action == "limit":
            _set_limit(request, tenant)
        elif action == "budget":
            _create_budget(request, tenant)
        elif action == "delete-limit":
            limit = get_object_or_404(UserLimit, pk=_pk(request), tenant=tenant)
            services.delete_user_limit(limit, actor=request.user)
        elif action == "delete-budget":
            budget = get_object_or_404(Budget, pk=_pk(request), tenant=tenant)
            services.delete_budget(budget, actor=request.user)
        else:
            raise DomainError("unknown action")
    except DomainError as exc:
        field = f"{exc.field}: " if exc.field else ""
        messages.error(request, f"{field}{exc.message}")
    return redirect("dashboards:team", name=tenant.name)
