"""Device inventory: clusters, nodes, device models and physical devices.

Devices are keyed by hardware serial / UUID, never by a per-node index; a device that moves to
another node keeps its row (and so its history).
"""

import re

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models.signals import pre_save
from django.dispatch import receiver

from core.env import template_error
from core.models import BaseModel
from scheduling.choices import Backend, SlicingMode, sharing_mode
from scheduling.devices.overlay import resolve_model
from scheduling.devices.schema import ConfigError, DeviceModelConfig


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
    namespace_pattern = models.CharField(
        max_length=120,
        blank=True,
        help_text="Name of each tenant's namespace in this cluster, e.g. 'tenant-{slug}' "
        "({slug} = tenant name, {cluster} = cluster name). Empty: the "
        "TENANT_NAMESPACE_PATTERN setting. A namespace already created keeps its "
        "name.",
    )
    in_cluster = models.BooleanField(
        default=False, help_text="Use the service account of the pod the console runs in."
    )
    kubeconfig_path = models.CharField(
        max_length=1024,
        blank=True,
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
    intake_resource_versions = models.JSONField(
        default=dict,
        blank=True,
        help_text="Watch resume point per taken-in kind (scheduling.services.intake).",
    )
    intake_resynced_at = models.DateTimeField(null=True, blank=True)
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
        if self.namespace_pattern:
            error = template_error(self.namespace_pattern, ("slug", "cluster"), ("slug",))
            if error is not None:
                raise ValidationError({"namespace_pattern": error})


class DeviceModelManager(models.Manager):
    def get_by_natural_key(self, name: str):
        return self.get(name=name)


class DeviceModel(BaseModel):
    """A device model: its name, vendor, quota family and its configuration overlay.

    ``vendor`` is the backend's vendor word (``NVIDIA``, ``MLU``, ``DCU``, ``Ascend``, ...);
    ``name`` the model (``NVIDIA-A100-SXM4-80GB``, ``Ascend910B4``, ``MLU590``; registrations
    spelled differently, ``NVIDIA A100-SXM4-80GB``, are the same model by
    :func:`scheduling.devices.matching.model_key`). ``config`` is the **only** per-model
    setting: an overlay of :class:`scheduling.devices.DeviceModelConfig` keys on HAMi's
    defaults (docs/devices.md), validated on every save (API, admin, ``loaddata``).
    ``error`` is set by the admission cycle when a stored config no longer resolves (written
    before validation existed, or by SQL): the model's devices are then kept out of placement.
    ``slicing_mode`` is derived from the resolved config. ``topology``: the flavor's network
    topology (Kueue ``ResourceFlavor.topologyName``).
    """

    name = models.CharField(max_length=100, unique=True)
    vendor = models.CharField(max_length=32)
    family = models.CharField(
        max_length=100,
        blank=True,
        help_text="Model family quota may name instead of the model (e.g. A100); blank = none.",
    )
    config = models.JSONField(
        default=dict,
        blank=True,
        help_text="Overlay on HAMi's defaults for this model (docs/devices.md): e.g. "
        '{"memory_factor": 0, "memory_mib": 79872} for 1 % sMLU units.',
    )
    error = models.TextField(
        blank=True, help_text="Why the stored config does not resolve (set by the cycle)."
    )
    topology = models.ForeignKey(
        "tenants.Topology",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="device_models",
        help_text="Network topology of the nodes of this flavor (Kueue "
        "ResourceFlavor.topologyName); a resource group's own topology comes first.",
    )

    objects = DeviceModelManager()

    class Meta:
        ordering = ["vendor", "name"]

    def __str__(self) -> str:
        return self.name

    def natural_key(self) -> tuple[str]:
        return (self.name,)

    def resolved(self) -> DeviceModelConfig:
        """The model's resolved configuration. Raises :class:`ConfigError` naming the key."""
        return resolve_model(self.vendor, self.name, self.config)

    def clean(self) -> None:
        """The config must resolve (unknown keys and bad values are field errors)."""
        super().clean()
        try:
            self.resolved()
        except ConfigError as exc:
            raise ValidationError(
                {"config": [f"{k}: {v}" for k, v in exc.errors.items()]}
            ) from None

    @property
    def slicing_mode(self) -> str:
        """How the model is shared (``SlicingMode``), derived from the resolved config;
        ``fractional`` when the config does not resolve."""
        try:
            return sharing_mode(self.resolved())
        except ConfigError:
            return SlicingMode.FRACTIONAL


@receiver(pre_save, sender=DeviceModel)
def _validate_device_model(sender, instance: DeviceModel, raw: bool = False, **kwargs) -> None:
    """Every save validates ``config``, ``loaddata`` (``raw``) included."""
    instance.clean()


class Node(BaseModel):
    """A machine in a cluster with allocatable CPU and memory and its devices.

    ``error`` holds the last registration/parse error; a node with an error is kept out of
    placement and shown flagged. ``removed_at`` marks a node that vanished from its cluster.
    """

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="nodes")
    name = models.CharField(max_length=253)
    cpu_milli = models.PositiveBigIntegerField(default=0)
    host_memory_mib = models.PositiveBigIntegerField(default=0)
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

    Identity: ``uuid`` is the console's key (the registered UUID, or ``DCU-<serial>`` for a
    Hygon card whatever id its node registers); ``hami_id`` is the id the node's HAMi
    registration uses for it (what ``use-gpuuuid`` annotations and pod allocations name; ""
    = the uuid), e.g. ``DCU-0`` for a legacy index-based Hygon registration; ``serial`` is the
    hardware serial when a source names it (:class:`DeviceSerial`).

    ``mig_profiles`` are the MIG profiles a ``mig``-mode GPU can create, as registered (HAMi
    ``migProfiles``): ``[{"name": "1g.10gb", "memory_mib": 9856, "cores_percent": 14,
    "slice_count": 1, "placements": [[start, size], ...]}]``; for an Enflame DRS card the
    DRS profiles of ``enflame.com/gcu-drs-capacity``: ``[{"name": "3g.24gb", "profile_id",
    "slice_count": 3, "minor"}]``. The vendor tells the shape; both are written and read only
    through ``scheduling.placement.codec`` (``profile_shape``, ``device_profiles_to_json``,
    ``device_profiles_from_json``).

    ``missing_since``: the registration stopped reporting the device while live placements
    booked it; it stays (unhealthy, flagged in ``error``, its bookings counted) until they end,
    then gets ``removed_at``.
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
    console_unhealthy = models.BooleanField(
        default=False,
        help_text="Marked unhealthy by the console (telemetry XID/ECC, repeated pod failures);"
        " the inventory sync never clears it, only the console does.",
    )
    cordon_reason = models.CharField(
        max_length=500,
        blank=True,
        help_text="Why the console cordons the device in its cluster (operator, health); "
        "empty = not cordoned by the console.",
    )
    mode = models.CharField(max_length=32, blank=True, default="hami-core")
    removed_at = models.DateTimeField(null=True, blank=True)
    source = models.CharField(
        max_length=16,
        blank=True,
        help_text="Where the inventory sync saw it: 'hami' (node annotations) or 'dra' "
        "(ResourceSlice); empty for devices entered by hand.",
    )
    dra_device = models.CharField(
        max_length=400, blank=True, help_text="<driver>/<pool>/<device> of a DRA device."
    )
    error = models.TextField(
        blank=True, help_text="Inventory problem (e.g. the uuid registered on two nodes)."
    )
    hami_id = models.CharField(
        max_length=128,
        blank=True,
        help_text="Id of the device in its node's HAMi registration when it is not the uuid "
        "(e.g. a legacy index-based Hygon id DCU-0).",
    )
    serial = models.CharField(max_length=128, blank=True, db_index=True)
    mig_profiles = models.JSONField(default=list, blank=True)
    missing_since = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["node__name", "index"]

    def __str__(self) -> str:
        return self.uuid

    @property
    def registered_id(self) -> str:
        """The id HAMi knows the device by on its node."""
        return self.hami_id or self.uuid


