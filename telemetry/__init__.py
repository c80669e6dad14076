"""Telemetry: scraping device exporters, attribution to placements, rollups, health, efficiency,
usage and cost, and the console's own Prometheus metrics (issue #8).

Pure logic (no Django) lives in :mod:`exposition`, :mod:`exporters`, :mod:`attribution`,
:mod:`health`, :mod:`efficiency`, :mod:`cost`, :mod:`charts` and :mod:`synthetic`; the
Django side is :mod:`models`, :mod:`services`, :mod:`selectors`, :mod:`tasks`, :mod:`metrics`
and :mod:`api`.
"""
