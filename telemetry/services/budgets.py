"""Budget state (issue 33): what each budget's scope spent in its period, what its running
jobs commit, and a forecast to the period's end, priced by the one cost rule
(:func:`telemetry.cost.cost_report`: device-hours x the price in force at each instant) over
the one usage source (:func:`telemetry.selectors.usage_interval`), run by the rollup task.

* ``spent``: device-hours (``GPU-hours`` budgets) or money in the budget's currency (only
  priced hours count) of the scope's jobs from the period's start to now.
* ``committed``: what the jobs running now will spend from now until their runtime bound
  (``started_at + max_runtime_s``) or the period's end, whichever is first.
* ``forecast``: ``spent`` plus what the shares running now would spend until the period's
  end (the current burn rate).

Crossing ``soft_threshold_percent`` of ``amount`` emits ``budget.threshold_crossed`` once per
period, reaching 100 % once more (``core.events``; the notifications app delivers it). The
admission cycle reads the stored state (``scheduling.selectors.user_limits.budget_gates``).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from typing import NamedTuple

from django.db import transaction
from django.utils import timezone

from core.events import BUDGET_THRESHOLD_CROSSED, emit
from scheduling.models import Job
from scheduling.selectors.user_limits import budget_period
from telemetry import cost as cost_core
from telemetry.selectors import prices, usage_intervals
from tenants import services as tenant_services
from tenants.choices import GPU_HOURS
from tenants.models import Budget

__all__ = ["BudgetState", "measure_budget", "refresh_budgets"]


class BudgetState(NamedTuple):
    """A budget's measured state, in its unit."""

    spent: Decimal
    committed: Decimal
    forecast: Decimal


def _amount(rows: list[cost_core.CostRow], unit: str) -> Decimal:
    if unit == GPU_HOURS:
        return sum((r.gpu_hours for r in rows), Decimal(0))
    return sum((r.cost for r in rows if r.currency == unit), Decimal(0))


def _projected(
    running: list[cost_core.UsageInterval], ends: dict[int, datetime], now: datetime
) -> list[cost_core.UsageInterval]:
    """The running shares from ``now`` to ``ends[job]`` (left out when that is not later)."""
    return [
        cost_core.UsageInterval(
            iv.tenant_id, iv.job_id, iv.device_id, iv.model, iv.fraction_milli, now, ends[iv.job_id]
        )
        for iv in running
        if ends[iv.job_id] > now
    ]


def measure_budget(budget: Budget, now: datetime, price_rows=None) -> BudgetState:
    """The state of ``budget`` at ``now`` (see the module docstring)."""
    price_rows = prices() if price_rows is None else price_rows
    start, end = budget_period(budget, now)
    if now <= start:
        return BudgetState(Decimal(0), Decimal(0), Decimal(0))
    upto = min(now, end)
    intervals = usage_intervals(start, upto, [budget.tenant_id], now=now)
    if budget.user_id is not None:
        mine = set(
            Job.objects.filter(
                pk__in={iv.job_id for iv in intervals}, submitted_by_id=budget.user_id
            ).values_list("pk", flat=True)
        )
        intervals = [iv for iv in intervals if iv.job_id in mine]
    spent = _amount(cost_core.cost_report(intervals, price_rows, start, upto), budget.unit)
    running = [iv for iv in intervals if iv.end >= now] if now < end else []
    if not running:
        return BudgetState(spent, Decimal(0), spent)
    job_ends = {
        pk: min(end, (started or now) + timedelta(seconds=bound)) if bound else end
        for pk, started, bound in Job.objects.filter(
            pk__in={iv.job_id for iv in running}
        ).values_list("pk", "started_at", "max_runtime_s")
    }
    committed = _amount(
        cost_core.cost_report(_projected(running, job_ends, now), price_rows, now, end), budget.unit
    )
    burn = _amount(
        cost_core.cost_report(
            _projected(running, dict.fromkeys(job_ends, end), now), price_rows, now, end
        ),
        budget.unit,
    )
    return BudgetState(spent, committed, spent + burn)


def _notice(budget: Budget, state: BudgetState, start: datetime, end: datetime) -> int:
    """Emit the threshold event the state crossed (once per threshold and period); returns
    the highest threshold notified in the period."""
    spent = state.spent
    notified = budget.notified_percent if budget.notified_period == start else 0
    level = 0
    if budget.amount > 0:
        if spent >= budget.amount:
            level = 100
        elif spent * 100 >= budget.amount * budget.soft_threshold_percent:
            level = budget.soft_threshold_percent
    if level <= notified:
        return notified
    emit(
        BUDGET_THRESHOLD_CROSSED,
        tenant_id=budget.tenant_id,
        user_id=budget.user_id,
        payload={
            "budget": budget.name,
            "user": budget.user.username if budget.user is not None else None,
            "unit": budget.unit,
            "amount": str(budget.amount),
            "spent": str(spent.quantize(Decimal("0.01"))),
            "used_percent": round(float(100 * spent / budget.amount), 1),
            "threshold_percent": level,
            "hard_action": budget.hard_action,
            "period_start": start.isoformat(),
            "period_end": end.isoformat(),
        },
    )
    return level


def refresh_budgets(now: datetime | None = None) -> int:
    """Measure every budget, store its state and send the threshold notices it crossed.
    Returns the number of budgets measured."""
    now = now or timezone.now()
    price_rows = prices()
    budgets = list(Budget.objects.select_related("user").order_by("pk"))
    for budget in budgets:
        state = measure_budget(budget, now, price_rows)
        start, end = budget_period(budget, now)
        with transaction.atomic():
            level = _notice(budget, state, start, end)
            tenant_services.record_budget_state(
                budget.pk,
                spent=state.spent,
                committed=state.committed,
                forecast=state.forecast,
                at=now,
                notified_period=start if level else budget.notified_period,
                notified_percent=level,
            )
    return len(budgets)
