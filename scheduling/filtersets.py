"""django-filter FilterSets shared by the API lists and the dashboards."""

import django_filters

from core.api.filters import IntegerFilter, StrictBooleanFilter, StrictFilterSet
from scheduling.choices import JobState, PlacementState
from scheduling.models import Cluster, Device, DeviceModel, Job, Node, Placement


class JobFilterSet(StrictFilterSet):
    state = django_filters.MultipleChoiceFilter(choices=JobState.choices)
    tenant = django_filters.CharFilter(field_name="tenant__name")
    queue = IntegerFilter(field_name="queue_id")
    name = django_filters.CharFilter(lookup_expr="icontains")
    priority_min = IntegerFilter(field_name="priority", lookup_expr="gte")

    class Meta:
        model = Job
        fields = ["state", "tenant", "queue", "name", "source"]


class NodeFilterSet(StrictFilterSet):
    cluster = django_filters.CharFilter(field_name="cluster__name")
    name = django_filters.CharFilter(lookup_expr="icontains")
    has_error = StrictBooleanFilter(method="filter_has_error")

    class Meta:
        model = Node
        fields = ["cluster", "name", "schedulable"]

    def filter_has_error(self, queryset, name, value):
        return queryset.exclude(error="") if value else queryset.filter(error="")


class DeviceFilterSet(StrictFilterSet):
    node = django_filters.CharFilter(field_name="node__name")
    model = django_filters.CharFilter(field_name="model__name")
    vendor = django_filters.CharFilter(field_name="model__vendor")

    class Meta:
        model = Device
        fields = ["node", "model", "vendor", "healthy", "cordoned"]


class PlacementFilterSet(StrictFilterSet):
    job = IntegerFilter(field_name="job_id")
    node = django_filters.CharFilter(field_name="node__name")
    tenant = django_filters.CharFilter(field_name="job__tenant__name")
    device = django_filters.CharFilter(field_name="devices__device__uuid", distinct=True)
    state = django_filters.MultipleChoiceFilter(choices=PlacementState.choices)

    class Meta:
        model = Placement
        fields = ["job", "node", "tenant", "device", "state"]


class DeviceModelFilterSet(StrictFilterSet):
    name = django_filters.CharFilter(lookup_expr="icontains")

    class Meta:
        model = DeviceModel
        fields = ["name", "vendor"]


class ClusterFilterSet(StrictFilterSet):
    name = django_filters.CharFilter(lookup_expr="icontains")

    class Meta:
        model = Cluster
        fields = ["name", "backend"]
