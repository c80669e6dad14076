"""Limits below the tenant (issue 33): ``/api/user-limits/`` and ``/api/budgets/``.

* Reads: the rows of the caller's own tenants (where they are a member: the rows name
  members, whom another tenant, or a parent tenant's admin, never sees; as
  ``GET /api/members/``), each user limit with the user's usage now and which
  limits it is over; each budget with its state (spent, committed by running jobs, forecast
  to the period's end, as last measured by ``telemetry.services.budgets``).
* Writes: the tenant's admin or a platform admin; its other members 403, another tenant
  404. Bad input answers 400 with field errors: a negative limit, a user not
  in the tenant, an unknown device model, a budget currency the price table does not use,
  budgets of the same scope over overlapping periods. A limit below the current usage is
  accepted with a ``warnings`` line (it acts on new admissions only).
"""

from __future__ import annotations

from datetime import datetime

from django.contrib.auth import get_user_model
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.exceptions import PermissionDenied
from rest_framework.response import Response

from core.api.throttling import WriteRateThrottle
from core.exceptions import InvalidRequest
from scheduling.selectors.user_limits import UserUsage, budget_period, over_limits, user_usage
from tenants import services
from tenants.api.serializers import VisibleTenantField
from tenants.choices import GPU_HOURS, BudgetAction, BudgetPeriod
from tenants.models import Budget, Tenant, UserLimit
from tenants.selectors import (
    budgets_of,
    can_manage_limits,
    device_model_names,
    get_user_tenant_ids,
    price_currencies,
    user_limits_of,
)

LIMIT_MAX = 2**31 - 1


class UserLimitSerializer(serializers.ModelSerializer):
    tenant = serializers.CharField(source="tenant.name")
    user = serializers.CharField(source="user.username", allow_null=True, default=None)
    usage = serializers.SerializerMethodField()
    over_limit = serializers.SerializerMethodField()

    class Meta:
        model = UserLimit
        fields = ["id", *services.USER_LIMIT_FIELDS, "usage", "over_limit"]

    def _usage(self, row: UserLimit) -> UserUsage | None:
        if row.user_id is None:
            return None
        return self.context.get("usage", {}).get((row.tenant_id, row.user_id), UserUsage())

    def get_usage(self, row: UserLimit) -> dict | None:
        used = self._usage(row)
        if used is None:
            return None
        return {
            "running_jobs": used.running_jobs,
            "queued_jobs": used.queued_jobs,
            "devices_milli": used.devices_of(row.device_model),
        }

    def get_over_limit(self, row: UserLimit) -> list[str]:
        used = self._usage(row)
        return [] if used is None else over_limits(row, used)


class UserLimitWriteSerializer(serializers.Serializer):
    """Input: ``tenant`` and ``user`` by name (``user`` null = every member's default)."""

    tenant = VisibleTenantField()
    user = serializers.CharField(max_length=150, allow_null=True, default=None)
    max_running_jobs = serializers.IntegerField(
        min_value=0, max_value=LIMIT_MAX, allow_null=True, default=None
    )
    max_queued_jobs = serializers.IntegerField(
        min_value=0, max_value=LIMIT_MAX, allow_null=True, default=None
    )
    max_devices_milli = serializers.IntegerField(
        min_value=0, max_value=2**63 - 1, allow_null=True, default=None
    )
    device_model = serializers.CharField(max_length=100, allow_blank=True, default="")


def _member(tenant: Tenant, username: str | None):
    """The user named ``username`` if a member of ``tenant`` (None for None); else 400 on
    ``user`` without telling whether the name exists."""
    if username is None:
        return None
    user = get_user_model().objects.filter(username=username, memberships__tenant=tenant).first()
    if user is None:
        raise InvalidRequest(f"not a member of tenant {tenant.name}", field="user")
    return user


class _Scoped:
    """Reads scoped to the caller's visible tenants; writes to who manages the tenant."""

    throttle_classes = [WriteRateThrottle]

    def _visible(self):
        return get_user_tenant_ids(self.request.user)  # type: ignore[attr-defined]

    def _require_manage(self, tenant: Tenant) -> None:
        if not can_manage_limits(self.request.user, tenant):  # type: ignore[attr-defined]
            raise PermissionDenied(
                "Limits and budgets are set by the tenant's admin or a platform admin."
            )


