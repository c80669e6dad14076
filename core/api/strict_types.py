"""Strict JSON types for DRF input fields, installed once at start-up (``ready()`` of the
``core`` app).

DRF is lenient on input by design: a ``CharField`` takes ``0`` as ``"0"``, an
``IntegerField`` takes ``"5"``, a ``BooleanField`` takes ``"yes"`` and ``1``, a related
field takes ``""`` as null. The API reads JSON only, where each of these is a different type
from the one the OpenAPI schema promises, so here each is a 400 field error instead (checked
by schemathesis' negative-data rejection, tests/api/test_api_schemathesis.py):

* ``CharField`` (and subclasses): a string;
* ``IntegerField``: an integer (an integral number such as ``2.0`` too);
* ``FloatField``: a number;
* ``BooleanField``: ``true`` or ``false``;
* ``PrimaryKeyRelatedField``: an integer; ``SlugRelatedField``: a string;
* any related field: not ``""``.

A serializer given a ``QueryDict`` (query parameters, where every value is a string) keeps
DRF's conversions.
"""

from __future__ import annotations

from typing import Any

from django.http import QueryDict
from rest_framework import fields, relations
from rest_framework.exceptions import ValidationError


def _integer(value) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


RULES = [
    (fields.CharField, lambda v: isinstance(v, str), "Not a valid string."),
    (fields.IntegerField, _integer, "A valid integer is required."),
    (fields.FloatField, _number, "A valid number is required."),
    (fields.BooleanField, lambda v: isinstance(v, bool), "Must be true or false."),
    (
        relations.PrimaryKeyRelatedField,
        lambda v: _integer(v) and not isinstance(v, float),
        "Incorrect type.",
    ),
    (relations.SlugRelatedField, lambda v: isinstance(v, str), "Not a valid string."),
]


def _from_json(field) -> bool:
    """False when the field's root serializer reads a QueryDict (strings by nature)."""
    return not isinstance(getattr(field.root, "initial_data", None), QueryDict)


def _strict(original, accepts, message):
    def to_internal_value(self, data):
        if not accepts(data) and _from_json(self):
            raise ValidationError(message, code="invalid")
        return original(self, data)

    wrapped: Any = to_internal_value  # a function with a marker attribute
    wrapped.strict = True
    return wrapped


def _no_blank_relation(original):
    def run_validation(self, data=fields.empty):
        if data == "" and _from_json(self):  # DRF reads "" as null for forms; JSON: null
            raise ValidationError("This field may not be blank.", code="blank")
        return original(self, data)

    wrapped: Any = run_validation  # a function with a marker attribute
    wrapped.strict = True
    return wrapped


def install() -> None:
    """Wrap the input conversion of the fields above (idempotent)."""
    for cls, accepts, message in RULES:
        field_class: Any = cls  # a DRF field class whose method is wrapped in place
        if not getattr(field_class.to_internal_value, "strict", False):
            field_class.to_internal_value = _strict(field_class.to_internal_value, accepts, message)
    related: Any = relations.RelatedField
    if not getattr(related.run_validation, "strict", False):
        related.run_validation = _no_blank_relation(related.run_validation)
