"""Telemetry API under ``/api/telemetry/``: thin views over selectors and services.

Tenant data (job efficiency, idle jobs, cost) is scoped to the caller's tenants; another
tenant's job or tenant answers 404 as if it did not exist. Device health is inventory data
(visible to every signed-in user, like ``/api/devices/``); device-level utilisation, capacity
alerts and scrape targets are platform-admin data. Writes (targets, prices, clearing health)
are for platform admins.
"""

from __future__ import annotations

import csv
import io
import re
from datetime import UTC, datetime, timedelta

from django.http import HttpResponse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import permissions, serializers, viewsets
from rest_framework.decorators import api_view, permission_classes
from rest_framework.response import Response

from core.exceptions import InvalidRequest, NotFound
from scheduling.models import Job
from telemetry import selectors
from telemetry.cost import month_start, next_month
from telemetry.models import DevicePrice, ScrapeTarget
from telemetry.services.device_health import clear_device_health
from telemetry.services.prices import set_price
from tenants.api.permissions import IsPlatformAdminOrReadOnly
from tenants.models import Tenant
from tenants.selectors import get_visible_tenant_ids


class PlatformAdminOnly(permissions.BasePermission):
    """Platform admins (superusers) only: scrape targets (internal URLs, errors), capacity
    alerts (every group's guarantees) and device-level utilisation (every tenant's work on
    the device) are operator data."""

    def has_permission(self, request, view):
        return bool(request.user and request.user.is_authenticated and request.user.is_superuser)


class ScrapeTargetSerializer(serializers.ModelSerializer):
    cluster_name = serializers.CharField(source="cluster.name", read_only=True)

    class Meta:
        model = ScrapeTarget
        fields = [
            "id",
            "cluster",
            "cluster_name",
            "name",
            "kind",
            "url",
            "enabled",
            "timeout_s",
            "last_scrape_at",
            "last_success_at",
            "last_status",
            "last_error",
            "last_duration_ms",
            "consecutive_failures",
            "last_samples",
            "last_rejected_lines",
            "last_ignored",
            "last_attributed",
            "last_unattributed",
            "last_conflicts",
            "last_node_mismatches",
        ]
        read_only_fields = fields[fields.index("last_scrape_at") :]
        # a host name is at most 253 characters (Django's URL check, RFC 1035); a bound on the
        # whole URL keeps every URL the schema allows acceptable to that check
        extra_kwargs = {"url": {"max_length": 255}}


class ScrapeTargetViewSet(viewsets.ModelViewSet):
    """Scrape targets per cluster with their last scrape status."""

    serializer_class = ScrapeTargetSerializer
    permission_classes = [PlatformAdminOnly]
    queryset = ScrapeTarget.objects.select_related("cluster").order_by("cluster__name", "name")


class PriceSerializer(serializers.ModelSerializer):
    model = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = DevicePrice
        fields = ["id", "model", "effective_from", "per_hour", "currency"]


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string", "pattern": r"^\d{1,8}(\.\d{1,4})?$", "example": "2.5000"},
            {"type": "number", "minimum": 0, "maximum": 99999999.9999, "multipleOf": 0.0001},
        ]
    }
)
class PriceAmountField(serializers.DecimalField):
    """A price, at most 8 + 4 digits: a decimal string or a JSON number."""


class PriceWriteSerializer(serializers.Serializer):
    model = serializers.CharField()
    effective_from = serializers.DateTimeField()
    per_hour = PriceAmountField(max_digits=12, decimal_places=4, min_value=0)
    currency = serializers.CharField(default="USD", max_length=3)


class PriceViewSet(viewsets.ReadOnlyModelViewSet):
    """Prices per device model and hour with effective dates (admins create)."""

    serializer_class = PriceSerializer
    permission_classes = [IsPlatformAdminOrReadOnly]
    queryset = DevicePrice.objects.select_related("model").order_by("model__name", "effective_from")

    @extend_schema(request=PriceWriteSerializer, responses={201: PriceSerializer})
    def create(self, request):
        data = PriceWriteSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        price = set_price(
            values["model"], values["effective_from"], values["per_hour"], values["currency"]
        )
        return Response(PriceSerializer(price).data, status=201)