class SerialSource(models.TextChoices):
    """Where a hardware serial was read."""

    REGISTRATION = "registration", "HAMi registration id"
    ANNOTATION = "annotation", "node annotation"
    LABEL = "label", "node label"
    EXPORTER = "exporter", "metrics exporter"


class DeviceSerial(BaseModel):
    """The serial -> (node, index) map: where a hardware serial was last seen.

    Fed by the inventory sync (registrations and node annotations / labels naming serials) and
    by metrics ingestion (the Hygon dcu-exporter's ``device_id`` with ``minor_number`` and
    ``node``; the Cambricon mlu-exporter's ``sn`` with ``mlu``). The sync names a legacy
    index-based registration (``DCU-0``) by the serial last seen at its (node, index); a
    serial seen on another node later moves there (never a conflict). ``node_name`` is the
    node's name in ``cluster`` (no foreign key: an exporter may report a node the inventory
    has not listed yet).
    """

    vendor = models.CharField(max_length=32)
    serial = models.CharField(max_length=128)
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="serials")
    node_name = models.CharField(max_length=253)
    index = models.PositiveIntegerField()
    source = models.CharField(max_length=16, choices=SerialSource.choices)
    seen_at = models.DateTimeField()

    class Meta:
        ordering = ["cluster", "node_name", "vendor", "index"]
        constraints = [
            models.UniqueConstraint(fields=["vendor", "serial"], name="device_serial_unique")
        ]
        indexes = [models.Index(fields=["cluster", "node_name", "vendor", "index"])]

    def __str__(self) -> str:
        return f"{self.vendor} {self.serial} @ {self.node_name}#{self.index}"
