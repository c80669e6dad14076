"""Device health from exporter observations (pure; no Django).

A device is unhealthy while any *current* condition holds:

* the exporter's own health flag is 0 (Ascend ``npu_chip_info_health_status``, Cambricon
  ``mlu_health``);
* its last XID (DCGM ``DCGM_FI_DEV_XID_ERRORS``) is a critical one: every XID except the
  application-caused 13, 31, 43, 45, 68 and 109, which NVIDIA's k8s-device-plugin skips
  (``internal/rm/health.go``);
* its temperature is at or above the limit (°C; per device model ``config.temperature_limit_c``
  or the console default);

or a *sticky* condition was raised and not cleared by an operator: the uncorrectable (double
bit) ECC counter or the exporter's XID counter went up. Events are emitted only on changes (a
condition appears, or the device recovers), so a steady state writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from telemetry.exporters import ECC_DBE, ERROR_CODE, HEALTH, TEMP, XID, XID_COUNT

__all__ = ["NON_CRITICAL_XIDS", "HealthState", "HealthEvent", "evaluate"]

NON_CRITICAL_XIDS = frozenset({13, 31, 43, 45, 68, 109})
STICKY = ("ecc", "xid_count")


@dataclass
class HealthState:
    """What the console remembers of one device between scrapes.

    Attributes:
        healthy: the verdict after the last evaluation.
        reasons: condition kind → message, current and sticky conditions.
        counters: last seen values of the counters (``ecc_dbe_total``, ``xid_count``).
    """

    healthy: bool = True
    reasons: dict[str, str] = field(default_factory=dict)
    counters: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class HealthEvent:
    """A change of a device's health.

    Attributes:
        kind: ``unhealthy_flag``, ``xid``, ``ecc``, ``xid_count``, ``temperature``,
            ``error_code`` (warning only) or ``recovered``.
        severity: ``critical``, ``warning`` or ``info``.
        value: the observed value (0 for ``recovered``).
        message: human-readable detail.
    """

    kind: str
    severity: str
    value: float
    message: str


def evaluate(
    state: HealthState, values: Mapping[str, float], temperature_limit_c: float
) -> tuple[HealthState, list[HealthEvent]]:
    """Fold one scrape's device values into the device's health state.

    Args:
        state: the previous state (not modified).
        values: canonical metric → value for this device (max over series when several).
        temperature_limit_c: the temperature limit in °C.

    Returns:
        ``(new state, events)``; events in a fixed order (conditions by kind name, then
        ``recovered``).
    """
    current: dict[str, tuple[float, str]] = {}
    if HEALTH in values and values[HEALTH] == 0:
        current["unhealthy_flag"] = (0.0, "exporter reports the device unhealthy")
    xid = int(values.get(XID, 0))
    if xid and xid not in NON_CRITICAL_XIDS:
        current["xid"] = (float(xid), f"critical XID {xid}")
    if TEMP in values and values[TEMP] >= temperature_limit_c:
        current["temperature"] = (
            values[TEMP],
            f"temperature {values[TEMP]:g} °C >= limit {temperature_limit_c:g} °C",
        )
    counters = dict(state.counters)
    sticky = {k: v for k, v in state.reasons.items() if k in STICKY}
    for metric, kind, what in (
        (ECC_DBE, "ecc", "uncorrectable ECC errors"),
        (XID_COUNT, "xid_count", "XID errors"),
    ):
        if metric not in values:
            continue
        now = values[metric]
        before = counters.get(metric)
        counters[metric] = now
        if before is not None and now > before:
            current[kind] = (now, f"{what} rose from {before:g} to {now:g}")
    events: list[HealthEvent] = []
    for kind in sorted(current):
        value, message = current[kind]
        if kind not in state.reasons or (kind in STICKY):
            events.append(HealthEvent(kind, "critical", value, message))
    code = int(values.get(ERROR_CODE, 0))
    if code and "error_code" not in state.reasons:
        events.append(HealthEvent("error_code", "warning", float(code), f"error code {code}"))
    reasons = {**sticky, **{k: m for k, (_, m) in current.items()}}
    if code:
        reasons["error_code"] = f"error code {code}"
    healthy = not any(k != "error_code" for k in reasons)
    if healthy and not state.healthy:
        events.append(HealthEvent("recovered", "info", 0.0, "no unhealthy condition remains"))
    return HealthState(healthy=healthy, reasons=reasons, counters=counters), events


def clear_sticky(state: HealthState) -> HealthState:
    """The state after an operator cleared sticky conditions (ECC / XID counter rises)."""
    reasons = {k: v for k, v in state.reasons.items() if k not in STICKY}
    return HealthState(
        healthy=not any(k != "error_code" for k in reasons),
        reasons=reasons,
        counters=dict(state.counters),
    )
