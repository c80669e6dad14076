"""Kubernetes resource quantities (``k8s.io/apimachinery/pkg/api/resource``) as ints."""

from __future__ import annotations

from decimal import ROUND_CEILING, Decimal, InvalidOperation

_BIN = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DEC = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
}


def parse_quantity(value: object, field: str) -> Decimal:
    """Parse ``"500m"``, ``"2"``, ``"16Gi"``, ``"1e3"``, ints. Raises ValueError naming
    ``field``."""
    if isinstance(value, bool):
        raise ValueError(f"{field}: {value!r} is not a quantity")
    if isinstance(value, (int, float)):
        return Decimal(str(value))
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{field}: {value!r} is not a quantity")
    s = value.strip()
    for suf, mul in _BIN.items():
        if s.endswith(suf):
            return _num(s[: -len(suf)], field, value) * mul
    if s[-1] in "numkMGTPE" and not s[-1].isdigit():
        return _num(s[:-1], field, value) * _DEC[s[-1]]
    return _num(s, field, value)


def _num(s: str, field: str, orig: object) -> Decimal:
    try:
        d = Decimal(s)
    except InvalidOperation:
        raise ValueError(f"{field}: {orig!r} is not a quantity") from None
    if not d.is_finite() or d < 0:
        raise ValueError(f"{field}: {orig!r} is not a non-negative quantity")
    return d


def cpu_milli(value: object, field: str) -> int:
    """CPU quantity -> millicores (rounded up)."""
    return int((parse_quantity(value, field) * 1000).to_integral_value(ROUND_CEILING))


def memory_mib(value: object, field: str) -> int:
    """Memory quantity in bytes -> MiB (rounded down, as allocatable is)."""
    return int(parse_quantity(value, field) // (2**20))


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
