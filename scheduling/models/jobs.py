"""Queues, jobs and their device requests."""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

from core.models import BaseModel
from scheduling.choices import (
    BORROW_WITHIN_COHORT_CHOICES,
    RECLAIM_WITHIN_COHORT_CHOICES,
    WITHIN_CLUSTER_QUEUE_CHOICES,
    FlavorPreference,
    FungibilityPolicy,
    JobKind,
    JobState,
    PreemptionScope,
    QueueStrategy,
    VictimPolicy,
)
from scheduling.models.topology import TopologyRequestFields


class PriorityClass(BaseModel):
    """A priority class defined by platform admins (Kueue ``WorkloadPriorityClass`` plus the
    Run:ai/KAI preemptible flag).

    A job copies ``value`` into ``Job.priority`` at submission (Kueue: later value changes do
    not affect existing jobs); ``preemptible`` is read by every cycle: False protects the
    class's jobs from preemption, and such jobs are never admitted above nominal quota.
    """

    name = models.CharField(
        max_length=63,
        unique=True,
        validators=[RegexValidator(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "lowercase DNS label")],
    )
    value = models.IntegerField(
        validators=[MinValueValidator(-1_000_000), MaxValueValidator(1_000_000)]
    )
    preemptible = models.BooleanField(default=True)
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["-value", "name"]
        verbose_name_plural = "priority classes"

    def __str__(self) -> str:
        return f"{self.name} ({self.value})"


RESTART_POLICIES = [("Never", "Never"), ("OnFailure", "OnFailure"), ("Always", "Always")]
DEFAULT_MAX_MIN_RUNTIME_S = 300.0
"""A new queue's ``max_min_runtime_s``: five minutes of protection from preemption at most,
so a job cannot make itself unpreemptible by asking days (issue 29); operators raise it per
queue (admin, ``PATCH /api/queues/<id>/``)."""


