"""The usage ledger: one interval per placement and device share, opened when the share is
booked and closed when the placement ends (what accounting and the usage reports read)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from django.db.models import F

from tenants.models import LedgerInterval


@dataclass(frozen=True)
class LedgerEntry:
    """One device share held by a job's pod, to be written as an open ledger interval."""

    tenant_id: int
    resource_group_id: int | None
    job_id: int
    placement_id: int
    device_uuid: str
    device_model: str
    flavor: str
    devices_milli: int
    memory_mib: int
    cores_percent: int
    start: datetime
    end: datetime | None = None


def open_ledger_intervals(entries: Iterable[LedgerEntry]) -> int:
    """Insert intervals (idempotent: one per placement and device; an existing one is kept
    unchanged). An entry with ``end`` set is inserted already closed.

    Returns:
        Number of entries given (inserts that already existed are ignored).
    """
    rows = [LedgerInterval(**e.__dict__) for e in entries]
    LedgerInterval.objects.bulk_create(rows, ignore_conflicts=True)
    return len(rows)


def close_ledger_intervals(placement_ends: Mapping[int, datetime]) -> int:
    """Close the open intervals of the given placements at their end time (conditional
    UPDATE on ``end IS NULL``: a closed interval is never changed again).

    Returns:
        Number of intervals closed.
    """
    closed = 0
    for placement_id, end in sorted(placement_ends.items()):
        closed += LedgerInterval.objects.filter(
            placement_id=placement_id, end__isnull=True, start__lte=end
        ).update(end=end)
        # an end before the recorded start (clock skew between writers) closes at start
        closed += LedgerInterval.objects.filter(placement_id=placement_id, end__isnull=True).update(
            end=F("start")
        )
    return closed
