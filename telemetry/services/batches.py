"""Short write batches for telemetry rows that reference scheduling rows (jobs, devices).

The telemetry rollup used to run as one long transaction that inserted thousands of rows
referencing devices and jobs, held their foreign-key locks (``FOR KEY SHARE``) across the
cycle's ``FOR UPDATE`` row locks and deadlocked with it (issue #14). Two things keep that
from coming back:

* every scheduling writer locks rows ``FOR NO KEY UPDATE`` (``core.locks.lock_rows``), which
  does not conflict with ``FOR KEY SHARE``: inserting a row that references a locked job or
  device never waits, neither at the insert nor at the deferred foreign-key check at commit;
* every telemetry writer inserts in batches of at most :data:`ROW_BATCH` rows, each in its
  own short transaction, so a long rollup holds nothing across many cycles.

Batches must be idempotent (plain inserts of new rows, or upserts): a failed batch is retried
by the next run of its task.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.db import transaction

__all__ = ["ROW_BATCH", "write_in_batches"]

#: Rows per telemetry write transaction.
ROW_BATCH = 1000


def write_in_batches(
    rows: Sequence[Any], write: Callable[[Sequence[Any]], object], *, batch: int = ROW_BATCH
) -> int:
    """Write ``rows`` with ``write(chunk)`` in chunks of ``batch`` rows, each in its own
    transaction (module docstring). Returns the number of rows."""
    for offset in range(0, len(rows), batch):
        with transaction.atomic():
            write(rows[offset : offset + batch])
    return len(rows)