class Queue(BaseModel):
    """A tenant's ordered queue of jobs on one resource group (Kueue LocalQueue plus the
    ClusterQueue settings that are per queue here).

    Preemption policy (Kueue ``ClusterQueuePreemption``; the preemptor's queue decides):
    ``within_cluster_queue`` for the tenant's own jobs, ``reclaim_within_cohort`` for other
    tenants' jobs, ``borrow_within_cohort`` (+ ``borrow_max_priority_threshold``) to preempt
    while borrowing. Flavor choice (Kueue ``flavorFungibility``): ``flavors`` lists flavor names
    (device models, families or ``"*"``) tried in order for each pod set (empty = wherever the
    job's device types allow); ``when_can_borrow`` / ``when_can_preempt`` / ``flavor_preference``.
    ``allowed_priority_classes`` (empty = any class) and ``default_priority_class`` decide
    which classes its jobs may use. ``max_min_runtime_s`` caps the ``min_runtime_s`` its jobs
    may ask (:meth:`min_runtime_error`).
    """

    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="queues")
    resource_group = models.ForeignKey(
        "tenants.ResourceGroup", on_delete=models.PROTECT, related_name="queues"
    )
    name = models.CharField(max_length=63)
    strategy = models.CharField(
        max_length=16, choices=QueueStrategy.choices, default=QueueStrategy.BEST_EFFORT_FIFO
    )
    within_cluster_queue = models.CharField(
        max_length=32,
        choices=WITHIN_CLUSTER_QUEUE_CHOICES,
        default=PreemptionScope.LOWER_PRIORITY,
        help_text="Kueue withinClusterQueue: which of the tenant's own jobs may be preempted.",
    )
    reclaim_within_cohort = models.CharField(
        max_length=32,
        choices=RECLAIM_WITHIN_COHORT_CHOICES,
        default=PreemptionScope.ANY,
        help_text="Kueue reclaimWithinCohort: which jobs of tenants borrowing this tenant's "
        "quota may be preempted to get it back.",
    )
    borrow_within_cohort = models.CharField(
        max_length=32,
        choices=BORROW_WITHIN_COHORT_CHOICES,
        default=PreemptionScope.NEVER,
        help_text="Kueue borrowWithinCohort.policy: LowerPriority lets a job preempt lower "
        "priority jobs of other tenants even though it then borrows.",
    )
    borrow_max_priority_threshold = models.IntegerField(
        null=True,
        blank=True,
        help_text="Kueue borrowWithinCohort.maxPriorityThreshold (empty = none).",
    )
    flavors = models.JSONField(
        default=list,
        blank=True,
        help_text="Flavor names (device models, families or *) tried in order; empty = any.",
    )
    when_can_borrow = models.CharField(
        max_length=16, choices=FungibilityPolicy.choices, default=FungibilityPolicy.MAY_STOP_SEARCH
    )
    when_can_preempt = models.CharField(
        max_length=16, choices=FungibilityPolicy.choices, default=FungibilityPolicy.TRY_NEXT_FLAVOR
    )
    flavor_preference = models.CharField(
        max_length=32,
        choices=FlavorPreference.choices,
        blank=True,
        default="",
        help_text="Only with both when_can_* set to TryNextFlavor (empty = "
        "BorrowingOverPreemption).",
    )
    allowed_priority_classes = models.ManyToManyField(
        PriorityClass,
        blank=True,
        related_name="queues",
        help_text="Priority classes the queue's jobs may use (none selected = any class).",
    )
    default_priority_class = models.ForeignKey(
        PriorityClass,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="Class of a job submitted without one.",
    )
    max_min_runtime_s = models.FloatField(
        default=DEFAULT_MAX_MIN_RUNTIME_S,
        validators=[MinValueValidator(0)],
        help_text="Most min_runtime_s (seconds after admission during which a job cannot be "
        "preempted) a job of this queue may ask.",
    )

    class Meta:
        ordering = ["tenant__name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "name"], name="queue_unique_tenant_name")
        ]

    def __str__(self) -> str:
        return f"{self.tenant.name}/{self.name}"

    def min_runtime_error(self, min_runtime_s: float) -> str:
        """Why a job of this queue may not ask ``min_runtime_s`` seconds of protection from
        preemption ("" when it may): more than the queue's ``max_min_runtime_s``. The one
        home of the rule (issue 29): the submit serializer answers it as a field error, and
        :func:`scheduling.services.jobs.enqueue_jobs` refuses it whatever the job's source."""
        if min_runtime_s <= self.max_min_runtime_s:
            return ""
        return (
            f"{min_runtime_s:.12g} s is more than queue {self} allows: its max_min_runtime_s is "
            f"{self.max_min_runtime_s:.12g} s (an operator may raise it for the queue)."
        )

    def clean(self) -> None:
        """Kueue's API validation of the preemption and fungibility fields."""
        if (
            self.reclaim_within_cohort == PreemptionScope.NEVER
            and self.borrow_within_cohort != PreemptionScope.NEVER
        ):
            raise ValidationError(
                {
                    "borrow_within_cohort": (
                        "Needs reclaim_within_cohort other than Never (Kueue refuses "
                        "reclaimWithinCohort: Never with a borrowWithinCohort policy)."
                    )
                }
            )
        if (
            self.borrow_max_priority_threshold is not None
            and self.borrow_within_cohort == PreemptionScope.NEVER
        ):
            raise ValidationError(
                {
                    "borrow_max_priority_threshold": (
                        "Only meaningful with a borrow_within_cohort policy."
                    )
                }
            )
        both_try = (
            self.when_can_borrow == FungibilityPolicy.TRY_NEXT_FLAVOR
            and self.when_can_preempt == FungibilityPolicy.TRY_NEXT_FLAVOR
        )
        if self.flavor_preference and not both_try:
            raise ValidationError(
                {
                    "flavor_preference": (
                        "Only with when_can_borrow and when_can_preempt both TryNextFlavor."
                    )
                }
            )
        if (
            not isinstance(self.flavors, list)
            or not all(isinstance(f, str) and f for f in self.flavors)
            or len(set(self.flavors)) != len(self.flavors)
        ):
            raise ValidationError({"flavors": "A list of distinct flavor names."})


