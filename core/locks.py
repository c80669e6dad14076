"""Every lock a writer takes, in one place: named PostgreSQL advisory locks (one registry of
keys, as NetBox's ADVISORY_LOCK_KEYS) and the one total order of row locks.

**Advisory locks.** A key is ``(namespace, object id)``; the namespace numbers below are
stable and greppable. :func:`try_xact_lock` lives as long as the transaction,
:func:`try_session_lock` as long as its ``with`` block (work that spans transactions: a
reconcile, an intake pass, a cordon write-back); both are try-locks and never wait.
:func:`xact_lock` waits, so it must be the first lock of its transaction (advisory locks come
before every row lock).

**Row locks.** Deadlock freedom follows from every transaction taking its row locks in the
order of :data:`LOCK_ORDER` (each table's rows in primary-key order, unless its entry says
otherwise) and from no row lock ever conflicting with a foreign-key check:

* Every row lock is taken through :func:`lock_rows`, which asks for ``FOR NO KEY UPDATE OF``
  the queryset's own table. PostgreSQL checks a foreign key by taking ``FOR KEY SHARE`` on the
  referenced row, and Django declares foreign keys ``DEFERRABLE INITIALLY DEFERRED``, so those
  checks run at ``COMMIT``, after every other lock of the transaction: no order written here
  could place them. ``FOR KEY SHARE`` conflicts with ``FOR UPDATE`` but not with ``FOR NO KEY
  UPDATE`` (PostgreSQL manual, "Explicit Locking", table 13.3), so an insert of an event, a
  placement, an audit entry or a usage row never waits on a parent row someone locked.
  ``OF`` keeps a join (``select_related``, a filter through a relation) from locking the
  joined rows (a ``FOR UPDATE`` through a join locked tenant and resource-group rows, which
  deadlocked against those commits: issue #27).
* What still takes ``FOR UPDATE`` strength on a row is a ``DELETE`` of it and an ``UPDATE``
  that changes a column with a unique index (a tenant's name, a device's uuid): those run
  only in operator actions that touch no other locked row, never in a cycle.

A new table gets a row lock only after it has a place in :data:`LOCK_ORDER` with its reason
(``lock_rows`` raises :class:`LockOrderError` otherwise), and ``select_for_update`` is called
nowhere but here (``tests/ci/test_lock_order_rules.py``). With ``LOCK_ORDER_CHECK`` on (the
concurrency test and ``make soak``) :func:`lock_rows` also checks, per transaction, that
no table is locked after a table that comes later in the order.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

from django.conf import settings
from django.db import connection, connections
from django.db.models import Model, QuerySet

ADMISSION_CYCLE = 1001  # one admission cycle per resource group at a time
SIMULATED_RECONCILE = 1002  # one simulated-backend reconcile pass at a time
KUBE_INVENTORY_SYNC = 1003  # one inventory sync per Kubernetes cluster at a time
KUBE_RECONCILE = 1004  # one pod reconcile (watch/resync) per Kubernetes cluster at a time
KUBE_INTAKE = 1005  # one workload intake pass per Kubernetes cluster at a time
KUBE_CORDONS = 1006  # one device-cordon write-back per Kubernetes cluster at a time
USAGE_MONTH = 1007  # one writer of a month's stored usage rows at a time (key: yyyymm)
DEVICE_HEALTH = 1008  # one fold of device health state at a time (key: 0)

LOCK_ORDER: tuple[tuple[str, str], ...] = (
    (
        "scheduling_job",
        "first: every writer that changes a job's state (cycle, cancel, eviction, reconcile, "
        "drain, service scaling) decides on the job, then on what it holds; all of a "
        "transaction's jobs in ONE ascending round (scheduling.services.locking.lock_jobs), "
        "never a second round after it",
    ),
    (
        "scheduling_placement",
        "a job's pods, after their job: cancel, eviction, reconcile and the cycle's "
        "preemption change a job and its placements together; an UPDATE of placements counts "
        "as taking their locks here",
    ),
    (
        "scheduling_node",
        "capacity rows, after the placements that book them: the cycle re-checks node "
        "capacity under lock before inserting bookings; the inventory sync takes a "
        "cluster's nodes",
    ),
    (
        "scheduling_device",
        "after their nodes (a device belongs to a node): the cycle's booking re-check, the "
        "inventory sync, cordons",
    ),
    (
        "scheduling_jobstartestimate",
        "a job's recorded start estimate, after the job and its bookings: the cycle marks "
        "the admitted jobs' rows started (scheduling.services.estimates.record_starts); the "
        "gauges task writes one row per statement, so it never holds two",
    ),
    (
        "tenants_quota",
        "quota edits (an operator's action: nothing scheduling is held); a parent tenant's "
        "row before its children's (check_within_parent), otherwise pk order",
    ),
    (
        "tenants_quotausage",
        "stored usage, last of the scheduling transaction (the cycle's commit, usage "
        "settlement): ordered by (tenant, group, flavor, dimension), "
        "tenants.services.usage.lock_usage_rows",
    ),
    (
        "tenants_membership",
        "membership changes and identity-provider sync: an operator's or the login's own "
        "transaction, no scheduling row held",
    ),
    (
        "tenants_invitation",
        "accepting an invitation creates a membership: locked after nothing else, its "
        "membership row is inserted after it",
    ),
    (
        "tenants_tenantnamespace",
        "a tenant's namespace per cluster, recorded by the submission to a cluster after its "
        "own transaction's job work committed",
    ),
    (
        "telemetry_cyclestats",
        "cycle statistics, in their own transaction after the cycle committed",
    ),
)
"""(table, why it sits here), earliest first. Tables nobody locks are not listed; foreign-key
checks need no entry (they never conflict with :func:`lock_rows`' locks, module docstring)."""

_RANK = {table: position for position, (table, _) in enumerate(LOCK_ORDER)}
M = TypeVar("M", bound=Model)


class LockOrderError(RuntimeError):
    """A row lock outside :data:`LOCK_ORDER`, or (with ``LOCK_ORDER_CHECK``) one taken after
    a lock of a later table in the same transaction."""


def try_xact_lock(namespace: int, key: int) -> bool:
    """Take ``pg_try_advisory_xact_lock(namespace, key)`` in the current transaction.

    Returns:
        True when taken (released at commit/rollback), False when another session holds it.
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", [namespace, key])
        return bool(cursor.fetchone()[0])


def xact_lock(namespace: int, key: int) -> None:
    """Wait for ``pg_advisory_xact_lock(namespace, key)`` (released at commit/rollback); take
    it before any row lock of the transaction, so no waiter holds a row another needs."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [namespace, key])


@contextmanager
def try_session_lock(namespace: int, key: int) -> Iterator[bool]:
    """``pg_try_advisory_lock(namespace, key)`` for the ``with`` block; yields whether it was
    taken (False: another session holds it, the block should return at once). Released on
    leaving the block, also on an exception."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [namespace, key])
        taken = bool(cursor.fetchone()[0])
    try:
        yield taken
    finally:
        if taken:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [namespace, key])


def lock_rows(
    rows: QuerySet[M] | type[M], *, skip_locked: bool = False, nowait: bool = False
) -> QuerySet[M]:
    """``rows`` (a queryset, or a model for all its rows: filter the result) locking its own
    rows ``FOR NO KEY UPDATE`` (lazy, like any queryset: the lock is taken when it is
    evaluated, inside the caller's transaction).

    Args:
        skip_locked: skip rows another transaction holds (``SKIP LOCKED``; never waits, so
            the order check does not apply).
        nowait: fail at once instead of waiting (``NOWAIT``; a probe, also exempt).

    Raises:
        LockOrderError: the table has no place in :data:`LOCK_ORDER`, or ``LOCK_ORDER_CHECK``
            is on and this transaction already locked a later table.
    """
    queryset = rows._default_manager.all() if isinstance(rows, type) else rows
    table = queryset.model._meta.db_table
    if table not in _RANK:
        raise LockOrderError(
            f"row lock on {table}, which has no place in core.locks.LOCK_ORDER: add it there "
            "with the reason for its position"
        )
    if getattr(settings, "LOCK_ORDER_CHECK", False) and not (skip_locked or nowait):
        _check_order(queryset.db, table)
    return queryset.select_for_update(
        no_key=True, of=("self",), skip_locked=skip_locked, nowait=nowait
    )


def _check_order(alias: str, table: str) -> None:
    """Raise LockOrderError when the transaction on ``alias`` locked a later table already.
    The transaction is told apart by PostgreSQL's transaction id (one query, check mode
    only); inside a test's own atomic block, by the savepoint of the caller's block."""
    conn = connections[alias]
    blocks = [
        i for i, b in enumerate(conn.atomic_blocks) if not getattr(b, "_from_testcase", False)
    ]
    if not blocks:
        return  # autocommit: select_for_update refuses to run outside a transaction anyway
    first = blocks[0]
    savepoint = conn.savepoint_ids[first - 1] if first else None
    with conn.cursor() as cursor:
        cursor.execute("SELECT txid_current()")
        txid = cursor.fetchone()[0]
    trail: dict = conn.__dict__.setdefault("_lock_order_trail", {})
    key = (txid, savepoint)
    if trail.get("key") != key:
        trail.clear()
        trail.update(key=key, table=table)
        return
    if _RANK[table] < _RANK[trail["table"]]:
        raise LockOrderError(
            f"{table} locked after {trail['table']} in one transaction: core.locks.LOCK_ORDER "
            f"puts {table} first"
        )
    trail["table"] = table
