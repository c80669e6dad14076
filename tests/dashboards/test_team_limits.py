"""The tenant page's per-user limits and budgets (issue 33): shown to the tenant's members,
set by its admin through the forms, bad input told in a message (never a 500), hidden from
other tenants."""

from __future__ import annotations

import pytest
from django.contrib.messages import get_messages

from telemetry.services.budgets import refresh_budgets
from tenants.models import Budget, UserLimit
from tests.telemetry.dbhelpers import NOW, budget_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def ledger(db):
    return budget_world()


def _post(client, caller, **data):
    client.force_login(caller)
    return client.post("/tenants/team-a/limits/", data, follow=True)


def _messages(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def test_admin_sets_limits_and_a_budget_members_see_them(client, ledger):
    response = _post(
        client, ledger["ada"], action="limit", user="alice", max_running_jobs="0", max_devices="1.5"
    )
    assert response.status_code == 200
    row = UserLimit.objects.get()
    assert (row.user, row.max_running_jobs, row.max_devices_milli) == (ledger["alice"], 0, 1500)
    # alice runs one job: over the new limit of 0, accepted with a warning
    assert "user alice: 1 of 0 running jobs: the limit acts on new admissions only." in (
        _messages(response)
    )
    _post(
        client,
        ledger["ada"],
        action="budget",
        name="alice-gpu",
        user="alice",
        unit="GPU-hours",
        amount="90",
        period="month",
        soft_threshold_percent="80",
        hard_action="stop",
    )
    refresh_budgets(NOW)
    client.force_login(ledger["al"])
    page = client.get("/tenants/team-a/").content.decode()
    assert 'id="user-limits"' in page and "over limit" in page
    assert "user alice: 1 of 0 running jobs" in page
    assert 'data-budget="alice-gpu"' in page and "72.00 GPU-hours (80.0 %)" in page
    assert 'id="limit-form"' not in page and 'id="budget-form"' not in page  # members read
    usage = client.get("/usage/").content.decode()
    assert 'id="usage-budgets"' in usage and "alice-gpu" in usage
    client.force_login(ledger["bert"])
    assert "alice-gpu" not in client.get("/usage/").content.decode()


def test_bad_input_is_a_message_not_a_500(client, ledger):
    cases = [
        ({"action": "limit", "user": "bert", "max_running_jobs": "1"}, "user"),
        ({"action": "limit", "user": "alice", "max_running_jobs": "-1"}, "max_running_jobs"),
        (
            {
                "action": "budget",
                "name": "e",
                "unit": "EUR",
                "amount": "5",
                "period": "month",
                "soft_threshold_percent": "80",
                "hard_action": "stop",
            },
            "unit",
        ),
        ({"action": "delete-budget", "pk": "abc"}, "pk"),
    ]
    for data, field in cases:
        response = _post(client, ledger["ada"], **data)
        assert response.status_code == 200
        assert any(m.startswith(f"{field}: ") for m in _messages(response)), _messages(response)
    assert not UserLimit.objects.exists() and not Budget.objects.exists()


def test_other_tenants_never_see_or_change_the_limits(client, ledger):
    _post(client, ledger["ada"], action="limit", user="alice", max_running_jobs="3")
    assert _post(client, ledger["bert"], action="limit", user="alice").status_code == 404
    assert _post(client, ledger["alice"], action="limit", user="al").status_code == 403
    client.force_login(ledger["bert"])
    assert client.get("/tenants/team-a/").status_code == 404
    page = client.get("/tenants/team-b/").content.decode()
    assert "alice" not in page
    assert UserLimit.objects.get().max_running_jobs == 3
