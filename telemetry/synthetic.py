"""Synthetic utilisation series for the pods of simulated clusters (pure, deterministic; no
Django).

Each placement gets a profile from a hash of its id: ``training`` (steady 70-95 % with a slow
wave and checkpoint dips), ``inference`` (a diurnal-looking wave 15-65 % with bursts) or
``idle`` (a notebook holding its slice: 0-2 %, one in six placements). Memory climbs to a
profile share of what the pod booked in its first minutes and stays. Values are a function of
(placement id, seconds since start), so re-running a tick writes the same numbers.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

from telemetry.exporters import MEM_USED, POWER, TEMP, UTIL

__all__ = ["profile_of", "pod_values", "device_values", "PodLoad"]

PROFILES = ("training", "training", "inference", "inference", "training", "idle")


def _unit(*parts: object) -> float:
    digest = hashlib.blake2b("/".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def profile_of(placement_id: int) -> str:
    """The load profile of a placement."""
    return PROFILES[int(_unit("profile", placement_id) * len(PROFILES))]


@dataclass(frozen=True, slots=True)
class PodLoad:
    """One pod's load on one device at one instant (device-relative percent, MiB)."""

    util_percent: float
    memory_used_mib: float


KIND_PROFILES = {"training": "training", "inference": "inference", "notebook": "notebook"}
"""Job kinds with a fixed profile (batch jobs draw one from :data:`PROFILES`). A notebook is
worked in for its first :data:`NOTEBOOK_ACTIVE_S` seconds, then left idle (so the demo shows
idle culling)."""
NOTEBOOK_ACTIVE_S = 1200


def pod_values(
    placement_id: int,
    booked_memory_mib: int,
    booked_cores_percent: int,
    elapsed_s: float,
    kind: str = "",
) -> PodLoad:
    """The pod's load ``elapsed_s`` seconds after it started (``kind``: the job's kind).

    Utilisation never exceeds what the pod booked (HAMi-core enforces the cores limit) and
    memory never exceeds its booked memory.
    """
    profile = KIND_PROFILES.get(kind) or profile_of(placement_id)
    if profile == "notebook":
        profile = "inference" if elapsed_s < NOTEBOOK_ACTIVE_S else "idle"
    minute = int(elapsed_s // 60)
    noise = _unit("noise", placement_id, int(elapsed_s // 15)) - 0.5
    if profile == "training":
        base = 70 + 25 * _unit("base", placement_id)
        wave = 6 * math.sin(elapsed_s / 600.0 + 6.28 * _unit("phase", placement_id))
        dip = -55 if minute % 30 == 29 else 0  # checkpoint
        util = base + wave + dip + 6 * noise
        mem_share = 0.85 + 0.1 * _unit("mem", placement_id)
    elif profile == "inference":
        wave = 25 * (1 + math.sin(elapsed_s / 900.0 + 6.28 * _unit("phase", placement_id)))
        burst = 20 if _unit("burst", placement_id, minute) > 0.85 else 0
        util = 15 + wave + burst + 10 * noise
        mem_share = 0.55 + 0.2 * _unit("mem", placement_id)
    else:
        util = 1 + 2 * noise
        mem_share = 0.25 + 0.1 * _unit("mem", placement_id)
    ramp = min(1.0, 0.3 + elapsed_s / 180.0)
    cap = float(booked_cores_percent or 100)
    return PodLoad(
        util_percent=round(max(0.0, min(cap, util * cap / 100.0)), 2),
        memory_used_mib=round(booked_memory_mib * mem_share * ramp, 1),
    )


def device_values(loads: list[PodLoad], device_id: int, elapsed_s: float) -> dict[str, float]:
    """Device-scope values from the pods on a device (an idle device included)."""
    util = min(100.0, sum(p.util_percent for p in loads))
    memory = sum(p.memory_used_mib for p in loads) + (300.0 if loads else 0.0)
    jitter = _unit("temp", device_id, int(elapsed_s // 60)) - 0.5
    return {
        UTIL: round(util, 2),
        MEM_USED: round(memory, 1),
        TEMP: round(34 + 0.45 * util + 2 * jitter, 1),
        POWER: round(60 + 3.2 * util + 5 * jitter, 1),
    }
