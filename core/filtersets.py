"""Filters shared by the apps' filtersets, and the filterset of the audit log (shared by
/audit/ and /api/audit/)."""

from __future__ import annotations

from collections.abc import Iterable

import django_filters
from django import forms
from django.db.models import Q

from core.models import AuditEntry
from core.words import canonical_choice


class NameOrIdFilter(django_filters.CharFilter):
    """``?tenant=team-nlp`` or ``?tenant=7``: a value of digits matches ``id_field``, any
    other value matches one of ``name_fields`` case-insensitively (``a/b`` splits over two
    name fields, e.g. ``?queue=team-nlp/nvidia-shared``).

    Args:
        id_field: the lookup of the primary key (``"queue_id"``).
        name_fields: one lookup (``"tenant__name"``) or two for ``parent/child`` values
            (``("queue__tenant__name", "queue__name")``); a value without ``/`` matches the
            last one.
    """

    def __init__(self, *args, id_field: str, name_fields: str | Iterable[str], **kwargs):
        kwargs.setdefault("help_text", "a name or an id")
        super().__init__(*args, **kwargs)
        self.id_field = id_field
        self.name_fields = (name_fields,) if isinstance(name_fields, str) else tuple(name_fields)

    def filter(self, qs, value):
        if value in (None, ""):
            return qs
        value = value.strip()
        if value.isascii() and value.isdigit():  # not "¹" or "٣", which isdigit() accepts
            number = int(value)
            # an id beyond PostgreSQL's bigint matches nothing (rather than a database error)
            return qs.filter(**{self.id_field: number}) if number < 2**63 else qs.none()
        parts = value.split("/") if len(self.name_fields) > 1 else [value]
        if len(parts) > len(self.name_fields):
            return qs.none()
        fields = self.name_fields[-len(parts) :]
        query = Q()
        for field, part in zip(fields, parts, strict=True):
            query &= Q(**{f"{field}__iexact": part})
        return qs.filter(query).distinct() if self.distinct else qs.filter(query)


class ChoiceIgnoringCaseField(forms.CharField):
    """The form field of :class:`ChoiceIgnoringCaseFilter`: cleans a value to its canonical
    spelling, or fails validation listing the valid ones (so an API request answers 400 with
    the field error and a page shows it, instead of an error raised while filtering)."""

    def __init__(self, *args, valid_values, **kwargs):
        super().__init__(*args, **kwargs)
        self.valid_values = valid_values

    def clean(self, value):
        value = super().clean(value)
        if value in (None, ""):
            return value
        valid = list(self.valid_values() if callable(self.valid_values) else self.valid_values)
        canonical = canonical_choice(value, valid)
        if canonical is None:
            raise forms.ValidationError(
                f"unknown value {value!r}; valid values: {', '.join(sorted(valid))}",
                code="invalid_choice",
            )
        return canonical


class ChoiceIgnoringCaseFilter(django_filters.CharFilter):
    """An exact-match filter over a closed set of values, matched case-insensitively
    (``?vendor=nvidia`` finds ``NVIDIA``). An unknown value fails the form's validation
    listing the valid ones (API: 400 under the filter's name; pages: the form's error).

    Args:
        choices: the valid values, or a callable returning them (read when the form is
            validated, e.g. the vendors of the device models in the database).
    """

    field_class = ChoiceIgnoringCaseField

    def __init__(self, *args, choices, **kwargs):
        super().__init__(*args, valid_values=choices, **kwargs)

    def filter(self, qs, value):
        if value in (None, ""):
            return qs
        qs = qs.filter(**{self.field_name: value})  # canonical: the field cleaned it
        return qs.distinct() if self.distinct else qs


class AuditFilterSet(django_filters.FilterSet):
    actor = django_filters.CharFilter(field_name="actor_name")
    action = django_filters.CharFilter(lookup_expr="startswith")
    object_type = django_filters.CharFilter()
    since = django_filters.IsoDateTimeFilter(field_name="time", lookup_expr="gte")
    until = django_filters.IsoDateTimeFilter(field_name="time", lookup_expr="lt")

    class Meta:
        model = AuditEntry
        fields = ["actor", "action", "object_type", "tenant_id", "source"]