# -- response shapes of the function views (OpenAPI schema only) -------------------------------

WINDOW = [
    OpenApiParameter(name, OpenApiTypes.DATETIME, description=text)
    for name, text in (
        ("start", "ISO 8601 with a time zone (default: end minus the window)"),
        ("end", "ISO 8601 with a time zone (default: now)"),
    )
]
TENANT = OpenApiParameter("tenant", OpenApiTypes.INT, description="Only this tenant (an id).")
# YYYY-MM from 0001-01 to 9999-11 (the report needs the month after the last one)
_YEAR = r"(000[1-9]|00[1-9]\d|0[1-9]\d{2}|[1-8]\d{3}|9[0-8]\d{2}|99[0-8]\d|999[0-8])"
MONTH = rf"^({_YEAR}-(0[1-9]|1[0-2])|9999-(0[1-9]|1[01]))$"
MONTHS = [
    OpenApiParameter(name, OpenApiTypes.STR, pattern=MONTH, description=text)
    for name, text in (
        ("month", "One month, YYYY-MM"),
        ("from", "First month, YYYY-MM (default: this one)"),
        ("to", "Last month, YYYY-MM (default: from)"),
    )
]


class HealthEventSerializer(serializers.Serializer):
    time = serializers.DateTimeField()
    kind = serializers.CharField()
    severity = serializers.CharField()
    value = serializers.FloatField()
    message = serializers.CharField()
    node = serializers.CharField()
    cluster = serializers.CharField()
    source = serializers.CharField()


class DeviceHealthSerializer(serializers.Serializer):
    serial = serializers.CharField()
    node = serializers.CharField(allow_null=True)
    inventory_healthy = serializers.BooleanField(allow_null=True)
    healthy = serializers.BooleanField(allow_null=True)
    reasons = serializers.DictField()
    changed_at = serializers.DateTimeField(allow_null=True)
    checked_at = serializers.DateTimeField(allow_null=True)
    events = HealthEventSerializer(many=True)


class HealthClearedSerializer(serializers.Serializer):
    serial = serializers.CharField()
    healthy = serializers.BooleanField()
    reasons = serializers.DictField()


class PointSerializer(serializers.Serializer):
    time = serializers.DateTimeField()
    mean = serializers.FloatField()
    min = serializers.FloatField()
    max = serializers.FloatField()


class UtilisationSerializer(serializers.Serializer):
    serial = serializers.CharField()
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    resolution_s = serializers.IntegerField()
    series = serializers.DictField(child=PointSerializer(many=True))


class EfficiencySerializer(serializers.Serializer):
    allocated_memory_mib = serializers.IntegerField()
    allocated_cores_percent = serializers.IntegerField()
    used_memory_mib = serializers.FloatField(allow_null=True)
    used_cores_percent = serializers.FloatField(allow_null=True)
    memory_ratio = serializers.FloatField(allow_null=True)
    cores_ratio = serializers.FloatField(allow_null=True)
    devices_with_data = serializers.IntegerField()


class JobEfficiencySerializer(EfficiencySerializer):
    job = serializers.IntegerField()
    tenant = serializers.CharField()
    idle_since = serializers.DateTimeField(allow_null=True)


class TenantEfficiencySerializer(EfficiencySerializer):
    tenant = serializers.CharField()
    tenant_id = serializers.IntegerField()
    jobs = serializers.IntegerField()
    idle_jobs = serializers.IntegerField()


class IdleJobSerializer(serializers.Serializer):
    job = serializers.IntegerField()
    job_name = serializers.CharField()
    tenant = serializers.CharField()
    idle_since = serializers.DateTimeField()
    used_cores_percent = serializers.FloatField()
    allocated_cores_percent = serializers.IntegerField()


