"""GPU-hours and cost per tenant, device model and month (pure; no Django).

A usage interval holds ``fraction_milli`` milli-devices of one device (1000 = the whole device;
a fractional booking is charged ``ceil(1000 × max(memory share, cores share))`` as in
:func:`scheduling.accounting.booking_charges`) from ``start`` to ``end``.

GPU-hours of an interval = fraction_milli / 1000 × duration in hours. Cost = GPU-hours × the
price per device-hour of the device model in force at each instant: the price row with the
latest ``effective_from`` <= that instant. Intervals are cut at month boundaries (UTC) and at
price changes, so an interval spanning two months or a price change is charged piecewise.
Amounts are exact decimals, rounded (half-even) only in the returned rows: GPU-hours to 4
places, cost to 2.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import ROUND_HALF_EVEN, Decimal

__all__ = ["UsageInterval", "Price", "CostRow", "month_start", "next_month", "cost_report"]

HOURS_Q = Decimal("0.0001")
MONEY_Q = Decimal("0.01")


@dataclass(frozen=True, slots=True)
class UsageInterval:
    """A device (or a fraction of one) held by a job.

    Attributes:
        tenant_id, job_id, device_id: database ids.
        model: device model name (the price key).
        fraction_milli: milli-devices held (1..1000).
        start, end: aware datetimes, ``start <= end``.
    """

    tenant_id: int
    job_id: int
    device_id: int
    model: str
    fraction_milli: int
    start: datetime
    end: datetime


@dataclass(frozen=True, slots=True)
class Price:
    """Price of one device-hour of a model from ``effective_from`` (aware datetime) on."""

    model: str
    effective_from: datetime
    per_hour: Decimal
    currency: str = "USD"


@dataclass(frozen=True, slots=True)
class CostRow:
    """Usage and cost of one tenant × model × month.

    Attributes:
        month: first instant of the month (UTC).
        gpu_hours: device-hours, 4 decimals.
        cost: money for the priced hours, 2 decimals.
        unpriced_hours: device-hours with no price in force (not in ``cost``), 4 decimals.
        jobs: number of distinct jobs.
    """

    tenant_id: int
    model: str
    month: datetime
    gpu_hours: Decimal
    cost: Decimal
    currency: str
    unpriced_hours: Decimal
    jobs: int


def month_start(when: datetime) -> datetime:
    """First instant (UTC) of the month containing ``when``."""
    when = when.astimezone(UTC)
    return datetime(when.year, when.month, 1, tzinfo=UTC)


def next_month(start: datetime) -> datetime:
    """First instant of the month after the one starting at ``start``."""
    if start.month == 12:
        return datetime(start.year + 1, 1, 1, tzinfo=UTC)
    return datetime(start.year, start.month + 1, 1, tzinfo=UTC)


def _hours(fraction_milli: int, start: datetime, end: datetime) -> Decimal:
    delta = end - start
    micros = (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
    return Decimal(fraction_milli) * Decimal(micros) / Decimal(1000 * 3600 * 1_000_000)


def _price_pieces(
    prices: Sequence[Price], start: datetime, end: datetime
) -> list[tuple[datetime, datetime, Price | None]]:
    """Cut ``[start, end)`` at price changes; prices sorted by effective_from."""
    pieces = []
    cursor = start
    while cursor < end:
        current = None
        following = end
        for price in prices:
            if price.effective_from <= cursor:
                current = price
            elif price.effective_from < following:
                following = price.effective_from
                break
        pieces.append((cursor, following, current))
        cursor = following
    return pieces


def cost_report(
    intervals: Iterable[UsageInterval], prices: Iterable[Price], start: datetime, end: datetime
) -> list[CostRow]:
    """Usage and cost per tenant × model × month over ``[start, end)``.

    Args:
        intervals: usage intervals (any range; clipped to ``[start, end)``).
        prices: every price row of every model.
        start, end: the reporting window (aware datetimes).

    Returns:
        Rows sorted by (month, tenant id, model). Rows with zero hours are left out.
    """
    by_model: dict[str, list[Price]] = {}
    for price in prices:
        by_model.setdefault(price.model, []).append(price)
    for rows in by_model.values():
        rows.sort(key=lambda p: p.effective_from)
    hours: dict[tuple, Decimal] = {}
    money: dict[tuple, Decimal] = {}
    unpriced: dict[tuple, Decimal] = {}
    jobs: dict[tuple, set[int]] = {}
    currency: dict[tuple, str] = {}
    for iv in intervals:
        lo, hi = max(iv.start, start), min(iv.end, end)
        month = month_start(lo) if lo < hi else None
        while month is not None and month < hi:
            m_lo, m_hi = max(lo, month), min(hi, next_month(month))
            key = (month, iv.tenant_id, iv.model)
            for p_lo, p_hi, price in _price_pieces(by_model.get(iv.model, []), m_lo, m_hi):
                h = _hours(iv.fraction_milli, p_lo, p_hi)
                hours[key] = hours.get(key, Decimal(0)) + h
                if price is None:
                    unpriced[key] = unpriced.get(key, Decimal(0)) + h
                else:
                    money[key] = money.get(key, Decimal(0)) + h * price.per_hour
                    currency.setdefault(key, price.currency)
            jobs.setdefault(key, set()).add(iv.job_id)
            month = next_month(month)
    out = []
    for key in sorted(hours, key=lambda k: (k[0], k[1], k[2])):
        if not hours[key]:
            continue
        missing = unpriced.get(key, Decimal(0))
        out.append(
            CostRow(
                tenant_id=key[1],
                model=key[2],
                month=key[0],
                gpu_hours=hours[key].quantize(HOURS_Q, ROUND_HALF_EVEN),
                cost=money.get(key, Decimal(0)).quantize(MONEY_Q, ROUND_HALF_EVEN),
                currency=currency.get(key, ""),
                unpriced_hours=missing.quantize(HOURS_Q, ROUND_HALF_EVEN),
                jobs=len(jobs[key]),
            )
        )
    return out
