"""Admission API: quota/usage table, job submission dry-run, quota-change dry-run.

* ``GET /api/usage/`` — per tenant × resource group × flavor × dimension: nominal, used,
  borrowed, lent, available (usage recomputed from live placements).
* ``POST /api/dry-run/`` — would this job be admitted now, where, and whom would it preempt?
* ``POST /api/quotas/dry-run/`` — what would this quota change preempt?

Tenant isolation: only the caller's visible tenants are shown; victims of other tenants are
named by tenant only (no job id or name).
"""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.throttling import WriteRateThrottle
from core.exceptions import InvalidRequest
from scheduling.admission import Dimension
from scheduling.api.serializers import JobSubmitSerializer
from scheduling.selectors.admission import quota_usage_table
from scheduling.services.dry_run import preview_job, preview_quota_changes
from tenants.api.serializers import NameField, VisibleTenantField
from tenants.choices import Dimension as DimensionChoice
from tenants.models import MAX_QUOTA_AMOUNT, ResourceGroup, Tenant
from tenants.selectors import can_manage_quota, get_visible_tenant_ids

from .views import submit_queues_or_403


def _visible_names(user) -> set[str] | None:
    ids = get_visible_tenant_ids(user)
    if ids is None:
        return None
    return set(Tenant.objects.filter(pk__in=ids).values_list("name", flat=True))


class UsageRowSerializer(serializers.Serializer):
    tenant = serializers.CharField()
    resource_group = serializers.CharField()
    flavor = serializers.CharField()
    dimension = serializers.CharField()
    nominal = serializers.IntegerField()
    borrowing_limit = serializers.IntegerField(allow_null=True)
    lending_limit = serializers.IntegerField(allow_null=True)
    used = serializers.IntegerField()
    borrowed = serializers.IntegerField()
    lent = serializers.IntegerField()
    available = serializers.IntegerField()


class UsageView(APIView):
    """Quota and usage of the caller's tenants (``?tenant=<name>&resource_group=<name>``)."""

    @extend_schema(responses={200: UsageRowSerializer(many=True)})
    def get(self, request):
        names = _visible_names(request.user)
        wanted = request.query_params.get("tenant")
        if wanted:
            if names is not None and wanted not in names:
                raise NotFound("No such tenant.")
            names = {wanted}
        groups = ResourceGroup.objects.order_by("name")
        if request.query_params.get("resource_group"):
            if "\x00" in request.query_params["resource_group"]:
                raise InvalidRequest("Null characters are not allowed.", field="resource_group")
            groups = groups.filter(name=request.query_params["resource_group"])
        now = timezone.now()
        rows = []
        for group in groups:
            rows.extend(quota_usage_table(group, names, now))
        return Response(UsageRowSerializer(rows, many=True).data)


def _charges_json(charges) -> dict:
    out: dict = {}
    for (flavor, dim), amount in sorted(charges.items()):
        out.setdefault(flavor, {})[Dimension(dim).value] = amount
    return out


def _victim_json(victim_id: str, tenant: str, visible: set[str] | None, **extra) -> dict:
    shown = visible is None or tenant in visible
    return {"job": int(victim_id) if shown else None, "tenant": tenant, **extra}


_VIOLATION_KINDS = {
    "no_quota": "uses a flavor it has no quota for",
    "over_limit": "uses more than its nominal quota plus borrowing limit",
    "over_cap": "uses more than an aggregate cap allows",
}


def _violation_texts(violations, visible: set[str] | None) -> dict[str, str]:
    """``{message: text to show}``: a violation of a tenant the caller may not see is told
    by tenant and kind only (its usage, quota and limits stay hidden); the cohort's and
    visible tenants' violations keep their amounts."""
    out = {}
    for v in violations:
        hidden = v.tenant is not None and visible is not None and v.tenant not in visible
        out[v.message] = (
            f"tenant {v.tenant} {_VIOLATION_KINDS.get(v.kind, 'breaks its quota')}"
            if hidden
            else v.message
        )
    return out


class JobDryRunView(APIView):
    """Would this job be admitted now, where, and whom would it preempt? Nothing is saved.

    Input: the body of ``POST /api/jobs/``. The answer comes from a full admission cycle of
    the queue's resource group run on a copy (queued jobs ahead of it go first).
    """

    throttle_classes = [WriteRateThrottle]

    @extend_schema(request=JobSubmitSerializer, responses={200: dict})
    def post(self, request):
        queues = submit_queues_or_403(request.user)
        serializer = JobSubmitSerializer(data=request.data, queues=queues, user=request.user)
        serializer.is_valid(raise_exception=True)
        queue = serializer.validated_data["queue"]
        preview = preview_job(queue, serializer.to_spec())
        group = queue.resource_group
        visible = _visible_names(request.user)
        body: dict = {
            "admitted": preview.admitted,
            "resource_group": group.name,
            "other_admissions": len(preview.other_admissions),
        }
        if preview.admission is not None:
            decision = preview.admission.placement
            body["placement"] = [
                {
                    "pod": i,
                    "node": pod.node,
                    # under a topology request: the pod's domains, widest level first
                    "domains": list(decision.domains[i]) if i < len(decision.domains) else [],
                    "devices": [
                        {
                            "uuid": g.uuid,
                            "memory_mib": g.memory_mib,
                            "cores_percent": g.cores_percent,
                        }
                        for c in pod.containers
                        for g in c.devices
                    ],
                }
                for i, pod in enumerate(decision.pods)
            ]
            body["pod_count"] = preview.admission.pod_count
            body["charges"] = _charges_json(preview.admission.charges)
            body["borrowing"] = preview.admission.borrowing
        body["preempts"] = [
            _victim_json(
                p.victim_id,
                p.victim_tenant,
                visible,
                reason=p.reason.value,
                message=p.message
                if visible is None or p.victim_tenant in visible
                else f"a job of tenant {p.victim_tenant}",
            )
            for p in preview.victims
        ]
        if preview.verdict is not None:
            body["pending"] = {
                "code": preview.verdict.code.value,
                "reason": preview.verdict.reason,
                "details": list(preview.verdict.details),
                "position": preview.verdict.position,
            }
        return Response(body)


