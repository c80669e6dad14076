"""Kubernetes resource quantities (``k8s.io/apimachinery/pkg/api/resource``), the one parser
of the adapter: node capacity and pod requests (HAMi codec), ResourceSlice capacities (DRA).

Parsing is the official client's (:func:`kubernetes.utils.parse_quantity`); this module adds
what the console needs on top: the field a bad value came from in the error, refusal of
negative and non-finite values, and the unit conversions (millicores, MiB, HAMi's plain
integers).
"""

from __future__ import annotations

from decimal import ROUND_CEILING, Decimal

from kubernetes.utils import parse_quantity as _client_parse

MIB = 2**20


def parse_quantity(value: object, field: str = "quantity") -> Decimal:
    """``"500m"``, ``"2"``, ``"16Gi"``, ``"1e3"``, ints and floats -> Decimal.

    Raises:
        ValueError: not a finite non-negative quantity; the message names ``field``.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"{field}: {value!r} is not a quantity")
    try:
        number = _client_parse(value.strip() if isinstance(value, str) else value)
    except (ValueError, ArithmeticError):
        raise ValueError(f"{field}: {value!r} is not a quantity") from None
    if not number.is_finite() or number < 0:
        raise ValueError(f"{field}: {value!r} is not a non-negative quantity")
    return number


def cpu_milli(value: object, field: str) -> int:
    """CPU quantity -> millicores (rounded up)."""
    return int((parse_quantity(value, field) * 1000).to_integral_value(ROUND_CEILING))


def memory_mib(value: object, field: str) -> int:
    """Memory quantity in bytes -> MiB (rounded down, as allocatable is)."""
    return int(parse_quantity(value, field) // MIB)


def plain_int(value: object, field: str) -> int:
    """A HAMi count/MiB/percent resource: must be a plain non-negative integer
    (HAMi drops suffixed or decimal values silently; we refuse them with this error)."""
    if isinstance(value, bool):
        raise ValueError(f"{field}: {value!r} is not a plain integer")
    if isinstance(value, int) and value >= 0:
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    raise ValueError(
        f"{field}: {value!r} must be a plain non-negative integer (HAMi units, no suffix)"
    )
