"""Who may submit to which queue and read which jobs: the scheduling objects of the tenant
access rules in ``tenants.selectors`` (:func:`~tenants.selectors.submit_tenant_ids`,
:func:`~tenants.selectors.get_visible_tenant_ids`). The REST API, the pages and the dry-run
read them here, so a job or a queue is allowed or refused alike wherever it is asked for.
"""

from __future__ import annotations

from django.db.models import QuerySet

from scheduling.models import DeviceModel, Job, Queue
from scheduling.selectors.snapshot import group_runnable_models
from tenants.models import Membership, Tenant
from tenants.selectors import get_visible_tenant_ids, submit_memberships, submit_tenant_ids


def submit_queues(user) -> QuerySet[Queue]:
    """Queues ``user`` may submit to (every queue for a platform admin): those of
    :func:`~tenants.selectors.submit_tenant_ids`, with tenant and resource group, ordered by
    tenant and queue name (lazy: the rule is a subquery, no query until read)."""
    queues = Queue.objects.select_related("tenant", "resource_group").order_by(
        "tenant__name", "name"
    )
    if not user.is_authenticated:
        return queues.none()
    if user.is_superuser:
        return queues
    return queues.filter(tenant_id__in=submit_memberships(user).values("tenant_id"))


def submit_refusal(user) -> str | None:
    """Why ``user`` may submit to no queue at all (the message of the 403 of the submit page,
    ``POST /api/jobs/``, ``/api/jobs/batch/`` and ``/api/dry-run/``), or None when there is a
    queue they may submit to. The causes, in order: no tenant; a role that only reads (viewer)
    in every tenant; tenants where they may submit that have no queue."""
    if submit_queues(user).exists():
        return None
    tenant_ids = submit_tenant_ids(user)
    if tenant_ids is None:
        return "There is no queue you may submit to: no tenant has a queue yet."
    if not tenant_ids:
        if not Membership.objects.filter(user=user).exists():
            return "There is no queue you may submit to: you are not a member of any tenant."
        return (
            "There is no queue you may submit to: your role in your tenants (viewer) "
            "does not allow submitting jobs."
        )
    names = sorted(Tenant.objects.filter(pk__in=tenant_ids).values_list("name", flat=True))
    return (
        f"There is no queue you may submit to: {', '.join(names)} "
        f"{'has' if len(names) == 1 else 'have'} no queue (a platform admin creates queues)."
    )


def visible_jobs(user) -> QuerySet[Job]:
    """Jobs ``user`` may read: those of :func:`~tenants.selectors.get_visible_tenant_ids`
    (own tenants and, for a tenant admin, the tenants below; every job for a platform
    admin). Another tenant's job is not in it (the interfaces answer 404)."""
    tenant_ids = get_visible_tenant_ids(user)
    jobs = Job.objects.all()
    return jobs if tenant_ids is None else jobs.filter(tenant_id__in=tenant_ids)


def queue_runnable_models(queues) -> dict[int, list[DeviceModel]]:
    """``{queue id: [device model]}``: the models each queue's resource group can run
    (:func:`~scheduling.selectors.snapshot.group_runnable_models`), ordered by vendor and
    name; one query per resource group among ``queues`` (Queue rows with their group)."""
    by_group: dict[int, list[DeviceModel]] = {}
    out: dict[int, list[DeviceModel]] = {}
    for queue in queues:
        group = queue.resource_group
        if group.pk not in by_group:
            by_group[group.pk] = list(group_runnable_models(group).order_by("vendor", "name"))
        out[queue.pk] = by_group[group.pk]
    return out


def visible_queues(user) -> QuerySet[Queue]:
    """Queues ``user`` may read (those of :func:`~tenants.selectors.get_visible_tenant_ids`;
    every queue for a platform admin), with their tenant, ordered by tenant and queue name."""
    tenant_ids = get_visible_tenant_ids(user)
    queues = Queue.objects.select_related("tenant").order_by("tenant__name", "name")
    return queues if tenant_ids is None else queues.filter(tenant_id__in=tenant_ids)