def _over_nominal_json(over, visible: set[str] | None) -> dict:
    """A tenant that would run above its nominal quota after the change: its jobs over the
    quota, in reclaim order (nothing is evicted now: they become reclaimable). A tenant the
    caller may not see is told without amounts or job ids."""
    flavor, dimension = over.flavor_resource
    if visible is not None and over.tenant not in visible:
        return {
            "tenant": over.tenant,
            "flavor": flavor,
            "dimension": dimension.value,
            "jobs": [None for _ in over.jobs],
            "message": f"tenant {over.tenant} would use more than its nominal quota",
        }
    return {
        "tenant": over.tenant,
        "flavor": flavor,
        "dimension": dimension.value,
        "usage": over.usage,
        "nominal": over.nominal,
        "jobs": [int(j) for j in over.jobs],
        "message": over.message,
    }


class QuotaChangeSerializer(serializers.Serializer):
    tenant = VisibleTenantField()
    resource_group = NameField(queryset=ResourceGroup.objects.all())
    flavor = serializers.CharField(max_length=100, default="*")
    dimension = serializers.ChoiceField(choices=DimensionChoice.choices)
    nominal = serializers.IntegerField(min_value=0, max_value=MAX_QUOTA_AMOUNT, required=False)
    borrowing_limit = serializers.IntegerField(
        min_value=0, max_value=MAX_QUOTA_AMOUNT, required=False, allow_null=True, default=None
    )
    lending_limit = serializers.IntegerField(
        min_value=0, max_value=MAX_QUOTA_AMOUNT, required=False, allow_null=True, default=None
    )
    remove = serializers.BooleanField(default=False)

    def validate(self, attrs):
        if not attrs["remove"] and "nominal" not in attrs:
            raise serializers.ValidationError({"nominal": "Required unless remove is true."})
        lending = attrs.get("lending_limit")
        if lending is not None and lending > attrs.get("nominal", 0):
            raise serializers.ValidationError({"lending_limit": "Must not exceed nominal."})
        return attrs


class QuotaDryRunInputSerializer(serializers.Serializer):
    changes = QuotaChangeSerializer(many=True, min_length=1, max_length=200)


class QuotaDryRunView(APIView):
    """What would this quota change preempt? Nothing is saved.

    Input ``{"changes": [{"tenant", "resource_group", "flavor", "dimension", "nominal",
    "borrowing_limit", "lending_limit"} | {..., "remove": true}]}``. Per resource group the
    answer lists the invariants the new quotas break, a minimal set of running jobs whose
    eviction restores them (with the earliest time their minimum runtime allows), what no
    eviction can fix, the tenants whose running usage would go over their nominal quota
    (``over_nominal``: the jobs over it, in reclaim order; running usage stays counted, so
    they become reclaimable, nothing is evicted) and the parents whose children's quotas
    would exceed theirs (``child_excess``). Allowed to whoever may change those quotas.
    """

    throttle_classes = [WriteRateThrottle]

    @extend_schema(request=QuotaDryRunInputSerializer, responses={200: dict})
    def post(self, request):
        visible_ids = get_visible_tenant_ids(request.user)
        serializer = QuotaDryRunInputSerializer(
            data=request.data, context={"visible_tenant_ids": visible_ids}
        )
        serializer.is_valid(raise_exception=True)
        changes = serializer.validated_data["changes"]
        for change in changes:
            tenant = change["tenant"]
            if visible_ids is not None and tenant.pk not in visible_ids:
                raise NotFound("No such tenant.")
            if not can_manage_quota(request.user, tenant):
                raise PermissionDenied(
                    "Quotas are set by platform admins, or by the admin of a parent tenant."
                )
        visible = _visible_names(request.user)
        answer = []
        for result in preview_quota_changes(changes):
            group, impact = result.group, result.impact
            shown = _violation_texts([*impact.violations, *impact.unresolved], visible)
            answer.append(
                {
                    "resource_group": group.name,
                    "violations": [shown[v.message] for v in impact.violations],
                    "preempts": [
                        _victim_json(
                            v.workload_id,
                            v.tenant,
                            visible,
                            violation=shown.get(v.violation, v.violation),
                            earliest_eviction=v.earliest_eviction.isoformat(),
                        )
                        for v in impact.victims
                    ],
                    "unresolved": [shown[v.message] for v in impact.unresolved],
                    "over_nominal": [_over_nominal_json(o, visible) for o in impact.over_nominal],
                    "child_excess": [
                        e.message
                        for e in impact.child_excess
                        if visible is None or e.parent in visible
                    ],
                }
            )
        return Response({"groups": answer}, status=status.HTTP_200_OK)


__all__ = ["JobDryRunView", "QuotaDryRunView", "UsageView"]
