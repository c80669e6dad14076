"""Short write batches for telemetry rows that reference scheduling rows (jobs, devices).

Inserting a row with a foreign key makes PostgreSQL take ``FOR KEY SHARE`` on the referenced
row, which conflicts with the ``SELECT … FOR UPDATE`` of jobs and devices by the admission
cycle, cancel and reconcile. The telemetry rollup used to run as one long transaction that
inserted thousands of rows referencing devices and jobs in arbitrary order, held those
key-share locks across the cycle's row locks and deadlocked with it (issue #14).

Every telemetry writer therefore inserts in batches of at most :data:`ROW_BATCH` rows, each
in its own transaction, and a batch never waits for a lock while it holds one: it first takes
the key-share locks of the rows it references (jobs, then devices, then tenants, each in
primary-key order, the documented order of ``scheduling.services.locking``) with
``SKIP LOCKED``, inserts only the rows whose references it holds (their foreign-key checks
then wait for nothing) and commits; rows referencing a job or device that a scheduling
transaction holds ``FOR UPDATE`` at that instant go into the next batch a moment later. A
telemetry batch can thus never be part of a deadlock, whatever order the other writers lock
in. Batches must be idempotent (plain inserts of new rows, or upserts).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from django.db import connection, transaction

from scheduling.models import Device, Job
from tenants.models import Tenant

logger = logging.getLogger(__name__)

__all__ = ["ROW_BATCH", "lock_referenced", "write_in_batches"]

#: Rows per telemetry write transaction.
ROW_BATCH = 1000
#: Pause (s) before the rows whose references were locked by others are tried again.
RETRY_PAUSE_S = 0.05
#: Tries of rows whose references stay locked; then they wait for the locks (in order).
MAX_TRIES = 100

#: ``(row attribute, model)`` of the references, in lock order.
REFERENCES = (("job_id", Job), ("device_id", Device), ("tenant_id", Tenant))


def lock_referenced(refs: dict[str, set[int]], *, skip_locked: bool) -> dict[str, set[int]]:
    """``FOR KEY SHARE`` the referenced rows (inside the caller's transaction): jobs, then
    devices, then tenants, each in pk order. ``refs``: ``{"job_id": {ids}, ...}``. With
    ``skip_locked`` rows another transaction holds ``FOR UPDATE`` are skipped (no wait).
    Returns the ids locked per attribute (missing rows are absent)."""
    got: dict[str, set[int]] = {}
    for attr, model in REFERENCES:
        ids = refs.get(attr)
        if not ids:
            got[attr] = set()
            continue
        table = connection.ops.quote_name(model._meta.db_table)
        skip = " SKIP LOCKED" if skip_locked else ""
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT id FROM {table} WHERE id = ANY(%s::bigint[]) "  # noqa: S608 - names from the models
                f"ORDER BY id FOR KEY SHARE{skip}",
                [sorted(ids)],
            )
            got[attr] = {row[0] for row in cursor.fetchall()}
    return got


def _refs(rows: Sequence[Any]) -> dict[str, set[int]]:
    return {
        attr: {v for r in rows if (v := getattr(r, attr, None)) is not None}
        for attr, _ in REFERENCES
    }


def _write_free(rows: Sequence[Any], write: Callable, *, wait: bool) -> list[Any]:
    """One transaction: lock the references (skipping busy rows unless ``wait``), write the
    rows whose references are held; return the rows left for later."""
    with transaction.atomic():
        got = lock_referenced(_refs(rows), skip_locked=not wait)
        ready: list[Any] = []
        left: list[Any] = []
        for r in rows:
            held = all(
                getattr(r, attr, None) is None or getattr(r, attr) in got[attr]
                for attr, _ in REFERENCES
            )
            (ready if held or wait else left).append(r)
        if ready:
            write(ready)
    return left


def write_in_batches(
    rows: Sequence[Any], write: Callable[[Sequence[Any]], object], *, batch: int = ROW_BATCH
) -> int:
    """Write ``rows`` with ``write(chunk)`` in chunks of ``batch``, each in its own
    transaction that never waits for a lock while holding one (module docstring). Rows whose
    jobs / devices stay locked by others for :data:`MAX_TRIES` pauses are finally written in
    a transaction that waits for their locks in lock order. Returns the number of rows."""
    for offset in range(0, len(rows), batch):
        pending = list(rows[offset : offset + batch])
        tries = 0
        while pending:
            tries += 1
            pending = _write_free(pending, write, wait=tries > MAX_TRIES)
            if pending:
                time.sleep(RETRY_PAUSE_S)
    return len(rows)
