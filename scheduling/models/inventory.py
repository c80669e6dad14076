"""Device inventory: clusters, nodes, device models and physical devices.

Devices are keyed by hardware serial / UUID, never by a per-node index; a device that moves to
another node keeps its row (and so its history).
"""

import re

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

from core.models import BaseModel
from scheduling.choices import Backend, SlicingMode


class SubmissionMode(models.TextChoices):
    """How placements become Kubernetes objects (``scheduling.kube.manifests``, hami.md §8)."""

    HAMI = "hami", "HAMi (pin devices, HAMi scheduler binds)"
    DRA = "dra", "DRA (ResourceClaim per pod)"
    WHOLE = "whole", "Whole devices (vendor device plugin)"


KUBECONFIG_ENV_TEMPLATE = "CLUSTER_{name}_KUBECONFIG"
"""Environment variable naming a cluster's kubeconfig file when ``kubeconfig_path`` is empty;
``{name}`` is the cluster name upper-cased with every non-alphanumeric character as ``_``."""


class Cluster(BaseModel):
    """A Kubernetes cluster the console manages, or a simulated one.

    Connection (``backend = kubernetes``): exactly one of ``in_cluster`` (the console's own
    service account), ``kubeconfig_path`` (+ ``kube_context``) or the environment variable
    :meth:`kubeconfig_env` holding a kubeconfig path. Credentials are never stored in the
    database: only where to find them. ``server_version`` / ``resource_versions`` are what the
    last "test connection" saw. ``watch_resource_version`` is the pod watch's resume point;
    ``inventory_errors`` / ``unknown_pods`` are the last sync's and reconcile's reports.
    """

    name = models.CharField(max_length=63, unique=True)
    backend = models.CharField(max_length=16, choices=Backend.choices, default=Backend.SIMULATED)
    description = models.TextField(blank=True)
    submission_mode = models.CharField(
        max_length=8, choices=SubmissionMode.choices, default=SubmissionMode.HAMI
    )
    namespace = models.CharField(
        max_length=63, default="default",
        validators=[RegexValidator(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
                                   "a DNS-1123 label (lower case, digits, '-')")],
    )
    in_cluster = models.BooleanField(
        default=False, help_text="Use the service account of the pod the console runs in."
    )
    kubeconfig_path = models.CharField(
        max_length=1024, blank=True,
        help_text="Path of a kubeconfig file on the console hosts (the file holds the "
                  "credentials; only the path is stored). Empty: the environment variable "
                  "CLUSTER_<NAME>_KUBECONFIG names it.",
    )
    kube_context = models.CharField(
        max_length=253, blank=True, help_text="Context in the kubeconfig (empty = current)."
    )
    hami_scheduler_name = models.CharField(max_length=253, default="hami-scheduler")
    request_timeout_s = models.FloatField(default=30.0, validators=[MinValueValidator(0.1)])
    server_version = models.CharField(max_length=64, blank=True)
    resource_versions = models.JSONField(default=list, blank=True)
    connection_checked_at = models.DateTimeField(null=True, blank=True)
    watch_resource_version = models.CharField(max_length=64, blank=True)
    inventory_synced_at = models.DateTimeField(null=True, blank=True)
    resynced_at = models.DateTimeField(null=True, blank=True)
    inventory_errors = models.JSONField(default=list, blank=True)
    unknown_pods = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def kubeconfig_env(self) -> str:
        """Name of the environment variable that may hold this cluster's kubeconfig path."""
        return KUBECONFIG_ENV_TEMPLATE.format(name=re.sub(r"[^A-Z0-9]", "_", self.name.upper()))

    def clean(self) -> None:
        """A kubernetes cluster names at most one connection source (in-cluster or a path)."""
        if self.in_cluster and self.kubeconfig_path:
            raise ValidationError(
                {"kubeconfig_path": "leave empty when the in-cluster service account is used"}
            )
        if self.kube_context and self.in_cluster:
            raise ValidationError({"kube_context": "a context needs a kubeconfig"})


class DeviceModelManager(models.Manager):
    def get_by_natural_key(self, name: str):
        return self.get(name=name)


