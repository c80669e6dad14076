"""Workloads taken in from a cluster (objects users create with kubectl) and job pod sets."""

from django.core.validators import MinValueValidator
from django.db import models

from core.models import BaseModel
from scheduling.models.topology import TopologyRequestFields


class JobPodSet(TopologyRequestFields, BaseModel):
    """Identical pods of a job (Kueue ``PodSet``): ``count`` pods, each with the host request
    ``cpu_milli`` / ``host_memory_mib`` (host RAM, MiB) and the containers linked to this pod set.

    A job without pod sets (API jobs) runs ``Job.pod_count`` copies of its containers; a job
    taken in from a JobSet or PyTorchJob has one pod set per replicated job / replica type,
    in ``position`` order, and ``Job.pod_count`` is their sum. ``topology_*``: the pod set's
    topology request (Kueue's ``kueue.x-k8s.io/podset-*-topology`` annotations of its
    template); ``topology_group``: pod sets with the same group are placed as one set
    (``kueue.x-k8s.io/podset-group-name``).
    """

    job = models.ForeignKey("scheduling.Job", on_delete=models.CASCADE, related_name="pod_sets")
    name = models.CharField(max_length=63)
    position = models.PositiveIntegerField(default=0)
    count = models.PositiveIntegerField(validators=[MinValueValidator(0)])
    cpu_milli = models.PositiveIntegerField(default=0)
    host_memory_mib = models.PositiveIntegerField(default=0)
    topology_group = models.CharField(max_length=63, blank=True)

    class Meta:
        ordering = ["job", "position"]
        constraints = [
            models.UniqueConstraint(fields=["job", "name"], name="job_pod_set_unique_name")
        ]

    def __str__(self) -> str:
        return f"{self.job_id}/{self.name} x{self.count}"


class KubeWorkload(BaseModel):
    """An object a user created in a cluster with the queue label, and its console job.

    ``kind`` is ``Job``, ``JobSet``, ``PyTorchJob``, ``Deployment``, ``StatefulSet`` or
    ``Pod`` (a gated replica of a labelled Deployment / StatefulSet; ``owner`` names it).
    ``original_spec`` is the spec first taken in (raw payload), written back when the object
    is suspended again so a re-admission starts from the user's templates. ``error`` says
    why the object is refused (no tenant owns the namespace, unknown queue, invalid HAMi
    resources); ``reason_written`` is the pending reason last written on the object.
    ``gone_at`` marks an object deleted from the cluster.
    """

    cluster = models.ForeignKey(
        "scheduling.Cluster", on_delete=models.CASCADE, related_name="workloads"
    )
    kind = models.CharField(max_length=16)
    namespace = models.CharField(max_length=63)
    name = models.CharField(max_length=253)
    uid = models.CharField(max_length=64)
    owner = models.CharField(max_length=300, blank=True)
    queue_name = models.CharField(max_length=63, blank=True)
    job = models.ForeignKey(
        "scheduling.Job",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="kube_workloads",
    )
    original_spec = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    reason_written = models.TextField(blank=True)
    recorded = models.BooleanField(
        default=False, help_text="The placement is written in the object and it is released."
    )
    gone_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["cluster", "namespace", "kind", "name"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "uid"], name="kube_workload_unique_uid")
        ]
        indexes = [models.Index(fields=["cluster", "gone_at"])]

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"
