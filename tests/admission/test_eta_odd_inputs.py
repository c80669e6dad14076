"""Review of issue 30's pure ETA core with odd inputs: a naive time, a zero or non-finite
widening step give a clear AdmissionInputError, never a TypeError / ValueError from deep
inside, a silently shifted answer or a window that does not widen."""

from datetime import UTC, datetime, timedelta

import pytest

from scheduling.admission.eta import StartRange, WaitHistory, estimate_queue_starts, honest_estimate
from scheduling.admission.types import AdmissionInputError

NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
NAIVE = NOW.replace(tzinfo=None)
POINT = StartRange(NOW + timedelta(minutes=5), NOW + timedelta(minutes=5))


def test_a_naive_now_is_refused_with_a_clear_error():
    with pytest.raises(AdmissionInputError, match="timezone-aware"):
        honest_estimate(NAIVE, POINT, WaitHistory(), step_s=60)
    with pytest.raises(AdmissionInputError, match="timezone-aware"):
        estimate_queue_starts(NAIVE, 4, [], [(1, 60.0)])


def test_a_naive_window_or_running_end_is_refused_with_a_clear_error():
    naive_window = StartRange(NAIVE, NAIVE + timedelta(minutes=1))
    with pytest.raises(AdmissionInputError, match="timezone-aware"):
        honest_estimate(NOW, naive_window, WaitHistory(), step_s=60)
    with pytest.raises(AdmissionInputError, match="timezone-aware"):
        honest_estimate(NOW, POINT, WaitHistory(promised=naive_window), step_s=60)
    with pytest.raises(AdmissionInputError, match="timezone-aware"):
        estimate_queue_starts(NOW, 4, [(NAIVE, 1.0)], [(1, 60.0)])


@pytest.mark.parametrize("step_s", [0.0, -1.0, float("inf"), float("nan")])
def test_a_zero_or_non_finite_step_is_refused(step_s):
    # a zero step would leave a point window unwidened however often the job slipped;
    # inf / nan failed inside round() with a ValueError / OverflowError
    with pytest.raises(AdmissionInputError, match="step_s"):
        honest_estimate(NOW, POINT, WaitHistory(passed_over=2), step_s=step_s)
    with pytest.raises(AdmissionInputError, match="step_s"):
        honest_estimate(NOW, POINT, WaitHistory(), step_s=step_s)


def test_a_point_window_widens_by_the_step_per_slip():
    est = honest_estimate(NOW, POINT, WaitHistory(passed_over=2), step_s=60)
    assert est.earliest == POINT.earliest
    assert est.latest == POINT.latest + timedelta(seconds=120)


def test_a_wide_window_passed_over_many_times_does_not_overflow():
    """A job behind year-long jobs (duration_s may be 365 days) in a busy group: a window a
    year wide, passed over 10,000 times by small backfilled jobs, widened past datetime's year
    9999 (OverflowError: the jobs list, job page and API answered 500)."""
    year = StartRange(NOW, NOW + timedelta(days=365))
    est = honest_estimate(NOW, year, WaitHistory(passed_over=10_000), step_s=60)
    assert est.earliest == NOW
    assert est.latest is not None and year.latest < est.latest <= NOW + timedelta(days=36_500)
    assert est.confidence == "low"
