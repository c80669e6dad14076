"""Kubernetes resource quantities (``k8s.io/apimachinery/pkg/api/resource``), the one parser
of the adapter: node capacity and pod requests (HAMi codec), ResourceSlice capacities (DRA).

The grammar is the apimachinery one the official client's ``kubernetes.utils.parse_quantity``
reads (binary suffixes ``Ki``..``Ei``, decimal ``n``..``E``, plain and exponent numbers), written
here because the HAMi codec and the ``place`` command load no Kubernetes client
(tests/placement/test_hami_io.py: importing ``kubernetes.utils`` pulls in the whole client and
PyYAML). On top of the grammar: the field a bad value came from in every error, refusal of
negative and non-finite values, and the unit conversions (millicores, MiB, HAMi's plain
integers). ``tests/kube/test_quantity.py`` checks it against the client's parser.
"""

from __future__ import annotations

from decimal import ROUND_CEILING, Decimal, InvalidOperation

MIB = 2**20
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
}


def parse_quantity(value: object, field: str = "quantity") -> Decimal:
    """``"500m"``, ``"2"``, ``"16Gi"``, ``"1e3"``, ints and floats -> Decimal.

    Raises:
        ValueError: not a finite non-negative quantity; the message names ``field``.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"{field}: {value!r} is not a quantity")
    text = str(value).strip()
    scale: Decimal | int = 1
    if text[-2:] in _BINARY:
        text, scale = text[:-2], _BINARY[text[-2:]]
    elif text[-1:] in _DECIMAL and text[:-1]:
        text, scale = text[:-1], _DECIMAL[text[-1:]]
    try:
        number = Decimal(text) * scale
    except InvalidOperation:
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
