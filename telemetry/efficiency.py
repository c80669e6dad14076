"""Allocated versus used, and idle detection (pure; no Django).

Used figures come from attributed samples: a pod-scope series (HAMi vGPU monitor) is the pod's
own use; a device-scope series counts as the holder's use only when the device had exactly one
holder (attribution rule 2), so a shared device without pod series adds nothing (it is shown as
"no data" rather than guessed). Device utilisation in percent of the whole device is used cores
in the console's unit (``cores_percent``, 100 = the whole device).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from telemetry.exporters import MEM_USED, POD_MEM_USED, POD_UTIL, UTIL

__all__ = ["UsedSeries", "Efficiency", "job_efficiency", "idle_since"]

USED_MEMORY = (POD_MEM_USED, MEM_USED)  # preferred first
USED_CORES = (POD_UTIL, UTIL)


@dataclass(frozen=True, slots=True)
class UsedSeries:
    """Mean of one metric on one device for one job over a window (from rollups)."""

    device_id: int
    metric: str
    mean: float
    samples: int


@dataclass(frozen=True, slots=True)
class Efficiency:
    """Allocated versus used for one job (or a sum of jobs).

    Attributes:
        allocated_memory_mib, allocated_cores_percent: booked on all devices.
        used_memory_mib, used_cores_percent: mean use summed over devices (None = no data).
        devices_with_data: devices that had a usable series.
    """

    allocated_memory_mib: int
    allocated_cores_percent: int
    used_memory_mib: float | None
    used_cores_percent: float | None
    devices_with_data: int

    @property
    def memory_ratio(self) -> float | None:
        """Used / allocated memory (0..1+), None without data or allocation."""
        if self.used_memory_mib is None or not self.allocated_memory_mib:
            return None
        return self.used_memory_mib / self.allocated_memory_mib

    @property
    def cores_ratio(self) -> float | None:
        """Used / allocated cores (0..1+), None without data or allocation."""
        if self.used_cores_percent is None or not self.allocated_cores_percent:
            return None
        return self.used_cores_percent / self.allocated_cores_percent


def _pick(series: Sequence[UsedSeries], metrics: tuple[str, ...]) -> dict[int, float]:
    chosen: dict[int, float] = {}
    for metric in reversed(metrics):  # preferred metric last, so it overwrites
        for s in series:
            if s.metric == metric and s.samples:
                chosen[s.device_id] = s.mean
    return chosen


def job_efficiency(
    allocated: Iterable[tuple[int, int, int]], series: Sequence[UsedSeries]
) -> Efficiency:
    """Efficiency of one job.

    Args:
        allocated: ``(device_id, memory_mib, cores_percent)`` per booked device.
        series: the job's attributed means per device and metric.
    """
    alloc = list(allocated)
    memory = _pick(series, USED_MEMORY)
    cores = _pick(series, USED_CORES)
    booked = {d for d, _, _ in alloc}
    memory = {d: v for d, v in memory.items() if d in booked}
    cores = {d: v for d, v in cores.items() if d in booked}
    return Efficiency(
        allocated_memory_mib=sum(m for _, m, _ in alloc),
        allocated_cores_percent=sum(c for _, _, c in alloc),
        used_memory_mib=sum(memory.values()) if memory else None,
        used_cores_percent=sum(cores.values()) if cores else None,
        devices_with_data=len(set(memory) | set(cores)),
    )


def idle_since(
    minutes: Sequence[tuple[datetime, float]],
    now: datetime,
    *,
    threshold_percent: float,
    window: timedelta,
    min_coverage: float = 0.8,
) -> datetime | None:
    """Start of the trailing idle stretch when it lasts at least ``window``.

    Args:
        minutes: ``(minute start, used cores percent)`` of one job, any order; the value is
            the job's use summed over its devices for that minute.
        now: evaluation time.
        threshold_percent: a minute is idle below this use.
        window: how long the job must have been idle.
        min_coverage: share of the window's minutes that must have data (a job without
            telemetry is never flagged).

    Returns:
        The first minute of the idle stretch, or None when not idle long enough.
    """
    ordered = sorted(minutes, key=lambda m: m[0], reverse=True)
    start = None
    for minute, used in ordered:
        if used >= threshold_percent:
            break
        start = minute
    if start is None or now - start < window:
        return None
    expected = window.total_seconds() / 60.0
    in_window = sum(
        1 for minute, used in ordered if minute >= now - window and used < threshold_percent
    )
    if in_window < min_coverage * expected:
        return None
    return start
