"""Notebook idle culling: a running notebook whose devices sat idle (utilisation below
``TELEMETRY_IDLE_THRESHOLD_PERCENT`` cores %, from the 1-minute rollups) for its
``idle_cull_s`` is stopped, freeing its devices (``scheduling.services.job_kinds``).

The rule is JupyterHub's idle culler's, with device utilisation as the activity signal: a
notebook without telemetry for most of the window is never culled
(:func:`telemetry.efficiency.idle_since` needs 80 % of the window's minutes).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from core.exceptions import Conflict
from scheduling.choices import JobKind, JobState
from scheduling.models import Job
from scheduling.services.job_kinds import stop_notebook
from telemetry import conf
from telemetry.efficiency import idle_since
from telemetry.services.idle_jobs import job_minute_use
from telemetry.services.rollups import MINUTE, floor_time

__all__ = ["Culled", "cull_idle_notebooks", "idle_cull_eta"]


@dataclass(frozen=True)
class Culled:
    """A notebook stopped by the culler and the first minute of its idle stretch."""

    job_id: int
    idle_since: datetime


def cull_idle_notebooks(*, now: datetime | None = None) -> list[Culled]:
    """Stop every running notebook idle for its ``idle_cull_s``. Returns what was culled."""
    now = now or timezone.now()
    end = floor_time(now, MINUTE)
    threshold = float(conf.get("TELEMETRY_IDLE_THRESHOLD_PERCENT"))
    notebooks = [
        (n, n.idle_cull_s)
        for n in Job.objects.filter(
            kind=JobKind.NOTEBOOK, state=JobState.RUNNING, idle_cull_s__isnull=False
        )
        if n.idle_cull_s is not None  # the filter's; narrows the type
    ]
    if not notebooks:
        return []
    longest = max(cull_s for _, cull_s in notebooks)
    use = job_minute_use(
        [n.pk for n, _ in notebooks], end - timedelta(seconds=longest) - timedelta(minutes=5), end
    )
    culled = []
    for notebook, cull_s in notebooks:
        window = timedelta(seconds=cull_s)
        since = idle_since(
            use.get(notebook.pk, []), end, threshold_percent=threshold, window=window
        )
        if since is None:
            continue
        try:
            stop_notebook(
                notebook,
                now=now,
                reason=(
                    f"culled: devices idle (< {threshold:g} % cores) since "
                    f"{since:%Y-%m-%d %H:%M} UTC, longer than {cull_s:g} s"
                ),
            )
        except Conflict:
            continue  # stopped or cancelled meanwhile
        culled.append(Culled(notebook.pk, since))
    return culled


def idle_cull_eta(job: Job, *, now: datetime | None = None) -> tuple[datetime | None, float | None]:
    """For a running notebook: the start of its current idle stretch (None when in use or
    without telemetry) and the seconds left before the culler stops it (None when not
    idle)."""
    if job.kind != JobKind.NOTEBOOK or job.state != JobState.RUNNING or not job.idle_cull_s:
        return None, None
    now = now or timezone.now()
    end = floor_time(now, MINUTE)
    threshold = float(conf.get("TELEMETRY_IDLE_THRESHOLD_PERCENT"))
    minutes = job_minute_use(
        [job.pk], end - timedelta(seconds=job.idle_cull_s) - timedelta(minutes=5), end
    ).get(job.pk, [])
    since = idle_since(
        minutes, end, threshold_percent=threshold, window=timedelta(0), min_coverage=0.0
    )
    if since is None:
        return None, None
    left = job.idle_cull_s - (end - since).total_seconds()
    return since, max(0.0, left)
