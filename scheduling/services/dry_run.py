"""Dry runs: what the admission cycle would do with a new job or with changed quotas.

Nothing is written. Each function builds the resource group's admission snapshot (the same
selector the cycle uses), hands it to the pure core
(:func:`scheduling.admission.preview_submission`,
:func:`scheduling.admission.dry_run_quota_change`) and returns the core's answer; the API
decides what the caller may see of it (tenant isolation).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from django.utils import timezone

from core.exceptions import InvalidRequest
from scheduling.admission import (
    AdmissionInputError,
    Dimension,
    PendingWorkload,
    QuotaChangeImpact,
    SubmissionPreview,
    dry_run_quota_change,
    preview_submission,
)
from scheduling.models import Job, Queue
from scheduling.selectors.admission import (
    SpecJob,
    build_admission_snapshot,
    core_quota,
    queue_key,
    queued_jobs,
)
from scheduling.selectors.snapshot import build_placement_request
from scheduling.services.jobs import JobSpec
from tenants.models import Quota, ResourceGroup

__all__ = ["GroupQuotaImpact", "preview_job", "preview_quota_changes"]


def preview_job(queue: Queue, spec: JobSpec, *, now: datetime | None = None) -> SubmissionPreview:
    """Would a job of ``spec`` in ``queue`` be admitted now, where, and whom would it preempt?

    A full admission cycle of the queue's resource group on a copy: the queued jobs ahead of
    it go first.

    Raises:
        InvalidRequest: the request is malformed for the core (e.g. an impossible shape).
    """
    group = queue.resource_group
    now = now or timezone.now()
    ctx = build_admission_snapshot(group, now, pending=queued_jobs(group))
    workload = PendingWorkload(
        id="dry-run",
        tenant=queue.tenant.name,
        queue=queue_key(queue),
        priority=spec.priority,
        created_at=now,
        pod_count=spec.pod_count,
        min_pod_count=spec.min_pods,
        # SpecJob answers the attributes build_placement_request reads of a Job
        request=build_placement_request(cast(Job, SpecJob(spec)), group),
    )
    try:
        return preview_submission(ctx.snapshot, ctx.placer(), workload)
    except AdmissionInputError as exc:
        raise InvalidRequest(str(exc)) from exc


@dataclass(frozen=True)
class GroupQuotaImpact:
    """The answer for one resource group: the group and the core's impact."""

    group: ResourceGroup
    impact: QuotaChangeImpact


def preview_quota_changes(
    changes: Iterable[Mapping[str, Any]], *, now: datetime | None = None
) -> list[GroupQuotaImpact]:
    """What would these quota changes preempt, per resource group (ordered by group id)?

    Args:
        changes: validated change dicts ``{"tenant": Tenant, "resource_group": ResourceGroup,
            "flavor", "dimension", "nominal", "borrowing_limit", "lending_limit", "remove"}``
            (``remove`` true drops the quota; the limits are then ignored).

    Raises:
        InvalidRequest: a flavor covers no device model of its group (``field="flavor"``), or
            the core rejects the changed quota tree.
    """
    by_group: dict[int, list[Mapping[str, Any]]] = {}
    for change in changes:
        by_group.setdefault(change["resource_group"].pk, []).append(change)
    now = now or timezone.now()
    answer = []
    for group_id, group_changes in sorted(by_group.items()):
        group = ResourceGroup.objects.get(pk=group_id)
        ctx = build_admission_snapshot(
            group, now, extra_flavor_names={c["flavor"] for c in group_changes}
        )
        live = {f.name for f in ctx.snapshot.group.flavors}
        changed, removed = [], []
        for c in group_changes:
            if c["flavor"] not in live:
                raise InvalidRequest(
                    f"flavor {c['flavor']!r} covers no device model of group {group.name}",
                    field="flavor",
                )
            if c["remove"]:
                removed.append((c["tenant"].name, c["flavor"], Dimension(c["dimension"])))
            else:
                changed.append(
                    core_quota(
                        Quota(
                            tenant=c["tenant"],
                            resource_group=group,
                            flavor=c["flavor"],
                            dimension=c["dimension"],
                            nominal=c["nominal"],
                            borrowing_limit=c["borrowing_limit"],
                            lending_limit=c["lending_limit"],
                        ),
                        c["flavor"],
                    )
                )
        try:
            impact = dry_run_quota_change(ctx.snapshot, changed=changed, removed=removed)
        except AdmissionInputError as exc:
            raise InvalidRequest(str(exc)) from exc
        answer.append(GroupQuotaImpact(group, impact))
    return answer
