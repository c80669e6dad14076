"""Read shapes of jobs: the job with its containers and placements, its events and the
preemptions it took part in."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from scheduling.admission import CauseKind
from scheduling.admission.eta import Confidence, EstimateState, HonestEstimate, UnknownReason
from scheduling.api.serializers.topology import TopologyReadSerializer
from scheduling.choices import LIVE_JOB_STATES
from scheduling.models import Job, JobContainer, JobEvent, Placement, Preemption
from scheduling.selectors.job_board import queue_slots
from scheduling.selectors.preemptions import preemption_as_seen
from scheduling.services.job_kinds import lifetime_left_s, service_status


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


class PendingCauseSerializer(serializers.Serializer):
    """One cause of ``pending_reason`` (issue 30), one per line of it, first = the blocking
    one; the stored object of :meth:`scheduling.admission.PendingCause.as_dict`."""

    kind = serializers.ChoiceField(choices=[k.value for k in CauseKind], read_only=True)
    resource = serializers.CharField(
        read_only=True,
        allow_null=True,
        help_text='"FLAVOR/DIMENSION" (flavor "*" = any), "DIMENSION" for an aggregate cap; '
        "null when the rule names no resource.",
    )
    needed = serializers.FloatField(read_only=True, allow_null=True, help_text="In unit.")
    free = serializers.FloatField(
        read_only=True, allow_null=True, help_text="Unused nominal quota usable now, in unit."
    )
    borrowable = serializers.FloatField(
        read_only=True, allow_null=True, help_text="What the cohort can still lend, in unit."
    )
    unit = serializers.ChoiceField(
        choices=["devices", "MiB", "percent"], read_only=True, allow_null=True
    )
    rule = serializers.CharField(read_only=True, help_text="The rule's words.")


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
            "domains",
            "created",
            "submitted_at",
            "started_at",
            "ended_at",
        ]


class JobListSerializer(serializers.ListSerializer):
    """A page of jobs: the queue positions and start ranges of its queued jobs are read once
    for the whole page (:func:`scheduling.selectors.job_board.queue_slots` with the start
    ranges the gauges task stored, ``stored_only``: one query for the positions and one
    cache read, whatever the page size and the groups), then each job's fields read them
    from the context."""

    def to_representation(self, data):
        jobs = list(data.all() if hasattr(data, "all") else data)
        slots = queue_slots(jobs, timezone.now(), stored_only=True)
        self.context["_queue_info"] = {
            job.pk: (slots[job.pk].position, slots[job.pk].estimate)
            if job.pk in slots
            else (None, None)
            for job in jobs
        }
        return super().to_representation(jobs)


class JobSerializer(serializers.ModelSerializer):
    """A job. ``queue_position`` (1 = next in its queue) and the estimated start range
    ``estimated_start`` .. ``estimated_start_latest`` (from the running jobs' ends and the
    group's queue ahead, :mod:`scheduling.selectors.job_board`, widened for every time the job
    was passed over or preempted: :func:`scheduling.admission.eta.honest_estimate`) with
    ``estimate_state``, ``estimate_confidence`` and ``estimate_reason`` are filled for a
    queued job: the detail endpoint computes the range now; a list reads the ranges the
    gauges task stored (:class:`JobListSerializer`; a job queued since the last store has a
    position, state ``unknown`` and reason ``not_estimated`` until the next one). Null for
    other states and in the replies of writes; the range is null when the state is
    ``unknown``."""

    tenant = serializers.CharField(source="tenant.name")
    queue = serializers.CharField(source="queue.name")
    resource_group = serializers.CharField(source="queue.resource_group.name")
    priority_class = serializers.SlugRelatedField(
        slug_field="name", read_only=True, allow_null=True
    )
    containers = JobContainerSerializer(many=True)
    placements = PlacementSerializer(many=True)
    topology = TopologyReadSerializer(
        source="*",
        read_only=True,
        help_text="The job's topology request (empty mode = none; levels are label keys); "
        "each placement's domains are where its pod landed.",
    )
    pending_causes = PendingCauseSerializer(many=True, read_only=True)
    queue_position = serializers.SerializerMethodField()
    estimated_start = serializers.SerializerMethodField()
    service = serializers.SerializerMethodField(
        help_text="Inference service: replicas desired / live / running / ready, its phase "
        "(starting: none ready; degraded: fewer ready than desired; ready) and the replica "
        "job ids (null for other jobs)."
    )
    lifetime_left_s = serializers.SerializerMethodField(
        help_text="Seconds left before max_runtime_s (a notebook's lifetime) ends the run."
    )
    estimated_start_latest = serializers.SerializerMethodField()
    estimate_state = serializers.SerializerMethodField(
        help_text="estimated: a window; overdue: the first window shown for the job has "
        "passed while it still waits (the range shown is the current one, widened by the "
        "overdue time); unknown: no window can be given (estimate_reason). Null unless queued."
    )
    estimate_confidence = serializers.SerializerMethodField(
        help_text="high: never passed over nor preempted; medium: 1-2 times; low: 3 or more, "
        "or overdue. Null unless a window is given."
    )
    estimate_reason = serializers.SerializerMethodField(
        help_text="Why the state is unknown: waits_for_quota (its quota is used up and no "
        "running job of its tenant frees it), exceeds_group (asks more devices than its group "
        "has), not_estimated (queued since the last estimate, or too far back). Else null."
    )
    estimate_slips = serializers.SerializerMethodField(
        help_text="Times the job was passed over (jobs of its group admitted after it reached "
        "the head of its queue) plus times it was preempted: each widens the window."
    )
    estimate_overdue_s = serializers.SerializerMethodField(
        help_text="Seconds since the first window shown ended (overdue only), else null."
    )

    class Meta:
        model = Job
        list_serializer_class = JobListSerializer
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
            "pending_causes",
            "queue_position",
            "estimated_start",
            "estimated_start_latest",
            "estimate_state",
            "estimate_confidence",
            "estimate_reason",
            "estimate_slips",
            "estimate_overdue_s",
            "pod_count",
            "min_pods",
            "cpu_milli",
            "host_memory_mib",
            "duration_s",
            "preemptible",
            "allow_consolidation",
            "min_runtime_s",
            "on_preemption",
            "preemption_count",
            "restart_policy",
            "annotations",
            "topology",
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
            "phase": status.phase,
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
        cache = self.context.get("_queue_info")
        if cache is not None and job.pk in cache:  # a list page (JobListSerializer)
            return cache[job.pk]
        if not self.context.get("detail"):
            return None, None
        cache = self.context.setdefault("_queue_info", {})
        if job.pk not in cache:
            slot = queue_slots([job], timezone.now(), fresh=True).get(job.pk)
            cache[job.pk] = (slot.position, slot.estimate) if slot else (None, None)
        return cache[job.pk]

    def _estimate(self, job) -> HonestEstimate | None:
        return self._queue_info(job)[1]

    def get_queue_position(self, job) -> int | None:
        return self._queue_info(job)[0]

    def get_estimated_start(self, job) -> str | None:
        eta = self._estimate(job)
        return eta.earliest.isoformat() if eta and eta.earliest else None

    def get_estimated_start_latest(self, job) -> str | None:
        eta = self._estimate(job)
        return eta.latest.isoformat() if eta and eta.latest else None

    @extend_schema_field(
        serializers.ChoiceField(choices=[s.value for s in EstimateState], allow_null=True)
    )
    def get_estimate_state(self, job) -> str | None:
        eta = self._estimate(job)
        return eta.state.value if eta else None

    @extend_schema_field(
        serializers.ChoiceField(choices=[c.value for c in Confidence], allow_null=True)
    )
    def get_estimate_confidence(self, job) -> str | None:
        eta = self._estimate(job)
        return eta.confidence.value if eta and eta.confidence else None

    @extend_schema_field(
        serializers.ChoiceField(choices=[r.value for r in UnknownReason], allow_null=True)
    )
    def get_estimate_reason(self, job) -> str | None:
        eta = self._estimate(job)
        return eta.reason.value if eta and eta.reason else None

    def get_estimate_slips(self, job) -> int | None:
        eta = self._estimate(job)
        return eta.slips if eta else None

    def get_estimate_overdue_s(self, job) -> float | None:
        eta = self._estimate(job)
        return round(eta.overdue_s, 1) if eta and eta.overdue_s is not None else None


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
