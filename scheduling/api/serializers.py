"""Serializers: input validation for job submission, read shapes for jobs and inventory."""

from __future__ import annotations

import copy
import re

from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils import timezone
from rest_framework import serializers

from scheduling.api.workloads import (
    SecretRefSerializer,
    TolerationSerializer,
    VolumeSerializer,
    validate_node_selector,
    validate_workload,
)
from scheduling.choices import (
    CONTAINER_ROLES,
    LIVE_JOB_STATES,
    VENDORS,
    JobKind,
    PreemptionPolicy,
    canonical_vendor,
)
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
from scheduling.placement.group_profile import annotation_errors
from scheduling.selectors.job_board import queue_slots
from scheduling.selectors.preemptions import preemption_as_seen
from scheduling.services.jobs import (
    MAX_CPU_MILLI,
    MAX_DEVICE_COUNT,
    MAX_DEVICE_MEMORY_MIB,
    MAX_HOST_MEMORY_MIB,
    MAX_POD_COUNT,
    ContainerSpec,
    JobSpec,
)
from scheduling.services.workloads import lifetime_left_s, service_status

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
#: Kubernetes annotation key: optional DNS-subdomain prefix (<= 253) and "/", then a name of
#: <= 63 alphanumerics, '-', '_', '.' starting and ending alphanumeric
#: (apimachinery ``validation.IsQualifiedName``).
_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_ANNOTATION_PREFIX = re.compile(rf"^{_DNS_LABEL}(\.{_DNS_LABEL})*$")
_ANNOTATION_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
#: Kubernetes' limit on the total size of a pod's annotations (keys + values, bytes).
ANNOTATIONS_MAX_BYTES = 256 * 1024


