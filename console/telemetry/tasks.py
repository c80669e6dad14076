"""Celery tasks of the telemetry app: thin wrappers around one service each (beat-driven)."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="console.telemetry.tasks.scrape_all_task")
def scrape_all_task() -> dict:
    """Scrape every enabled target (failures are recorded per target)."""
    from console.telemetry.services import scrape_all

    return {str(k): v for k, v in scrape_all().items()}


@shared_task(name="console.telemetry.tasks.scrape_target_task")
def scrape_target_task(target_id: int) -> str:
    """Scrape one target."""
    from console.telemetry.services import scrape_target

    return scrape_target(target_id)


@shared_task(name="console.telemetry.tasks.simulate_task")
def simulate_task() -> int:
    """Write one tick of simulated utilisation for running simulated pods."""
    from console.telemetry.services import simulate_tick

    return simulate_tick()


@shared_task(name="console.telemetry.tasks.rollup_task")
def rollup_task() -> dict:
    """Roll up samples and apply retention."""
    from console.telemetry.services import rollup

    return rollup()


@shared_task(name="console.telemetry.tasks.gauges_task")
def gauges_task() -> int:
    """Recompute group gauges (allocation, fragmentation) and capacity alerts."""
    from console.telemetry.services import compute_group_gauges

    return len(compute_group_gauges())


@shared_task(name="console.telemetry.tasks.idle_check_task")
def idle_check_task() -> int:
    """Flag jobs holding devices idle longer than the threshold."""
    from console.telemetry.services import flag_idle_jobs

    return len(flag_idle_jobs())
