"""What-if replay: a workload replayed on a set of nodes under a placement policy, the
product's what-if page (DESIGN.md §9; :mod:`scheduling.services.whatif` feeds it) and the
trace import (``manage.py import_trace``). Pure, stdlib only, like the core.

- :mod:`.run`: the what-if replay of a workload under one policy and tenant quotas
  (:func:`~.run.replay_policy`).
- :mod:`.replay`: the replay engine (one policy on one snapshot, placing and booking through
  the core, allocation and fragmentation kept current); the benchmarks
  (:mod:`scheduling.placement.lab`) replay through it too.
- :mod:`.trace`: reader of the Alibaba trace CSVs (``manage.py import_trace`` and the page's
  upload).
- :mod:`.policies`: every policy the page offers, by name (the live FragGuard/FGD plus the
  baselines).
- :mod:`.baselines`: the FGD paper's baseline policies (BestFit, GpuPacking, GpuClustering,
  DotProd, Random).

The live core (``scheduling.placement`` outside this package) never imports it
(``placement-whatif`` in ``pyproject.toml``); the fragmentation-aware policies the console
runs (FragGuard, FGD) live in ``scheduling/placement/plugins/``.
"""
