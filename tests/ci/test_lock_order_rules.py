"""The one lock order (``core.locks.LOCK_ORDER``) stays the only way to lock a row:

* no production module calls ``select_for_update`` except ``core/locks.py`` (an AST scan;
  shown failing on a module that adds one);
* ``lock_rows`` refuses a table outside the order, locks ``FOR NO KEY UPDATE OF`` its own
  table only, and with ``LOCK_ORDER_CHECK`` refuses a table locked after a later one in the
  same transaction;
* every table named in the order is a real model table.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from django.apps import apps
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from core.locks import LOCK_ORDER, LockOrderError, lock_rows
from scheduling.models import Device, Job
from tenants.models import Quota, Tenant

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("console", "core", "notifications", "scheduling", "telemetry", "tenants")
ALLOWED = {Path("core/locks.py")}


def row_locks_outside_core(root: Path, packages=PACKAGES) -> list[str]:
    """``path:line`` of every ``.select_for_update`` attribute in ``packages`` under ``root``
    except the allowed module (migrations included: they may not lock rows either)."""
    found = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root)
            if rel in ALLOWED:
                continue
            tree = ast.parse(path.read_text(), filename=str(rel))
            found += [
                f"{rel}:{node.lineno}"
                for node in ast.walk(tree)
                if isinstance(node, ast.Attribute) and node.attr == "select_for_update"
            ]
    return found


def test_no_module_but_core_locks_calls_select_for_update():
    assert row_locks_outside_core(ROOT) == []


def test_the_scan_finds_a_new_select_for_update(tmp_path):
    module = tmp_path / "scheduling" / "services" / "rogue.py"
    module.parent.mkdir(parents=True)
    module.write_text(
        "from tenants.models import Tenant\n\n"
        "def grab(pk):\n"
        "    return Tenant.objects.select_for_update().get(pk=pk)\n"
    )
    assert row_locks_outside_core(tmp_path, ("scheduling",)) == ["scheduling/services/rogue.py:4"]


def test_every_table_in_the_order_is_a_model_table_and_has_a_reason():
    tables = {m._meta.db_table for m in apps.get_models()}
    names = [table for table, _ in LOCK_ORDER]
    assert len(names) == len(set(names))
    assert set(names) <= tables, set(names) - tables
    assert all(len(reason) > 40 for _, reason in LOCK_ORDER)


@pytest.mark.django_db
def test_a_table_outside_the_order_is_refused():
    with pytest.raises(LockOrderError, match="tenants_tenant.*no place in core.locks"):
        lock_rows(Tenant)


@pytest.mark.django_db
def test_lock_rows_locks_its_own_table_for_no_key_update():
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        list(lock_rows(Quota).select_related("tenant").filter(tenant__name="x"))
    sql = queries.captured_queries[-1]["sql"]
    assert sql.endswith('FOR NO KEY UPDATE OF "tenants_quota"'), sql


@pytest.mark.django_db
def test_the_order_check_refuses_a_job_locked_after_a_device(settings):
    settings.LOCK_ORDER_CHECK = True
    with transaction.atomic():
        list(lock_rows(Job).filter(pk=0))
        list(lock_rows(Device).filter(pk=0))  # later in the order: fine
        with pytest.raises(LockOrderError, match="scheduling_job locked after scheduling_device"):
            lock_rows(Job)
        lock_rows(Job, skip_locked=True)  # never waits: exempt
    with transaction.atomic():  # a new transaction starts a new trail
        list(lock_rows(Job).filter(pk=0))
