"""Placements (a pod of a job bound to a node and devices) and their device bookings."""

from django.db import models

from core.models import BaseModel
from scheduling.choices import BOOKED_PLACEMENT_STATES, PlacementState


class Placement(BaseModel):
    """One pod of a job placed on a node.

    ``cpu_milli``/``host_memory_mib`` are booked on the node while the state is reserved, submitted
    or running. ``assignment`` keeps the placement core's per-container grants as decided (the
    raw decision, used to build Kubernetes manifests). ``backend_ref`` is the pod name.
    ``charges`` are the pod's quota charges ``{"<flavor>|<dimension>": amount}`` fixed at
    admission; ``charged`` is True while they are counted in ``tenants.QuotaUsage`` (it is
    cleared, and the usage decremented, once the placement leaves the booked states).
    A ``terminating`` placement (preempted, pods in their grace period until ``evict_by``)
    still books its devices and its charges until the reconcile sees its pods gone.
    ``domains``: the topology domains the pod got (``Decision.domains``).
    """

    job = models.ForeignKey("scheduling.Job", on_delete=models.CASCADE, related_name="placements")
    pod_index = models.PositiveIntegerField(default=0)
    node = models.ForeignKey("scheduling.Node", on_delete=models.PROTECT, related_name="placements")
    state = models.CharField(
        max_length=16, choices=PlacementState.choices, default=PlacementState.RESERVED
    )
    cpu_milli = models.PositiveIntegerField(default=0)
    host_memory_mib = models.PositiveIntegerField(default=0)
    assignment = models.JSONField(default=dict, blank=True)
    backend_ref = models.CharField(max_length=253, blank=True)
    charges = models.JSONField(default=dict, blank=True)
    charged = models.BooleanField(default=False)
    message = models.TextField(blank=True)
    ready = models.BooleanField(
        default=False,
        help_text="The pod passes its readiness (Kubernetes Ready condition; "
        "simulated pods are ready once running).",
    )
    submitted_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    evict_by = models.DateTimeField(
        null=True, blank=True, help_text="terminating: end of the pods' termination grace period."
    )
    domains = models.JSONField(
        default=list,
        blank=True,
        help_text="Under a topology request: the pod's domain per level, widest first, the "
        'node last (placement Decision.domains), e.g. ["zone-a", "block-1", "rack-3", '
        '"node-7"]; [] without one.',
    )

    class Meta:
        ordering = ["job", "pod_index", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["job", "pod_index"],
                condition=models.Q(state__in=BOOKED_PLACEMENT_STATES),
                name="placement_one_live_per_pod",
            )
        ]
        indexes = [
            models.Index(fields=["state", "node"]),
            models.Index(
                fields=["state"], condition=models.Q(charged=True), name="placement_charged_state"
            ),
        ]

    def __str__(self) -> str:
        return f"job {self.job_id} pod {self.pod_index} on {self.node_id}"


class PlacementDevice(models.Model):
    """What a placement books on one device: memory (MiB), cores (percent) and task slots.

    Multi-container pods are collapsed per device (HAMi ``CollapseInitContainerUsage``): the
    booking is max(init peak, sum of app containers). A device's usage is the sum of the
    bookings of live placements, so it cannot drift.
    """

    placement = models.ForeignKey(Placement, on_delete=models.CASCADE, related_name="devices")
    device = models.ForeignKey(
        "scheduling.Device", on_delete=models.PROTECT, related_name="bookings"
    )
    memory_mib = models.PositiveIntegerField()
    cores_percent = models.PositiveIntegerField()
    slots = models.PositiveIntegerField(default=1)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["placement", "device"], name="placement_device_unique")
        ]

    def __str__(self) -> str:
        return f"{self.placement_id} on {self.device_id}"


class PlacementMigInstance(models.Model):
    """A MIG instance a placement holds on a GPU: profile, placement (first memory slice and
    size, as the placement core chose it) and, once known, the GPU instance id.

    ``gpu_instance_id`` is what DCGM exports as ``GPU_I_ID``; HAMi's device plugin writes it
    into the pod's ``hami.io/vgpu-mig-allocations`` (``gpuInstanceID``) and the reconcile reads
    it back, so a DCGM series of one instance is attributed to the tenant holding it even when
    two tenants share the GPU.
    """

    placement = models.ForeignKey(Placement, on_delete=models.CASCADE, related_name="mig_instances")
    device = models.ForeignKey(
        "scheduling.Device", on_delete=models.PROTECT, related_name="mig_instances"
    )
    profile = models.CharField(max_length=64)
    start = models.PositiveSmallIntegerField()
    size = models.PositiveSmallIntegerField()
    gpu_instance_id = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["placement", "device", "start"]
        constraints = [
            models.UniqueConstraint(
                fields=["placement", "device", "start"], name="placement_mig_instance_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.placement_id} {self.profile}@{self.start} on {self.device_id}"
