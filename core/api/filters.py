"""Strict query parameters of the API and the pages: filters (django-filter) and pages.

django-filter reads a boolean ``?healthy=null`` as "no filter" and an integer filter accepts
``?priority_min=0.5``, so a malformed value silently returns unfiltered rows. Here a value
that is not what the OpenAPI schema says (``true``/``false``, an integer) is a 400 field
error instead. ``StrictFilterSet`` maps model fields to these filters; ``StrictFilterBackend``
(``DEFAULT_FILTER_BACKENDS``) uses it for views that only list ``filterset_fields``.
"""

from __future__ import annotations

import django_filters
from django import forms
from django.db import models
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import PageNumberPagination

TRUE, FALSE = {"true", "1"}, {"false", "0"}


class StrictBooleanField(forms.Field):
    """``true``/``false`` (or ``1``/``0``, any case); empty = not given; anything else is
    invalid."""

    widget = forms.TextInput

    def to_python(self, value):
        if value in (None, ""):
            return None
        if isinstance(value, bool):
            return value
        lowered = str(value).strip().lower()
        if lowered in TRUE:
            return True
        if lowered in FALSE:
            return False
        raise forms.ValidationError("Enter true or false.", code="invalid")


@extend_schema_field(OpenApiTypes.BOOL)
class StrictBooleanFilter(django_filters.BooleanFilter):
    field_class = StrictBooleanField


@extend_schema_field(OpenApiTypes.INT)
class IntegerFilter(django_filters.NumberFilter):
    """An integer (``0.5`` or ``1e3`` is invalid, not rounded)."""

    field_class = forms.IntegerField


class StrictFilterSet(django_filters.FilterSet):
    """FilterSet whose generated filters for boolean and integer model fields are strict."""

    FILTER_DEFAULTS = {
        **django_filters.FilterSet.FILTER_DEFAULTS,
        models.BooleanField: {"filter_class": StrictBooleanFilter},
        models.AutoField: {"filter_class": IntegerFilter},
        models.BigAutoField: {"filter_class": IntegerFilter},
        models.SmallIntegerField: {"filter_class": IntegerFilter},
        models.IntegerField: {"filter_class": IntegerFilter},
        models.BigIntegerField: {"filter_class": IntegerFilter},
        models.PositiveIntegerField: {"filter_class": IntegerFilter},
        models.PositiveSmallIntegerField: {"filter_class": IntegerFilter},
    }


class StrictFilterBackend(DjangoFilterBackend):
    """DRF filter backend building ``filterset_fields`` filtersets on :class:`StrictFilterSet`,
    where an empty value of a filter that is not free text (``?backend=``, ``?healthy=``,
    ``?queue=``) is a 400 field error, not "no filter": the schema's enum, boolean or integer
    has no empty value. (The pages' filter forms keep django-filter's reading: an empty select
    means "any".)"""

    filterset_base = StrictFilterSet

    def get_filterset(self, request, queryset, view):
        filterset = super().get_filterset(request, queryset, view)
        if filterset is None:
            return None
        params = request.query_params
        empty = {
            name: ["This value may not be empty."]
            for name, declared in filterset.filters.items()
            if not isinstance(declared, django_filters.CharFilter) and "" in params.getlist(name)
        }
        if empty:
            raise ValidationError(empty)
        return filterset


class StrictPageNumberPagination(PageNumberPagination):
    """DRF's page-number pagination (``DEFAULT_PAGINATION_CLASS``), where ``?page=`` must be
    a positive integer when given: an empty or repeated value is "Invalid page." (404, as DRF
    answers for ``?page=abc``), not silently page 1; the schema says ``minimum: 1``."""

    def paginate_queryset(self, queryset, request, view=None):
        values = request.query_params.getlist(self.page_query_param)
        if values and (len(values) > 1 or not values[0].isdigit()):
            raise NotFound(
                self.invalid_page_message.format(
                    page_number=values[-1], message="not a positive integer"
                )
            )
        return super().paginate_queryset(queryset, request, view)

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_query_param:
                parameter["schema"]["minimum"] = 1
        return parameters
