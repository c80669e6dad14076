"""Tenants and their members."""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models

from core.models import BaseModel
from tenants.choices import Role

slug_validator = RegexValidator(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "lowercase DNS label")
ANY_FLAVOR = "*"


class Tenant(BaseModel):
    """An organisation unit (department or team) owning members, queues and quotas."""

    name = models.CharField(max_length=63, unique=True, validators=[slug_validator])
    display_name = models.CharField(max_length=200, blank=True)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="children"
    )
    fair_share_weight = models.FloatField(
        default=1.0,
        validators=[MinValueValidator(0.0)],
        help_text="Kueue fairSharing.weight: a larger weight borrows earlier and is reclaimed "
        "later; 0 makes any borrowing an infinite share.",
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
