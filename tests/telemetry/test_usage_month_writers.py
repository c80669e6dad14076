"""Two writers of one month's stored usage rows at once (the rollup task, and a usage page
asking for a month never computed): each deletes the committed rows and inserts its own, so
without one writer at a time the second insert hit the first's uncommitted rows and failed
on ``usagemonth_unique_row`` (found by the concurrency test's telemetry writers)."""

from __future__ import annotations

import pytest

from scheduling.selectors.usage_report import UsageRow
from telemetry.models import UsageMonth
from telemetry.services import usage_months
from tenants.models import Tenant
from tests.waits import replay_two_writers

pytestmark = pytest.mark.django_db(transaction=True)

MONTH = "2026-11"


def test_a_second_writer_of_a_month_waits_for_the_first_and_replaces_its_rows(monkeypatch):
    Tenant.objects.create(name="a")
    row = UsageRow("a", "NVIDIA-A100", "NVIDIA", 12.5, 100.0, 3, None)
    monkeypatch.setattr(usage_months, "monthly_usage", lambda *_a, **_k: [row])

    def write() -> None:
        assert usage_months.compute_month(MONTH) == 1

    errors = replay_two_writers(write, "the second writer to wait for the first")
    assert errors == []
    assert list(UsageMonth.objects.values_list("jobs", "gpu_hours")) == [(3, 12.5)]
