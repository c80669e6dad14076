"""Enumerations of the tenants app (Kueue vocabulary where one exists)."""

from django.db import models


class Role(models.TextChoices):
    """A member's role in a tenant (platform admins are Django superusers)."""

    TENANT_ADMIN = "tenant_admin", "Tenant admin"
    MEMBER = "member", "Member"
    VIEWER = "viewer", "Viewer"


class GroupKind(models.TextChoices):
    """How a resource group's quota may be shared within its cohort.

    ``exclusive``: guaranteed, never lent (lending limit 0, borrowing limit 0).
    ``shared``: unused nominal quota is lent to the cohort.
    ``elastic``: runs on borrowed capacity and is preemptible.
    """

    EXCLUSIVE = "exclusive", "Exclusive"
    SHARED = "shared", "Shared"
    ELASTIC = "elastic", "Elastic"


class Dimension(models.TextChoices):
    """A quota dimension with its unit in the name."""

    DEVICES = "devices", "devices (milli-devices)"
    MEMORY_MIB = "memory_mib", "device memory (MiB)"
    CORES_PERCENT = "cores_percent", "device cores (percent of one device)"
