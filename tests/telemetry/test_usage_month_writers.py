"""Two writers of one month's stored usage rows at once (the rollup task, and a usage page
asking for a month never computed): each deletes the committed rows and inserts its own, so
without one writer at a time the second insert hit the first's uncommitted rows and failed
on ``usagemonth_unique_row`` (found by the concurrency test's telemetry writers)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from scheduling.selectors.usage_report import UsageRow
from telemetry.models import UsageMonth
from telemetry.services import usage_months
from tenants.models import Tenant
from tests.waits import lock_waiters, until

pytestmark = pytest.mark.django_db(transaction=True)

MONTH = "2026-11"


def test_a_second_writer_of_a_month_waits_for_the_first_and_replaces_its_rows(monkeypatch):
    Tenant.objects.create(name="a")
    row = UsageRow("a", "NVIDIA-A100", "NVIDIA", 12.5, 100.0, 3, None)
    monkeypatch.setattr(usage_months, "monthly_usage", lambda *_a, **_k: [row])
    first_wrote, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def first() -> None:
        try:
            with transaction.atomic():  # the first writer's rows, not committed yet
                assert usage_months.compute_month(MONTH) == 1
                first_wrote.set()
                release.wait(20)
        finally:
            first_wrote.set()
            connection.close()

    def second() -> None:
        try:
            assert usage_months.compute_month(MONTH) == 1
        except BaseException as exc:  # noqa: BLE001 - asserted below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    threads[0].start()
    assert first_wrote.wait(20)
    threads[1].start()
    until(lambda: lock_waiters() >= 1, "the second writer to wait for the first")
    release.set()
    for thread in threads:
        thread.join(20)
    assert errors == []
    assert list(UsageMonth.objects.values_list("jobs", "gpu_hours")) == [(3, 12.5)]
