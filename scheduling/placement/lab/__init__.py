"""The placement lab: the trace benchmark and what only it uses, beside the live core.

- :mod:`.bench`: replay benchmark of the placement policies on the Alibaba GPU-sharing trace
  (``python -m scheduling.placement.lab.bench``; method: shared/docs/fgd.md §2).
- :mod:`.bench_core`: synthetic benchmark of ``place()`` (``python -m
  scheduling.placement.lab.bench_core``).
- :mod:`.replay`: the replay engine both replays share (one policy on one snapshot, placing
  and booking through the core, allocation and fragmentation kept current).
- :mod:`.whatif`: what-if replay of a workload under a policy and tenant quotas (the
  simulation page).
- :mod:`.trace`: reader of the trace CSVs (also used by ``manage.py import_trace``).
- :mod:`.baselines`: the FGD paper's baseline policies (BestFit, GpuPacking, GpuClustering,
  DotProd, Random).
- :mod:`.policies`: every policy by name (the live FragGuard/FGD plus the baselines).

The live core (``scheduling.placement`` outside this package) never imports the lab; the
fragmentation-aware policies the console runs (FragGuard, FGD) live in
``scheduling/placement/plugins/``. Stdlib only, like the core.
"""
