"""The usage page's monthly rows, kept up to date by the rollup task (issue #14).

A month's rows (:class:`~telemetry.models.UsageMonth`) are the usage report of
:func:`scheduling.selectors.usage_report.monthly_usage` (GPU-hours, memory GiB-hours and jobs
per tenant and device model, from the placements) with the cost of
:func:`telemetry.selectors.cost_report` (prices in force over time), computed for every tenant
at once. Each rollup recomputes the current month (open intervals run to that instant), the
months whose rows were computed before they ended (so a month is final once after its end)
and any of the last :data:`MONTHS` months never computed; the page then reads the stored rows
(one query) instead of every placement of the month. A month not stored yet (an older month
asked by URL, a fresh install before the first rollup) is computed on that request, once.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from core.locks import USAGE_MONTH, xact_lock
from scheduling.selectors.usage_report import UsageRow, month_bounds, monthly_usage, recent_months
from telemetry.models import UsageMonth, UsageMonthStatus
from telemetry.selectors import cost_report
from tenants.models import Tenant

__all__ = ["MONTHS", "compute_month", "read_month", "refresh_usage_months", "with_cost"]

#: Months back the rollup keeps computed (the usage page offers the last 12).
MONTHS = 12


def with_cost(
    rows: list[UsageRow], month: str, tenant_ids: set[int] | None, now: datetime | None = None
) -> tuple[list[UsageRow], str]:
    """Fill ``cost`` (and return the currency) from the telemetry cost report: prices per
    model in force over time; rows without a priced hour keep None."""
    start, end = month_bounds(month)
    costs = {}
    for item in cost_report(start, end, tenant_ids, now=now):
        if item.row.gpu_hours > item.row.unpriced_hours:
            costs[(item.tenant_name, item.row.model)] = (float(item.row.cost), item.row.currency)
    currency = next((c for _, c in costs.values()), "")
    return [
        replace(r, cost=costs[(r.tenant, r.model)][0]) if (r.tenant, r.model) in costs else r
        for r in rows
    ], currency


def compute_month(month: str, now: datetime | None = None) -> int:
    """Compute and store the rows of ``month`` (``"YYYY-MM"``) for every tenant, replacing
    the stored ones in one short transaction. Returns the row count.

    Raises:
        ValueError: malformed month.
    """
    now = now or timezone.now()
    start, _end = month_bounds(month)
    rows, currency = with_cost(monthly_usage(None, month, now=now), month, None, now)
    tenant_ids = dict(Tenant.objects.values_list("name", "pk"))
    objs = [
        UsageMonth(
            month=start.date(),
            tenant_id=tenant_ids[r.tenant],
            model=r.model,
            vendor=r.vendor,
            gpu_hours=r.gpu_hours,
            memory_gib_hours=r.memory_gib_hours,
            jobs=r.jobs,
            cost=None if r.cost is None else round(r.cost, 2),
            currency=currency if r.cost is not None else "",
        )
        for r in rows
        if r.tenant in tenant_ids
    ]
    with transaction.atomic():
        # one writer per month: the rollup task and a page reading a month never computed
        # may compute it at once (both deleting the committed rows, then both inserting)
        xact_lock(USAGE_MONTH, start.year * 100 + start.month)
        UsageMonth.objects.filter(month=start.date()).delete()
        UsageMonth.objects.bulk_create(objs)
        UsageMonthStatus.objects.update_or_create(month=start.date(), defaults={"computed_at": now})
    return len(objs)


def refresh_usage_months(now: datetime | None = None) -> dict[str, int]:
    """The rollup task's part (module docstring): ``{month: rows}`` of the months computed."""
    now = now or timezone.now()
    status = dict(UsageMonthStatus.objects.values_list("month", "computed_at"))
    out = {}
    for i, month in enumerate(recent_months(now, MONTHS)):
        start, end = month_bounds(month)
        computed = status.get(start.date())
        if i == 0 or computed is None or computed < end:
            out[month] = compute_month(month, now)
    return out


def read_month(month: str, tenant_ids: set[int] | None) -> tuple[list[UsageRow], str]:
    """The stored rows of ``month`` for ``tenant_ids`` (None = all), tenant then model order,
    and the currency (two queries; a month never computed is computed first, module
    docstring).

    Raises:
        ValueError: malformed month.
    """
    start, _end = month_bounds(month)
    if not UsageMonthStatus.objects.filter(month=start.date()).exists():
        compute_month(month)
    rows = UsageMonth.objects.filter(month=start.date()).select_related("tenant")
    if tenant_ids is not None:
        rows = rows.filter(tenant_id__in=tenant_ids)
    stored = list(rows.order_by("tenant__name", "model"))
    currency = next((r.currency for r in stored if r.currency), "")
    return [
        UsageRow(
            r.tenant.name,
            r.model,
            r.vendor,
            r.gpu_hours,
            r.memory_gib_hours,
            r.jobs,
            None if r.cost is None else float(r.cost),
        )
        for r in stored
    ], currency
