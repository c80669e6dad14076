"""Queues, jobs and their device requests."""

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from core.models import BaseModel
from scheduling.choices import JobState, PreemptionPolicy, QueueStrategy


class Queue(BaseModel):
    """A tenant's ordered queue of jobs on one resource group (Kueue LocalQueue+ClusterQueue)."""

    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="queues")
    resource_group = models.ForeignKey(
        "tenants.ResourceGroup", on_delete=models.PROTECT, related_name="queues"
    )
    name = models.CharField(max_length=63)
    strategy = models.CharField(
        max_length=16, choices=QueueStrategy.choices, default=QueueStrategy.BEST_EFFORT_FIFO
    )

    class Meta:
        ordering = ["tenant__name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "name"], name="queue_unique_tenant_name")
        ]

    def __str__(self) -> str:
        return f"{self.tenant.name}/{self.name}"


class Job(BaseModel):
    """A unit of work: ``pod_count`` identical pods (a gang when > 1), each with the host
    request ``cpu_milli``/``memory_mib`` and the containers in ``containers``.

    ``duration_s`` is how long simulated pods run. ``pending_reason`` says why a queued job is
    not admitted yet (blocking quota or placement check). ``preemptible``, ``min_runtime_s``
    and ``on_preemption`` (requeue or fail) are its preemption contract; every eviction is
    recorded as a :class:`scheduling.models.Preemption`.
    """

    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.PROTECT, related_name="jobs")
    queue = models.ForeignKey(Queue, on_delete=models.PROTECT, related_name="jobs")
    name = models.CharField(max_length=200)
    priority = models.IntegerField(default=0)
    state = models.CharField(max_length=16, choices=JobState.choices, default=JobState.QUEUED)
    pod_count = models.PositiveIntegerField(
        default=1, validators=[MinValueValidator(1), MaxValueValidator(1024)]
    )
    min_pods = models.PositiveIntegerField(null=True, blank=True)
    cpu_milli = models.PositiveIntegerField(default=0)
    memory_mib = models.PositiveIntegerField(default=0)
    duration_s = models.FloatField(default=60.0, validators=[MinValueValidator(0)])
    pending_reason = models.TextField(blank=True)
    preemptible = models.BooleanField(
        default=True, help_text="False: never preempted, and never admitted above nominal quota."
    )
    min_runtime_s = models.FloatField(
        default=0.0, validators=[MinValueValidator(0)],
        help_text="Seconds after admission during which the job cannot be preempted.",
    )
    on_preemption = models.CharField(
        max_length=16, choices=PreemptionPolicy.choices, default=PreemptionPolicy.REQUEUE
    )
    preemption_count = models.PositiveIntegerField(default=0)
    submitted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    source = models.CharField(max_length=32, default="api")
    admitted_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    restart_policy = models.CharField(
        max_length=16, choices=[("Never", "Never"), ("OnFailure", "OnFailure")], default="Never",
        help_text="Pod restartPolicy. A pod lost outside the console (node gone, evicted, "
                  "deleted) fails a Never job and requeues an OnFailure job.",
    )
    requeue_count = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-priority", "created", "id"]
        indexes = [
            models.Index(fields=["queue", "state", "priority", "created"]),
            models.Index(fields=["tenant", "state"]),
        ]

    def __str__(self) -> str:
        return f"{self.tenant.name}/{self.name}"


class JobContainer(BaseModel):
    """One container of each pod of a job and its device request (HAMi semantics).

    ``device_count`` distinct devices of ``vendor``, each with ``memory_mib`` MiB (or
    ``memory_percent`` % of the card; both 0/None = the whole card) and ``cores_percent`` %.
    ``device_types`` lists accepted device model names (empty = any model of the group),
    ``device_types_exclude`` refused ones (HAMi's ``use-*type`` / ``nouse-*type``, e.g.
    ``cambricon.com/nouse-mlutype``); both match whole tokens after the vendor prefix
    (``MLU370`` is ``MLU370-X8``, never ``MLU370X``).
    """

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="containers")
    pod_set = models.ForeignKey(
        "scheduling.JobPodSet", null=True, blank=True, on_delete=models.CASCADE,
        related_name="containers", help_text="The pod set it belongs to (empty: every pod).",
    )
    name = models.CharField(max_length=63)
    init = models.BooleanField(default=False)
    vendor = models.CharField(max_length=32, blank=True, default="NVIDIA")
    device_count = models.PositiveIntegerField(default=0)
    memory_mib = models.PositiveIntegerField(default=0)
    memory_percent = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1), MaxValueValidator(100)]
    )
    cores_percent = models.PositiveIntegerField(default=0, validators=[MaxValueValidator(100)])
    device_types = models.JSONField(default=list, blank=True)
    device_types_exclude = models.JSONField(default=list, blank=True)
    image = models.CharField(max_length=512, blank=True, help_text="Container image (Kubernetes).")
    command = models.JSONField(default=list, blank=True, help_text="Entrypoint (list of str).")
    args = models.JSONField(default=list, blank=True, help_text="Arguments (list of str).")
    env = models.JSONField(default=dict, blank=True, help_text="Environment {name: value}.")

    class Meta:
        ordering = ["job", "-init", "id"]

    def __str__(self) -> str:
        return f"{self.job_id}/{self.name}"


class JobEvent(models.Model):
    """An append-only history entry of a job (state change, preemption, reason change)."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="events")
    time = models.DateTimeField(auto_now_add=True)
    kind = models.CharField(max_length=32)
    message = models.TextField(blank=True)

    class Meta:
        ordering = ["time", "id"]

    def __str__(self) -> str:
        return f"{self.job_id} {self.kind}"


class Preemption(models.Model):
    """An eviction: ``victim`` lost its devices to ``preemptor`` (audit trail, append-only).

    ``reason`` is Kueue's condition reason (``InTenant``, ``InCohortReclamation``);
    ``evict_by`` = ``time`` + the termination grace period; ``outcome`` says what happened to
    the victim (``requeued`` or ``failed``).
    """

    victim = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="preemptions")
    preemptor = models.ForeignKey(
        Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="preempted"
    )
    victim_tenant = models.CharField(max_length=63)
    preemptor_tenant = models.CharField(max_length=63, blank=True)
    reason = models.CharField(max_length=32)
    message = models.TextField(blank=True)
    time = models.DateTimeField()
    evict_by = models.DateTimeField()
    outcome = models.CharField(max_length=16)

    class Meta:
        ordering = ["time", "id"]

    def __str__(self) -> str:
        return f"{self.victim_id} preempted by {self.preemptor_id} ({self.reason})"
