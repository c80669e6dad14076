"""Input of job submission (``POST /api/jobs/``, the dry run and the submit page): the job,
its containers and the queue it goes to, validated into a
:class:`scheduling.services.jobs.JobSpec`."""

from __future__ import annotations

import re

from rest_framework import serializers

from scheduling.api.job_kinds import (
    SecretRefSerializer,
    TolerationSerializer,
    VolumeSerializer,
    validate_job_kind,
    validate_node_selector,
)
from scheduling.api.serializers.fields import RejectUnknownFieldsMixin, VendorField
from scheduling.api.serializers.topology import TopologyInputSerializer, resolved_topology
from scheduling.choices import CONTAINER_ROLES, JobKind, VictimPolicy
from scheduling.devices.resources import CORE_LIMIT_WORDS, MAX_CORES_PERCENT
from scheduling.models import PriorityClass, Queue
from scheduling.placement.group_profile import annotation_errors, normalised_annotations
from scheduling.selectors.topology import TopologySpec
from scheduling.services.jobs import (
    MAX_CPU_MILLI,
    MAX_DEVICE_COUNT,
    MAX_DEVICE_MEMORY_MIB,
    MAX_HOST_MEMORY_MIB,
    MAX_POD_COUNT,
    ContainerSpec,
    JobSpec,
    pod_annotation_errors,
)
from scheduling.services.priorities import PriorityRefused, resolve_priority_class

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


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
    cores_percent = serializers.IntegerField(
        min_value=0,
        max_value=MAX_CORES_PERCENT,
        default=0,
        error_messages={
            "max_value": (
                f"{CORE_LIMIT_WORDS.format(limit=MAX_CORES_PERCENT)} (percent of one device)."
            )
        },
    )
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
    # Kubernetes passes command and args to the container verbatim: a blank argument is a
    # real argument and whitespace is part of it, so neither is trimmed nor refused.
    command = serializers.ListField(
        child=serializers.CharField(max_length=4096, allow_blank=True, trim_whitespace=False),
        default=list,
        max_length=64,
    )
    args = serializers.ListField(
        child=serializers.CharField(max_length=4096, allow_blank=True, trim_whitespace=False),
        default=list,
        max_length=256,
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
        """The queue, resolved once per request for each spelling (a batch names its queue
        in every item: ``context["queues_seen"]``, when the view gives one)."""
        seen = self.context.get("queues_seen")
        key = repr(data)
        if seen is not None and key in seen:
            return seen[key]
        queue = self._resolve(data)
        if seen is not None:
            seen[key] = queue
        return queue

    def _resolve(self, data):
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
    admins only, for a job without a class. ``min_runtime_s`` is at most the queue's
    ``max_min_runtime_s`` (:meth:`scheduling.models.Queue.min_runtime_error`).
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
    allow_consolidation = serializers.BooleanField(default=False)
    min_runtime_s = serializers.FloatField(
        min_value=0,
        max_value=30 * 24 * 3600,
        default=0.0,
        help_text="Seconds after admission during which the job cannot be preempted; at most "
        "the queue's max_min_runtime_s (300 unless an operator raised it).",
    )
    on_preemption = serializers.ChoiceField(
        choices=VictimPolicy.choices, default=VictimPolicy.REQUEUE
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
        "hami.io/gpu-scheduler-policy (binpack | spread | topology-aware; any case, stored "
        "lower case) override the resource group's placement policies where the group "
        "allows it.",
    )
    topology = TopologyInputSerializer(
        required=False,
        allow_null=True,
        help_text="Where the job's pods land in its resource group's network topology "
        "(Kueue Topology-Aware Scheduling); 400 when the group has no topology or a level "
        "is not one of its levels (the error names them).",
    )

    def __init__(self, *args, queues=None, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["queue"].queryset = (
            queues.select_related(
                "tenant", "resource_group", "default_priority_class"
            ).prefetch_related("allowed_priority_classes")
            if queues is not None
            else Queue.objects.none()
        )
        self.platform_admin = bool(user is not None and user.is_superuser)

    def to_internal_value(self, data):
        attrs = super().to_internal_value(data)
        # the fields the caller gave (the workload rules tell defaults from choices); read
        # here, not from ``initial_data``, which an item of a batch does not have
        attrs["_given"] = set(data) if isinstance(data, dict) else set()
        return attrs

    def validate_annotations(self, value):
        errors = pod_annotation_errors(value)
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
        # stored (and put on the pods) as HAMi reads them: " Binpack " -> binpack
        attrs["annotations"] = normalised_annotations(attrs.get("annotations") or {})
        attrs["priority_class"] = self._priority_class(attrs)
        why = attrs["queue"].min_runtime_error(attrs["min_runtime_s"])
        if why:
            raise serializers.ValidationError({"min_runtime_s": why})
        attrs = validate_job_kind(attrs)
        attrs.pop("_given", None)
        attrs["topology"] = resolved_topology(group, attrs.get("topology"), attrs["pod_count"])
        return attrs

    def _priority_class(self, attrs):
        """The class the job gets (checked against the queue: the rule every way in shares,
        :func:`scheduling.services.priorities.resolve_priority_class`), or None (raw
        priority)."""
        try:
            return resolve_priority_class(
                attrs["queue"],
                attrs.get("priority_class"),
                raw_priority="priority" in attrs,
                platform_admin=self.platform_admin,
            )
        except PriorityRefused as exc:
            raise serializers.ValidationError({exc.field: exc.message}) from None

    def to_spec(self) -> JobSpec:
        """The :class:`JobSpec` of the validated submission."""
        return self.spec_of(self.validated_data)

    @staticmethod
    def spec_of(data: dict) -> JobSpec:
        """The :class:`JobSpec` of one validated submission's data."""
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
            allow_consolidation=data["allow_consolidation"],
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
            topology=data.get("topology") or TopologySpec(),
        )


MAX_BATCH_JOBS = 500
"""Jobs of one ``POST /api/jobs/batch/``."""


class JobBatchSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    """Input of ``POST /api/jobs/batch/``: ``jobs``, 1 to :data:`MAX_BATCH_JOBS`
    submissions, each exactly as ``POST /api/jobs/`` takes it. All or none: any invalid item
    refuses the batch with its errors under ``jobs[<index>].<field>``, and the reasons of
    the valid items that can never fit under ``jobs[<index>].reason`` in the same answer."""

    # declared for the OpenAPI schema; each instance rebuilds it with the caller's queues
    jobs = JobSubmitSerializer(many=True, min_length=1, max_length=MAX_BATCH_JOBS)

    def __init__(self, *args, queues=None, user=None, **kwargs):
        kwargs.setdefault("context", {}).setdefault("queues_seen", {})
        super().__init__(*args, **kwargs)
        self.fields["jobs"] = JobSubmitSerializer(
            many=True, min_length=1, max_length=MAX_BATCH_JOBS, queues=queues, user=user
        )

    def to_entries(self) -> list[tuple[Queue, JobSpec]]:
        """``(queue, spec)`` of every item, in order."""
        return [
            (item["queue"], JobSubmitSerializer.spec_of(item))
            for item in self.validated_data["jobs"]
        ]

    def _item_errors(self) -> dict[int, dict] | None:
        """``{index: field errors}`` of the refused items (DRF's list serializer reports them
        by index), or None when the batch itself was refused (no list, an empty or too long
        one, unknown keys)."""
        item_errors = self.errors.get("jobs")
        if set(self.errors) != {"jobs"} or not isinstance(item_errors, dict):
            return None
        if not all(isinstance(index, int) for index in item_errors):
            return None
        return dict(item_errors)

    def valid_items(self) -> dict[int, tuple[Queue, JobSpec]]:
        """After ``is_valid()`` refused some items: ``{index: (queue, spec)}`` of the items
        with no error of their own (validated again by the same child serializer), so their
        never-fits reasons can join the field errors; empty when the batch itself was
        refused."""
        item_errors = self._item_errors()
        if item_errors is None:
            return {}
        child = self.fields["jobs"]
        valid = {}
        for index, data in enumerate(self.initial_data["jobs"]):
            if index not in item_errors:
                item = child.run_child_validation(data)
                valid[index] = (item["queue"], JobSubmitSerializer.spec_of(item))
        return valid

    def errors_with_reasons(self, reasons: dict[int, str]) -> dict:
        """The field errors with each never-fits reason added as ``reason`` of its item
        (``{"jobs": {index: {field: [messages]}}}``, rendered ``jobs[<index>].<field>``);
        without reasons, the errors as they are."""
        item_errors = self._item_errors()
        if not reasons or item_errors is None:
            return self.errors
        for index, why in reasons.items():
            item_errors[index] = {"reason": [why]}
        return {"jobs": dict(sorted(item_errors.items()))}


class JobBatchItemSerializer(serializers.Serializer):
    """One created job of a batch (read the full job at ``/api/jobs/<id>/``)."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    state = serializers.CharField()
    queue = serializers.CharField(source="queue.name")
    tenant = serializers.CharField(source="tenant.name")


class JobBatchResultSerializer(serializers.Serializer):
    """Reply of ``POST /api/jobs/batch/``: the created jobs in the order submitted."""

    jobs = JobBatchItemSerializer(many=True)