class UserLimitViewSet(
    _Scoped,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Per-user limits in a tenant (YuniKorn user limits; Slurm per-user caps).

    ``POST`` creates or replaces the row of (tenant, user): ``max_running_jobs`` and
    ``max_devices_milli`` (1000 = one device-equivalent; of ``device_model`` only when set)
    act in admission (pending reason ``user alice: 8 of 8 running jobs``),
    ``max_queued_jobs`` at submission (400 on ``queue``).
    """

    serializer_class = UserLimitSerializer

    def get_queryset(self):
        return user_limits_of(self._visible())

    def get_serializer_context(self):
        context = super().get_serializer_context()
        visible = self._visible()
        ids = visible if visible is not None else set(Tenant.objects.values_list("pk", flat=True))
        context["usage"] = user_usage(ids)
        return context

    @extend_schema(request=UserLimitWriteSerializer, responses={201: UserLimitSerializer})
    def create(self, request, *args, **kwargs):
        data = UserLimitWriteSerializer(
            data=request.data, context={"visible_tenant_ids": self._visible()}
        )
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        tenant = values.pop("tenant")
        self._require_manage(tenant)
        user = _member(tenant, values.pop("user"))
        row = services.set_user_limit(
            tenant=tenant,
            user=user,
            device_models=device_model_names(),
            actor=request.user,
            **values,
        )
        body = UserLimitSerializer(row, context=self.get_serializer_context()).data
        warnings = [f"{line}: the limit acts on new admissions only" for line in body["over_limit"]]
        return Response({**body, "warnings": warnings}, status=status.HTTP_201_CREATED)

    def destroy(self, request, *args, **kwargs):
        row = self.get_object()
        self._require_manage(row.tenant)
        services.delete_user_limit(row, actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class BudgetSerializer(serializers.ModelSerializer):
    tenant = serializers.CharField(source="tenant.name")
    user = serializers.CharField(source="user.username", allow_null=True, default=None)
    spent_percent = serializers.FloatField(read_only=True)
    exhausted = serializers.BooleanField(read_only=True)
    period_start = serializers.SerializerMethodField()
    period_end = serializers.SerializerMethodField()

    class Meta:
        model = Budget
        fields = [
            "id",
            *services.BUDGET_FIELDS,
            "spent",
            "committed",
            "forecast",
            "spent_percent",
            "exhausted",
            "state_at",
            "period_start",
            "period_end",
        ]

    def get_period_start(self, budget: Budget) -> datetime:
        return budget_period(budget, self.context.get("now"))[0]

    def get_period_end(self, budget: Budget) -> datetime:
        return budget_period(budget, self.context.get("now"))[1]


class BudgetWriteSerializer(serializers.Serializer):
    tenant = VisibleTenantField()
    user = serializers.CharField(max_length=150, allow_null=True, default=None)
    name = serializers.SlugField(max_length=63)
    unit = serializers.CharField(max_length=9, default=GPU_HOURS)
    amount = serializers.DecimalField(max_digits=14, decimal_places=2, min_value=0)
    period = serializers.ChoiceField(choices=BudgetPeriod.choices, default=BudgetPeriod.MONTH)
    window_start = serializers.DateTimeField(allow_null=True, default=None)
    window_end = serializers.DateTimeField(allow_null=True, default=None)
    soft_threshold_percent = serializers.IntegerField(min_value=1, max_value=100, default=80)
    hard_action = serializers.ChoiceField(choices=BudgetAction.choices, default=BudgetAction.NOTIFY)


class BudgetUpdateSerializer(serializers.Serializer):
    unit = serializers.CharField(max_length=9)
    amount = serializers.DecimalField(max_digits=14, decimal_places=2, min_value=0)
    period = serializers.ChoiceField(choices=BudgetPeriod.choices)
    window_start = serializers.DateTimeField(allow_null=True)
    window_end = serializers.DateTimeField(allow_null=True)
    soft_threshold_percent = serializers.IntegerField(min_value=1, max_value=100)
    hard_action = serializers.ChoiceField(choices=BudgetAction.choices)


class BudgetViewSet(
    _Scoped,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """GPU-hour or money budgets of a tenant (``user`` null) or of one member, per month or
    window, priced by the device-hour price table; soft notice at
    ``soft_threshold_percent``, ``hard_action`` once spent (``stop``, ``preemptible``,
    ``notify``)."""

    serializer_class = BudgetSerializer

    def get_queryset(self):
        return budgets_of(self._visible())

    @extend_schema(request=BudgetWriteSerializer, responses={201: BudgetSerializer})
    def create(self, request, *args, **kwargs):
        data = BudgetWriteSerializer(
            data=request.data, context={"visible_tenant_ids": self._visible()}
        )
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        tenant = values.pop("tenant")
        self._require_manage(tenant)
        values["user"] = _member(tenant, values["user"])
        budget = services.create_budget(
            tenant=tenant, currencies=price_currencies(), actor=request.user, **values
        )
        return Response(
            BudgetSerializer(budget, context=self.get_serializer_context()).data,
            status=status.HTTP_201_CREATED,
        )

    @extend_schema(request=BudgetUpdateSerializer, responses={200: BudgetSerializer})
    def partial_update(self, request, *args, **kwargs):
        """Change the amount, unit, period, window, threshold or hard action (same checks
        as create; tenant, user and name stay)."""
        budget = self.get_object()
        self._require_manage(budget.tenant)
        data = BudgetUpdateSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        budget = services.update_budget(
            budget, currencies=price_currencies(), actor=request.user, **data.validated_data
        )
        return Response(BudgetSerializer(budget, context=self.get_serializer_context()).data)

    def destroy(self, request, *args, **kwargs):
        budget = self.get_object()
        self._require_manage(budget.tenant)
        services.delete_budget(budget, actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
