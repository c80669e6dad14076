"""ORM -> admission core for the limits below the tenant (issue 33): each user's usage in a
tenant, the per-user limit rows as :class:`~scheduling.admission.UserLimitSpec`, and the
spent budgets as :class:`~scheduling.admission.BudgetGateSpec`.

Usage of a user in a tenant, over every resource group:

* running jobs: the user's jobs of the tenant that are ``admitted`` or ``running``;
* queued jobs: those ``queued``;
* devices: the milli-devices of the booked device shares of their placements (what they
  hold now, charged as admission charges them: the dominant share, 1000 = one
  device-equivalent), in all and per device model.

A member's limits are their own row, else the tenant's default row (user None).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.db import models
from django.db.models import Count
from django.utils import timezone

from scheduling.admission import BudgetAction, BudgetGateSpec, PendingWorkload, UserLimitSpec
from scheduling.admission.charges import milli_share
from scheduling.admission.limits import devices_text
from scheduling.choices import BOOKED_PLACEMENT_STATES, JobState
from scheduling.models import Job, PlacementDevice
from scheduling.selectors.usage_report import month_bounds
from tenants import models as tm
from tenants.choices import BudgetPeriod

__all__ = [
    "UserUsage",
    "budget_gates",
    "budget_in_period",
    "budget_period",
    "over_limits",
    "queued_limit_refusal",
    "budget_label",
    "limit_for",
    "limit_specs",
    "user_limit_specs",
    "user_usage",
]

RUNNING_STATES = (JobState.ADMITTED, JobState.RUNNING)


@dataclass
class UserUsage:
    """What one user holds in one tenant now."""

    running_jobs: int = 0
    queued_jobs: int = 0
    devices_milli: int = 0
    devices_by_model: dict[str, int] = field(default_factory=dict)

    def devices_of(self, model: str) -> int:
        """Milli-devices held of ``model`` ("" = every model)."""
        return self.devices_by_model.get(model, 0) if model else self.devices_milli


def user_usage(tenant_ids: Iterable[int]) -> dict[tuple[int, int], UserUsage]:
    """``{(tenant id, user id): UserUsage}`` of the users with live jobs in the tenants (three
    queries)."""
    ids = sorted(set(tenant_ids))
    out: dict[tuple[int, int], UserUsage] = defaultdict(UserUsage)
    jobs = Job.objects.filter(tenant_id__in=ids, submitted_by__isnull=False)
    counts = (
        jobs.filter(state__in=[*RUNNING_STATES, JobState.QUEUED])
        .values("tenant_id", "submitted_by_id", "state")
        .annotate(n=Count("id"))
        .values_list("tenant_id", "submitted_by_id", "state", "n")
    )
    for tenant_id, user_id, state, n in counts:
        usage = out[(tenant_id, user_id)]
        if state == JobState.QUEUED:
            usage.queued_jobs += n
        else:
            usage.running_jobs += n
    held = PlacementDevice.objects.filter(
        placement__state__in=BOOKED_PLACEMENT_STATES,
        placement__job__tenant_id__in=ids,
        placement__job__submitted_by__isnull=False,
    ).values_list(
        "placement__job__tenant_id",
        "placement__job__submitted_by_id",
        "device__model__name",
        "memory_mib",
        "cores_percent",
        "device__memory_mib",
        "device__cores_percent",
    )
    for tenant_id, user_id, model, mem, cores, dev_mem, dev_cores in held:
        milli = milli_share(mem, cores, dev_mem, dev_cores)  # as admission charges it
        usage = out[(tenant_id, user_id)]
        usage.devices_milli += milli
        usage.devices_by_model[model] = usage.devices_by_model.get(model, 0) + milli
    return dict(out)


def limit_for(
    limits: dict[tuple[int, int | None], tm.UserLimit], tenant_id: int, user_id: int
) -> tm.UserLimit | None:
    """The user's own row in the tenant, else the tenant's default row (user None)."""
    return limits.get((tenant_id, user_id)) or limits.get((tenant_id, None))


def user_limit_specs(
    pending: Iterable[PendingWorkload], jobs: dict[str, Job], flavors_for_model
) -> tuple[UserLimitSpec, ...]:
    """The limits of the submitters of ``pending`` (``jobs``: the pending jobs by workload
    id), with their usage, as the core's specs. ``flavors_for_model(name)``: the group's
    flavors covering a device model (a per-model limit counts the job's charges there)."""
    keys = {
        (job.tenant_id, job.submitted_by_id, job.tenant.name, entry.user)
        for entry in pending
        if entry.user is not None
        and (job := jobs.get(entry.id)) is not None
        and job.submitted_by_id is not None
    }
    return limit_specs(keys, flavors_for_model)


def limit_specs(
    keys: set[tuple[int, int, str, str]], flavors_for_model
) -> tuple[UserLimitSpec, ...]:
    """The core's specs of ``keys`` ``{(tenant id, user id, tenant name, username)}`` that
    have a limit row (their own or the tenant's default), with their usage now."""
    if not keys:
        return ()
    tenant_ids = {k[0] for k in keys}
    limits = {
        (row.tenant_id, row.user_id): row
        for row in tm.UserLimit.objects.filter(tenant_id__in=sorted(tenant_ids))
    }
    if not limits:
        return ()
    usage = user_usage(tenant_ids)
    specs = []
    for tenant_id, user_id, tenant, username in sorted(keys, key=lambda k: (k[2], k[3])):
        row = limit_for(limits, tenant_id, user_id)
        if row is None:
            continue
        used = usage.get((tenant_id, user_id), UserUsage())
        specs.append(
            UserLimitSpec(
                tenant=tenant,
                user=username,
                max_running_jobs=row.max_running_jobs,
                max_devices=row.max_devices_milli,
                flavors=tuple(flavors_for_model(row.device_model)) if row.device_model else None,
                device_model=row.device_model,
                running_jobs=used.running_jobs,
                used_devices=used.devices_of(row.device_model),
            )
        )
    return tuple(specs)


def budget_period(budget: tm.Budget, now: datetime | None = None) -> tuple[datetime, datetime]:
    """``[start, end)`` of the budget's current period: the UTC month containing ``now``
    (default: now), or its window."""
    if budget.period == BudgetPeriod.WINDOW:
        return budget.window_start, budget.window_end
    when = (now or timezone.now()).astimezone(UTC)
    return month_bounds(f"{when.year:04d}-{when.month:02d}")


def budget_in_period(budget: tm.Budget, now: datetime) -> bool:
    """True while ``now`` is inside the budget's period (a monthly budget always; a window
    budget between its start and end)."""
    start, end = budget_period(budget, now)
    return start <= now < end


def over_limits(row: tm.UserLimit, used: UserUsage) -> list[str]:
    """The limits of ``row`` that ``used`` is at or above, as lines like ``"user alice: 9 of
    8 running jobs"`` (a limit lowered below the usage acts on new admissions only)."""
    name = row.user.username if row.user_id else "every member"
    lines = []
    if row.max_running_jobs is not None and used.running_jobs > row.max_running_jobs:
        lines.append(f"user {name}: {used.running_jobs} of {row.max_running_jobs} running jobs")
    if row.max_queued_jobs is not None and used.queued_jobs > row.max_queued_jobs:
        lines.append(f"user {name}: {used.queued_jobs} of {row.max_queued_jobs} queued jobs")
    held = used.devices_of(row.device_model)
    if row.max_devices_milli is not None and held > row.max_devices_milli:
        model = f" {row.device_model}" if row.device_model else ""
        lines.append(
            f"user {name}: {devices_text(held)} of {devices_text(row.max_devices_milli)} "
            f"devices{model}"
        )
    return lines


def budget_label(budget: tm.Budget) -> str:
    """The pending reason of a spent budget, e.g. ``"budget team-a-monthly: 101.5 of 100
    GPU-hours spent (hard action stop)"``."""
    return (
        f"budget {budget.name}: {budget.spent.normalize():f} of {budget.amount.normalize():f} "
        f"{budget.unit} spent (hard action {budget.hard_action})"
    )


def budget_gates(tenant_names: Iterable[str], now) -> tuple[BudgetGateSpec, ...]:
    """The spent budgets of the tenants whose hard action acts on admission (``stop``,
    ``preemptible``), in their period, as the core's gates (state as last measured by
    ``telemetry.services.budgets``)."""
    rows = tm.Budget.objects.filter(
        tenant__name__in=sorted(set(tenant_names)),
        hard_action__in=[BudgetAction.STOP, BudgetAction.PREEMPTIBLE],
    ).select_related("tenant", "user")
    return tuple(
        BudgetGateSpec(
            tenant=b.tenant.name,
            user=b.user.username if b.user_id else None,
            action=BudgetAction(b.hard_action),
            label=budget_label(b),
        )
        for b in rows.order_by("tenant__name", "name")
        if b.exhausted and budget_in_period(b, now)
    )


def queued_limit_refusal(tenant_counts: dict[tm.Tenant, int], user) -> str | None:
    """Why ``user`` may not queue ``tenant_counts`` more jobs ({tenant: new jobs}) under
    their ``max_queued_jobs``, e.g. ``"user alice: 5 of 5 queued jobs in tenant team-a"``;
    None when they may (or ``user`` is None / anonymous)."""
    if user is None or not getattr(user, "pk", None):
        return None
    ids = sorted(t.pk for t in tenant_counts)
    limits = {
        (row.tenant_id, row.user_id): row
        for row in tm.UserLimit.objects.filter(
            tenant_id__in=ids, max_queued_jobs__isnull=False
        ).filter(models.Q(user=user) | models.Q(user__isnull=True))
    }
    if not limits:
        return None
    queued = dict(
        Job.objects.filter(tenant_id__in=ids, submitted_by=user, state=JobState.QUEUED)
        .values("tenant_id")
        .annotate(n=Count("id"))
        .values_list("tenant_id", "n")
    )
    for tenant in sorted(tenant_counts, key=lambda t: t.name):
        row = limit_for(limits, tenant.pk, user.pk)
        if row is None or row.max_queued_jobs is None:
            continue
        have = queued.get(tenant.pk, 0)
        adding = tenant_counts[tenant]
        if have + adding > row.max_queued_jobs:
            more = f", submitting {adding}" if adding > 1 else ""
            return (
                f"user {user.get_username()}: {have} of {row.max_queued_jobs} queued jobs in "
                f"tenant {tenant.name}{more}"
            )
    return None
