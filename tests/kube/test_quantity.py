"""The adapter's one quantity parser (``scheduling.kube.quantity``): the official client's
grammar, the field in every error, negative or non-finite values refused."""

from __future__ import annotations

from decimal import Decimal

import pytest

from scheduling.kube.quantity import cpu_milli, memory_mib, parse_quantity, plain_int

CASES = [
    ("500m", Decimal("0.5")),
    ("2", Decimal(2)),
    ("16Gi", Decimal(16 * 2**30)),
    ("1e3", Decimal(1000)),
    ("1.5", Decimal("1.5")),
    ("100k", Decimal(100_000)),
    ("3M", Decimal(3_000_000)),
    ("250u", Decimal("0.00025")),
    (" 80Gi ", Decimal(80 * 2**30)),
    (3, Decimal(3)),
    (0.25, Decimal("0.25")),
]


@pytest.mark.parametrize(("text", "value"), CASES)
def test_quantities_parse_to_their_value(text, value):
    assert parse_quantity(text, "f") == value


@pytest.mark.parametrize(("text", "value"), CASES)
def test_the_grammar_is_the_official_clients(text, value):
    from kubernetes.utils import parse_quantity as client_parse

    assert client_parse(text.strip() if isinstance(text, str) else text) == value


@pytest.mark.parametrize("bad", ["abc", "", "-1", "-2Gi", "Infinity", "NaN", True, None, [1]])
def test_a_bad_quantity_names_its_field(bad):
    with pytest.raises(ValueError, match=r"^spec\.capacity\.memory: "):
        parse_quantity(bad, "spec.capacity.memory")


@pytest.mark.parametrize("mib", [0, 1, 1023, 81920, 2**20])
def test_mib_round_trips_through_the_binary_suffixes(mib):
    assert memory_mib(f"{mib}Mi", "m") == mib
    assert memory_mib(str(mib * 2**20), "m") == mib
    assert memory_mib(f"{mib * 1024}Ki", "m") == mib


def test_cpu_rounds_up_to_a_millicore_and_plain_ints_refuse_suffixes():
    assert cpu_milli("1500m", "c") == 1500 and cpu_milli("0.0001", "c") == 1
    assert plain_int("30", "g") == 30
    with pytest.raises(ValueError, match="plain non-negative integer"):
        plain_int("30Mi", "g")