class DeviceModel(BaseModel):
    """A vendor's device model with its slicing mode and per-model configuration.

    ``vendor`` is HAMi's common word (``NVIDIA``, ``MLU``, ``DCU``, ``Ascend``, ...); ``name`` is
    the model string devices register with (e.g. ``NVIDIA-A100-SXM4-80GB``, ``Ascend910B4``,
    ``MLU370-X8``). ``resource_names`` maps ``count``/``memory``/``cores`` (and vendor extras) to
    the extended-resource names pods use; ``config`` holds vendor data such as MIG or vNPU
    templates and the sMLU unit.
    """

    name = models.CharField(max_length=100, unique=True)
    vendor = models.CharField(max_length=32)
    family = models.CharField(
        max_length=100, blank=True,
        help_text="Model family quota may name instead of the model (e.g. A100); blank = none.",
    )
    memory_mib = models.PositiveIntegerField()
    cores_percent = models.PositiveIntegerField(default=100)
    split_count = models.PositiveIntegerField(default=10, validators=[MinValueValidator(1)])
    memory_factor = models.PositiveIntegerField(default=1, validators=[MinValueValidator(1)])
    slicing_mode = models.CharField(
        max_length=16, choices=SlicingMode.choices, default=SlicingMode.FRACTIONAL
    )
    resource_names = models.JSONField(default=dict, blank=True)
    config = models.JSONField(default=dict, blank=True)

    objects = DeviceModelManager()

    class Meta:
        ordering = ["vendor", "name"]

    def __str__(self) -> str:
        return self.name

    def natural_key(self) -> tuple[str]:
        return (self.name,)


class Node(BaseModel):
    """A machine in a cluster with allocatable CPU and memory and its devices.

    ``error`` holds the last registration/parse error; a node with an error is kept out of
    placement and shown flagged. ``removed_at`` marks a node that vanished from its cluster.
    """

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="nodes")
    name = models.CharField(max_length=253)
    cpu_milli = models.PositiveBigIntegerField(default=0)
    memory_mib = models.PositiveBigIntegerField(default=0)
    labels = models.JSONField(default=dict, blank=True)
    schedulable = models.BooleanField(default=True)
    error = models.TextField(blank=True)
    removed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["cluster__name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "name"], name="node_unique_cluster_name")
        ]

    def __str__(self) -> str:
        return f"{self.cluster.name}/{self.name}"


class Device(BaseModel):
    """One physical accelerator, keyed by vendor serial / UUID.

    Capacity: ``memory_mib`` (MiB, as registered), ``cores_percent`` (100 = the whole device),
    ``split_count`` (max concurrent tasks). ``index`` is informational only.
    """

    uuid = models.CharField(max_length=128, unique=True)
    node = models.ForeignKey(Node, on_delete=models.PROTECT, related_name="devices")
    model = models.ForeignKey(DeviceModel, on_delete=models.PROTECT, related_name="devices")
    index = models.PositiveIntegerField(default=0)
    numa = models.IntegerField(default=0)
    memory_mib = models.PositiveIntegerField()
    cores_percent = models.PositiveIntegerField(
        default=100, validators=[MaxValueValidator(100_000)]
    )
    split_count = models.PositiveIntegerField(default=10, validators=[MinValueValidator(1)])
    healthy = models.BooleanField(default=True)
    cordoned = models.BooleanField(default=False)
    mode = models.CharField(max_length=32, blank=True, default="hami-core")
    removed_at = models.DateTimeField(null=True, blank=True)
    source = models.CharField(
        max_length=16, blank=True,
        help_text="Where the inventory sync saw it: 'hami' (node annotations) or 'dra' "
                  "(ResourceSlice); empty for devices entered by hand.",
    )
    dra_device = models.CharField(
        max_length=400, blank=True, help_text="<driver>/<pool>/<device> of a DRA device."
    )
    error = models.TextField(
        blank=True, help_text="Inventory problem (e.g. the uuid registered on two nodes)."
    )

    class Meta:
        ordering = ["node__name", "index"]

    def __str__(self) -> str:
        return self.uuid
