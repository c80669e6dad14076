from rest_framework import serializers
from rest_framework.exceptions import NotFound

from tenants.choices import Dimension
from tenants.models import MAX_QUOTA_AMOUNT, Quota, ResourceGroup, Tenant


class TenantSerializer(serializers.ModelSerializer):
    parent = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = Tenant
        fields = ["id", "name", "display_name", "parent"]


class QuotaSerializer(serializers.ModelSerializer):
    tenant = serializers.CharField(source="tenant.name")
    resource_group = serializers.CharField(source="resource_group.name")

    class Meta:
        model = Quota
        fields = [
            "id",
            "tenant",
            "resource_group",
            "flavor",
            "dimension",
            "nominal",
            "borrowing_limit",
            "lending_limit",
        ]


class NameField(serializers.SlugRelatedField):
    """A related object by ``name``; a value with a NUL character is invalid (PostgreSQL text
    cannot hold it), not a server error."""

    def __init__(self, **kwargs):
        kwargs.setdefault("slug_field", "name")
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if isinstance(data, str) and "\x00" in data:
            self.fail("does_not_exist", slug_name=self.slug_field, value=data)
        return super().to_internal_value(data)


class VisibleTenantField(NameField):
    """A tenant by name among those the caller may see (``context["visible_tenant_ids"]``,
    None = every tenant). A tenant that does not exist and one the caller may not see both
    answer 404 "No such tenant.", so the answer does not tell whether a name is taken."""

    def __init__(self, **kwargs):
        kwargs.setdefault("queryset", Tenant.objects.all())
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        try:
            tenant = super().to_internal_value(data)
        except serializers.ValidationError:
            if not isinstance(data, str) or "\x00" in data:
                raise  # wrong type or a NUL character: a field error
            raise NotFound("No such tenant.") from None
        visible = self.context.get("visible_tenant_ids")
        if visible is not None and tenant.pk not in visible:
            raise NotFound("No such tenant.")
        return tenant


class QuotaWriteSerializer(serializers.ModelSerializer):
    """Input of quota create/update. ``tenant`` and ``resource_group`` are names; on update
    only the amounts may change."""

    tenant = VisibleTenantField()
    resource_group = NameField(queryset=ResourceGroup.objects.all())
    flavor = serializers.CharField(max_length=100, default="*")
    dimension = serializers.ChoiceField(choices=Dimension.choices)
    nominal = serializers.IntegerField(min_value=0, max_value=MAX_QUOTA_AMOUNT)
    borrowing_limit = serializers.IntegerField(
        min_value=0, max_value=MAX_QUOTA_AMOUNT, required=False, allow_null=True, default=None
    )
    lending_limit = serializers.IntegerField(
        min_value=0, max_value=MAX_QUOTA_AMOUNT, required=False, allow_null=True, default=None
    )

    class Meta:
        model = Quota
        fields = [
            "tenant",
            "resource_group",
            "flavor",
            "dimension",
            "nominal",
            "borrowing_limit",
            "lending_limit",
        ]
        validators = []  # uniqueness is checked by the service (409, not 400)

    def validate(self, attrs):
        if self.instance is not None:
            for name in ("tenant", "resource_group", "flavor", "dimension"):
                current = getattr(self.instance, name)
                if name in attrs and attrs[name] != current:
                    raise serializers.ValidationError(
                        {name: "Only nominal and the limits of a quota may change."}
                    )
        nominal = attrs.get("nominal", getattr(self.instance, "nominal", 0))
        lending = attrs.get("lending_limit")
        if lending is not None and lending > nominal:
            raise serializers.ValidationError({"lending_limit": "Must not exceed nominal."})
        return attrs
