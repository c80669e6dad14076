"""The start estimate a user is told (issue 30, pure core): a window with a confidence that
widens when the job is passed over or preempted, "overdue" instead of a window sliding with
the clock, "unknown" with its reason when no window can be given."""

from datetime import UTC, datetime, timedelta

import pytest

from scheduling.admission.eta import (
    Confidence,
    EstimateState,
    StartRange,
    UnknownReason,
    WaitHistory,
    confidence_of,
    honest_estimate,
    quota_unbounded,
)
from scheduling.admission.types import AdmissionInputError

NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
MIN = timedelta(minutes=1)


def window(start_min: float, end_min: float) -> StartRange:
    return StartRange(NOW + start_min * MIN, NOW + end_min * MIN)


def test_a_job_never_passed_over_keeps_its_window_with_high_confidence():
    est = honest_estimate(NOW, window(5, 12), WaitHistory(), step_s=600)
    assert (est.state, est.earliest, est.latest) == (
        EstimateState.ESTIMATED,
        NOW + 5 * MIN,
        NOW + 12 * MIN,
    )
    assert (est.confidence, est.slips, est.reason, est.overdue_s) == (
        Confidence.HIGH,
        0,
        None,
        None,
    )


def test_a_head_job_preempted_twice_is_not_told_now():
    # the issue: position 1, range "now", preempted twice. Each preemption widens the window
    # by one step: the span (0 here) or the group's mean run time (10 min), whichever is more
    est = honest_estimate(NOW, window(0, 0), WaitHistory(preemptions=2), step_s=600)
    assert (est.earliest, est.latest) == (NOW, NOW + 20 * MIN)
    assert (est.state, est.confidence, est.slips) == (EstimateState.ESTIMATED, Confidence.MEDIUM, 2)


def test_each_pass_over_widens_by_the_window_span_when_it_is_longer_than_the_step():
    history = WaitHistory(passed_over=2, preemptions=1)
    est = honest_estimate(NOW, window(10, 40), history, step_s=60)
    # span 30 min > step 1 min: three slips add 90 min to latest; earliest stays
    assert (est.earliest, est.latest) == (NOW + 10 * MIN, NOW + 130 * MIN)
    assert (est.confidence, est.slips) == (Confidence.LOW, 3)


def test_confidence_steps():
    assert [confidence_of(n, False) for n in range(5)] == [
        Confidence.HIGH,
        Confidence.MEDIUM,
        Confidence.MEDIUM,
        Confidence.LOW,
        Confidence.LOW,
    ]
    assert confidence_of(0, True) == Confidence.LOW


def test_the_window_does_not_slide_with_the_clock_once_the_first_one_passed():
    # the issue: every recomputation says "now - in 7 minutes" while the job keeps waiting.
    # The first window shown was [now, now + 7 min]; 10 minutes later it is overdue by 3 min
    promised = window(0, 7)
    later = NOW + 10 * MIN
    recomputed = StartRange(later, later + 7 * MIN)
    est = honest_estimate(later, recomputed, WaitHistory(promised=promised), step_s=60)
    assert est.state == EstimateState.OVERDUE
    assert (est.overdue_s, est.overdue_since) == (180.0, NOW + 7 * MIN)
    # widened by the miss: latest is 3 min further than the recomputed one; low confidence
    assert (est.earliest, est.latest) == (later, later + 10 * MIN)
    assert est.confidence == Confidence.LOW
    # before the first window ended it is an ordinary window
    at_five = NOW + 5 * MIN
    early = honest_estimate(
        at_five, StartRange(at_five, at_five), WaitHistory(promised=promised), step_s=60
    )
    assert (early.state, early.confidence, early.latest) == (
        EstimateState.ESTIMATED,
        Confidence.HIGH,
        at_five,
    )


def test_a_requeued_job_that_started_since_its_first_window_is_not_overdue_on_it():
    history = WaitHistory(preemptions=1, promised=window(-60, -50), started_before=True)
    est = honest_estimate(NOW, window(0, 5), history, step_s=60)
    assert (est.state, est.overdue_s, est.confidence) == (
        EstimateState.ESTIMATED,
        None,
        Confidence.MEDIUM,
    )
    assert est.latest == NOW + 10 * MIN  # one slip of the 5-minute span


def test_a_stored_window_already_begun_starts_now():
    est = honest_estimate(NOW, window(-2, 3), WaitHistory(), step_s=60)
    assert (est.earliest, est.latest) == (NOW, NOW + 3 * MIN)


def test_unknown_states_carry_their_reason_and_no_window():
    too_big = honest_estimate(NOW, None, WaitHistory(preemptions=1), step_s=60)
    assert (too_big.state, too_big.reason, too_big.earliest, too_big.confidence) == (
        EstimateState.UNKNOWN,
        UnknownReason.EXCEEDS_GROUP,
        None,
        None,
    )
    assert too_big.words == "unknown: asks more than its group has"
    quota = honest_estimate(
        NOW, window(0, 5), WaitHistory(), step_s=60, unknown=UnknownReason.WAITS_FOR_QUOTA
    )
    assert (quota.state, quota.words, quota.latest) == (
        EstimateState.UNKNOWN,
        "unknown: waits for quota",
        None,
    )
    assert honest_estimate(NOW, window(0, 5), WaitHistory(), step_s=60).words == ""


def test_quota_unbounded_only_when_nothing_frees_the_tenants_quota():
    blocked = {"kind": "quota", "needed": 2.0, "free": 0.0, "borrowable": 0.0}
    assert quota_unbounded(blocked, tenant_holds_devices=False)
    # a running job of its tenant gives the quota back when it ends: bounded
    assert not quota_unbounded(blocked, tenant_holds_devices=True)
    assert not quota_unbounded({**blocked, "borrowable": 1.0}, tenant_holds_devices=False)
    assert not quota_unbounded({**blocked, "free": 0.5}, tenant_holds_devices=False)
    assert not quota_unbounded({**blocked, "kind": "capacity"}, tenant_holds_devices=False)
    assert not quota_unbounded(None, tenant_holds_devices=False)


def test_a_negative_step_is_refused():
    with pytest.raises(AdmissionInputError):
        honest_estimate(NOW, window(0, 1), WaitHistory(), step_s=-1)
