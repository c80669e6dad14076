"""Domain events: the one way a lower layer says "something a person may want to hear about
happened" without knowing who listens (notifications subscribe; STYLE.md §3, imports point
down).

A service calls :func:`emit` inside its transaction; the event is sent after commit (never
for rows that roll back), as :data:`domain_event` with keyword arguments ``kind``,
``tenant_id``, ``payload`` and ``user_id``. A failing receiver is logged and never breaks the
caller (``on_commit(robust=True)``).

Kinds (:data:`EVENT_KINDS`) and their payloads (plain JSON values; each payload is written
for the tenant named by ``tenant_id`` and never names another tenant or its jobs):

- ``job.preempted``: ``{"job": id, "job_name", "role": "victim" | "preemptor",
  "reason", "outcome", "other": "own tenant" | "another tenant", "message"}``; one event to the
  victim's tenant and one to the preemptor's.
- ``job.failed``: ``{"job", "job_name", "queue", "message"}``.
- ``job.idle``: ``{"job", "job_name", "idle_since", "used_cores_percent",
  "allocated_cores_percent"}``.
- ``capacity.alert``: ``{"resource_group", "flavor", "healthy_devices",
  "guaranteed_devices", "message"}``; ``tenant_id`` None (platform admins).
- ``quota.nearly_exhausted``: ``{"resource_group", "flavor", "dimension", "used",
  "nominal", "used_percent", "threshold_percent"}``.
- ``budget.threshold_crossed``: ``{"budget", "user", "unit", "amount", "spent",
  "used_percent", "threshold_percent", "hard_action", "period_start", "period_end"}``: a
  tenant's (``user`` None) or a member's budget crossed its soft threshold, or was spent
  (``threshold_percent`` 100); once per threshold and period (issue 33).
- ``inventory.bookings_unmatched``: ``{"cluster", "node", "device", "placements",
  "replaced_by", "message"}``: a booked device stopped registering on its node (its
  node takes nothing new until the bookings end or move); ``tenant_id`` None (platform
  admins).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.dispatch import Signal

__all__ = [
    "BUDGET_THRESHOLD_CROSSED",
    "CAPACITY_ALERT",
    "EVENT_KINDS",
    "INVENTORY_BOOKINGS_UNMATCHED",
    "JOB_FAILED",
    "JOB_IDLE",
    "JOB_PREEMPTED",
    "QUOTA_NEARLY_EXHAUSTED",
    "domain_event",
    "emit",
]

JOB_PREEMPTED = "job.preempted"
JOB_FAILED = "job.failed"
JOB_IDLE = "job.idle"
CAPACITY_ALERT = "capacity.alert"
QUOTA_NEARLY_EXHAUSTED = "quota.nearly_exhausted"
INVENTORY_BOOKINGS_UNMATCHED = "inventory.bookings_unmatched"
BUDGET_THRESHOLD_CROSSED = "budget.threshold_crossed"

#: Every kind with a one-line description (forms, API docs).
EVENT_KINDS = {
    JOB_PREEMPTED: "a job was preempted (as victim or preemptor)",
    JOB_FAILED: "a job failed",
    JOB_IDLE: "a running job was flagged idle",
    CAPACITY_ALERT: "healthy capacity fell below the guarantees (platform admins)",
    QUOTA_NEARLY_EXHAUSTED: "a quota's usage crossed the threshold",
    INVENTORY_BOOKINGS_UNMATCHED: "a booked device stopped registering on its node "
    "(platform admins)",
    BUDGET_THRESHOLD_CROSSED: "a budget crossed its soft threshold or was spent",
}

#: Sent after commit; keyword arguments ``kind``, ``tenant_id``, ``payload``, ``user_id``.
domain_event = Signal()


def emit(
    kind: str, *, tenant_id: int | None, payload: dict[str, Any], user_id: int | None = None
) -> None:
    """Send event ``kind`` about tenant ``tenant_id`` (None: platform-wide) once the current
    transaction commits (at once outside one).

    Args:
        kind: one of :data:`EVENT_KINDS`.
        tenant_id: the tenant the payload is written for.
        payload: JSON-serialisable values, safe for that tenant's eyes.
        user_id: the user the event concerns (a job's submitter), for per-user subscriptions.

    Raises:
        ValueError: an unknown kind.
    """
    if kind not in EVENT_KINDS:
        raise ValueError(f"unknown event kind {kind!r} (known: {', '.join(EVENT_KINDS)})")
    event = {"kind": kind, "tenant_id": tenant_id, "payload": dict(payload), "user_id": user_id}
    transaction.on_commit(lambda: domain_event.send(sender=emit, **event), robust=True)
