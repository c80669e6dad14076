"""Serializers: input validation for job submission, read shapes for jobs and inventory."""

from __future__ import annotations

import copy
import re

from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils import timezone
from rest_framework import serializers

from scheduling.choices import PreemptionPolicy
from scheduling.models import (
    Device,
    Job,
    JobContainer,
    JobEvent,
    Node,
    Placement,
    Preemption,
    PriorityClass,
    Queue,
)
from scheduling.selectors.jobs import job_estimated_start, queue_position
from scheduling.services.eviction import CROSS_TENANT_PREEMPTION_MESSAGE
from scheduling.services.jobs import ContainerSpec, JobSpec

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
VENDORS = [
    "NVIDIA", "MLU", "DCU", "Ascend", "Metax", "MetaxSGPU", "Iluvatar", "Enflame", "Mthreads",
    "Kunlun", "KunlunVXPU", "AMD", "AWSNeuron", "Vastai", "Biren", "EnflameDRS",
]


class RejectUnknownFieldsMixin:
    """A key the serializer does not know is a field error (``"Unknown field."``), not
    silently dropped: a typo such as ``min_pod`` would otherwise run a different job."""

    def to_internal_value(self, data):
        unknown = sorted(str(k) for k in data if k not in self.fields) \
            if isinstance(data, dict) else []
        errors = {}
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            if not isinstance(exc.detail, dict):
                raise
            errors.update(exc.detail)
        errors.update({key: ["Unknown field."] for key in unknown})
        if errors:
            raise serializers.ValidationError(errors)
        return value


class ContainerInputSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    name = serializers.RegexField(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63, default="main")
    init = serializers.BooleanField(default=False)
    vendor = serializers.ChoiceField(choices=VENDORS, default="NVIDIA")
    device_count = serializers.IntegerField(min_value=0, max_value=64, default=0)
    memory_mib = serializers.IntegerField(min_value=0, max_value=16 * 1024 * 1024, default=0)
    memory_percent = serializers.IntegerField(
        min_value=1, max_value=100, required=False, allow_null=True
    )
    cores_percent = serializers.IntegerField(min_value=0, max_value=100, default=0)
    device_types = serializers.ListField(
        child=serializers.CharField(max_length=100), default=list, max_length=32
    )
    device_types_exclude = serializers.ListField(
        child=serializers.CharField(max_length=100), default=list, max_length=32,
        help_text="Device models this container must not get (HAMi nouse-*type).")
    image = serializers.CharField(max_length=512, default="", allow_blank=True,
                                  help_text="Container image (needed on Kubernetes clusters).")
    command = serializers.ListField(child=serializers.CharField(max_length=4096),
                                    default=list, max_length=64)
    args = serializers.ListField(child=serializers.CharField(max_length=4096),
                                 default=list, max_length=256)
    env = serializers.DictField(child=serializers.CharField(max_length=32768, allow_blank=True),
                                default=dict)

    def validate_env(self, value):
        for key in value:
            if not ENV_NAME.match(key):
                raise serializers.ValidationError(f"{key!r} is not a valid variable name.")
        if len(value) > 128:
            raise serializers.ValidationError("At most 128 variables.")
        return value

    def validate(self, attrs):
        if attrs.get("memory_mib") and attrs.get("memory_percent"):
            raise serializers.ValidationError(
                {"memory_percent": "Give memory_mib or memory_percent, not both."}
            )
        per_device = [name for name in ("memory_mib", "memory_percent", "cores_percent",
                                        "device_types", "device_types_exclude")
                      if attrs.get(name)]
        if per_device and not attrs.get("device_count"):
            # would be dropped silently (HAMi would instead default the count to 1)
            raise serializers.ValidationError({"device_count": (
                f"{', '.join(per_device)} ask for a share of each device: set device_count "
                f"to 1 or more.")})
        return attrs


class JobSubmitSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    """Input of ``POST /api/jobs/``. ``queue`` is the id of one of the caller's queues.

    ``priority_class`` names a priority class the queue allows (default: the queue's default
    class); the job's priority is the class's value at submission and a non-preemptible
    class makes the job non-preemptible. ``priority`` (a raw value) is accepted from platform
    admins only, for a job without a class.
    """

    queue = serializers.PrimaryKeyRelatedField(queryset=Queue.objects.none())
    name = serializers.CharField(max_length=200)
    priority_class = serializers.SlugRelatedField(
        slug_field="name", queryset=PriorityClass.objects.all(), required=False,
        allow_null=True, error_messages={"does_not_exist": "No priority class named {value}."})
    priority = serializers.IntegerField(min_value=-1000, max_value=1000, required=False)
    max_runtime_s = serializers.FloatField(min_value=1, max_value=365 * 24 * 3600,
                                           required=False, allow_null=True)
    pod_count = serializers.IntegerField(min_value=1, max_value=1024, default=1)
    min_pods = serializers.IntegerField(min_value=1, required=False, allow_null=True)
    cpu_milli = serializers.IntegerField(min_value=0, max_value=10_000_000, default=0)
    memory_mib = serializers.IntegerField(min_value=0, max_value=100_000_000, default=0)
    duration_s = serializers.FloatField(min_value=0, max_value=365 * 24 * 3600, default=60.0)
    containers = ContainerInputSerializer(many=True, min_length=1, max_length=16)
    preemptible = serializers.BooleanField(default=True)
    min_runtime_s = serializers.FloatField(min_value=0, max_value=30 * 24 * 3600, default=0.0)
    on_preemption = serializers.ChoiceField(choices=PreemptionPolicy.choices,
                                            default=PreemptionPolicy.REQUEUE)
    restart_policy = serializers.ChoiceField(choices=["Never", "OnFailure"], default="Never")

    def __init__(self, *args, queues=None, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["queue"].queryset = queues if queues is not None else Queue.objects.none()
        self.platform_admin = bool(user is not None and user.is_superuser)

    def validate(self, attrs):
        if attrs.get("min_pods") and attrs["min_pods"] > attrs["pod_count"]:
            raise serializers.ValidationError({"min_pods": "Must not exceed pod_count."})
        names = [c["name"] for c in attrs["containers"]]
        if len(names) != len(set(names)):
            raise serializers.ValidationError({"containers": "Container names must be unique."})
        attrs["priority_class"] = self._priority_class(attrs)
        return attrs

    def _priority_class(self, attrs):
        """The class the job gets (checked against the queue), or None (raw priority)."""
        queue = attrs["queue"]
        if "priority" in attrs and not self.platform_admin:
            raise serializers.ValidationError({"priority": (
                "Set by the priority class: give priority_class (one of the queue's allowed "
                "classes) instead.")})
        cls = attrs.get("priority_class")
        if cls is None and "priority" not in attrs:
            cls = queue.default_priority_class
        allowed = {c.name for c in queue.allowed_priority_classes.all()}
        if cls is not None and allowed and cls.name not in allowed:
            raise serializers.ValidationError({"priority_class": (
                f"{cls.name} is not allowed in queue {queue.name} (allowed: "
                f"{', '.join(sorted(allowed))}).")})
        if cls is None and allowed and not self.platform_admin:
            raise serializers.ValidationError({"priority_class": (
                f"Queue {queue.name} needs a priority class (allowed: "
                f"{', '.join(sorted(allowed))}).")})
        if cls is not None and "priority" in attrs:
            raise serializers.ValidationError({"priority": (
                "Give priority_class or priority, not both.")})
        return cls

    def to_spec(self) -> JobSpec:
        data = self.validated_data
        cls = data.get("priority_class")
        return JobSpec(
            name=data["name"],
            priority=cls.value if cls is not None else data.get("priority", 0),
            priority_class=cls,
            max_runtime_s=data.get("max_runtime_s"),
            pod_count=data["pod_count"],
            min_pods=data.get("min_pods"),
            cpu_milli=data["cpu_milli"],
            memory_mib=data["memory_mib"],
            duration_s=data["duration_s"],
            preemptible=data["preemptible"] and (cls is None or cls.preemptible),
            min_runtime_s=data["min_runtime_s"],
            on_preemption=data["on_preemption"],
            restart_policy=data["restart_policy"],
            containers=[ContainerSpec(**c) for c in data["containers"]],
        )


class PriorityClassSerializer(serializers.ModelSerializer):
    """A priority class (Kueue ``WorkloadPriorityClass`` plus ``preemptible``): platform
    admins write, everyone reads. ``value`` (-1,000,000..1,000,000) is copied into a job's
    priority at submission; ``preemptible`` False protects the class's jobs from
    preemption (and keeps them within nominal quota)."""

    class Meta:
        model = PriorityClass
        fields = ["id", "name", "value", "preemptible", "description"]


QUEUE_POLICY_FIELDS = [
    "strategy", "within_cluster_queue", "reclaim_within_cohort", "borrow_within_cohort",
    "borrow_max_priority_threshold", "flavors", "when_can_borrow", "when_can_preempt",
    "flavor_preference",
]


class QueueWriteSerializer(RejectUnknownFieldsMixin, serializers.ModelSerializer):
    """Input of ``PATCH /api/queues/<id>/`` (platform admins): the queue's preemption policy,
    flavor fungibility and priority classes, checked as Kueue's API checks them
    (:meth:`scheduling.models.Queue.clean`); the default class must be one of the allowed
    ones when the queue restricts them."""

    allowed_priority_classes = serializers.SlugRelatedField(
        slug_field="name", many=True, queryset=PriorityClass.objects.all(), required=False)
    default_priority_class = serializers.SlugRelatedField(
        slug_field="name", queryset=PriorityClass.objects.all(), required=False,
        allow_null=True)

    class Meta:
        model = Queue
        fields = [*QUEUE_POLICY_FIELDS, "allowed_priority_classes", "default_priority_class"]

    def validate(self, attrs):
        probe = copy.copy(self.instance)
        for name in QUEUE_POLICY_FIELDS:
            if name in attrs:
                setattr(probe, name, attrs[name])
        try:
            probe.clean()
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.message_dict) from None
        allowed = attrs.get("allowed_priority_classes")
        if allowed is None and self.instance is not None:
            allowed = list(self.instance.allowed_priority_classes.all())
        default = attrs.get("default_priority_class",
                            getattr(self.instance, "default_priority_class", None))
        if default is not None and allowed and default not in allowed:
            raise serializers.ValidationError({"default_priority_class": (
                f"{default.name} is not one of the queue's allowed classes "
                f"({', '.join(sorted(c.name for c in allowed))}).")})
        return attrs


