"""The tenant-row deadlock of issue #27, replayed step by step with two connections.

Django declares foreign keys ``DEFERRABLE INITIALLY DEFERRED``, so PostgreSQL checks them at
``COMMIT`` by taking ``FOR KEY SHARE`` on the referenced row. The interleaving seen in one CI
run in three (``deadlock detected … while locking tuple … in relation "tenants_tenant"``):

1. writer B locks a quota row of tenant ``b`` and inserts a row that references tenant ``a``
   (a quota recreated for ``a``; an event, a usage row: anything with a foreign key);
2. writer A locks the quota rows of ``a`` and ``b`` through a join to their tenants; a plain
   ``SELECT … FOR UPDATE`` over a join locks the joined tenant rows too: tenant ``a`` is now
   held ``FOR UPDATE`` while A waits for B's quota row;
3. B commits: its foreign-key check waits for tenant ``a``, held by A, which waits for B.

``core.locks.lock_rows`` locks ``FOR NO KEY UPDATE OF`` the queryset's own table: no tenant row
is locked, and ``FOR KEY SHARE`` does not conflict with ``FOR NO KEY UPDATE`` anyway, so B
commits and A goes on. The first test runs the old lock and sees PostgreSQL break the
deadlock; the second runs the same steps with ``lock_rows`` and both commit.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from core.locks import lock_rows
from tenants.models import Quota, ResourceGroup, Tenant
from tests.waits import lock_waiters, until

pytestmark = pytest.mark.django_db(transaction=True)

WAIT_S = 20.0


def _world() -> tuple[Tenant, Tenant, ResourceGroup]:
    group = ResourceGroup.objects.create(name="g")
    a, b = Tenant.objects.create(name="a"), Tenant.objects.create(name="b")
    for tenant in (a, b):
        Quota.objects.create(
            tenant=tenant, resource_group=group, flavor="*", dimension="devices", nominal=1000
        )
    return a, b, group


def _replay(lock_quotas_with_tenants) -> dict[str, str]:
    """Run the three steps of the module docstring; returns each writer's outcome
    (``"committed"`` or the error's first line)."""
    a, b, group = _world()
    outcome: dict[str, str] = {}
    b_holds, b_commit = threading.Event(), threading.Event()

    def writer_b() -> None:
        try:
            with transaction.atomic():
                list(lock_rows(Quota).filter(tenant=b))
                Quota.objects.create(
                    tenant=a,
                    resource_group=group,
                    flavor="*",
                    dimension="cores_percent",
                    nominal=100,
                )
                b_holds.set()
                b_commit.wait(WAIT_S)
            outcome["b"] = "committed"
        except Exception as exc:  # noqa: BLE001 - the outcome is the assertion
            outcome["b"] = str(exc).splitlines()[0]
        finally:
            b_holds.set()
            connection.close()

    def writer_a() -> None:
        try:
            with transaction.atomic():
                rows = list(
                    lock_quotas_with_tenants(
                        Quota.objects.filter(tenant__in=[a, b], dimension="devices")
                        .select_related("tenant")
                        .order_by("tenant__name")
                    )
                )
                assert [q.tenant.name for q in rows] == ["a", "b"]
            outcome["a"] = "committed"
        except Exception as exc:  # noqa: BLE001 - the outcome is the assertion
            outcome["a"] = str(exc).splitlines()[0]
        finally:
            connection.close()

    thread_b = threading.Thread(target=writer_b)
    thread_b.start()
    assert b_holds.wait(WAIT_S)
    thread_a = threading.Thread(target=writer_a)
    thread_a.start()
    until(lambda: lock_waiters() >= 1, "writer A to wait for B's quota row", WAIT_S)
    b_commit.set()
    for thread in (thread_a, thread_b):
        thread.join(WAIT_S)
        assert not thread.is_alive()
    return outcome


def test_a_for_update_through_the_tenant_join_deadlocks_with_a_commit():
    """The reproduction: the lock the quota editor used to take (no ``of``, ``FOR UPDATE``)."""
    outcome = _replay(lambda qs: qs.select_for_update())
    assert sorted(outcome) == ["a", "b"]
    assert "deadlock detected" in " ".join(outcome.values()), outcome
    assert "committed" in outcome.values()  # PostgreSQL aborts one of the two


def test_lock_rows_takes_no_tenant_row_so_both_writers_commit():
    outcome = _replay(lock_rows)
    assert outcome == {"a": "committed", "b": "committed"}
    assert Quota.objects.filter(tenant__name="a", dimension="cores_percent").count() == 1
