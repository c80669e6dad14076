"""django-filter FilterSets of the tenants app (API lists and pages)."""

import django_filters

from core.api.filters import StrictFilterSet
from core.filtersets import NameOrIdFilter
from tenants.models import Membership, ResourceGroup, Tenant


class TenantFilterSet(StrictFilterSet):
    name = django_filters.CharFilter(lookup_expr="icontains")
    parent = NameOrIdFilter(id_field="parent_id", name_fields="parent__name")

    class Meta:
        model = Tenant
        fields = ["name", "parent"]


class MembershipFilterSet(StrictFilterSet):
    tenant = NameOrIdFilter(id_field="tenant_id", name_fields="tenant__name")
    user = django_filters.CharFilter(field_name="user__username")

    class Meta:
        model = Membership
        fields = ["tenant", "user", "role"]


class ResourceGroupFilterSet(StrictFilterSet):
    name = django_filters.CharFilter(lookup_expr="icontains")

    class Meta:
        model = ResourceGroup
        fields = ["name", "kind"]
