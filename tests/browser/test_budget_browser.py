"""The budget and the per-user limits on the tenant page, in a real browser (issue 33): ada
(team-a's admin) sets alice's limit and a budget through the forms, is told about a budget
in a currency the price table does not use, and sees the measured state; alice reads it."""

import pytest

from telemetry.services.budgets import refresh_budgets
from tenants.models import Budget, UserLimit
from tests.browser.conftest import login
from tests.telemetry.dbhelpers import NOW, budget_world

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_admin_sets_a_budget_and_a_limit_on_the_tenant_page(chromium, live_server):
    budget_world()
    base = live_server.url
    page = login(chromium, base, "ada", "pw-ada")
    page.goto(f"{base}/tenants/team-a/")

    page.select_option("#limit-form select[name=user]", "alice")
    page.fill("#limit-form input[name=max_running_jobs]", "0")
    page.click("#limit-form button[type=submit]")
    page.wait_for_selector("#user-limits .over-limit")
    assert "user alice: 1 of 0 running jobs" in page.inner_text("#user-limits")
    assert "the limit acts on new admissions only" in page.inner_text(".messages")
    assert UserLimit.objects.get().max_running_jobs == 0

    form = "#budget-form"
    page.fill(f"{form} input[name=name]", "alice-eur")
    page.select_option(f"{form} select[name=user]", "alice")
    page.fill(f"{form} input[name=unit]", "EUR")
    page.fill(f"{form} input[name=amount]", "90")
    page.click(f"{form} button[type=submit]")
    page.wait_for_selector(".messages")
    assert "unit: EUR is not the price table's currency (USD)" in page.inner_text(".messages")
    assert not Budget.objects.exists()

    page.fill(f"{form} input[name=name]", "alice-gpu")
    page.select_option(f"{form} select[name=user]", "alice")
    page.fill(f"{form} input[name=unit]", "GPU-hours")
    page.fill(f"{form} input[name=amount]", "90")
    page.select_option(f"{form} select[name=hard_action]", "stop")
    page.click(f"{form} button[type=submit]")
    page.wait_for_selector('tr[data-budget="alice-gpu"]')
    refresh_budgets(NOW)
    page.context.close()

    page = login(chromium, base, "alice", "pw-alice")
    page.goto(f"{base}/tenants/team-a/")
    row = page.inner_text('tr[data-budget="alice-gpu"]')
    assert "72.00 GPU-hours (80.0 %)" in row
    assert "24.00" in row and "576.00" in row  # committed, forecast
    assert "over 80 %" in row and "stop admitting new jobs" in row
    assert page.locator("#budget-form").count() == 0  # a member reads, never writes
    page.context.close()
