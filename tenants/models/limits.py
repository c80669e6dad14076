"""Limits below the tenant: per-user limits and budgets (issue 33)."""

from django.conf import settings
from django.db import models

from core.models import BaseModel
from tenants.choices import GPU_HOURS, BudgetAction, BudgetPeriod
from tenants.models.tenancy import Tenant, slug_validator


class UserLimit(BaseModel):
    """Per-user limits inside a tenant (YuniKorn ``limits`` with ``users``:
    ``maxapplications``, ``maxresources``; Slurm ``MaxJobsPerUser`` / ``MaxSubmitJobsPerUser``
    / ``MaxTRESPerUser``), set by the tenant's admin. None = no limit on that resource.

    ``max_running_jobs``: admitted jobs held at once (admission refuses more, pending reason
    ``user alice: 8 of 8 running jobs``). ``max_queued_jobs``: jobs waiting at once
    (submission refuses more with 400). ``max_devices_milli``: milli-devices held at once
    (1000 = one device-equivalent), of ``device_model`` only when set (a per-model limit).
    ``user`` None: the default of every member without a row of their own. A limit below the
    current usage is legal: it acts on new admissions only.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="user_limits")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    max_running_jobs = models.PositiveIntegerField(null=True, blank=True)
    max_queued_jobs = models.PositiveIntegerField(null=True, blank=True)
    max_devices_milli = models.PositiveBigIntegerField(null=True, blank=True)
    device_model = models.CharField(max_length=100, blank=True)

    class Meta:
        ordering = ["tenant__name", "user__username"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "user"], nulls_distinct=False, name="userlimit_unique_tenant_user"
            )
        ]

    def __str__(self) -> str:
        return f"limits of {self.user or 'every member'} in {self.tenant}"


class Budget(BaseModel):
    """A GPU-hour or money budget of a tenant, or of one user in it, per period.

    ``unit``: ``"GPU-hours"`` or a currency code of the price table (``telemetry``'s
    device-hour prices). ``period``: each month (UTC) or the window ``window_start`` to
    ``window_end``. At ``soft_threshold_percent`` of ``amount`` spent, a
    ``budget.threshold_crossed`` event is sent once per period, and once more when ``amount``
    is spent; from then ``hard_action`` applies to new admissions (``stop``,
    ``preemptible``, ``notify``: only the event).

    The state (``spent``, ``committed`` by running jobs, ``forecast`` to the period's end,
    ``state_at``) is written by ``telemetry.services.budgets`` from the usage ledger priced
    by the price table; ``notified_period`` is the start of the period whose notices were
    sent and ``notified_percent`` the highest threshold notified in it (0, the soft
    threshold, 100).
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="budgets")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    name = models.CharField(max_length=63, validators=[slug_validator])
    unit = models.CharField(max_length=9, default=GPU_HOURS)
    amount = models.DecimalField(max_digits=14, decimal_places=2)
    period = models.CharField(max_length=8, choices=BudgetPeriod.choices, default="month")
    window_start = models.DateTimeField(null=True, blank=True)
    window_end = models.DateTimeField(null=True, blank=True)
    soft_threshold_percent = models.PositiveSmallIntegerField(default=80)
    hard_action = models.CharField(max_length=12, choices=BudgetAction.choices, default="notify")
    spent = models.DecimalField(max_digits=18, decimal_places=4, default=0)
    committed = models.DecimalField(max_digits=18, decimal_places=4, default=0)
    forecast = models.DecimalField(max_digits=18, decimal_places=4, default=0)
    state_at = models.DateTimeField(null=True, blank=True)
    notified_period = models.DateTimeField(null=True, blank=True)
    notified_percent = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["tenant__name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "name"], name="budget_unique_tenant_name")
        ]

    def __str__(self) -> str:
        return f"budget {self.name} of {self.tenant}: {self.amount} {self.unit}/{self.period}"

    @property
    def exhausted(self) -> bool:
        """True once ``spent`` reached ``amount`` (the hard action applies)."""
        return self.spent >= self.amount

    @property
    def spent_percent(self) -> float:
        """``spent`` in percent of ``amount`` (0 for an amount of 0 with nothing spent)."""
        if self.amount <= 0:
            return 100.0 if self.spent > 0 else 0.0
        return round(float(100 * self.spent / self.amount), 1)
