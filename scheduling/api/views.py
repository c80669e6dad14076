"""API views: thin (validate with a serializer, call a service, render a serializer)."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Count, OuterRef, Prefetch, Subquery, prefetch_related_objects
from django.db.models.functions import Coalesce
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.permissions import IsAdminUser
from rest_framework.response import Response

from core.api import error_response
from core.api.mixins import AuditedWritesMixin
from core.api.throttling import BatchSubmitThrottle, WriteRateThrottle
from core.audit import record, snapshot
from core.exceptions import NeverFits
from scheduling.api.job_kinds import ScaleSerializer
from scheduling.api.serializers import (
    MAX_BATCH_JOBS,
    QUEUE_POLICY_FIELDS,
    DeviceCordonSerializer,
    DeviceSerializer,
    JobBatchResultSerializer,
    JobBatchSerializer,
    JobEventSerializer,
    JobSerializer,
    JobSubmitSerializer,
    NodeSerializer,
    PreemptionSerializer,
    PriorityClassSerializer,
    QueueSerializer,
    QueueWriteSerializer,
)
from scheduling.api.serializers.consolidation import ConsolidationPlanSerializer
from scheduling.filtersets import DeviceFilterSet, JobFilterSet, NodeFilterSet
from scheduling.models import Device, Job, Node, Placement, PriorityClass, Queue
from scheduling.selectors.access import submit_queues, submit_refusal, visible_jobs
from scheduling.selectors.calibration import annotate_calibration
from scheduling.services.consolidation_preview import preview_for
from scheduling.services.cordons import cordon_device, uncordon_device
from scheduling.services.job_kinds import (
    cancel_any_job,
    resume_notebook,
    scale_service,
    stop_notebook,
    submit_job,
    submit_jobs,
)
from scheduling.services.jobs import never_fits_reasons
from tenants.api.permissions import IsPlatformAdminOrReadOnly
from tenants.selectors import action_refusal, get_visible_tenant_ids


def submit_queues_or_403(user):
    """Queues the user may submit to (``scheduling.selectors.access.submit_queues``).

    Raises:
        PermissionDenied: there is none; the message says why (``submit_refusal``).
    """
    why = submit_refusal(user)
    if why is not None:
        raise PermissionDenied(why)
    return submit_queues(user)


class JobViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet,
):
    """Jobs the caller may read (``visible_jobs``): list, read, submit, cancel, events.

    Another tenant's job answers 404, as if it did not exist; a job the caller reads but may
    not change (a viewer's, a parent tenant admin's) answers 403 to its actions.
    """

    serializer_class = JobSerializer
    filterset_class = JobFilterSet
    throttle_classes = [WriteRateThrottle]

    def get_queryset(self):
        jobs = (
            visible_jobs(self.request.user)
            .select_related("tenant", "queue__resource_group", "priority_class")
            .prefetch_related(
                "containers",
                Prefetch("placements", queryset=Placement.objects.select_related("node")),
            )
        )
        return jobs.order_by("-id")

    def retrieve(self, request, *args, **kwargs):
        """A job with its pending reason, queue position and estimated start."""
        job = self.get_object()
        return Response(JobSerializer(job, context={"request": request, "detail": True}).data)

    @extend_schema(responses={200: PreemptionSerializer(many=True)}, filters=False)
    @action(detail=True, methods=["get"], pagination_class=None, filterset_class=None)
    def preemptions(self, request, pk=None):
        """Evictions of this job (as victim), oldest first."""
        job = self.get_object()
        return Response(
            PreemptionSerializer(
                job.preemptions.all(), many=True, context={"request": request}
            ).data
        )

    @extend_schema(request=JobSubmitSerializer, responses={201: JobSerializer})
    def create(self, request, *args, **kwargs):
        queues = submit_queues_or_403(request.user)
        serializer = JobSubmitSerializer(data=request.data, queues=queues, user=request.user)
        serializer.is_valid(raise_exception=True)
        job = submit_job(
            serializer.validated_data["queue"], serializer.to_spec(), user=request.user
        )
        # the reply from the job in memory (queue, group, tenant and class came with the
        # queue): one query for its containers, none for its placements (a new job has none)
        prefetch_related_objects(
            [job], "containers", Prefetch("placements", queryset=Placement.objects.none())
        )
        return Response(JobSerializer(job).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        request=JobBatchSerializer,
        responses={201: JobBatchResultSerializer},
        filters=False,
        summary="Submit up to 500 jobs in one request, all or none",
    )
    @action(
        detail=False,
        methods=["post"],
        pagination_class=None,
        filterset_class=None,
        throttle_classes=[BatchSubmitThrottle],
    )
    def batch(self, request):
        """Submit 1-500 jobs, each as ``POST /api/jobs/`` takes it, in one transaction: all are
        created or none (an invalid item answers 400 with its errors under
        ``jobs[<index>].<field>``, a job that can never fit its group under
        ``jobs[<index>].reason``; one answer lists them all). Counts one write of
        ``API_WRITE_RATE`` and one job per job of ``API_BATCH_JOB_RATE``; more jobs than that
        rate counts in a whole window answer 400 under ``jobs`` (``exceeds_rate``), see
        ``core.api.throttling``."""
        queues = submit_queues_or_403(request.user)
        serializer = JobBatchSerializer(data=request.data, queues=queues, user=request.user)
        if not serializer.is_valid():
            valid = serializer.valid_items()  # {index in the batch: entry}
            reasons = never_fits_reasons(list(valid.values()))  # {position in valid: why}
            by_index = {i: reasons[k] for k, i in enumerate(valid) if k in reasons}
            raise ValidationError(serializer.errors_with_reasons(by_index))
        try:
            jobs = submit_jobs(serializer.to_entries(), user=request.user)
        except NeverFits as exc:
            fields = {f"jobs[{i}].reason": [why] for i, why in sorted(exc.reasons.items())}
            return error_response(exc.code, exc.message, fields, exc.status_code)
        return Response(
            JobBatchResultSerializer({"jobs": jobs}).data, status=status.HTTP_201_CREATED
        )

    def batch_job_count(self, request) -> int:
        """Jobs a batch submission counts for ``API_BATCH_JOB_RATE``, read before the body is
        validated: the length of its ``jobs`` list; 1 for a body that validation refuses
        anyway (no list, an empty one, or more than ``MAX_BATCH_JOBS``), so such a body is
        answered by its field errors, not by the rate."""
        jobs = request.data.get("jobs") if isinstance(request.data, dict) else None
        return len(jobs) if isinstance(jobs, list) and 1 <= len(jobs) <= MAX_BATCH_JOBS else 1

    def _writable(self, verb: str) -> Job:
        """The job, when the caller may ``verb`` it: another tenant's job is 404
        (``get_queryset``), one the caller only reads is 403 (``action_refusal``)."""
        job = self.get_object()
        why = action_refusal(self.request.user, job.tenant_id, verb)
        if why is not None:
            raise PermissionDenied(why)
        return job

    def _render(self, job: Job) -> Response:
        return Response(
            JobSerializer(
                self.get_queryset().get(pk=job.pk), context={"request": self.request}
            ).data
        )

    @extend_schema(request=None, responses={200: JobSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        """Cancel the job (member or tenant admin of its tenant); an inference service is
        stopped with all its replicas."""
        job = self._writable("cancel")
        cancel_any_job(job, user=request.user)
        return self._render(job)

    @extend_schema(request=ScaleSerializer, responses={200: JobSerializer})
    @action(detail=True, methods=["post"])
    def scale(self, request, pk=None):
        """Set an inference service's replicas (within its min/max): new replicas are
        queued and admitted under the tenant's quota, surplus ones cancelled."""
        job = self._writable("scale")
        data = ScaleSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        scale_service(job, data.validated_data["replicas"], user=request.user)
        return self._render(job)

    @extend_schema(request=None, responses={200: JobSerializer})
    @action(detail=True, methods=["post"])
    def stop(self, request, pk=None):
        """Stop a notebook: its pod is deleted and its devices freed until resumed."""
        job = self._writable("stop")
        stop_notebook(job, user=request.user)
        return self._render(job)

    @extend_schema(request=None, responses={200: JobSerializer})
    @action(detail=True, methods=["post"])
    def resume(self, request, pk=None):
        """Resume a stopped notebook: it is queued and asks for devices again."""
        job = self._writable("resume")
        resume_notebook(job, user=request.user)
        return self._render(job)

    @extend_schema(responses={200: JobEventSerializer(many=True)}, filters=False)
    @action(detail=True, methods=["get"], pagination_class=None, filterset_class=None)
    def events(self, request, pk=None):
        """State changes and reasons of the job, oldest first."""
        job = self.get_object()
        return Response(JobEventSerializer(job.events.all(), many=True).data)

    @extend_schema(responses={200: ConsolidationPlanSerializer}, filters=False)
    @action(
        detail=True,
        methods=["get"],
        url_path="consolidation-plan",
        pagination_class=None,
        filterset_class=None,
    )
    def consolidation_plan(self, request, pk=None):
        """What consolidation would move for this queued job now, before anything moves
        (the cycle's own planner, nothing written); another tenant's moved job only
        counted."""
        shown = preview_for(self.get_object(), request.user)
        return Response(ConsolidationPlanSerializer(shown).data)


