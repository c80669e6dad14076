"""Server-side SVG line charts (pure; no Django): points → polyline coordinates."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

__all__ = ["LineChart", "line_chart"]


@dataclass(frozen=True)
class LineChart:
    """What ``templates/telemetry/_line_chart.html`` draws.

    Attributes:
        width, height: SVG size in px.
        points: ``"x,y x,y ..."`` for the mean line ("" without data).
        band: polygon points of the min..max band ("" without data).
        y_max: value at the top edge; ``y_max_label`` formatted with ``unit``.
        start, end: first and last bucket times (None without data).
        last: latest mean (None without data).
    """

    width: int
    height: int
    points: str
    band: str
    y_max: float
    y_max_label: str
    unit: str
    start: datetime | None
    end: datetime | None
    last: float | None
    title: str = ""


def line_chart(
    points: Sequence,
    *,
    title: str = "",
    unit: str = "",
    y_max: float | None = None,
    width: int = 320,
    height: int = 80,
) -> LineChart:
    """Scale ``points`` (objects with ``time``, ``mean``, ``minimum``, ``maximum``) to an SVG.

    Args:
        y_max: top of the axis (default: the largest maximum, at least 1).
    """
    if not points:
        return LineChart(width, height, "", "", y_max or 0.0, "", unit, None, None, None, title)
    top = y_max if y_max is not None else max(1.0, max(p.maximum for p in points))
    t0 = points[0].time.timestamp()
    span = max(1.0, points[-1].time.timestamp() - t0)

    def xy(p, value):
        x = (p.time.timestamp() - t0) / span * (width - 2) + 1
        y = height - 1 - min(1.0, max(0.0, value / top)) * (height - 2)
        return f"{x:.1f},{y:.1f}"

    line = " ".join(xy(p, p.mean) for p in points)
    band = " ".join(
        [xy(p, p.maximum) for p in points] + [xy(p, p.minimum) for p in reversed(points)]
    )
    return LineChart(
        width,
        height,
        line,
        band,
        top,
        f"{top:g}{unit}",
        unit,
        points[0].time,
        points[-1].time,
        points[-1].mean,
        title,
    )
