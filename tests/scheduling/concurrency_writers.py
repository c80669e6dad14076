"""The writers that run beside the admission cycles in ``test_concurrency.py``: every writer
of the console that can run at the same time as a cycle in production, each one call of the
code that runs it there (an API request, a service, a beat task's body).

Each writer is ``fn(rng, ctx, stats)``; ``ctx`` is :class:`WriterContext` (ids made by the
world). A writer that loses a race the console reports as such (``Conflict``: a row someone
else changed or deleted first) counts ``<name>_conflict``; anything else propagates.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.utils import timezone
from rest_framework.test import APIClient

from core.exceptions import Conflict
from notifications.models import Delivery, Subscription
from scheduling.models import Device
from tenants.models import Membership, Tenant


@dataclass
class WriterContext:
    """Ids the writers act on: the tenants, the platform admin, the users whose
    memberships change and the devices an operator may cordon."""

    tenant_ids: list[int]
    admin_id: int
    user_ids: list[int]
    device_ids: list[int]


def make_writer_world(tenants: list[Tenant]) -> WriterContext:
    """A platform admin, three users with memberships, a notification subscription per
    tenant (deliveries to a closed local port), and the first A100 devices to cordon."""
    users = get_user_model().objects
    admin = users.create_superuser("platform-admin", password="pw-admin")
    members = [users.create_user(f"user-{i}", password=f"pw-{i}") for i in range(3)]
    for user, tenant in zip(members, tenants, strict=False):
        Membership.objects.create(user=user, tenant=tenant, role="member")
    for tenant in tenants:
        Subscription.objects.create(
            name=f"{tenant.name}-hook",
            scope="tenant",
            tenant=tenant,
            owner=admin,
            url="http://127.0.0.1:9/none",
        )
    devices = list(
        Device.objects.filter(node__cluster__name="c1").order_by("pk").values_list("pk", flat=True)
    )[:4]
    return WriterContext(
        tenant_ids=[t.pk for t in tenants],
        admin_id=admin.pk,
        user_ids=[u.pk for u in members],
        device_ids=devices,
    )


def edit_tenant(rng: random.Random, ctx: WriterContext, stats: Counter) -> None:
    """A platform admin renames a tenant's display name through the API."""
    client = APIClient()
    client.force_authenticate(get_user_model().objects.get(pk=ctx.admin_id))
    tenant_id = rng.choice(ctx.tenant_ids)
    response = client.patch(
        f"/api/tenants/{tenant_id}/", {"display_name": f"Team {rng.randrange(1000)}"}, format="json"
    )
    assert response.status_code == 200, (response.status_code, response.content[:300])
    stats["tenant_edits"] += 1


def change_membership(rng: random.Random, ctx: WriterContext, stats: Counter) -> None:
    """A platform admin adds, re-roles or removes a user's membership (services)."""
    from tenants import services as tenant_services

    user = get_user_model().objects.get(pk=rng.choice(ctx.user_ids))
    tenant = Tenant.objects.get(pk=rng.choice(ctx.tenant_ids))
    membership = Membership.objects.filter(user=user, tenant=tenant).first()
    try:
        if membership is None:
            tenant_services.add_member(tenant=tenant, user=user, role="member")
        elif rng.random() < 0.5:
            tenant_services.change_member_role(
                membership, role=rng.choice(["member", "viewer", "tenant_admin"])
            )
        else:
            tenant_services.remove_member(membership)
    except (Conflict, Membership.DoesNotExist):
        stats["membership_conflict"] += 1
        return
    stats["membership_changes"] += 1


def telemetry_tick(rng: random.Random, ctx: WriterContext, stats: Counter) -> None:
    """What the telemetry worker's beat runs: simulated samples, rollups and the usage
    months, group gauges and trends, the idle-job check."""
    from telemetry.services.gauges import compute_group_gauges
    from telemetry.services.idle_jobs import flag_idle_jobs
    from telemetry.services.rollups import rollup
    from telemetry.services.synthetic import synthetic_tick
    from telemetry.services.trends import record_trends
    from telemetry.services.usage_months import refresh_usage_months

    synthetic_tick()
    rollup()
    refresh_usage_months()
    compute_group_gauges()
    record_trends()
    flag_idle_jobs()
    stats["telemetry_ticks"] += 1


def usage_and_ledger(rng: random.Random, ctx: WriterContext, stats: Counter) -> None:
    """The usage reconcile task's body: settle and check each group, sync the ledger."""
    from scheduling.tasks import usage_reconcile_task

    usage_reconcile_task.run()
    stats["ledger_syncs"] += 1


def cordon_cycle(rng: random.Random, ctx: WriterContext, stats: Counter) -> None:
    """An operator cordons a device (its jobs keep running or are requeued) or lifts it."""
    from scheduling.services.cordons import cordon_device, uncordon_device

    device = Device.objects.select_related("node__cluster").get(pk=rng.choice(ctx.device_ids))
    if device.cordoned:
        uncordon_device(device)
    else:
        cordon_device(device, reason="soak", policy=rng.choice(["wait", "requeue"]))
    stats["cordons"] += 1


def deliver_notifications(rng: random.Random, ctx: WriterContext, stats: Counter) -> None:
    """The delivery worker tries a few pending notifications (the endpoint refuses)."""
    from notifications.services import attempt_delivery

    for delivery_id in (
        Delivery.objects.filter(delivered_at__isnull=True)
        .order_by("?")
        .values_list("pk", flat=True)[:3]
    ):
        attempt_delivery(delivery_id, now=timezone.now())
        stats["deliveries_tried"] += 1


def time_limits(rng: random.Random, ctx: WriterContext, stats: Counter) -> None:
    """The workloads tick: time limits and replica replacement."""
    from scheduling.tasks import workloads_tick_task

    workloads_tick_task.run()
    stats["workload_ticks"] += 1


WRITERS: tuple[tuple[float, Callable[[random.Random, WriterContext, Counter], None]], ...] = (
    (0.15, edit_tenant),
    (0.2, change_membership),
    (0.15, telemetry_tick),
    (0.15, usage_and_ledger),
    (0.1, cordon_cycle),
    (0.15, deliver_notifications),
    (0.15, time_limits),
)
"""(probability per worker turn, writer)."""


def run_some(rng: random.Random, ctx: WriterContext, stats: Counter) -> None:
    """Each writer of :data:`WRITERS` with its probability, in a random order."""
    for probability, writer in rng.sample(WRITERS, len(WRITERS)):
        if rng.random() < probability:
            writer(rng, ctx, stats)
