"""The budget notices (issue 33): the soft threshold (80 %) reaches the tenant's webhook once
per period, the spent budget once more; never another tenant's subscription."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from notifications import services
from notifications.choices import DeliveryStatus
from notifications.models import Delivery
from telemetry.services.budgets import refresh_budgets
from tenants import services as tenant_services
from tests.telemetry.dbhelpers import NOW, budget_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def ledger(db):
    return budget_world()


def _hook(user, receiver, tenant):
    return services.create_subscription(
        user=user,
        name=f"{user.username}-budgets",
        scope="tenant",
        tenant=tenant,
        channel="webhook",
        url=receiver.url,
        events=["budget.threshold_crossed"],
    )


def test_soft_threshold_notice_delivered_once_then_the_spent_notice(
    ledger, receiver, eager_tasks, django_capture_on_commit_callbacks
):
    _hook(ledger["ada"], receiver, ledger["a"])
    _hook(ledger["bert"], receiver, ledger["b"])
    # alice spent 72 device-hours by NOW: exactly 80 % of 90
    tenant_services.create_budget(
        tenant=ledger["a"], user=ledger["alice"], name="alice-gpu", amount=90
    )
    for hours in (-1, 0, 1, 2):  # below, crossing, above twice: one notice
        with django_capture_on_commit_callbacks(execute=True):
            refresh_budgets(NOW + timedelta(hours=hours))
    [body] = receiver.bodies()
    assert (body["kind"], body["tenant"]) == ("budget.threshold_crossed", "team-a")
    payload = body["payload"]
    assert (payload["budget"], payload["user"], payload["threshold_percent"]) == (
        "alice-gpu",
        "alice",
        80,
    )
    assert (payload["spent"], payload["used_percent"], payload["hard_action"]) == (
        "72.00",
        80.0,
        "notify",
    )
    assert payload["period_start"] == datetime(2025, 3, 1, tzinfo=UTC).isoformat()
    # spent (90 device-hours 18 h after NOW): one more notice, at 100 %
    for hours in (18, 19):
        with django_capture_on_commit_callbacks(execute=True):
            refresh_budgets(NOW + timedelta(hours=hours))
    assert [b["payload"]["threshold_percent"] for b in receiver.bodies()] == [80, 100]
    assert set(Delivery.objects.values_list("status", flat=True)) == {DeliveryStatus.DELIVERED}
    assert Delivery.objects.count() == 2  # bert's team-b subscription got nothing
