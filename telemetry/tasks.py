"""Celery tasks of the telemetry app: thin wrappers around one service each (beat-driven)."""

from __future__ import annotations

from celery import shared_task

from telemetry.services.culling import cull_idle_notebooks
from telemetry.services.gauges import compute_group_gauges
from telemetry.services.idle_jobs import flag_idle_jobs
from telemetry.services.rollups import rollup
from telemetry.services.scraping import scrape_all, scrape_target
from telemetry.services.synthetic import synthetic_tick
from telemetry.services.trends import record_trends
from telemetry.services.usage_months import refresh_usage_months


@shared_task(name="telemetry.tasks.scrape_all_task")
def scrape_all_task() -> dict:
    """Scrape every enabled target (failures are recorded per target)."""
    return {str(k): v for k, v in scrape_all().items()}


@shared_task(name="telemetry.tasks.scrape_target_task")
def scrape_target_task(target_id: int) -> str:
    """Scrape one target."""
    return scrape_target(target_id)


@shared_task(name="telemetry.tasks.simulate_task")
def synthetic_task() -> int:
    """Write one tick of synthetic utilisation for the running pods of simulated clusters
    (:func:`telemetry.services.synthetic.synthetic_tick`; the task name is kept for queued
    messages and the beat schedule)."""
    return synthetic_tick()


@shared_task(name="telemetry.tasks.rollup_task")
def rollup_task() -> dict:
    """Roll up samples and apply retention; recompute the usage page's open months."""
    out = rollup()
    out["usage_months"] = refresh_usage_months()
    return out


@shared_task(name="telemetry.tasks.gauges_task")
def gauges_task() -> int:
    """Recompute group gauges (allocation, fragmentation) and capacity alerts, and fold the
    present values into the trend rollups."""
    gauges = len(compute_group_gauges())
    record_trends()
    return gauges


@shared_task(name="telemetry.tasks.idle_check_task")
def idle_check_task() -> int:
    """Flag jobs holding devices idle longer than the threshold; stop notebooks idle for
    their ``idle_cull_s`` (idle culling)."""
    cull_idle_notebooks()
    return len(flag_idle_jobs())
