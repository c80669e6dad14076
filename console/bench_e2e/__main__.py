"""``python -m console.bench_e2e`` (``make bench-e2e``): the end-to-end benchmark.

Starts the console's pieces — embedded PostgreSQL and Redis (own data folder, fresh database
``bench_e2e``), the web (gunicorn), ONE Celery worker process and beat — then runs, by
``--phases`` (default all, in this order):

- ``load``: per ``--batch`` size (jobs per API request: 1 = ``POST /api/jobs/``, more =
  ``POST /api/jobs/batch/``) a synthetic cluster (``--load-nodes`` x 8 A100, FragGuard
  group); a burst of ``--burst`` jobs from 8 clients (API submissions/s, placed jobs/s,
  p50/p99), then a steady offered load of ``--rate`` jobs/s for ``--seconds`` (p50/p99
  submit→placed);
- ``trace``: the Alibaba default trace imported and placed through the worker (import time,
  time to place after the import, allocation ratio on the overview);
- ``cycle`` (not in the default set): one admission cycle of ``--cycle-jobs`` mixed-shape jobs
  on ``--cycle-nodes`` x 8 A100, in this process, with and without the placement core's
  incremental node selection (:mod:`console.bench_e2e.cycle`);
- ``pages``: the worker stopped, a database of 10,000 nodes / 80,000 devices / 200,000 jobs
  times ``--scale`` generated, every page and API list timed (p50/p95 ms, queries).

After the load and trace phases it checks DESIGN.md §7 invariants (no device overbooked, stored
usage equals recomputed usage, the admission core's invariant checker) and counts "deadlock"
in the pieces' logs. Prints one JSON object (also written to ``--out``). The figures depend on
the machine: record them with its description (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

from console.bench_e2e.stack import ROOT, fresh_stack


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m console.bench_e2e",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--phases",
        default="load,trace,pages",
        help="comma-separated subset of load,trace,cycle,pages",
    )
    p.add_argument("--cycle-nodes", type=int, default=1000)
    p.add_argument("--cycle-jobs", type=int, default=500)
    p.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="size of the pages database relative to 10k nodes / 200k jobs",
    )
    p.add_argument("--load-nodes", type=int, default=500)
    p.add_argument("--burst", type=int, default=3000)
    p.add_argument("--rate", type=float, default=100.0)
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument(
        "--batch",
        default="100,1",
        help="jobs per API request in the load phases, comma-separated to run each "
        "(1 = POST /api/jobs/, N > 1 = POST /api/jobs/batch/)",
    )
    p.add_argument("--trace-pods", default="openb_pod_list_default.csv")
    p.add_argument("--trace-policy", default="FragGuard", choices=["FragGuard", "FGD", "none"])
    p.add_argument("--data-dir", default=str(ROOT / ".console-bench"))
    p.add_argument("--bind", default="127.0.0.1:8391")
    p.add_argument("--out", default="", help="also write the JSON here")
    return p.parse_args(argv)


def _invariants() -> dict:
    from django.db import connection

    from scheduling.services.usage import check_usage
    from tenants.models import ResourceGroup

    with connection.cursor() as cursor:
        cursor.execute("""
            SELECT count(*) FROM (
              SELECT d.id FROM scheduling_device d
              JOIN scheduling_placementdevice pd ON pd.device_id = d.id
              JOIN scheduling_placement p ON p.id = pd.placement_id
              WHERE p.state IN ('reserved', 'submitted', 'running')
              GROUP BY d.id, d.memory_mib, d.cores_percent, d.split_count
              HAVING sum(pd.memory_mib) > d.memory_mib OR sum(pd.cores_percent) > d.cores_percent
                  OR sum(pd.slots) > d.split_count) over""")
        overbooked = cursor.fetchone()[0]
    drift = violations = 0
    for pk in ResourceGroup.objects.values_list("pk", flat=True):
        check = check_usage(pk)
        drift += len(check.drift)
        violations += len(check.violations)
    return {"overbooked_devices": overbooked, "usage_drift": drift, "quota_violations": violations}


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    phases = [p for p in args.phases.split(",") if p]
    stack = fresh_stack(Path(args.data_dir), args.bind)
    stack.manage("migrate", "--no-input", "-v", "0")
    import django

    django.setup()
    out: dict = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "load_avg_at_start": os.getloadavg()[0],
        },
        "worker_processes": 1,
    }
    try:
        if "load" in phases or "trace" in phases:
            stack.start("web", "worker", "worker-telemetry", "beat")
            stack.wait_web()
        if "load" in phases:
            from console.bench_e2e import load

            out["load"] = load.run_load(stack.base_url, args)
        if "trace" in phases:
            from console.bench_e2e.trace import run_trace

            out["trace"] = run_trace(args.trace_pods, policy=args.trace_policy)
        if "load" in phases or "trace" in phases:
            stack.stop("beat", "worker", "worker-telemetry")
            out["invariants"] = _invariants()
        if "cycle" in phases:
            from console.bench_e2e.cycle import run_cycles

            out["cycle"] = run_cycles(args.cycle_nodes, args.cycle_jobs)
        if "pages" in phases:
            from console.bench_e2e import large

            stack.stop()
            out["pages_db"] = large.generate(args.scale)
            out["pages"] = large.time_pages()
    finally:
        stack.stop()
        time.sleep(0.5)
        out["deadlocks_in_logs"] = stack.log_hits("deadlock detected")
        out["tracebacks_in_logs"] = stack.log_hits("Traceback")
    text = json.dumps(out, indent=2, default=str)
    print(text)  # noqa: T201
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