class VendorField(serializers.CharField):
    """A vendor word of :data:`scheduling.choices.VENDORS`, matched case-insensitively and
    stored as spelled there; an unknown word is a field error listing the valid ones."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        canonical = canonical_vendor(value)
        if canonical is None:
            raise serializers.ValidationError(
                f"unknown vendor {value!r}; valid values: {', '.join(VENDORS)} (any case)"
            )
        return canonical


class RejectUnknownFieldsMixin:
    """A key the serializer does not know is a field error (``"Unknown field."``), not
    silently dropped: a typo such as ``min_pod`` would otherwise run a different job."""

    def to_internal_value(self, data):
        unknown = (
            sorted(str(k) for k in data if k not in self.fields) if isinstance(data, dict) else []
        )
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
    vendor = VendorField(max_length=32, default="NVIDIA")
    device_count = serializers.IntegerField(min_value=0, max_value=MAX_DEVICE_COUNT, default=0)
    device_memory_mib = serializers.IntegerField(
        min_value=0, max_value=MAX_DEVICE_MEMORY_MIB, default=0
    )
    memory_percent = serializers.IntegerField(
        min_value=1, max_value=100, required=False, allow_null=True
    )
    cores_percent = serializers.IntegerField(min_value=0, max_value=100, default=0)
    device_types = serializers.ListField(
        child=serializers.CharField(max_length=100), default=list, max_length=32
    )
    device_types_exclude = serializers.ListField(
        child=serializers.CharField(max_length=100),
        default=list,
        max_length=32,
        help_text="Device models this container must not get (HAMi nouse-*type).",
    )
    image = serializers.CharField(
        max_length=512,
        default="",
        allow_blank=True,
        help_text="Container image (needed on Kubernetes clusters).",
    )
    command = serializers.ListField(
        child=serializers.CharField(max_length=4096), default=list, max_length=64
    )
    args = serializers.ListField(
        child=serializers.CharField(max_length=4096), default=list, max_length=256
    )
    env = serializers.DictField(
        child=serializers.CharField(max_length=32768, allow_blank=True), default=dict
    )
    role = serializers.ChoiceField(
        choices=CONTAINER_ROLES,
        default="",
        help_text="Training: launcher containers make the launcher pod; worker (or blank) "
        "containers run in every worker pod.",
    )

    def validate_env(self, value):
        for key in value:
            if not ENV_NAME.match(key):
                raise serializers.ValidationError(f"{key!r} is not a valid variable name.")
        if len(value) > 128:
            raise serializers.ValidationError("At most 128 variables.")
        return value

    def validate(self, attrs):
        if attrs.get("device_memory_mib") and attrs.get("memory_percent"):
            raise serializers.ValidationError(
                {"memory_percent": "Give device_memory_mib or memory_percent, not both."}
            )
        per_device = [
            name
            for name in (
                "device_memory_mib",
                "memory_percent",
                "cores_percent",
                "device_types",
                "device_types_exclude",
            )
            if attrs.get(name)
        ]
        if per_device and not attrs.get("device_count"):
            # would be dropped silently (HAMi would instead default the count to 1)
            raise serializers.ValidationError(
                {
                    "device_count": (
                        f"{', '.join(per_device)} ask for a share of each device: set device_count "
                        f"to 1 or more."
                    )
                }
            )
        return attrs


class QueueField(serializers.PrimaryKeyRelatedField):
    """One of the caller's queues by id (``7``), by ``tenant/queue`` name, or by queue name
    alone when exactly one of the caller's queues has it. Another tenant's queue is an
    unknown one (the error never confirms it exists)."""

    def to_internal_value(self, data):
        if isinstance(data, str) and not data.strip().isdigit():
            tenant, _, name = data.strip().rpartition("/")
            queues = self.get_queryset().filter(name=name)
            if tenant:
                queues = queues.filter(tenant__name=tenant)
            found = list(queues[:2])
            if len(found) == 1:
                return found[0]
            if found:
                raise serializers.ValidationError(
                    f"{data!r} names queues of several tenants: write tenant/queue"
                )
            raise serializers.ValidationError(f"no queue {data!r} among your queues")
        return super().to_internal_value(data)


class JobSubmitSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    """Input of ``POST /api/jobs/``. ``queue``: one of the caller's queues, by id or by
    ``tenant/queue`` name.

    ``priority_class`` names a priority class the queue allows (default: the queue's default
    class); the job's priority is the class's value at submission and a non-preemptible
    class makes the job non-preemptible. ``priority`` (a raw value) is accepted from platform
    admins only, for a job without a class.
    """

    queue = QueueField(
        queryset=Queue.objects.none(), help_text="a queue id, tenant/queue, or a queue name"
    )
    name = serializers.CharField(max_length=200)
    priority_class = serializers.SlugRelatedField(
        slug_field="name",
        queryset=PriorityClass.objects.all(),
        required=False,
        allow_null=True,
        error_messages={"does_not_exist": "No priority class named {value}."},
    )
    priority = serializers.IntegerField(min_value=-1000, max_value=1000, required=False)
    max_runtime_s = serializers.FloatField(
        min_value=1, max_value=365 * 24 * 3600, required=False, allow_null=True
    )
    pod_count = serializers.IntegerField(min_value=1, max_value=MAX_POD_COUNT, default=1)
    min_pods = serializers.IntegerField(min_value=1, required=False, allow_null=True)
    cpu_milli = serializers.IntegerField(min_value=0, max_value=MAX_CPU_MILLI, default=0)
    host_memory_mib = serializers.IntegerField(
        min_value=0, max_value=MAX_HOST_MEMORY_MIB, default=0
    )
    duration_s = serializers.FloatField(min_value=0, max_value=365 * 24 * 3600, default=60.0)
    containers = ContainerInputSerializer(many=True, min_length=1, max_length=16)
    preemptible = serializers.BooleanField(default=True)
    min_runtime_s = serializers.FloatField(min_value=0, max_value=30 * 24 * 3600, default=0.0)
    on_preemption = serializers.ChoiceField(
        choices=PreemptionPolicy.choices, default=PreemptionPolicy.REQUEUE
    )
    restart_policy = serializers.ChoiceField(
        choices=["Never", "OnFailure"],
        default="Never",
        help_text="Batch and training pods; inference replicas and notebooks restart Always.",
    )
    kind = serializers.ChoiceField(choices=JobKind.choices, default=JobKind.BATCH)
    workers = serializers.IntegerField(
        min_value=1, max_value=1024, required=False, help_text="Training: number of ranked workers."
    )
    min_workers = serializers.IntegerField(
        min_value=1, required=False, help_text="Training: gang minimum of workers."
    )
    port = serializers.IntegerField(min_value=1, max_value=65535, required=False)
    replicas = serializers.IntegerField(min_value=1, max_value=1024, required=False)
    min_replicas = serializers.IntegerField(min_value=1, max_value=1024, required=False)
    max_replicas = serializers.IntegerField(min_value=1, max_value=1024, required=False)
    backoff_limit = serializers.IntegerField(min_value=0, max_value=100, default=0)
    idle_cull_s = serializers.FloatField(min_value=60, max_value=30 * 24 * 3600, required=False)
    launcher_cpu_milli = serializers.IntegerField(min_value=0, max_value=10_000_000, default=0)
    launcher_memory_mib = serializers.IntegerField(min_value=0, max_value=100_000_000, default=0)
    volumes = VolumeSerializer(many=True, default=list, max_length=32)
    secrets = SecretRefSerializer(many=True, default=list, max_length=32)
    tolerations = TolerationSerializer(many=True, default=list, max_length=32)
    node_selector = serializers.DictField(
        child=serializers.CharField(max_length=63, allow_blank=True),
        default=dict,
        validators=[validate_node_selector],
    )
    annotations = serializers.DictField(
        child=serializers.CharField(max_length=65536, allow_blank=True, trim_whitespace=False),
        required=False,
        default=dict,
        help_text="Pod annotations; hami.io/node-scheduler-policy (binpack | spread) and "
        "hami.io/gpu-scheduler-policy (binpack | spread | topology-aware) override "
        "the resource group's placement policies where the group allows it.",
    )

    def __init__(self, *args, queues=None, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["queue"].queryset = queues if queues is not None else Queue.objects.none()
        self.platform_admin = bool(user is not None and user.is_superuser)

    def validate_annotations(self, value):
        errors = []
        for key in value:
            prefix, _, name = key.rpartition("/")
            if (
                not _ANNOTATION_NAME.match(name)
                or len(name) > 63
                or ("/" in key and (not _ANNOTATION_PREFIX.match(prefix) or len(prefix) > 253))
            ):
                errors.append(f"{key!r} is not a valid annotation key")
            elif "\x00" in value[key]:
                errors.append(f"{key}: NUL characters are not allowed")
        size = sum(len(k.encode()) + len(v.encode()) for k, v in value.items())
        if size > ANNOTATIONS_MAX_BYTES:
            errors.append(f"annotations take {size} bytes, more than {ANNOTATIONS_MAX_BYTES}")
        if errors:
            raise serializers.ValidationError(errors)
        return value

    def validate(self, attrs):
        if attrs.get("min_pods") and attrs["min_pods"] > attrs["pod_count"]:
            raise serializers.ValidationError({"min_pods": "Must not exceed pod_count."})
        names = [c["name"] for c in attrs["containers"]]
        if len(names) != len(set(names)):
            raise serializers.ValidationError({"containers": "Container names must be unique."})
        group = attrs["queue"].resource_group
        errors = annotation_errors(attrs.get("annotations") or {}, group.pod_policy_override)
        if errors:
            raise serializers.ValidationError({"annotations": errors})
        attrs["priority_class"] = self._priority_class(attrs)
        attrs["_given"] = set(self.initial_data) if isinstance(self.initial_data, dict) else set()
        attrs = validate_workload(attrs)
        attrs.pop("_given", None)
        return attrs

    def _priority_class(self, attrs):
        """The class the job gets (checked against the queue), or None (raw priority)."""
        queue = attrs["queue"]
        if "priority" in attrs and not self.platform_admin:
            raise serializers.ValidationError(
                {
                    "priority": (
                        "Set by the priority class: give priority_class (one of the queue's allowed "  # noqa: E501
                        "classes) instead."
                    )
                }
            )
        cls = attrs.get("priority_class")
        if cls is None and "priority" not in attrs:
            cls = queue.default_priority_class
        allowed = {c.name for c in queue.allowed_priority_classes.all()}
        if cls is not None and allowed and cls.name not in allowed:
            raise serializers.ValidationError(
                {
                    "priority_class": (
                        f"{cls.name} is not allowed in queue {queue.name} (allowed: "
                        f"{', '.join(sorted(allowed))})."
                    )
                }
            )
        if cls is None and allowed and not self.platform_admin:
            raise serializers.ValidationError(
                {
                    "priority_class": (
                        f"Queue {queue.name} needs a priority class (allowed: "
                        f"{', '.join(sorted(allowed))})."
                    )
                }
            )
        if cls is not None and "priority" in attrs:
            raise serializers.ValidationError(
                {"priority": ("Give priority_class or priority, not both.")}
            )
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
            host_memory_mib=data["host_memory_mib"],
            duration_s=data["duration_s"],
            preemptible=data["preemptible"] and (cls is None or cls.preemptible),
            min_runtime_s=data["min_runtime_s"],
            on_preemption=data["on_preemption"],
            restart_policy=data["restart_policy"],
            annotations=dict(data.get("annotations") or {}),
            containers=[ContainerSpec(**c) for c in data["containers"]],
            kind=data["kind"],
            port=data.get("port"),
            replicas=data.get("replicas"),
            replicas_min=data.get("min_replicas"),
            replicas_max=data.get("max_replicas"),
            backoff_limit=data["backoff_limit"],
            idle_cull_s=data.get("idle_cull_s"),
            launcher_cpu_milli=data["launcher_cpu_milli"],
            launcher_memory_mib=data["launcher_memory_mib"],
            volumes=[dict(v) for v in data["volumes"]],
            secrets=[dict(v) for v in data["secrets"]],
            tolerations=[dict(v) for v in data["tolerations"]],
            node_selector=dict(data["node_selector"]),
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
    "strategy",
    "within_cluster_queue",
    "reclaim_within_cohort",
    "borrow_within_cohort",
    "borrow_max_priority_threshold",
    "flavors",
    "when_can_borrow",
    "when_can_preempt",
    "flavor_preference",
]


class QueueWriteSerializer(RejectUnknownFieldsMixin, serializers.ModelSerializer):
    """Input of ``PATCH /api/queues/<id>/`` (platform admins): the queue's preemption policy,
    flavor fungibility and priority classes, checked as Kueue's API checks them
    (:meth:`scheduling.models.Queue.clean`); the default class must be one of the allowed
    ones when the queue restricts them."""

    allowed_priority_classes = serializers.SlugRelatedField(
        slug_field="name", many=True, queryset=PriorityClass.objects.all(), required=False
    )
    default_priority_class = serializers.SlugRelatedField(
        slug_field="name", queryset=PriorityClass.objects.all(), required=False, allow_null=True
    )

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
        default = attrs.get(
            "default_priority_class", getattr(self.instance, "default_priority_class", None)
        )
        if default is not None and allowed and default not in allowed:
            raise serializers.ValidationError(
                {
                    "default_priority_class": (
                        f"{default.name} is not one of the queue's allowed classes "
                        f"({', '.join(sorted(c.name for c in allowed))})."
                    )
                }
            )
        return attrs


class QueueSerializer(serializers.ModelSerializer):
    """A queue with its preemption policy, flavor fungibility and priority classes."""

    tenant = serializers.CharField(source="tenant.name")
    resource_group = serializers.CharField(source="resource_group.name")
    allowed_priority_classes = serializers.SlugRelatedField(
        slug_field="name", many=True, read_only=True
    )
    default_priority_class = serializers.SlugRelatedField(
        slug_field="name", read_only=True, allow_null=True
    )

    class Meta:
        model = Queue
        fields = [
            "id",
            "tenant",
            "name",
            "resource_group",
            "strategy",
            "within_cluster_queue",
            "reclaim_within_cohort",
            "borrow_within_cohort",
            "borrow_max_priority_threshold",
            "flavors",
            "when_can_borrow",
            "when_can_preempt",
            "flavor_preference",
            "allowed_priority_classes",
            "default_priority_class",
        ]


class JobContainerSerializer(serializers.ModelSerializer):
    class Meta:
        model = JobContainer
        fields = [
            "name",
            "init",
            "vendor",
            "device_count",
            "device_memory_mib",
            "memory_percent",
            "cores_percent",
            "device_types",
            "device_types_exclude",
            "image",
            "command",
            "args",
            "env",
            "role",
        ]


class PlacementSerializer(serializers.ModelSerializer):
    node = serializers.CharField(source="node.name")

    class Meta:
        model = Placement
        fields = [
            "id",
            "pod_index",
            "node",
            "state",
            "ready",
            "cpu_milli",
            "host_memory_mib",
            "assignment",
            "backend_ref",
            "message",
            "created",
            "submitted_at",
            "started_at",
            "ended_at",
        ]


class JobSerializer(serializers.ModelSerializer):
    """A job. ``queue_position`` (1 = next in its queue) and the estimated start range
    ``estimated_start`` .. ``estimated_start_latest`` (from the running jobs' ends and the
    group's queue ahead, :mod:`scheduling.selectors.job_board`) are filled for a queued job on
    the detail endpoint only (null in lists, for other states and for a job that asks more
    than its group has)."""

    tenant = serializers.CharField(source="tenant.name")
    queue = serializers.CharField(source="queue.name")
    resource_group = serializers.CharField(source="queue.resource_group.name")
    priority_class = serializers.SlugRelatedField(
        slug_field="name", read_only=True, allow_null=True
    )
    containers = JobContainerSerializer(many=True)
    placements = PlacementSerializer(many=True)
    queue_position = serializers.SerializerMethodField()
    estimated_start = serializers.SerializerMethodField()
    service = serializers.SerializerMethodField(
        help_text="Inference service: replicas desired / live / running / ready and the "
        "replica job ids (null for other jobs)."
    )
    lifetime_left_s = serializers.SerializerMethodField(
        help_text="Seconds left before max_runtime_s (a notebook's lifetime) ends the run."
    )
    estimated_start_latest = serializers.SerializerMethodField()

    class Meta:
        model = Job
        fields = [
            "id",
            "name",
            "kind",
            "tenant",
            "queue",
            "resource_group",
            "priority",
            "priority_class",
            "state",
            "pending_reason",
            "queue_position",
            "estimated_start",
            "estimated_start_latest",
            "pod_count",
            "min_pods",
            "cpu_milli",
            "host_memory_mib",
            "duration_s",
            "preemptible",
            "min_runtime_s",
            "on_preemption",
            "preemption_count",
            "restart_policy",
            "annotations",
            "parent",
            "port",
            "replicas",
            "replicas_min",
            "replicas_max",
            "max_runtime_s",
            "backoff_limit",
            "failed_attempts",
            "idle_cull_s",
            "launcher_cpu_milli",
            "launcher_memory_mib",
            "volumes",
            "secrets",
            "tolerations",
            "node_selector",
            "service",
            "lifetime_left_s",
            "containers",
            "placements",
            "created",
            "admitted_at",
            "started_at",
            "finished_at",
            "stopped_at",
        ]

    def get_service(self, job) -> dict | None:
        if not job.is_service:
            return None
        status = service_status(job)
        return {
            "desired": status.desired,
            "live": status.live,
            "running": status.running,
            "ready": status.ready,
            "replica_jobs": list(
                job.replica_jobs.filter(state__in=LIVE_JOB_STATES)
                .order_by("pk")
                .values_list("pk", flat=True)
            ),
        }

    def get_lifetime_left_s(self, job) -> float | None:
        left = lifetime_left_s(job)
        return round(left, 1) if left is not None else None

    def _queue_info(self, job):
        if not self.context.get("detail"):
            return None, None
        cache = self.context.setdefault("_queue_info", {})
        if job.pk not in cache:
            slot = queue_slots([job], timezone.now(), fresh=True).get(job.pk)
            cache[job.pk] = (slot.position, slot.eta) if slot else (None, None)
        return cache[job.pk]

    def get_queue_position(self, job) -> int | None:
        return self._queue_info(job)[0]

    def get_estimated_start(self, job) -> str | None:
        eta = self._queue_info(job)[1]
        return eta.earliest.isoformat() if eta else None

    def get_estimated_start_latest(self, job) -> str | None:
        eta = self._queue_info(job)[1]
        return eta.latest.isoformat() if eta else None


class PreemptionSerializer(serializers.ModelSerializer):
    """A preemption as its victim's tenant may see it: a preemptor of another tenant is
    anonymous (no job, tenant or message naming it) except for platform admins."""

    class Meta:
        model = Preemption
        fields = [
            "victim",
            "preemptor",
            "victim_tenant",
            "preemptor_tenant",
            "reason",
            "message",
            "time",
            "evict_by",
            "outcome",
        ]

    def to_representation(self, instance):
        data = super().to_representation(instance)
        request = self.context.get("request")
        data.update(
            preemption_as_seen(
                instance, platform_admin=request is not None and request.user.is_superuser
            )
        )
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
            "id",
            "cluster",
            "name",
            "cpu_milli",
            "host_memory_mib",
            "labels",
            "schedulable",
            "error",
            "device_count",
            "removed_at",
        ]


class DeviceSerializer(serializers.ModelSerializer):
    node = serializers.CharField(source="node.name")
    cluster = serializers.CharField(source="node.cluster.name")
    model = serializers.CharField(source="model.name")
    vendor = serializers.CharField(source="model.vendor")
    model_error = serializers.CharField(
        source="model.error",
        read_only=True,
        help_text="Why the device's model config does not resolve; the device is then kept "
        "out of placement (empty = fine).",
    )

    class Meta:
        model = Device
        fields = [
            "id",
            "uuid",
            "cluster",
            "node",
            "model",
            "vendor",
            "index",
            "numa",
            "memory_mib",
            "cores_percent",
            "split_count",
            "healthy",
            "cordoned",
            "mode",
            "removed_at",
            "model_error",
            "console_unhealthy",
            "cordon_reason",
        ]


class DeviceCordonSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    """Input of ``POST /api/devices/<id>/cordon/``: why, and what happens to the jobs on it
    (``wait``: keep running; ``requeue``: back to their queue; ``fail``)."""

    reason = serializers.CharField(max_length=200, allow_blank=True, default="")
    drain = serializers.ChoiceField(choices=["wait", "requeue", "fail"], default="wait")
