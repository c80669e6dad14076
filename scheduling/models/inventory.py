"""Device inventory: clusters, nodes, device models and physical devices.

Devices are keyed by hardware serial / UUID, never by a per-node index; a device that moves to
another node keeps its row (and so its history).
"""

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from console.core.models import BaseModel
from scheduling.choices import Backend, SlicingMode


class Cluster(BaseModel):
    """A Kubernetes cluster the console manages, or a simulated one."""

    name = models.CharField(max_length=63, unique=True)
    backend = models.CharField(max_length=16, choices=Backend.choices, default=Backend.SIMULATED)
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


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
    memory_mib = models.PositiveIntegerField()
    cores_percent = models.PositiveIntegerField(default=100)
    split_count = models.PositiveIntegerField(default=10, validators=[MinValueValidator(1)])
    memory_factor = models.PositiveIntegerField(default=1, validators=[MinValueValidator(1)])
    slicing_mode = models.CharField(
        max_length=16, choices=SlicingMode.choices, default=SlicingMode.FRACTIONAL
    )
    resource_names = models.JSONField(default=dict, blank=True)
    config = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["vendor", "name"]

    def __str__(self) -> str:
        return self.name


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

    class Meta:
        ordering = ["node__name", "index"]

    def __str__(self) -> str:
        return self.uuid
