"""How well the start estimates held, per queue (issue 30).

A job's recorded window is the first one shown for it
(:class:`scheduling.models.JobStartEstimate`); it counts once it started (its first admission
after the window). The calibration of a queue is the share of those jobs that started inside
their window (``START_SLACK_S`` either side, :func:`scheduling.services.estimates.record_starts`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Count, IntegerField, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from scheduling.models import JobStartEstimate, Queue

__all__ = ["Calibration", "annotate_calibration", "calibration_of", "queue_calibration"]


@dataclass(frozen=True)
class Calibration:
    """``started``: jobs of the queue that started after a recorded window; ``inside``: those
    that started inside it; ``share``: ``inside / started`` (0..1), None before any started."""

    started: int
    inside: int

    @property
    def share(self) -> float | None:
        return self.inside / self.started if self.started else None

    def as_dict(self) -> dict:
        share = self.share
        return {
            "started": self.started,
            "inside": self.inside,
            "share": round(share, 4) if share is not None else None,
        }


def _count(only_inside: bool) -> Coalesce:
    rows = JobStartEstimate.objects.filter(queue_id=OuterRef("pk"), started_at__isnull=False)
    if only_inside:
        rows = rows.filter(inside=True)
    counted = rows.order_by().values("queue_id").annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(counted, output_field=IntegerField()), Value(0))


def annotate_calibration(queues: QuerySet[Queue]) -> QuerySet[Queue]:
    """``queues`` with ``calibration_started`` and ``calibration_inside`` (two correlated
    counts on the ``(queue, started_at)`` index, so a list of queues stays one query)."""
    return queues.annotate(calibration_started=_count(False), calibration_inside=_count(True))


def calibration_of(queue: Queue) -> Calibration:
    """The :class:`Calibration` of a queue read through :func:`annotate_calibration`."""
    return Calibration(queue.calibration_started, queue.calibration_inside)  # type: ignore[attr-defined]


def queue_calibration(queue_ids: Iterable[int]) -> dict[int, Calibration]:
    """``{queue id: Calibration}`` of these queues (one query; a queue without a started job
    has ``started`` 0)."""
    wanted = list(queue_ids)
    rows = (
        JobStartEstimate.objects.filter(queue_id__in=wanted, started_at__isnull=False)
        .values("queue_id")
        .annotate(started=Count("pk"), inside=Count("pk", filter=Q(inside=True)))
        .order_by("queue_id")
    )
    out = {pk: Calibration(0, 0) for pk in wanted}
    out.update({r["queue_id"]: Calibration(r["started"], r["inside"]) for r in rows})
    return out