class QueueSerializer(serializers.ModelSerializer):
    """A queue with its preemption policy, flavor fungibility and priority classes."""

    tenant = serializers.CharField(source="tenant.name")
    resource_group = serializers.CharField(source="resource_group.name")
    allowed_priority_classes = serializers.SlugRelatedField(
        slug_field="name", many=True, read_only=True)
    default_priority_class = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = Queue
        fields = ["id", "tenant", "name", "resource_group", "strategy", "within_cluster_queue",
                  "reclaim_within_cohort", "borrow_within_cohort",
                  "borrow_max_priority_threshold", "flavors", "when_can_borrow",
                  "when_can_preempt", "flavor_preference", "allowed_priority_classes",
                  "default_priority_class"]


class JobContainerSerializer(serializers.ModelSerializer):
    class Meta:
        model = JobContainer
        fields = [
            "name", "init", "vendor", "device_count", "memory_mib", "memory_percent",
            "cores_percent", "device_types", "device_types_exclude", "image", "command", "args",
            "env",
        ]


class PlacementSerializer(serializers.ModelSerializer):
    node = serializers.CharField(source="node.name")

    class Meta:
        model = Placement
        fields = [
            "id", "pod_index", "node", "state", "cpu_milli", "memory_mib", "assignment",
            "backend_ref", "message", "created", "submitted_at", "started_at", "ended_at",
        ]


