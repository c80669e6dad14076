"""Telemetry settings with defaults; each can be set in Django settings or the environment.

=================================  =======  ================================================
name                               default  meaning
=================================  =======  ================================================
TELEMETRY_SCRAPE_S                 30       beat period of scrapes (s)
TELEMETRY_SIMULATE_S               15       beat period of simulated samples (s; 0 = off)
TELEMETRY_ROLLUP_S                 60       beat period of rollup + pruning (s)
TELEMETRY_GAUGES_S                 30       beat period of group gauges / capacity alerts (s)
TELEMETRY_IDLE_CHECK_S             300      idle-job flags and notebook culling (s)
TELEMETRY_RAW_RETENTION_S          7200     raw samples kept (s)
TELEMETRY_MINUTE_RETENTION_S       172800   1-minute rollups kept (s)
TELEMETRY_HOUR_RETENTION_S         34560000 1-hour rollups kept (s, 400 days)
TELEMETRY_ROLLUP_GRACE_S           120      late samples still folded into closed minutes (s)
TELEMETRY_TEMPERATURE_LIMIT_C      90       default device temperature limit (°C)
TELEMETRY_IDLE_THRESHOLD_PERCENT   5        a job using less (cores %) is idle
TELEMETRY_IDLE_AFTER_S             1800     idle this long → flagged (s)
TELEMETRY_TREND_FINE_RETENTION_S   172800   5-minute trend buckets kept (s; 6 h / 24 h views)
TELEMETRY_TREND_COARSE_RETENTION_S 3024000  1-hour trend buckets kept (s, 35 days; 7 d view)
=================================  =======  ================================================
"""

from __future__ import annotations

from django.conf import settings

from core.env import env_int
from telemetry.schedule import BEAT_ENTRIES

DEFAULTS = {
    # beat periods: one table, read by the settings module too (telemetry.schedule)
    **{variable: default for _name, _task, variable, default in BEAT_ENTRIES},
    "TELEMETRY_RAW_RETENTION_S": 7200,
    "TELEMETRY_MINUTE_RETENTION_S": 172800,
    "TELEMETRY_HOUR_RETENTION_S": 400 * 86400,
    "TELEMETRY_ROLLUP_GRACE_S": 120,
    "TELEMETRY_TEMPERATURE_LIMIT_C": 90,
    "TELEMETRY_IDLE_THRESHOLD_PERCENT": 5,
    "TELEMETRY_IDLE_AFTER_S": 1800,
    "TELEMETRY_TREND_FINE_RETENTION_S": 172800,
    "TELEMETRY_TREND_COARSE_RETENTION_S": 35 * 86400,
}


def get(name: str) -> int:
    """A telemetry setting: Django settings first, then the environment, then the default.

    Raises:
        KeyError: unknown name.
        ImproperlyConfigured: a malformed environment value.
    """
    default = DEFAULTS[name]
    if hasattr(settings, name):
        return int(getattr(settings, name))
    return env_int(name, default, minimum=0)
