"""The start-estimate writes against the cycle's locks (issue 30 review), with two connections.

The cycle holds its jobs ``FOR NO KEY UPDATE`` (``core.locks.lock_rows``) and, in the same
transaction, marks the admitted jobs' ``JobStartEstimate`` rows started
(``record_starts``). The gauges task meanwhile inserts the first window of other jobs of
those rows' group (a foreign key to a job row the cycle holds: ``FOR KEY SHARE`` at the
statement's end, which does not conflict with ``FOR NO KEY UPDATE``) and sets ``head_since``
one row per statement (autocommit). So the gauges side never waits on the cycle for a job it
does not share with it and holds no lock the cycle could wait for: no deadlock. This replays
the interleaving and checks that the gauges' writes finish while the cycle still holds.
"""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from core.locks import lock_rows
from scheduling.admission.eta import StartRange
from scheduling.models import Job, JobStartEstimate
from scheduling.selectors.job_board import GroupRanges
from scheduling.services.estimates import record_start_estimates, record_starts
from tests.builders import gpu_job, two_team_cohort
from tests.waits import until

pytestmark = pytest.mark.django_db(transaction=True)

WAIT_S = 20.0


def test_the_gauges_record_windows_while_the_cycle_holds_the_jobs_and_their_estimates():
    group, (_a, qa), _b = two_team_cohort()
    started, waiting = gpu_job(qa, "started", count=1), gpu_job(qa, "waiting", count=1)
    now = timezone.now()
    JobStartEstimate.objects.create(
        job=started, queue=qa, estimated_at=now, earliest=now, latest=now + timedelta(minutes=1)
    )
    outcome: dict[str, object] = {}
    holds, release = threading.Event(), threading.Event()

    def cycle() -> None:
        try:
            with transaction.atomic():
                list(lock_rows(Job).filter(pk__in=[started.pk, waiting.pk]).order_by("pk"))
                outcome["marked"] = record_starts([started.pk], now)
                holds.set()
                release.wait(WAIT_S)
            outcome["cycle"] = "committed"
        except Exception as exc:  # noqa: BLE001 - the outcome is the assertion
            outcome["cycle"] = str(exc).splitlines()[0]
        finally:
            holds.set()
            connection.close()

    def gauges() -> None:
        try:
            ranges = GroupRanges(
                {waiting.pk: StartRange(now, now + timedelta(minutes=2))},
                60.0,
                frozenset(),
                {qa.pk: waiting.pk},
            )
            outcome["recorded"] = record_start_estimates({group.pk: ranges}, now)
        except Exception as exc:  # noqa: BLE001 - the outcome is the assertion
            outcome["recorded"] = str(exc).splitlines()[0]
        finally:
            connection.close()

    cycle_thread = threading.Thread(target=cycle)
    cycle_thread.start()
    gauges_thread = None
    try:
        assert holds.wait(WAIT_S)
        gauges_thread = threading.Thread(target=gauges)
        gauges_thread.start()
        until(lambda: "recorded" in outcome, "the gauges' writes while the cycle holds", WAIT_S)
        assert "cycle" not in outcome  # the cycle still held its locks meanwhile
    finally:
        release.set()
        for thread in (cycle_thread, gauges_thread):
            if thread is not None:
                thread.join(WAIT_S)
                assert not thread.is_alive()
    assert outcome == {"marked": 1, "recorded": 1, "cycle": "committed"}
    rows = {e.job_id: e for e in JobStartEstimate.objects.all()}
    assert rows[started.pk].started_at == now and rows[started.pk].inside is True
    assert rows[waiting.pk].head_since == now and rows[waiting.pk].started_at is None