class JobSerializer(serializers.ModelSerializer):
    """A job. ``queue_position`` (1 = next) and ``estimated_start`` (from the queue's observed
    drain rate over the last hour) are filled for a queued job on the detail endpoint only
    (null in lists and for other states)."""

    tenant = serializers.CharField(source="tenant.name")
    queue = serializers.CharField(source="queue.name")
    resource_group = serializers.CharField(source="queue.resource_group.name")
    priority_class = serializers.SlugRelatedField(slug_field="name", read_only=True)
    containers = JobContainerSerializer(many=True)
    placements = PlacementSerializer(many=True)
    queue_position = serializers.SerializerMethodField()
    estimated_start = serializers.SerializerMethodField()

    class Meta:
        model = Job
        fields = [
            "id", "name", "tenant", "queue", "resource_group", "priority", "priority_class",
            "state", "pending_reason", "queue_position", "estimated_start", "pod_count",
            "min_pods", "cpu_milli", "memory_mib", "duration_s", "max_runtime_s",
            "preemptible", "min_runtime_s",
            "on_preemption", "preemption_count", "restart_policy", "containers", "placements",
            "created", "admitted_at", "started_at", "finished_at",
        ]

    def _queue_info(self, job):
        if not self.context.get("detail"):
            return None, None
        cache = self.context.setdefault("_queue_info", {})
        if job.pk not in cache:
            position = queue_position(job)
            cache[job.pk] = (position, job_estimated_start(job, position, timezone.now()))
        return cache[job.pk]

    def get_queue_position(self, job) -> int | None:
        return self._queue_info(job)[0]

    def get_estimated_start(self, job) -> str | None:
        eta = self._queue_info(job)[1]
        return eta.isoformat() if eta else None


class PreemptionSerializer(serializers.ModelSerializer):
    """A preemption as its victim's tenant may see it: a preemptor of another tenant is
    anonymous (no job, tenant or message naming it) except for platform admins."""

    class Meta:
        model = Preemption
        fields = ["victim", "preemptor", "victim_tenant", "preemptor_tenant", "reason",
                  "message", "time", "evict_by", "outcome"]

    def to_representation(self, instance):
        data = super().to_representation(instance)
        request = self.context.get("request")
        is_admin = request is not None and request.user.is_superuser
        if not is_admin and instance.preemptor_tenant and (
                instance.preemptor_tenant != instance.victim_tenant):
            data.update(preemptor=None, preemptor_tenant="another tenant",
                        message=CROSS_TENANT_PREEMPTION_MESSAGE)
        return data


class JobEventSerializer(serializers.ModelSerializer):
    class Meta:
        model = JobEvent
        fields = ["time", "kind", "message"]


class NodeSerializer(serializers.ModelSerializer):
    cluster = serializers.CharField(source="cluster.name")
    device_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Node
        fields = [
            "id", "cluster", "name", "cpu_milli", "memory_mib", "labels", "schedulable",
            "error", "device_count", "removed_at",
        ]


class DeviceSerializer(serializers.ModelSerializer):
    node = serializers.CharField(source="node.name")
    cluster = serializers.CharField(source="node.cluster.name")
    model = serializers.CharField(source="model.name")
    vendor = serializers.CharField(source="model.vendor")
    model_error = serializers.CharField(
        source="model.error", read_only=True,
        help_text="Why the device's model config does not resolve; the device is then kept "
                  "out of placement (empty = fine).")

    class Meta:
        model = Device
        fields = [
            "id", "uuid", "cluster", "node", "model", "vendor", "index", "numa", "memory_mib",
            "cores_percent", "split_count", "healthy", "cordoned", "mode", "removed_at",
            "model_error", "console_unhealthy", "cordon_reason",
        ]


class DeviceCordonSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    """Input of ``POST /api/devices/<id>/cordon/``: why, and what happens to the jobs on it
    (``wait``: keep running; ``requeue``: back to their queue; ``fail``)."""

    reason = serializers.CharField(max_length=200, allow_blank=True, default="")
    drain = serializers.ChoiceField(choices=["wait", "requeue", "fail"], default="wait")
