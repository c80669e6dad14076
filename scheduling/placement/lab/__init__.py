"""The placement benchmarks: nothing the product runs imports them (``placement-lab`` in
``pyproject.toml``).

- :mod:`.bench`: replay benchmark of the placement policies on the Alibaba GPU-sharing trace
  (``python -m scheduling.placement.lab.bench``; method: shared/docs/fgd.md §2).
- :mod:`.bench_core`: synthetic benchmark of ``place()`` (``python -m
  scheduling.placement.lab.bench_core``).
- :mod:`.bench_consolidation`: the consolidation planner inside the trace replay.

They replay through :mod:`scheduling.placement.whatif` (the trace reader, the replay engine and
the policies by name), the same code the what-if page runs, so a benchmark figure is the
page's. Stdlib only, like the core.
"""
