"""Device prices per model and hour (time-varying; read by the cost report)."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal, InvalidOperation

from django.utils import timezone

from core.exceptions import InvalidRequest
from scheduling.models import DeviceModel
from telemetry.models import DevicePrice

__all__ = ["set_price"]


def set_price(
    model_name: str, effective_from: datetime, per_hour, currency: str = "USD"
) -> DevicePrice:
    """Create or replace the price of a device model from ``effective_from`` on.

    Raises:
        InvalidRequest: unknown model, negative or malformed price, bad currency, naive time.
    """
    model = DeviceModel.objects.filter(name=model_name).first()
    if model is None:
        raise InvalidRequest(f"unknown device model {model_name!r}", field="model")
    try:
        amount = Decimal(str(per_hour))
    except InvalidOperation as exc:
        raise InvalidRequest(f"price {per_hour!r} is not a number", field="per_hour") from exc
    if not amount.is_finite() or amount < 0:
        raise InvalidRequest("price must be a non-negative number", field="per_hour")
    if len(currency) != 3 or not currency.isalpha():
        raise InvalidRequest("currency must be a 3-letter code", field="currency")
    if timezone.is_naive(effective_from):
        raise InvalidRequest("effective_from needs a time zone", field="effective_from")
    price, _ = DevicePrice.objects.update_or_create(
        model=model,
        effective_from=effective_from,
        defaults={"per_hour": amount, "currency": currency.upper()},
    )
    return price