class CostRowSerializer(serializers.Serializer):
    month = serializers.CharField()
    tenant = serializers.CharField()
    tenant_id = serializers.IntegerField()
    model = serializers.CharField()
    gpu_hours = serializers.DecimalField(max_digits=20, decimal_places=4, coerce_to_string=True)
    cost = serializers.DecimalField(max_digits=20, decimal_places=4, coerce_to_string=True)
    currency = serializers.CharField()
    unpriced_hours = serializers.DecimalField(
        max_digits=20, decimal_places=4, coerce_to_string=True
    )
    jobs = serializers.IntegerField()


class CostReportSerializer(serializers.Serializer):
    rows = CostRowSerializer(many=True)

    def get_fields(self):  # "from" is a Python keyword
        return {
            "from": serializers.DateTimeField(),
            "to": serializers.DateTimeField(),
            **super().get_fields(),
        }


class CapacityAlertSerializer(serializers.Serializer):
    resource_group = serializers.CharField()
    flavor = serializers.CharField()
    opened_at = serializers.DateTimeField()
    healthy_devices = serializers.FloatField()
    guaranteed_devices = serializers.FloatField()
    message = serializers.CharField()


def _window(request, default_hours: int = 6):
    """``start``/``end`` query parameters (ISO 8601 with a zone); 400 naming the field."""
    now = timezone.now()
    values = {}
    for name in ("end", "start"):
        if name not in request.query_params:
            continue
        try:
            values[name] = parse_datetime(request.query_params[name])
        except (ValueError, OverflowError) as exc:
            raise InvalidRequest(f"bad time: {exc}", field=name) from exc
        if values[name] is None:
            raise InvalidRequest(f"{name} must be an ISO 8601 date-time", field=name)
        if timezone.is_naive(values[name]):
            raise InvalidRequest(f"{name} needs a time zone", field=name)
    end = values.get("end", now)
    try:
        start = values.get("start") or end - timedelta(hours=default_hours)
    except OverflowError as exc:  # the default start before year 1
        raise InvalidRequest(f"bad time: {exc}", field="end") from exc
    if end <= start:
        raise InvalidRequest("end must be after start", field="end")
    return start, end


def _points(points):
    return [
        {"time": p.time, "mean": round(p.mean, 3), "min": p.minimum, "max": p.maximum}
        for p in points
    ]


def _event(e):
    return {
        "time": e.time,
        "kind": e.kind,
        "severity": e.severity,
        "value": e.value,
        "message": e.message,
        "node": e.node_name,
        "cluster": e.cluster_name,
        "source": e.source,
    }


def _history(serial: str):
    """The device's health history, or 404 (also for ids PostgreSQL cannot store)."""
    history = None if "\x00" in serial else selectors.device_health_history(serial)
    if history is None:
        raise NotFound(f"unknown device {serial!r}")
    return history


@extend_schema(responses=DeviceHealthSerializer)
@api_view(["GET"])
def device_health(request, serial: str):
    """Current health and event history of a device by serial / UUID, across nodes."""
    history = _history(serial)
    current = history.current
    return Response(
        {
            "serial": serial,
            "node": history.device.node.name if history.device else None,
            "inventory_healthy": history.device.healthy if history.device else None,
            "healthy": current.healthy if current else None,
            "reasons": current.reasons if current else {},
            "changed_at": current.changed_at if current else None,
            "checked_at": current.checked_at if current else None,
            "events": [_event(e) for e in history.events],
        }
    )


@extend_schema(request=None, responses=HealthClearedSerializer)
@api_view(["POST"])
@permission_classes([permissions.IsAdminUser])
def device_health_clear(request, serial: str):
    """Clear sticky health conditions (platform admins)."""
    _history(serial)
    row = clear_device_health(serial, user=request.user)
    return Response({"serial": serial, "healthy": row.healthy, "reasons": row.reasons})


