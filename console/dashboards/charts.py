"""The console's chart layer: views build a chart *spec* here, templates emit it, one static
script draws it.

How a page shows a chart (no inline ``<script>``, so a strict Content-Security-Policy holds):

1. The view builds a spec with :func:`time_series`, :func:`bar_chart` or :func:`donut` (plain,
   JSON-ready dicts; bad arguments raise ``ValueError``) and puts it in the context::

       from console.dashboards.charts import Axis, Mark, Series, time_series
       spec = time_series(
           "group-trend", [Series("allocated", points, colour="#2563eb"),
                           Series("capacity", capacity_points, kind="dashed")],
           title="Allocation vs capacity", axes=[Axis("devices")],
           start=start, end=end, marks=[Mark(when, "XID 79")], simulated=True)

2. The template renders it: ``{% load console_charts %}{% chart spec %}``. The tag
   (``console/dashboards/templatetags/console_charts.py``) writes a ``<figure>`` with the
   title, a "simulated data" badge when ``simulated``, an empty container
   ``<div class="chart-canvas" data-chart="<id>-data">`` and the spec through Django's
   ``json_script`` (``<script type="application/json" id="<id>-data">``, never executed).

3. ``base.html`` loads the vendored Apache ECharts (``static/vendor/echarts/``) and
   ``static/console/charts.js``, which finds every ``[data-chart]`` container, reads its spec
   and draws it (SVG renderer: axis labels are ``<text>`` nodes; axes, units, legend,
   tooltips). Content replaced later (the overview's live refresh) is drawn by
   ``window.ConsoleCharts.renderAll(root)``.

Time is in UTC on the wire (epoch milliseconds) and on the axes (``useUTC``), like the rest of
the console. A range switch (6 h / 24 h / 7 d) is :data:`RANGES` with :func:`pick_range` and
the ``{% range_switch %}`` tag.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

__all__ = [
    "Axis",
    "Mark",
    "Series",
    "RANGES",
    "DEFAULT_RANGE",
    "pick_range",
    "time_series",
    "bar_chart",
    "donut",
]

#: Range switch keys and their spans (the trend pages' ``?range=``).
RANGES: dict[str, timedelta] = {
    "6h": timedelta(hours=6),
    "24h": timedelta(hours=24),
    "7d": timedelta(days=7),
}
DEFAULT_RANGE = "6h"

TIME_KINDS = ("line", "area", "step", "dashed", "range")
BAR_KINDS = ("bar",)
SEVERITIES = ("info", "warning", "critical")
_ID = re.compile(r"^[a-z][a-z0-9-]{0,62}$")
#: Height in px of one category row of an independent-scale bar chart (title, bar, axis).
BAR_ROW_PX = 62


def pick_range(value: str | None) -> str:
    """The range key for a ``?range=`` value: itself when known, else :data:`DEFAULT_RANGE`."""
    return value if value in RANGES else DEFAULT_RANGE


@dataclass(frozen=True)
class Axis:
    """A value axis: ``unit`` printed after tick labels and in tooltips (``" %"`` style units
    start with a space to print as ``"40 %"``), ``name`` shown at the axis end (default: the
    unit), ``min`` / ``max`` (None = fitted to the data)."""

    unit: str = ""
    name: str = ""
    min: float | None = 0
    max: float | None = None


@dataclass(frozen=True)
class Series:
    """One series.

    Attributes:
        name: legend and tooltip label.
        points: time charts: ``[(datetime, value or None)]`` (None = gap), or for kind
            ``"range"`` ``[(datetime, low, high)]`` (a shaded min..max band); bar charts: one
            value per category.
        kind: time charts ``line``, ``area`` (filled), ``step`` (a held value), ``dashed``
            (a limit such as capacity or nominal quota) or ``range``; bar charts ``bar``.
        unit: tooltip unit (default: its axis's unit).
        colour: CSS colour (default: the palette of charts.js, by series order).
        axis: index of its value axis in ``axes`` (time charts; 0 left, 1 right).
        stack: series with the same non-empty ``stack`` are stacked.
    """

    name: str
    points: Sequence
    kind: str = "line"
    unit: str = ""
    colour: str = ""
    axis: int = 0
    stack: str = ""


@dataclass(frozen=True)
class Mark:
    """A vertical marker on a time chart (e.g. a health event): ``time``, ``label`` and
    ``severity`` (``info``, ``warning`` or ``critical``, which sets its colour)."""

    time: datetime
    label: str
    severity: str = "warning"


def _ms(when: datetime) -> int:
    if when.tzinfo is None:
        raise ValueError(f"naive datetime {when!r}: charts take aware (UTC) times")
    return int(when.timestamp() * 1000)


def _num(value) -> float | None:
    if value is None:
        return None
    value = float(value)
    if not math.isfinite(value):
        return None
    return round(value, 4)


def _check_id(chart_id: str) -> None:
    if not _ID.match(chart_id):
        raise ValueError(
            f"chart id {chart_id!r}: lower-case letters, digits and '-', starting with a letter"
        )


def _base(chart_id: str, kind: str, title: str, height: int, simulated: bool, note: str) -> dict:
    _check_id(chart_id)
    if height < 80:
        raise ValueError(f"chart {chart_id}: height {height} px is below 80")
    return {
        "version": 1,
        "id": chart_id,
        "type": kind,
        "title": title,
        "height": height,
        "simulated": bool(simulated),
        "note": note,
    }


def _time_points(s: Series) -> list:
    if s.kind == "range":
        return [[_ms(t), _num(lo), _num(hi)] for t, lo, hi in s.points]
    return [[_ms(t), _num(v)] for t, v in s.points]


def time_series(
    chart_id: str,
    series: Sequence[Series],
    *,
    title: str,
    axes: Sequence[Axis] = (Axis(),),
    start: datetime | None = None,
    end: datetime | None = None,
    marks: Sequence[Mark] = (),
    simulated: bool = False,
    height: int = 240,
    note: str = "",
) -> dict:
    """Spec of a time chart: one or two value axes over a time axis.

    Args:
        chart_id: DOM id of the figure (``[a-z][a-z0-9-]*``, unique on the page); the data
            script is ``<chart_id>-data``.
        series: :class:`Series` of kinds :data:`TIME_KINDS`.
        title: caption, also the accessible label.
        axes: one or two :class:`Axis` (left, right).
        start, end: the x range shown (aware datetimes); default: fitted to the data. When
            the first sample (a point with a value, or a mark) comes after ``start``, the
            axis starts there: on a fresh install a 6 h range with minutes of history shows
            those minutes across the chart, not squeezed against its right edge.
        marks: vertical markers (:class:`Mark`).
        simulated: show the "simulated data" badge.
        height: drawing height in px (>= 80).
        note: a line under the chart (e.g. how a figure is computed).

    Returns:
        The spec (``type`` ``"time"``); ``empty`` is True when no series has a value (the
        axes are still drawn, with a "no data" text).

    Raises:
        ValueError: unknown kind or severity, a series on a missing axis, more than two axes,
            naive datetimes, a bad id.
    """
    if not 1 <= len(axes) <= 2:
        raise ValueError(f"chart {chart_id}: one or two axes, got {len(axes)}")
    spec = _base(chart_id, "time", title, height, simulated, note)
    out = [_time_series_json(chart_id, s, axes) for s in series]
    for m in marks:
        if m.severity not in SEVERITIES:
            raise ValueError(
                f"chart {chart_id}: mark severity {m.severity!r} is not one of "
                f"{', '.join(SEVERITIES)}"
            )
    spec.update(
        {
            "axes": [_axis_json(a) for a in axes],
            "x": {"min": _x_min(start, end, out, marks), "max": _ms(end) if end else None},
            "series": out,
            "marks": [
                {"time": _ms(m.time), "label": m.label, "severity": m.severity} for m in marks
            ],
            "empty": not any(v is not None for s in out for p in s["data"] for v in p[1:]),
        }
    )
    return spec


def _x_min(
    start: datetime | None, end: datetime | None, series: list[dict], marks: Sequence[Mark]
) -> int | None:
    """Left end of the time axis (epoch ms): ``start``, or the first sample after it (a point
    with a value in the JSON ``series``, or a mark) when history is shorter than the range
    and that sample is before ``end`` (an axis needs a span); None without ``start``
    (fitted to the data)."""
    if start is None:
        return None
    samples = [p[0] for s in series for p in s["data"] if any(v is not None for v in p[1:])]
    first = min([*samples, *(_ms(m.time) for m in marks)], default=None)
    if first is None or (end is not None and first >= _ms(end)):
        return _ms(start)
    return max(_ms(start), first)


def _axis_json(a: Axis) -> dict:
    return {
        "unit": a.unit,
        "name": a.name or a.unit.strip(),
        "min": _num(a.min),
        "max": _num(a.max),
    }


def _time_series_json(chart_id: str, s: Series, axes: Sequence[Axis]) -> dict:
    """One series of a time chart as JSON (its kind and axis checked).

    Raises:
        ValueError: a kind not in :data:`TIME_KINDS`, an axis the chart does not have.
    """
    if s.kind not in TIME_KINDS:
        raise ValueError(
            f"chart {chart_id}: series {s.name!r} kind {s.kind!r} is not one "
            f"of {', '.join(TIME_KINDS)}"
        )
    if not 0 <= s.axis < len(axes):
        raise ValueError(
            f"chart {chart_id}: series {s.name!r} is on axis {s.axis}, the chart has {len(axes)}"
        )
    return {
        "name": s.name,
        "kind": s.kind,
        "unit": s.unit or axes[s.axis].unit,
        "colour": s.colour,
        "axis": s.axis,
        "stack": s.stack,
        "data": _time_points(s),
    }


def bar_chart(
    chart_id: str,
    categories: Sequence[str],
    series: Sequence[Series],
    *,
    title: str,
    unit: str,
    capacity: Sequence[float] | None = None,
    independent: bool = False,
    simulated: bool = False,
    height: int | None = None,
    note: str = "",
) -> dict:
    """Spec of a horizontal bar chart, one row per category.

    Args:
        categories: row labels (shown in full: as row titles with ``independent``, else on
            the category axis, cut with an ellipsis past 22 characters and whole in the
            tooltip).
        series: :class:`Series` of kind ``bar``, one value per category; same ``stack``
            stacks them.
        unit: unit of the values (axis name, labels, tooltips).
        capacity: optional per-row capacity: drawn as a light bar behind the values and, with
            ``independent``, the end of the row's own axis.
        independent: one small chart per category, each with its own scale (0..capacity or
            0..its largest value), so a small model is never a sliver next to a large one;
            each row's title reads ``"<category>: <values> / <capacity> <unit> (<pct> %)"``.
        height: px; default grows with the number of rows.

    Raises:
        ValueError: a series or ``capacity`` whose length differs from ``categories``, a
            kind other than ``bar``, a bad id.
    """
    n = len(categories)
    _check_bars(chart_id, n, series, capacity)
    if height is None:
        height = _bar_height(n, series, capacity, independent)
    spec = _base(chart_id, "bars", title, height, simulated, note)
    spec.update(
        {
            "unit": unit,
            "categories": list(categories),
            "scale": "independent" if independent else "shared",
            "capacity": [_num(c) for c in capacity] if capacity is not None else None,
            "series": [
                {
                    "name": s.name,
                    "kind": "bar",
                    "unit": s.unit or unit,
                    "colour": s.colour,
                    "stack": s.stack,
                    "data": [_num(v) for v in s.points],
                }
                for s in series
            ],
            "empty": n == 0,
        }
    )
    return spec


def _bar_height(
    n: int, series: Sequence[Series], capacity: Sequence[float] | None, independent: bool
) -> int:
    """Default drawing height (px) of a bar chart of ``n`` rows."""
    unstacked = sum(1 for s in series if not s.stack) if capacity is None else 1
    per_row = 30 if unstacked <= 1 else 8 + 16 * unstacked  # grouped bars side by side
    return 40 + max(1, n) * BAR_ROW_PX if independent else 60 + max(1, n) * per_row


def _check_bars(
    chart_id: str, n: int, series: Sequence[Series], capacity: Sequence[float] | None
) -> None:
    """Raise ValueError unless every series is a bar series of ``n`` values and ``capacity``
    (when given) has ``n`` values."""
    for s in series:
        if s.kind not in BAR_KINDS:
            raise ValueError(f"chart {chart_id}: series {s.name!r} kind {s.kind!r} is not bar")
        if len(s.points) != n:
            raise ValueError(
                f"chart {chart_id}: series {s.name!r} has {len(s.points)} values for {n} categories"
            )
    if capacity is not None and len(capacity) != n:
        raise ValueError(f"chart {chart_id}: {len(capacity)} capacities for {n} categories")


def donut(
    chart_id: str,
    parts: Sequence[tuple[str, float, str]],
    *,
    title: str,
    unit: str,
    simulated: bool = False,
    height: int = 200,
    note: str = "",
    empty_text: str = "",
) -> dict:
    """Spec of a donut: ``parts`` = ``[(label, value, colour)]`` (colour may be ""), the total
    in the middle, a legend beside it. When every value is 0 (``empty``) charts.js draws no
    ring and no legend, only ``empty_text`` (default ``"No <unit> yet"``): a ring of zeros
    would show equal slices."""
    spec = _base(chart_id, "donut", title, height, simulated, note)
    spec.update(
        {
            "unit": unit,
            "empty_text": empty_text or f"No {unit} yet",
            "parts": [
                {"name": label, "value": _num(value), "colour": colour}
                for label, value, colour in parts
            ],
            "total": _num(sum(v for _, v, _ in parts)),
            "empty": not any(v for _, v, _ in parts),
        }
    )
    return spec
