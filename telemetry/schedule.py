"""Celery beat entries of the telemetry app, merged into ``CELERY_BEAT_SCHEDULE`` by settings.

Imported by the settings module, so it reads the environment only (no Django import). Periods
in seconds (see :mod:`telemetry.conf`); a period of 0 leaves the entry out.
"""

from __future__ import annotations

from core.env import env_int

#: ``(beat entry name, task, period setting, default period in seconds)``.
BEAT_ENTRIES = (
    ("telemetry-scrape", "telemetry.tasks.scrape_all_task", "TELEMETRY_SCRAPE_S", 30),
    ("telemetry-simulate", "telemetry.tasks.simulate_task", "TELEMETRY_SIMULATE_S", 15),
    ("telemetry-rollup", "telemetry.tasks.rollup_task", "TELEMETRY_ROLLUP_S", 60),
    ("telemetry-gauges", "telemetry.tasks.gauges_task", "TELEMETRY_GAUGES_S", 30),
    ("telemetry-idle", "telemetry.tasks.idle_check_task", "TELEMETRY_IDLE_CHECK_S", 300),
)


def beat_schedule() -> dict[str, dict]:
    """The telemetry beat entries, ``{name: {"task": ..., "schedule": seconds, "options":
    {"expires": seconds}}}``."""
    out = {}
    for name, task, variable, default in BEAT_ENTRIES:
        period = env_int(variable, default, minimum=0)
        if period:
            # a run still queued when the next is due is dropped (``expires``): a task slower
            # than its period (the gauges of a large inventory) never piles up in the queue
            out[name] = {
                "task": task,
                "schedule": float(period),
                "options": {"expires": float(period)},
            }
    return out