@extend_schema(parameters=WINDOW, responses=UtilisationSerializer)
@api_view(["GET"])
@permission_classes([PlatformAdminOnly])
def device_utilisation(request, serial: str):
    """Device-level series (util, memory, temperature, power) over ``start``..``end``."""
    history = _history(serial)
    if history.device is None:
        raise NotFound(f"device {serial!r} is no longer in the inventory")
    start, end = _window(request)
    series = {
        metric: _points(selectors.device_series(history.device.pk, metric, start, end))
        for metric in selectors.CHART_METRICS
    }
    return Response(
        {
            "serial": serial,
            "start": start,
            "end": end,
            "resolution_s": selectors.pick_resolution(start, end),
            "series": series,
        }
    )


def _scoped_jobs(user):
    tenant_ids = get_visible_tenant_ids(user)
    jobs = Job.objects.select_related("tenant")
    return jobs if tenant_ids is None else jobs.filter(tenant_id__in=tenant_ids)


def _efficiency(e):
    return {
        "allocated_memory_mib": e.allocated_memory_mib,
        "allocated_cores_percent": e.allocated_cores_percent,
        "used_memory_mib": None if e.used_memory_mib is None else round(e.used_memory_mib, 1),
        "used_cores_percent": None
        if e.used_cores_percent is None
        else round(e.used_cores_percent, 2),
        "memory_ratio": None if e.memory_ratio is None else round(e.memory_ratio, 4),
        "cores_ratio": None if e.cores_ratio is None else round(e.cores_ratio, 4),
        "devices_with_data": e.devices_with_data,
    }


@extend_schema(parameters=WINDOW, responses=JobEfficiencySerializer)
@api_view(["GET"])
def job_efficiency(request, job_id: int):
    """Allocated vs used memory and cores of a job of the caller's tenants."""
    job = _scoped_jobs(request.user).filter(pk=job_id).first()
    if job is None:
        raise NotFound(f"job {job_id} not found")
    start, end = _window(request, default_hours=24)
    row = selectors.job_efficiency(job, start, end)
    return Response(
        {
            "job": job.pk,
            "tenant": job.tenant.name,
            "idle_since": row.idle_since,
            **_efficiency(row.efficiency),
        }
    )


def _tenant_filter(request) -> list[int] | None:
    """The tenants a request covers: those the caller may read (``get_visible_tenant_ids``;
    ``?tenant=<name or id>`` narrows; another tenant's, or an unknown one, is 404;
    ``?tenant=`` with no value is 400)."""
    allowed = get_visible_tenant_ids(request.user)
    raw = request.query_params.get("tenant", "").strip()
    if not raw and "tenant" in request.query_params:
        raise InvalidRequest("give a tenant id or name, or leave the parameter out", field="tenant")
    if not raw:
        return None if allowed is None else sorted(allowed)
    lookup = {"pk": int(raw)} if raw.isdigit() else {"name__iexact": raw}
    tenant_id = Tenant.objects.filter(**lookup).values_list("pk", flat=True).first()
    if tenant_id is None or (allowed is not None and tenant_id not in allowed):
        raise NotFound(f"tenant {raw!r} not found")
    return [tenant_id]


@extend_schema(parameters=[*WINDOW, TENANT], responses=TenantEfficiencySerializer(many=True))
@api_view(["GET"])
def efficiency(request):
    """Allocated vs used per tenant (caller's tenants) over ``start``..``end`` (24 h)."""
    start, end = _window(request, default_hours=24)
    rows = selectors.tenant_efficiency(_tenant_filter(request), start, end)
    return Response(
        [
            {
                "tenant": r.tenant_name,
                "tenant_id": r.tenant_id,
                "jobs": r.jobs,
                "idle_jobs": r.idle_jobs,
                **_efficiency(r.efficiency),
            }
            for r in rows
        ]
    )


@extend_schema(parameters=[TENANT], responses=IdleJobSerializer(many=True))
@api_view(["GET"])
def idle_jobs(request):
    """Jobs of the caller's tenants flagged as holding devices idle."""
    rows = selectors.idle_jobs(_tenant_filter(request))
    return Response(
        [
            {
                "job": f.job_id,
                "job_name": f.job.name,
                "tenant": f.tenant.name,
                "idle_since": f.idle_since,
                "used_cores_percent": round(f.used_cores_percent, 2),
                "allocated_cores_percent": f.allocated_cores_percent,
            }
            for f in rows
        ]
    )


