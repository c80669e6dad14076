"""Record the first start estimate of each queued job and how it turned out (issue 30).

* :func:`record_start_estimates` (the gauges beat task, after the start ranges are stored):
  the first window of every estimated queued job, when a job first reaches the head of its
  queue, and how many jobs of its group were admitted since while it stayed queued
  (``passed_over``, what widens its window: :func:`scheduling.admission.eta.honest_estimate`).
* :func:`record_starts` (the admission commit): a job's first admission after its window,
  and whether it fell inside (the calibration of
  :func:`scheduling.selectors.calibration.queue_calibration`).

Concurrency: the gauges side writes one row per statement (autocommit), so it holds at most
one row lock and cannot deadlock with the cycle, which updates the admitted jobs' rows in its
transaction after their jobs (``core.locks.LOCK_ORDER``).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import BooleanField, Count, ExpressionWrapper, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce

from scheduling.admission.eta import START_SLACK_S
from scheduling.choices import JobState
from scheduling.models import Job, JobStartEstimate
from scheduling.selectors.job_board import GroupRanges

__all__ = ["record_start_estimates", "record_starts"]


def record_start_estimates(stored: dict[int, GroupRanges], now: datetime) -> int:
    """Record what the gauges task computed (:func:`scheduling.selectors.job_board.
    store_start_ranges`'s answer ``{group id: GroupRanges}``): a first window for every queued
    job with a range and none recorded (never moved afterwards), ``head_since`` for the
    jobs at position 1 of their queue, and ``passed_over`` recounted for the jobs that were at
    the head and have not started since. Returns the number of windows recorded."""
    recorded = 0
    for group_id, group in stored.items():
        recorded += _record_windows(group, now)
        for job_id in group.heads.values():
            JobStartEstimate.objects.filter(
                job_id=job_id, head_since__isnull=True, started_at__isnull=True
            ).update(head_since=now)
        _recount_passed_over(group_id)
    return recorded


def _record_windows(group: GroupRanges, now: datetime) -> int:
    wanted = {
        pk: r for pk, r in group.ranges.items() if r is not None and pk not in group.unbounded
    }
    if not wanted:
        return 0
    known = set(JobStartEstimate.objects.filter(job_id__in=wanted).values_list("job_id", flat=True))
    queues = dict(
        Job.objects.filter(pk__in=set(wanted) - known, state=JobState.QUEUED).values_list(
            "pk", "queue_id"
        )
    )
    rows = [
        JobStartEstimate(
            job_id=pk,
            queue_id=queue_id,
            estimated_at=now,
            earliest=wanted[pk].earliest,
            latest=wanted[pk].latest,
        )
        for pk, queue_id in sorted(queues.items())
    ]
    JobStartEstimate.objects.bulk_create(rows, ignore_conflicts=True)
    return len(rows)


def _recount_passed_over(group_id: int) -> None:
    """``passed_over`` of the group's queued jobs that reached the head: the jobs of the
    group holding devices (admitted or running: the ``(queue, state, ...)`` index, so the
    cost follows the running jobs, not the job history) admitted at or after ``head_since``
    (the job itself excluded), one query, then one UPDATE per row whose count grew. The count
    only grows: a job that passed it and ended between two gauges runs stays counted once
    seen, one that ran shorter than a gauges period is not seen."""
    admitted_since = (
        Job.objects.filter(
            queue__resource_group_id=group_id,
            state__in=(JobState.ADMITTED, JobState.RUNNING),
            admitted_at__gte=OuterRef("head_since"),
        )
        .exclude(pk=OuterRef("job_id"))
        .order_by()
        .values("queue__resource_group_id")
        .annotate(n=Count("pk"))
        .values("n")
    )
    rows = (
        JobStartEstimate.objects.filter(
            queue__resource_group_id=group_id,
            head_since__isnull=False,
            started_at__isnull=True,
            job__state=JobState.QUEUED,
        )
        .annotate(now_passed=Coalesce(Subquery(admitted_since), 0))
        .values_list("pk", "passed_over", "now_passed")
    )
    for pk, before, after in rows:
        if after > before:
            JobStartEstimate.objects.filter(pk=pk).update(passed_over=after)


def record_starts(job_ids: list[int], now: datetime) -> int:
    """The admitted ``job_ids`` started at ``now``: the first start after each one's recorded
    window, and whether it fell inside it (``START_SLACK_S`` either side: the windows are
    recomputed every gauges run). One UPDATE; called by the admission commit after the jobs'
    rows (``core.locks.LOCK_ORDER``). Returns the rows written."""
    if not job_ids:
        return 0
    slack = timedelta(seconds=START_SLACK_S)
    inside = Q(earliest__lte=now + slack, latest__gte=now - slack)
    return JobStartEstimate.objects.filter(job_id__in=job_ids, started_at__isnull=True).update(
        started_at=now,
        inside=ExpressionWrapper(inside, output_field=BooleanField()),
        head_since=None,
    )
