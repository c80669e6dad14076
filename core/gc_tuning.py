"""CPython garbage-collector settings of the console's long-running processes.

A worker process keeps large, long-lived structures between admission cycles (the cluster
snapshot, the placement mirrors, caches), and every cycle allocates hundreds of thousands of
short-lived objects (rows, workloads, charges). With CPython's default thresholds
(700, 10, 10) those allocations trigger thousands of young collections and dozens of full
ones per cycle, each full one walking every long-lived object: measured on the bench-e2e load
world (500 nodes, 3,500 running jobs, 2-core box), a 500-job admission cycle took 2.0-3.0 s
with the defaults and 0.8-1.2 s with ``(50000, 20, 100)`` (docs/benchmarks.md §2).

:func:`tune_gc` sets ``settings.PYTHON_GC_THRESHOLDS`` (environment ``PYTHON_GC_THRESHOLDS``,
"gen0,gen1,gen2"; gen0 0 turns automatic collection off) and moves every object alive at start
(modules, settings, URL and template caches) to the permanent generation (``gc.freeze``), so
full collections never walk them again. Called once per process after Django is set up: by the
Celery worker processes (``console.celery``, ``worker_process_init``) and by each web process
(``console.wsgi``). Reference counting still frees acyclic garbage at once; only cycles wait.
"""

from __future__ import annotations

import gc

from django.conf import settings

__all__ = ["tune_gc"]


def tune_gc() -> tuple[int, ...]:
    """Apply ``settings.PYTHON_GC_THRESHOLDS`` and freeze the objects alive now.

    Returns:
        The thresholds now in force (``gc.get_threshold()``).
    """
    gc.set_threshold(*settings.PYTHON_GC_THRESHOLDS)
    gc.freeze()
    return gc.get_threshold()
