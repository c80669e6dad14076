"""Server-side SVG charts (no JavaScript, no CDN): stacked horizontal bars and a donut.

Every function returns a ``SafeString`` of one ``<svg>`` element whose text is escaped; sizes
are in CSS pixels and the SVG scales to its container width (``viewBox``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe


@dataclass(frozen=True)
class Part:
    """One segment: ``value`` in the chart's unit, its ``colour`` and legend ``label``."""

    label: str
    value: float
    colour: str


def _fmt(value: float) -> str:
    if value == int(value):
        return f"{int(value):,}"
    return f"{value:,.2f}".rstrip("0").rstrip(".")


def stacked_bars(rows: Sequence[tuple[str, Sequence[Part]]], unit: str, *,
                 capacity: Sequence[float] | None = None, width: int = 720,
                 title: str = "") -> SafeString:
    """Horizontal stacked bars, one per row, scaled to the largest row total (or capacity).

    Args:
        rows: ``[(row label, [Part, ...])]``.
        unit: unit of the values, printed after each total (e.g. ``"devices"``).
        capacity: optional per-row capacity drawn as the bar's outline and used for scale.
        width: drawing width in px.
        title: accessible title of the chart.
    """
    label_w, value_w, bar_h, gap = 190, 150, 18, 10
    bar_w = width - label_w - value_w
    totals = [sum(p.value for p in parts) for _, parts in rows]
    scale = max([*totals, *(capacity or []), 1e-9])
    height = max(1, len(rows)) * (bar_h + gap) + gap
    out = [f'<svg class="chart" viewBox="0 0 {width} {height}" style="max-width:{width}px" '
           f'role="img" xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>']
    for i, ((label, parts), total) in enumerate(zip(rows, totals, strict=True)):
        y = gap + i * (bar_h + gap)
        out.append(f'<text x="{label_w - 8}" y="{y + bar_h - 4}" text-anchor="end" '
                   f'class="lbl">{escape(label)}</text>')
        cap = capacity[i] if capacity else None
        if cap:
            out.append(f'<rect x="{label_w}" y="{y}" width="{bar_w * cap / scale:.1f}" '
                       f'height="{bar_h}" class="cap"/>')
        x = float(label_w)
        for part in parts:
            w = bar_w * part.value / scale
            if w <= 0:
                continue
            out.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{bar_h}" '
                       f'fill="{escape(part.colour)}"><title>{escape(part.label)}: '
                       f'{_fmt(part.value)} {escape(unit)}</title></rect>')
            x += w
        text = f"{_fmt(total)}" + (f" / {_fmt(cap)}" if cap else "") + f" {unit}"
        out.append(f'<text x="{label_w + bar_w + 6}" y="{y + bar_h - 4}" class="val">'
                   f'{escape(text)}</text>')
    out.append("</svg>")
    return mark_safe("".join(out))  # noqa: S308 - every text and attribute above is escaped


def donut(parts: Sequence[Part], unit: str, *, size: int = 160,
          title: str = "") -> SafeString:
    """A donut chart of ``parts`` with the total in the middle (empty ring when all are 0)."""
    r, stroke = size / 2 - 14, 22
    c = size / 2
    total = sum(p.value for p in parts)
    out = [f'<svg class="donut" viewBox="0 0 {size} {size}" width="{size}" height="{size}" '
           f'role="img" xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>',
           f'<circle cx="{c}" cy="{c}" r="{r}" fill="none" stroke="#e5e7eb" '
           f'stroke-width="{stroke}"/>']
    circumference = 2 * math.pi * r
    offset = 0.0
    for part in parts:
        if total <= 0 or part.value <= 0:
            continue
        length = circumference * part.value / total
        out.append(
            f'<circle cx="{c}" cy="{c}" r="{r}" fill="none" stroke="{escape(part.colour)}" '
            f'stroke-width="{stroke}" stroke-dasharray="{length:.2f} {circumference:.2f}" '
            f'stroke-dashoffset="{-offset:.2f}" transform="rotate(-90 {c} {c})">'
            f'<title>{escape(part.label)}: {_fmt(part.value)} {escape(unit)}</title></circle>'
        )
        offset += length
    out.append(f'<text x="{c}" y="{c + 6}" text-anchor="middle" class="total">'
               f'{escape(_fmt(total))}</text></svg>')
    return mark_safe("".join(out))  # noqa: S308 - every text and attribute above is escaped