def _month(raw: str, field: str) -> datetime:
    """``YYYY-MM`` (ASCII digits, the schema's pattern ``MONTH``) -> its first instant."""
    if not re.fullmatch(MONTH, raw):
        in_calendar = re.fullmatch(r"[0-9]{4}-(0[1-9]|1[0-2])", raw)
        raise InvalidRequest(
            f"{field} must be a month from 0001-01 to 9999-11"
            if in_calendar
            else f"{field} must be YYYY-MM",
            field=field,
        )
    year, month = (int(x) for x in raw.split("-"))
    return datetime(year, month, 1, tzinfo=UTC)


def _month_end(start: datetime, field: str) -> datetime:
    """The first instant after the month starting at ``start`` (400 past year 9999)."""
    try:
        return next_month(start)
    except ValueError as exc:
        raise InvalidRequest(f"{field} must be a month before 9999-12", field=field) from exc


def _cost_rows(request):
    params = request.query_params
    given = {
        name: _month(params[name], name) for name in ("month", "from", "to") if name in params
    }  # each is checked, also when month wins
    if "month" in given:
        start = given["month"]
        end = _month_end(start, "month")
    else:
        start = given.get("from") or month_start(timezone.now())
        end = _month_end(given["to"], "to") if "to" in given else _month_end(start, "from")
    if end <= start:
        raise InvalidRequest("to must not be before from", field="to")
    return start, end, selectors.cost_report(start, end, _tenant_filter(request))


def _row(r):
    return {
        "month": r.row.month.strftime("%Y-%m"),
        "tenant": r.tenant_name,
        "tenant_id": r.row.tenant_id,
        "model": r.row.model,
        "gpu_hours": str(r.row.gpu_hours),
        "cost": str(r.row.cost),
        "currency": r.row.currency,
        "unpriced_hours": str(r.row.unpriced_hours),
        "jobs": r.row.jobs,
    }


@extend_schema(parameters=[*MONTHS, TENANT], responses=CostReportSerializer)
@api_view(["GET"])
def cost_report(request):
    """GPU-hours and cost per tenant × device model × month (``?month=YYYY-MM`` or
    ``?from=YYYY-MM&to=YYYY-MM``; ``?tenant=<name or id>``)."""
    start, end, rows = _cost_rows(request)
    return Response({"from": start, "to": end, "rows": [_row(r) for r in rows]})


@extend_schema(parameters=[*MONTHS, TENANT], responses={(200, "text/csv"): OpenApiTypes.STR})
@api_view(["GET"])
def cost_report_csv(request):
    """The cost report as CSV (same parameters)."""
    _start, _end, rows = _cost_rows(request)
    buffer = io.StringIO()
    columns = [
        "month",
        "tenant",
        "tenant_id",
        "model",
        "gpu_hours",
        "cost",
        "currency",
        "unpriced_hours",
        "jobs",
    ]
    writer = csv.DictWriter(buffer, fieldnames=columns)
    writer.writeheader()
    for r in rows:
        writer.writerow(_row(r))
    response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="cost.csv"'
    return response


@extend_schema(responses=CapacityAlertSerializer(many=True))
@api_view(["GET"])
@permission_classes([PlatformAdminOnly])
def capacity_alerts(request):
    """Open alerts: resource groups whose healthy capacity is below their guarantees."""
    return Response(
        [
            {
                "resource_group": a.resource_group.name,
                "flavor": a.flavor,
                "opened_at": a.opened_at,
                "healthy_devices": a.healthy_milli / 1000,
                "guaranteed_devices": a.guaranteed_milli / 1000,
                "message": a.message,
            }
            for a in selectors.open_capacity_alerts()
        ]
    )