def _queue_audit(queue: Queue) -> dict:
    return {
        **snapshot(queue, QUEUE_POLICY_FIELDS),
        "allowed_priority_classes": sorted(c.name for c in queue.allowed_priority_classes.all()),
        "default_priority_class": getattr(queue.default_priority_class, "name", None),
    }


class QueueViewSet(mixins.UpdateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Queues the caller may read (``get_visible_tenant_ids``). Platform admins change a
    queue's preemption policy, flavor fungibility and allowed priority classes with ``PATCH``
    (audited; see :class:`~scheduling.api.serializers.QueueWriteSerializer`); others get 403."""

    serializer_class = QueueSerializer
    filterset_fields = ["name", "strategy"]
    permission_classes = [IsPlatformAdminOrReadOnly]
    throttle_classes = [WriteRateThrottle]

    def get_queryset(self):
        queues = annotate_calibration(
            Queue.objects.select_related("tenant", "resource_group", "default_priority_class")
            .prefetch_related("allowed_priority_classes")
            .order_by("pk")
        )
        tenant_ids = get_visible_tenant_ids(self.request.user)
        return queues if tenant_ids is None else queues.filter(tenant_id__in=tenant_ids)

    def get_serializer_class(self):
        return (
            QueueWriteSerializer if self.action in ("update", "partial_update") else QueueSerializer
        )

    @extend_schema(request=QueueWriteSerializer, responses={200: QueueSerializer})
    def update(self, request, *args, **kwargs):
        super().update(request, *args, **kwargs)
        return Response(QueueSerializer(self.get_queryset().get(pk=kwargs["pk"])).data)

    def perform_update(self, serializer):
        with transaction.atomic():
            before = _queue_audit(serializer.instance)
            queue = serializer.save()
            record(
                "queue.update",
                queue,
                actor=self.request.user,
                before=before,
                after=_queue_audit(queue),
                tenant_id=queue.tenant_id,
            )


class PriorityClassViewSet(AuditedWritesMixin, viewsets.ModelViewSet):
    """Priority classes: everyone reads, platform admins write (audited). A class still
    named by a job or a queue cannot be deleted (409). Changing ``value`` does not change
    the priority of jobs already submitted (Kueue ``WorkloadPriorityClass``)."""

    serializer_class = PriorityClassSerializer
    permission_classes = [IsPlatformAdminOrReadOnly]
    throttle_classes = [WriteRateThrottle]
    queryset = PriorityClass.objects.order_by("-value", "name")
    filterset_fields = ["name", "preemptible"]
    audit_name = "priority_class"
    audit_fields = ["name", "value", "preemptible", "description"]


class NodeViewSet(viewsets.ReadOnlyModelViewSet):
    """Nodes of every cluster (inventory; no tenant data)."""

    serializer_class = NodeSerializer
    filterset_class = NodeFilterSet
    # the device count is a scalar subquery, not a GROUP BY over every node: PostgreSQL
    # evaluates it only for the page's rows (after ORDER BY ... LIMIT), and the paginator's
    # COUNT(*) leaves it out
    queryset = (
        Node.objects.select_related("cluster")
        .annotate(
            device_count=Coalesce(
                Subquery(
                    Device.objects.filter(node=OuterRef("pk"))
                    .order_by()
                    .values("node")
                    .annotate(n=Count("pk"))
                    .values("n")
                ),
                0,
            )
        )
        .order_by("cluster__name", "name")
    )


class DeviceViewSet(viewsets.ReadOnlyModelViewSet):
    """Physical devices, keyed by UUID (``/api/devices/?model=...``); platform admins cordon
    and uncordon them (``POST /api/devices/<id>/cordon/`` with ``reason`` and ``drain``)."""

    serializer_class = DeviceSerializer
    filterset_class = DeviceFilterSet
    queryset = Device.objects.select_related("node__cluster", "model").order_by("uuid")

    @extend_schema(request=DeviceCordonSerializer, responses=DeviceSerializer)
    @action(detail=True, methods=["post"], permission_classes=[IsAdminUser])
    def cordon(self, request, pk=None):
        """Cordon the device in the console and its cluster; drain its jobs by policy."""
        data = DeviceCordonSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        device = cordon_device(
            self.get_object(),
            reason=data.validated_data["reason"],
            user=request.user,
            policy=data.validated_data["drain"],
        )
        return Response(DeviceSerializer(device).data)

    @extend_schema(request=None, responses=DeviceSerializer)
    @action(detail=True, methods=["post"], permission_classes=[IsAdminUser])
    def uncordon(self, request, pk=None):
        """Lift the console's cordon (a device still unhealthy keeps its health cordon)."""
        device = uncordon_device(self.get_object(), user=request.user)
        return Response(DeviceSerializer(device).data)