class Job(TopologyRequestFields, BaseModel):
    """A unit of work: ``pod_count`` identical pods (a gang when > 1), each with the host
    request ``cpu_milli``/``host_memory_mib`` and the containers in ``containers``.

    ``duration_s`` is how long simulated pods run. ``pending_reason`` says why a queued job is
    not admitted yet (the rule that blocked it); ``pending_causes`` is the same as structure,
    one object per line of the reason, written together with it: ``[{kind, resource, needed,
    free, borrowable, unit, rule}]`` (:meth:`scheduling.admission.PendingCause.as_dict`;
    amounts in devices, MiB or percent). ``preemptible``, ``min_runtime_s``,
    ``on_preemption`` (requeue or fail) and its priority class are its preemption contract;
    every eviction is recorded as a :class:`scheduling.models.Preemption`.
    ``topology_*`` (:class:`~scheduling.models.topology.TopologyRequestFields`): its pods'
    topology request when it has no pod sets (a pod set carries its own).
    """

    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.PROTECT, related_name="jobs")
    queue = models.ForeignKey(Queue, on_delete=models.PROTECT, related_name="jobs")
    name = models.CharField(max_length=200)
    priority = models.IntegerField(default=0)
    priority_class = models.ForeignKey(
        PriorityClass,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="jobs",
        help_text="The class the job was submitted with; priority is its value at submission.",
    )
    max_runtime_s = models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(0)],
        help_text="Seconds a run may last after admission (Kueue maximumExecutionTimeSeconds; "
        "training/batch: then failed, Kubernetes activeDeadlineSeconds; notebook: "
        "its maximum lifetime, then stopped); lets smaller jobs backfill around a "
        "starvation reservation. Empty = unbounded.",
    )
    preempting_since = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Set while the job waits for the victims it preempted to terminate.",
    )
    reserving_since = models.DateTimeField(
        null=True, blank=True, help_text="Start of its starvation reservation (if any)."
    )
    state = models.CharField(max_length=16, choices=JobState.choices, default=JobState.QUEUED)
    pod_count = models.PositiveIntegerField(
        default=1, validators=[MinValueValidator(1), MaxValueValidator(1024)]
    )
    min_pods = models.PositiveIntegerField(null=True, blank=True)
    cpu_milli = models.PositiveIntegerField(default=0)
    host_memory_mib = models.PositiveIntegerField(default=0)
    duration_s = models.FloatField(default=60.0, validators=[MinValueValidator(0)])
    pending_reason = models.TextField(blank=True)
    pending_causes = models.JSONField(default=list, blank=True)
    preemptible = models.BooleanField(
        default=True, help_text="False: never preempted, and never admitted above nominal quota."
    )
    min_runtime_s = models.FloatField(
        default=0.0,
        validators=[MinValueValidator(0)],
        help_text="Seconds after admission during which the job cannot be preempted.",
    )
    on_preemption = models.CharField(
        max_length=16, choices=VictimPolicy.choices, default=VictimPolicy.REQUEUE
    )
    allow_consolidation = models.BooleanField(
        default=False,
        help_text="The job may be moved (restarted elsewhere) to defragment its resource "
        "group when the group has consolidation on (preemptible jobs only; annotation "
        "console.llmops.io/allow-consolidation on objects taken in from a cluster).",
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
        max_length=16,
        choices=RESTART_POLICIES,
        default="Never",
        help_text="Pod restartPolicy. A pod lost outside the console (node gone, evicted, "
        "deleted) fails a Never job and requeues an OnFailure or Always job.",
    )
    requeue_count = models.PositiveIntegerField(default=0)
    # -- job kind (scheduling.services.job_kinds) --------------------------------------------
    kind = models.CharField(max_length=16, choices=JobKind.choices, default=JobKind.BATCH)
    parent = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="replica_jobs",
        help_text="Inference replica: the service job it is a replica of.",
    )
    port = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(65535)],
        help_text="Container port: the service's (inference), the notebook's, or the "
        "rendezvous port MASTER_PORT (training).",
    )
    replicas = models.PositiveIntegerField(
        null=True, blank=True, help_text="Inference: desired replicas."
    )
    replicas_min = models.PositiveIntegerField(null=True, blank=True)
    replicas_max = models.PositiveIntegerField(null=True, blank=True)
    backoff_limit = models.PositiveIntegerField(
        default=0, help_text="Failed runs (a pod failed) retried before the job fails."
    )
    failed_attempts = models.PositiveIntegerField(default=0)
    idle_cull_s = models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(60)],
        help_text="Notebook: stopped after its devices sat idle this long (telemetry).",
    )
    launcher_cpu_milli = models.PositiveIntegerField(default=0)
    launcher_memory_mib = models.PositiveIntegerField(default=0)
    volumes = models.JSONField(
        default=list,
        blank=True,
        help_text='PersistentVolumeClaims: [{"claim": "datasets", "mount_path": "/data", '
        '"read_only": true}].',
    )
    secrets = models.JSONField(
        default=list,
        blank=True,
        help_text='Secrets by reference: [{"name": "hf-token"}] (environment from every key) '
        'or [{"name": "certs", "mount_path": "/certs"}] (files).',
    )
    tolerations = models.JSONField(
        default=list, blank=True, help_text="Pod tolerations (Kubernetes shape)."
    )
    node_selector = models.JSONField(
        default=dict,
        blank=True,
        help_text="Node labels every pod's node must carry (placement and nodeSelector).",
    )
    stopped_at = models.DateTimeField(null=True, blank=True)
    annotations = models.JSONField(
        default=dict,
        blank=True,
        help_text="Pod annotations {key: value} put on every pod of the job; "
        "hami.io/node-scheduler-policy and hami.io/gpu-scheduler-policy override "
        "the resource group's placement policies where the group allows it.",
    )

    class Meta:
        ordering = ["-priority", "created", "id"]
        indexes = [
            models.Index(fields=["queue", "state", "priority", "created"]),
            models.Index(fields=["tenant", "state"]),
        ]

    def __str__(self) -> str:
        return f"{self.tenant.name}/{self.name}"

    def clean(self) -> None:
        """The kind's rules (the API's ``scheduling.api.job_kinds`` for the admin): a service
        names its port and replica bounds, a notebook and a replica are one pod."""
        errors = {}
        if self.kind == JobKind.INFERENCE and not self.port:
            errors["port"] = "An inference service needs the port it listens on."
        if self.kind == JobKind.INFERENCE and self.parent_id is None:
            low, high = self.replicas_min or 1, self.replicas_max or self.replicas or 1
            if not low <= (self.replicas or 0) <= high:
                errors["replicas"] = f"Must be between {low} and {high}."
        if self.kind == JobKind.NOTEBOOK and self.pod_count != 1:
            errors["pod_count"] = "A notebook is one pod."
        if self.kind in (JobKind.INFERENCE, JobKind.NOTEBOOK) and self.restart_policy != "Always":
            errors["restart_policy"] = "Services and notebooks restart Always."
        if errors:
            raise ValidationError(errors)

    @property
    def is_service(self) -> bool:
        """An inference service (its replicas are child jobs; it has no pods itself)."""
        return self.kind == JobKind.INFERENCE and self.parent_id is None


