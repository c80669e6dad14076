"""Trace phase: import the Alibaba trace into the running console (read in place from
``../shared/data``) and let the worker place it; report the import time, the time from the end
of the import until placement stopped, and the GPU allocation ratio the overview shows.

Durations are multiplied by ``time_scale`` (default 1000) so that nothing ends while the trace
is placed (the issue's condition). Placement is "done" when no job changed state for
``settle_s`` seconds (or none is left queued); the time reported is that of the last change.
"""

from __future__ import annotations

import time
from pathlib import Path

from django.db import close_old_connections

from scheduling.choices import JobState
from scheduling.dispatch import ADMISSION_CYCLE_TASK
from scheduling.models import Job
from scheduling.selectors.allocation import capacity_by_group
from scheduling.services.trace_import import import_trace

DATA = (
    Path(__file__).resolve().parent.parent.parent.parent / "shared" / "data" / "alibaba-gpu-v2023"
)


def run_trace(
    pods: str = "openb_pod_list_default.csv",
    *,
    policy: str = "FragGuard",
    time_scale: float = 1000.0,
    settle_s: float = 120.0,
    timeout_s: float = 1800.0,
) -> dict:
    """Import and place one trace through the worker (module docstring)."""
    from console.celery import app

    started = time.monotonic()
    result = import_trace(
        DATA / "openb_node_list_gpu_node.csv",
        DATA / pods,
        cluster_name="openb",
        tenants=4,
        time_scale=time_scale,
        fragmentation_policy=policy,
    )
    imported = time.monotonic()
    app.send_task(ADMISSION_CYCLE_TASK, args=[result.group_id])
    jobs = Job.objects.filter(queue__resource_group_id=result.group_id)
    last_change, last_placed = imported, -1
    progress = []
    while time.monotonic() - imported < timeout_s:
        time.sleep(0.5)
        placed = jobs.exclude(state=JobState.QUEUED).count()
        now = time.monotonic()
        if placed != last_placed:
            last_change, last_placed = now, placed
            progress.append((round(now - imported, 1), placed))
        if placed == result.jobs or now - last_change > settle_s:
            break
    close_old_connections()
    row = next(r for r in capacity_by_group() if r.label == "openb")
    return {
        "pods_file": pods,
        "policy": policy,
        "nodes": result.nodes,
        "gpus": result.devices,
        "jobs": result.jobs,
        "import_s": round(imported - started, 2),
        "placed": last_placed,
        "queued_left": result.jobs - last_placed,
        "place_s_after_import": round(last_change - imported, 2),
        "placed_jobs_per_s": round(last_placed / max(1e-9, last_change - imported), 1),
        "allocation_pct_overview": round(row.allocated_pct, 2),
        "progress_s_placed": progress[:: max(1, len(progress) // 12)],
    }
