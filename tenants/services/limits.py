"""Limits below the tenant (issue 33): per-user limits and GPU-hour / money budgets, each
write with an audit entry; the budget state written by ``telemetry.services.budgets``.

Who may write is the caller's check (``tenants.selectors.can_manage_limits``: the tenant's
admin or a platform admin). Bad input raises :class:`InvalidRequest`
naming the field (the API answers 400 with it); nothing is written then.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from core.audit import record, snapshot
from core.exceptions import InvalidRequest
from tenants.choices import GPU_HOURS, BudgetAction, BudgetPeriod
from tenants.models import Budget, Membership, Tenant, UserLimit

__all__ = [
    "BUDGET_FIELDS",
    "USER_LIMIT_FIELDS",
    "create_budget",
    "delete_budget",
    "delete_user_limit",
    "record_budget_state",
    "set_user_limit",
    "update_budget",
]

USER_LIMIT_FIELDS = [
    "tenant",
    "user",
    "max_running_jobs",
    "max_queued_jobs",
    "max_devices_milli",
    "device_model",
]
BUDGET_FIELDS = [
    "tenant",
    "user",
    "name",
    "unit",
    "amount",
    "period",
    "window_start",
    "window_end",
    "soft_threshold_percent",
    "hard_action",
]


def _check_member(tenant: Tenant, user) -> None:
    """InvalidRequest on ``user`` unless ``user`` (None = every member) is a member of
    ``tenant``. The message never tells whether the user exists elsewhere."""
    if user is not None and not Membership.objects.filter(tenant=tenant, user=user).exists():
        raise InvalidRequest(f"not a member of tenant {tenant.name}", field="user")


def set_user_limit(
    *,
    tenant: Tenant,
    user,
    max_running_jobs: int | None = None,
    max_queued_jobs: int | None = None,
    max_devices_milli: int | None = None,
    device_model: str = "",
    device_models: set[str] | None = None,
    actor=None,
) -> UserLimit:
    """Create or replace the limits of ``user`` (None = the default of every member) in
    ``tenant``. A limit below the user's current usage is accepted (it acts on new
    admissions; the pages show it over limit).

    Args:
        device_model: the model ``max_devices_milli`` counts ("" = every model, in
            device-equivalents).
        device_models: the known device model names (None skips the check; this app does
            not know the inventory).

    Raises:
        InvalidRequest: a negative limit, a user not in the tenant, an unknown device model,
            a device model without a devices limit.
    """
    values = {
        "max_running_jobs": max_running_jobs,
        "max_queued_jobs": max_queued_jobs,
        "max_devices_milli": max_devices_milli,
    }
    for name, value in values.items():
        if value is not None and value < 0:
            raise InvalidRequest("must be 0 or more", field=name)
    _check_member(tenant, user)
    if device_model and max_devices_milli is None:
        raise InvalidRequest("a device model needs max_devices_milli", field="device_model")
    if device_model and device_models is not None and device_model not in device_models:
        raise InvalidRequest(f"unknown device model {device_model}", field="device_model")
    with transaction.atomic():
        limit = UserLimit.objects.filter(tenant=tenant, user=user).first()
        before = snapshot(limit, USER_LIMIT_FIELDS) if limit else None
        if limit is None:
            limit = UserLimit(tenant=tenant, user=user)
        for name, value in values.items():
            setattr(limit, name, value)
        limit.device_model = device_model
        limit.save()
        record(
            "user_limit.set",
            limit,
            actor=actor,
            before=before,
            after=snapshot(limit, USER_LIMIT_FIELDS),
            tenant_id=tenant.pk,
        )
    return limit


def delete_user_limit(limit: UserLimit, *, actor=None) -> None:
    """Remove a user's limits (the user then has the tenant's default row, if any)."""
    with transaction.atomic():
        record(
            "user_limit.delete",
            limit,
            actor=actor,
            before=snapshot(limit, USER_LIMIT_FIELDS),
            tenant_id=limit.tenant_id,
        )
        limit.delete()


def _check_budget(values: dict, currencies: set[str] | None) -> None:
    if values["amount"] is None or values["amount"] <= 0:
        raise InvalidRequest("must be more than 0", field="amount")
    unit = values["unit"]
    if unit != GPU_HOURS and currencies is not None and unit not in currencies:
        known = ", ".join(sorted(currencies)) or "none"
        raise InvalidRequest(
            f"{unit} is not the price table's currency ({known}); use one of them or {GPU_HOURS}",
            field="unit",
        )
    if values["period"] not in BudgetPeriod.values:
        raise InvalidRequest(f"one of {', '.join(BudgetPeriod.values)}", field="period")
    if values["hard_action"] not in BudgetAction.values:
        raise InvalidRequest(f"one of {', '.join(BudgetAction.values)}", field="hard_action")
    if not 1 <= values["soft_threshold_percent"] <= 100:
        raise InvalidRequest("between 1 and 100", field="soft_threshold_percent")
    start, end = values["window_start"], values["window_end"]
    if values["period"] == BudgetPeriod.WINDOW:
        if start is None or end is None or end <= start:
            raise InvalidRequest(
                "a window needs window_start before window_end", field="window_end"
            )
    elif start is not None or end is not None:
        raise InvalidRequest("only a window budget has a window", field="window_start")


def _check_overlap(tenant: Tenant, values: dict, exclude: int | None) -> None:
    """InvalidRequest on ``period`` when a budget of the same scope (tenant and user) covers
    any of the same time: two monthly budgets always do, a monthly and a window budget too,
    two windows when they intersect."""
    same = Budget.objects.filter(tenant=tenant, user=values["user"])
    if exclude is not None:
        same = same.exclude(pk=exclude)
    if values["period"] == BudgetPeriod.WINDOW:
        same = same.filter(
            Q(period=BudgetPeriod.MONTH)
            | Q(window_start__lt=values["window_end"], window_end__gt=values["window_start"])
        )
    other = same.order_by("name").first()
    if other is not None:
        who = values["user"].username if values["user"] else f"tenant {tenant.name}"
        raise InvalidRequest(
            f"budget {other.name} already covers {who} over an overlapping period", field="period"
        )


def create_budget(
    *,
    tenant: Tenant,
    name: str,
    amount: Decimal,
    user=None,
    unit: str = GPU_HOURS,
    period: str = BudgetPeriod.MONTH,
    window_start: datetime | None = None,
    window_end: datetime | None = None,
    soft_threshold_percent: int = 80,
    hard_action: str = BudgetAction.NOTIFY,
    currencies: set[str] | None = None,
    actor=None,
) -> Budget:
    """Create a budget of ``tenant`` (``user`` None) or of one of its members.

    Args:
        currencies: the price table's currencies (None skips the check; the prices live in
            ``telemetry``, which this app does not import).

    Raises:
        InvalidRequest: amount <= 0, a currency the price table does not use, a bad period,
            window, threshold or action, a user not in the tenant, a budget of the same
            scope over an overlapping period, a name taken in the tenant.
    """
    values = {
        "user": user,
        "name": name,
        "unit": unit,
        "amount": amount,
        "period": period,
        "window_start": window_start,
        "window_end": window_end,
        "soft_threshold_percent": soft_threshold_percent,
        "hard_action": hard_action,
    }
    _check_budget(values, currencies)
    _check_member(tenant, user)
    with transaction.atomic():
        if Budget.objects.filter(tenant=tenant, name=name).exists():
            raise InvalidRequest(f"tenant {tenant.name} has a budget {name}", field="name")
        _check_overlap(tenant, values, None)
        budget = Budget.objects.create(tenant=tenant, **values)
        record(
            "budget.create",
            budget,
            actor=actor,
            after=snapshot(budget, BUDGET_FIELDS),
            tenant_id=tenant.pk,
        )
    return budget


def update_budget(
    budget: Budget, *, currencies: set[str] | None = None, actor=None, **changes
) -> Budget:
    """Change a budget's amount, unit, period, window, threshold or action (tenant, user
    and name stay). Same checks as :func:`create_budget`."""
    values = {name: getattr(budget, name) for name in BUDGET_FIELDS if name != "tenant"}
    unknown = set(changes) - set(values) - {"tenant"}
    if unknown or changes.get("name", budget.name) != budget.name:
        raise InvalidRequest("only the amounts, period and action may change", field="name")
    values.update({k: v for k, v in changes.items() if k in values})
    _check_budget(values, currencies)
    with transaction.atomic():
        _check_overlap(budget.tenant, values, budget.pk)
        before = snapshot(budget, BUDGET_FIELDS)
        for name, value in values.items():
            setattr(budget, name, value)
        budget.save()
        record(
            "budget.update",
            budget,
            actor=actor,
            before=before,
            after=snapshot(budget, BUDGET_FIELDS),
            tenant_id=budget.tenant_id,
        )
    return budget


def delete_budget(budget: Budget, *, actor=None) -> None:
    """Remove a budget (its hard action stops applying at the next cycle)."""
    with transaction.atomic():
        record(
            "budget.delete",
            budget,
            actor=actor,
            before=snapshot(budget, BUDGET_FIELDS),
            tenant_id=budget.tenant_id,
        )
        budget.delete()


def record_budget_state(
    budget_id: int,
    *,
    spent: Decimal,
    committed: Decimal,
    forecast: Decimal,
    at: datetime,
    notified_period: datetime | None,
    notified_percent: int,
) -> int:
    """Store a budget's measured state (no audit entry: a measurement, not a change of
    intent); ``updated`` moves only when the budget becomes spent or no longer spent, so a
    resource group's blocked admission cycle runs again (``scheduling.selectors.cycle_gate``).
    Returns the rows written (0 when the budget was deleted meanwhile)."""
    flips = Q(amount__gt=spent, spent__gte=F("amount")) | Q(
        amount__lte=spent, spent__lt=F("amount")
    )
    Budget.objects.filter(flips, pk=budget_id).update(updated=timezone.now())
    return Budget.objects.filter(pk=budget_id).update(
        spent=spent,
        committed=committed,
        forecast=forecast,
        state_at=at,
        notified_period=notified_period,
        notified_percent=notified_percent,
    )
