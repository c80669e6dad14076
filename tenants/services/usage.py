"""Stored quota usage (``QuotaUsage``): deltas under ordered row locks at each admission
commit, the ``quota.nearly_exhausted`` event when usage crosses the alert line, and the drift
repair that overwrites a group's rows."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from django.conf import settings
from django.db import transaction
from django.db.models import F

from core.events import QUOTA_NEARLY_EXHAUSTED, emit
from core.locks import lock_rows
from tenants.models import Quota, QuotaUsage

UsageKey = tuple[int, int, str, str]
"""``(tenant id, resource group id, flavor, dimension)``."""


def lock_usage_rows(keys: Iterable[UsageKey]) -> dict[UsageKey, QuotaUsage]:
    """Create missing ``QuotaUsage`` rows, then lock every row of ``keys`` with
    ``SELECT ... FOR UPDATE`` in (tenant, group, flavor, dimension) order, so concurrent
    writers always lock in the same order (Saleor ``lock_objects``) and cannot deadlock.

    Must run inside a transaction.
    """
    keys = sorted(set(keys))
    if not keys:
        return {}
    QuotaUsage.objects.bulk_create(
        [
            QuotaUsage(tenant_id=t, resource_group_id=g, flavor=f, dimension=d)
            for t, g, f, d in keys
        ],
        ignore_conflicts=True,
    )
    wanted = set(keys)
    rows = {}
    tenant_ids = sorted({k[0] for k in keys})
    group_ids = sorted({k[1] for k in keys})
    for row in (
        lock_rows(QuotaUsage)
        .filter(tenant_id__in=tenant_ids, resource_group_id__in=group_ids)
        .order_by("tenant_id", "resource_group_id", "flavor", "dimension")
    ):
        key = (row.tenant_id, row.resource_group_id, row.flavor, row.dimension)
        if key in wanted:
            rows[key] = row
    return rows


def apply_usage_deltas(deltas: Mapping[UsageKey, int]) -> None:
    """Add ``deltas`` to the stored usage under ordered row locks (see
    :func:`lock_usage_rows`); zero deltas are skipped. Runs in the caller's transaction
    (the admission commit), so usage changes commit or roll back with the placements."""
    deltas = {k: v for k, v in deltas.items() if v}
    if not deltas:
        return
    with transaction.atomic():
        rows = lock_usage_rows(deltas)
        for key in sorted(deltas):
            QuotaUsage.objects.filter(pk=rows[key].pk).update(amount=F("amount") + deltas[key])
        _announce_quota_crossings(
            {
                key: (rows[key].amount, rows[key].amount + deltas[key])
                for key in deltas
                if deltas[key] > 0
            }
        )


def _announce_quota_crossings(changes: Mapping[UsageKey, tuple[int, int]]) -> None:
    """Emit ``quota.nearly_exhausted`` for each quota whose usage went from below to at or
    above ``QUOTA_ALERT_THRESHOLD_PERCENT`` % of its nominal quota (``changes``: key ->
    (amount before, amount after)); once per crossing, so a tenant hovering above the line
    is not told again until it dropped below."""
    if not changes:
        return
    threshold = settings.QUOTA_ALERT_THRESHOLD_PERCENT
    tenants = {key[0] for key in changes}
    groups = {key[1] for key in changes}
    quotas = {
        (q.tenant_id, q.resource_group_id, q.flavor, q.dimension): q
        for q in Quota.objects.filter(
            tenant_id__in=tenants, resource_group_id__in=groups
        ).select_related("resource_group")
    }
    for key, (before, after) in sorted(changes.items()):
        quota = quotas.get(key)
        if quota is None or quota.nominal <= 0:
            continue
        line = quota.nominal * threshold / 100
        if before < line <= after:
            emit(
                QUOTA_NEARLY_EXHAUSTED,
                tenant_id=key[0],
                payload={
                    "resource_group": quota.resource_group.name,
                    "flavor": quota.flavor,
                    "dimension": quota.dimension,
                    "used": after,
                    "nominal": quota.nominal,
                    "used_percent": round(100 * after / quota.nominal, 1),
                    "threshold_percent": threshold,
                },
            )


def replace_usage(group_id: int, amounts: Mapping[tuple[int, str, str], int]) -> int:
    """Overwrite a group's stored usage with ``{(tenant id, flavor, dimension): amount}``
    (rows not named become 0), under ordered row locks. Used only to repair drift.

    Returns:
        Number of rows whose amount changed.
    """
    with transaction.atomic():
        existing = QuotaUsage.objects.filter(resource_group_id=group_id).values_list(
            "tenant_id", "flavor", "dimension"
        )
        keys = {(t, group_id, f, d) for t, f, d in existing}
        keys |= {(t, group_id, f, d) for t, f, d in amounts}
        rows = lock_usage_rows(keys)
        changed = 0
        for key in sorted(rows):
            want = amounts.get((key[0], key[2], key[3]), 0)
            if rows[key].amount != want:
                QuotaUsage.objects.filter(pk=rows[key].pk).update(amount=want)
                changed += 1
    return changed