class JobContainer(BaseModel):
    """One container of each pod of a job and its device request (HAMi semantics).

    ``device_count`` distinct devices of ``vendor``, each with ``device_memory_mib`` MiB (or
    ``memory_percent`` % of the card; both 0/None = the whole card) and ``cores_percent`` %.
    ``device_types`` lists accepted device model names (empty = any model of the group),
    ``device_types_exclude`` refused ones (HAMi's ``use-*type`` / ``nouse-*type``, e.g.
    ``cambricon.com/nouse-mlutype``); both match whole tokens after the vendor prefix
    (``MLU370`` is ``MLU370-X8``, never ``MLU370X``).
    """

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="containers")
    pod_set = models.ForeignKey(
        "scheduling.JobPodSet",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="containers",
        help_text="The pod set it belongs to (empty: every pod).",
    )
    name = models.CharField(max_length=63)
    init = models.BooleanField(default=False)
    vendor = models.CharField(max_length=32, blank=True, default="NVIDIA")
    device_count = models.PositiveIntegerField(default=0)
    device_memory_mib = models.PositiveIntegerField(default=0)
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
    role = models.CharField(
        max_length=16,
        blank=True,
        choices=[("", "every pod"), ("launcher", "launcher"), ("worker", "worker")],
        help_text="Training: the launcher pod's containers, or the workers' (blank = the "
        "workers' too).",
    )

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

    ``reason`` is Kueue's condition reason (``InTenant``, ``InCohortReclamation``,
    ``InCohortReclaimWhileBorrowing``, ``InCohortFairSharing``);
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
