"""django-filter FilterSets shared by the API lists and the dashboards."""

import django_filters
from django.db.models import Exists, OuterRef, Q

from core.api.filters import IntegerFilter, StrictBooleanFilter, StrictFilterSet
from core.filtersets import ChoiceIgnoringCaseFilter, NameOrIdFilter
from scheduling.choices import VENDORS, JobKind, JobState, PlacementState
from scheduling.models import (
    Cluster,
    Device,
    DeviceModel,
    Job,
    JobContainer,
    Node,
    Placement,
    PlacementDevice,
)


class JobFilterSet(StrictFilterSet):
    state = django_filters.MultipleChoiceFilter(choices=JobState.choices)
    tenant = NameOrIdFilter(id_field="tenant_id", name_fields="tenant__name")
    queue = NameOrIdFilter(
        id_field="queue_id",
        name_fields=("queue__tenant__name", "queue__name"),
        help_text="a queue id, a queue name or tenant/queue",
    )
    name = django_filters.CharFilter(lookup_expr="icontains")
    priority_min = IntegerFilter(field_name="priority", lookup_expr="gte")
    kind = django_filters.MultipleChoiceFilter(choices=JobKind.choices)
    parent = IntegerFilter(field_name="parent_id", help_text="Replicas of this inference service.")
    replicas = StrictBooleanFilter(
        field_name="parent",
        lookup_expr="isnull",
        exclude=True,
        help_text="false: leave inference replicas out (services, not their pods).",
    )
    vendor = ChoiceIgnoringCaseFilter(
        field_name="containers__vendor",
        choices=VENDORS,
        distinct=True,
        help_text="Jobs with a container asking this vendor's devices.",
    )
    model = django_filters.CharFilter(
        method="filter_model", help_text="Jobs asking for this device model or placed on it."
    )

    class Meta:
        model = Job
        fields = ["state", "tenant", "queue", "name", "source", "kind", "parent"]

    def filter_model(self, queryset, name, value):
        if not value:
            return queryset
        asks = JobContainer.objects.filter(job=OuterRef("pk"), device_types__contains=[value])
        placed = PlacementDevice.objects.filter(
            placement__job=OuterRef("pk"), device__model__name=value
        )
        return queryset.filter(Exists(asks) | Exists(placed))


class NodeFilterSet(StrictFilterSet):
    cluster = django_filters.CharFilter(field_name="cluster__name")
    name = django_filters.CharFilter(lookup_expr="icontains")
    has_error = StrictBooleanFilter(method="filter_has_error")
    search = django_filters.CharFilter(
        method="filter_search",
        help_text="Part of the node's name or of its labels (a key, a value or key=value).",
    )

    class Meta:
        model = Node
        fields = ["cluster", "name", "schedulable"]

    def filter_has_error(self, queryset, name, value):
        return queryset.exclude(error="") if value else queryset.filter(error="")

    def filter_search(self, queryset, name, value):
        """``key=value`` matches that label exactly; other text matches part of the name or
        of the labels' JSON text (keys and values), ignoring case."""
        value = (value or "").strip()
        if not value:
            return queryset
        key, sep, label = value.partition("=")
        if sep and key.strip():
            return queryset.filter(labels__contains={key.strip(): label.strip()})
        return queryset.filter(Q(name__icontains=value) | Q(labels__icontains=value))


class DeviceFilterSet(StrictFilterSet):
    node = django_filters.CharFilter(field_name="node__name")
    model = django_filters.CharFilter(field_name="model__name")
    vendor = ChoiceIgnoringCaseFilter(field_name="model__vendor", choices=VENDORS)

    class Meta:
        model = Device
        fields = ["node", "model", "vendor", "healthy", "cordoned"]


class PlacementFilterSet(StrictFilterSet):
    job = IntegerFilter(field_name="job_id")
    node = django_filters.CharFilter(field_name="node__name")
    tenant = NameOrIdFilter(id_field="job__tenant_id", name_fields="job__tenant__name")
    device = django_filters.CharFilter(field_name="devices__device__uuid", distinct=True)
    state = django_filters.MultipleChoiceFilter(choices=PlacementState.choices)

    class Meta:
        model = Placement
        fields = ["job", "node", "tenant", "device", "state"]


class DeviceModelFilterSet(StrictFilterSet):
    name = django_filters.CharFilter(lookup_expr="icontains")
    vendor = ChoiceIgnoringCaseFilter(field_name="vendor", choices=VENDORS)

    class Meta:
        model = DeviceModel
        fields = ["name", "vendor"]


class ClusterFilterSet(StrictFilterSet):
    name = django_filters.CharFilter(lookup_expr="icontains")

    class Meta:
        model = Cluster
        fields = ["name", "backend"]
