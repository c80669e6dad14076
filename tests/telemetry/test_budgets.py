"""Budgets (issue 33): state priced by the price table over the usage source, the API's
validation, and the hard action ``stop`` in the admission cycle."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from scheduling.models import Job
from scheduling.selectors.cycle_gate import needs_cycle
from scheduling.services.cycle import run_admission_cycle
from telemetry.services.budgets import measure_budget, refresh_budgets
from tenants.models import Budget
from tests.api.test_api_directory import as_user
from tests.builders import gpu_job
from tests.telemetry.dbhelpers import NOW, budget_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def ledger(db):
    return budget_world()


def _budget(api, caller, **body):
    return as_user(api, caller).post("/api/budgets/", body, format="json")


def test_state_spent_committed_forecast_in_gpu_hours_and_money(api, ledger):
    made = _budget(api, ledger["ada"], tenant="team-a", user="alice", name="alice-gpu", amount=90)
    assert made.status_code == 201, made.content
    state = measure_budget(Budget.objects.get(name="alice-gpu"), NOW)
    # spent 48 + 24 h; the running job commits its last 24 h; forecast 72 + 21 days x 24 h
    assert state == (Decimal("72"), Decimal("24"), Decimal("576"))
    money = _budget(api, ledger["ada"], tenant="team-a", name="team-usd", unit="USD", amount=500)
    assert money.status_code == 201, money.content
    assert measure_budget(Budget.objects.get(name="team-usd"), NOW) == (
        Decimal("144.00"),
        Decimal("48.00"),
        Decimal("1152.00"),
    )


def test_stop_budget_leaves_the_users_next_job_pending_with_the_budget_named(api, ledger):
    _budget(
        api,
        ledger["ada"],
        tenant="team-a",
        user="alice",
        name="alice-gpu",
        amount=72,
        hard_action="stop",
    )
    refresh_budgets(NOW)
    row = as_user(api, ledger["alice"]).get("/api/budgets/").json()["results"][0]
    assert (row["spent"], row["exhausted"], row["spent_percent"]) == ("72.0000", True, 100.0)
    blocked = gpu_job(ledger["qa"], "a-next", memory_percent=100, cores=100)
    other = gpu_job(ledger["qa"], "al-next", memory_percent=100, cores=100)
    Job.objects.filter(pk=blocked.pk).update(submitted_by=ledger["alice"])
    Job.objects.filter(pk=other.pk).update(submitted_by=ledger["al"])
    run_admission_cycle(ledger["group"].pk)
    blocked.refresh_from_db()
    other.refresh_from_db()
    assert (blocked.state, blocked.pending_reason) == (
        "queued",
        "budget alice-gpu: 72 of 72 GPU-hours spent (hard action stop)",
    )
    assert other.state == "admitted"
    # the dry run tells alice the same, with the budget's state
    body = {
        "queue": ledger["qa"].pk,
        "name": "what-if",
        "cpu_milli": 1000,
        "host_memory_mib": 1024,
        "containers": [{"device_count": 1, "memory_percent": 100, "cores_percent": 100}],
    }
    answer = as_user(api, ledger["alice"]).post("/api/dry-run/", body, format="json").json()
    assert (answer["admitted"], answer["pending"]["code"], answer["pending"]["reason"]) == (
        False,
        "BudgetExhausted",
        "budget alice-gpu: 72 of 72 GPU-hours spent (hard action stop)",
    )
    [budget] = answer["budgets"]
    assert (budget["name"], budget["spent"], budget["exhausted"]) == ("alice-gpu", "72.0000", True)
    assert (
        as_user(api, ledger["al"]).post("/api/dry-run/", body, format="json").json()["budgets"]
        == []
    )


def test_preemptible_budget_admits_a_non_preemptible_job_as_preemptible(api, ledger):
    _budget(
        api,
        ledger["ada"],
        tenant="team-a",
        user="alice",
        name="b",
        amount=72,
        hard_action="preemptible",
    )
    refresh_budgets(NOW)
    job = gpu_job(ledger["qa"], "a-next", memory_percent=100, cores=100)
    Job.objects.filter(pk=job.pk).update(submitted_by=ledger["alice"], preemptible=False)
    run_admission_cycle(ledger["group"].pk)
    job.refresh_from_db()
    assert (job.state, job.preemptible) == ("admitted", True)


def test_a_budget_no_longer_spent_wakes_the_blocked_cycle(api, ledger):
    _budget(
        api, ledger["ada"], tenant="team-a", user="alice", name="b", amount=72, hard_action="stop"
    )
    refresh_budgets(NOW)
    job = gpu_job(ledger["qa"], "a-next", memory_percent=100, cores=100)
    Job.objects.filter(pk=job.pk).update(submitted_by=ledger["alice"])
    group = ledger["group"].pk
    run_admission_cycle(group)  # nothing admitted: the group is marked blocked
    assert needs_cycle(group) is False
    refresh_budgets(NOW)  # still spent: the mark stays
    assert needs_cycle(group) is False
    refresh_budgets(datetime(2025, 4, 1, 1, tzinfo=UTC))  # a new month: 1 of 72 spent
    assert needs_cycle(group) is True
    run_admission_cycle(group)
    job.refresh_from_db()
    assert job.state == "admitted"


def test_budget_state_at_metrics(client, api, ledger, settings):
    settings.METRICS_TOKEN = "scrape-token-0123456789"
    made = _budget(api, ledger["ada"], tenant="team-a", user="alice", name="alice-gpu", amount=90)
    assert made.status_code == 201
    refresh_budgets(NOW)
    text = client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-token-0123456789").content
    labels = 'budget="alice-gpu",tenant="team-a",unit="GPU-hours",user="alice"'
    for line in (
        f"console_budget_amount{{{labels}}} 90.0",
        f"console_budget_spent{{{labels}}} 72.0",
        f"console_budget_committed{{{labels}}} 24.0",
        f"console_budget_forecast{{{labels}}} 576.0",
    ):
        assert line in text.decode()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "eur", "unit": "EUR", "amount": 10}, "unit"),
        ({"name": "neg", "amount": -1}, "amount"),
        ({"name": "zero", "amount": 0}, "amount"),
        ({"name": "stranger", "user": "bert", "amount": 10}, "user"),
        ({"name": "win", "amount": 10, "period": "window"}, "window_end"),
        ({"name": "pct", "amount": 10, "soft_threshold_percent": 0}, "soft_threshold_percent"),
    ],
)
def test_bad_budgets_answer_400_with_the_field(api, ledger, body, field):
    response = _budget(api, ledger["ada"], tenant="team-a", **body)
    assert response.status_code == 400, response.content
    assert list(response.json()["error"]["fields"]) == [field]
    assert not Budget.objects.exists()


def test_overlapping_budgets_of_one_scope_are_refused(api, ledger):
    window = {"period": "window", "window_start": "2025-03-01T00:00:00Z"}
    assert _budget(api, ledger["ada"], tenant="team-a", name="m", amount=10).status_code == 201
    again = _budget(
        api,
        ledger["ada"],
        tenant="team-a",
        name="w",
        amount=5,
        **window,
        window_end="2025-03-05T00:00:00Z",
    )
    assert again.status_code == 400
    assert again.json()["error"]["fields"] == {
        "period": ["budget m already covers tenant team-a over an overlapping period"]
    }
    # another scope (a member's own budget) may overlap the tenant's
    mine = _budget(
        api,
        ledger["ada"],
        tenant="team-a",
        user="al",
        name="al-w",
        amount=5,
        **window,
        window_end="2025-03-05T00:00:00Z",
    )
    assert mine.status_code == 201, mine.content
    later = _budget(
        api,
        ledger["ada"],
        tenant="team-a",
        user="al",
        name="al-w2",
        amount=5,
        period="window",
        window_start="2025-03-04T00:00:00Z",
        window_end="2025-03-09T00:00:00Z",
    )
    assert list(later.json()["error"]["fields"]) == ["period"]


def test_admin_changes_a_budget_with_patch(api, ledger):
    assert _budget(api, ledger["ada"], tenant="team-a", name="m", amount=10).status_code == 201
    budget = Budget.objects.get()
    url = f"/api/budgets/{budget.pk}/"
    changed = as_user(api, ledger["ada"]).patch(
        url, {"amount": "20", "hard_action": "preemptible"}, format="json"
    )
    assert changed.status_code == 200, changed.content
    assert (changed.json()["amount"], changed.json()["hard_action"]) == ("20.00", "preemptible")
    bad = as_user(api, ledger["ada"]).patch(url, {"unit": "EUR"}, format="json")
    assert (bad.status_code, list(bad.json()["error"]["fields"])) == (400, ["unit"])
    denied = as_user(api, ledger["alice"]).patch(url, {"amount": "1"}, format="json")
    assert denied.status_code == 403
    budget.refresh_from_db()
    assert (budget.amount, budget.unit) == (Decimal("20.00"), "GPU-hours")


def test_budgets_are_tenant_isolated(api, ledger):
    assert _budget(api, ledger["ada"], tenant="team-a", name="a-m", amount=10).status_code == 201
    assert _budget(api, ledger["bert"], tenant="team-a", name="x", amount=10).status_code == 404
    assert _budget(api, ledger["alice"], tenant="team-a", name="y", amount=10).status_code == 403
    assert as_user(api, ledger["bert"]).get("/api/budgets/").json()["results"] == []
    budget = Budget.objects.get()
    assert as_user(api, ledger["bert"]).delete(f"/api/budgets/{budget.pk}/").status_code == 404
    assert Budget.objects.count() == 1
