"""Queues and priority classes: read shapes, and the platform admin's queue policy input."""

from __future__ import annotations

import copy

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from scheduling.api.serializers.fields import RejectUnknownFieldsMixin
from scheduling.models import PriorityClass, Queue
from scheduling.selectors.calibration import calibration_of, queue_calibration


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
    "max_min_runtime_s",
]


class CalibrationSerializer(serializers.Serializer):
    """A queue's start-estimate calibration (:class:`scheduling.selectors.calibration.
    Calibration`)."""

    started = serializers.IntegerField(read_only=True)
    inside = serializers.IntegerField(read_only=True)
    share = serializers.FloatField(read_only=True, allow_null=True)


class QueueWriteSerializer(RejectUnknownFieldsMixin, serializers.ModelSerializer):
    """Input of ``PATCH /api/queues/<id>/`` (platform admins): the queue's preemption policy
    (with ``max_min_runtime_s``, the most ``min_runtime_s`` its jobs may ask, seconds >= 0),
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
    start_calibration = serializers.SerializerMethodField(
        help_text="How well the start estimates held (issue 30): started = jobs of the queue "
        "that started after a recorded estimate (the first window shown for each), inside = "
        "those that started inside it, share = inside / started (0..1, null before any)."
    )

    class Meta:
        model = Queue
        fields = [
            "id",
            "tenant",
            "name",
            "resource_group",
            *QUEUE_POLICY_FIELDS,
            "allowed_priority_classes",
            "default_priority_class",
            "start_calibration",
        ]

    @extend_schema_field(CalibrationSerializer)
    def get_start_calibration(self, queue) -> dict:
        if hasattr(queue, "calibration_started"):
            return calibration_of(queue).as_dict()
        return queue_calibration([queue.pk])[queue.pk].as_dict()
