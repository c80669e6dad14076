"""Tenants, memberships, resource groups and quotas.

Quotas name their flavor (a device model name, Kueue's ResourceFlavor) as a string so that this
app never imports ``scheduling``; ``"*"`` means every model of the resource group.
"""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models

from console.core.models import BaseModel
from tenants.choices import Dimension, GroupKind, Role

slug_validator = RegexValidator(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "lowercase DNS label")
ANY_FLAVOR = "*"


class Tenant(BaseModel):
    """An organisation unit (department or team) owning members, queues and quotas."""

    name = models.CharField(max_length=63, unique=True, validators=[slug_validator])
    display_name = models.CharField(max_length=200, blank=True)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="children"
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        node, seen = self.parent, {self.pk}
        while node is not None:
            if node.pk in seen:
                raise ValidationError({"parent": "A tenant cannot be its own ancestor."})
            seen.add(node.pk)
            node = node.parent


class Membership(BaseModel):
    """A user's role in one tenant."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.MEMBER)

    class Meta:
        ordering = ["tenant__name", "user__username"]
        constraints = [
            models.UniqueConstraint(fields=["user", "tenant"], name="membership_unique_user_tenant")
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.tenant} ({self.role})"


class ResourceGroup(BaseModel):
    """A pool of devices selected by device model names and/or node labels.

    ``device_models`` lists DeviceModel names (empty = every model); ``node_selector`` is a map
    of node labels that must all match (empty = every node).
    """

    name = models.CharField(max_length=63, unique=True, validators=[slug_validator])
    kind = models.CharField(max_length=16, choices=GroupKind.choices, default=GroupKind.SHARED)
    device_models = models.JSONField(default=list, blank=True)
    node_selector = models.JSONField(default=dict, blank=True)
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if not isinstance(self.device_models, list) or not all(
            isinstance(m, str) and m for m in self.device_models
        ):
            raise ValidationError({"device_models": "A list of device model names."})
        if not isinstance(self.node_selector, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in self.node_selector.items()
        ):
            raise ValidationError({"node_selector": "A map of label name to label value."})


class Quota(BaseModel):
    """Nominal quota of one tenant × resource group × flavor × dimension (Kueue semantics).

    ``nominal`` is in the dimension's unit (milli-devices, MiB, percent of a device).
    ``borrowing_limit``: how much above nominal the tenant may borrow from the cohort
    (``None`` = unlimited). ``lending_limit``: how much of the unused nominal may be lent
    (``None`` = all of it). An exclusive group neither lends nor borrows.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="quotas")
    resource_group = models.ForeignKey(
        ResourceGroup, on_delete=models.CASCADE, related_name="quotas"
    )
    flavor = models.CharField(max_length=100, default=ANY_FLAVOR)
    dimension = models.CharField(max_length=16, choices=Dimension.choices)
    nominal = models.BigIntegerField(validators=[MinValueValidator(0)])
    borrowing_limit = models.BigIntegerField(
        null=True, blank=True, validators=[MinValueValidator(0)]
    )
    lending_limit = models.BigIntegerField(
        null=True, blank=True, validators=[MinValueValidator(0)]
    )

    class Meta:
        ordering = ["tenant__name", "resource_group__name", "flavor", "dimension"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "resource_group", "flavor", "dimension"],
                name="quota_unique_tenant_group_flavor_dimension",
            )
        ]

    def __str__(self) -> str:
        return f"{self.tenant}/{self.resource_group}/{self.flavor}/{self.dimension}={self.nominal}"
