"""Text output of the placement benchmark (:mod:`scheduling.placement.lab.bench`)."""

from __future__ import annotations

import argparse
from typing import TextIO

from scheduling.placement.fragmentation import TargetWorkload

__all__ = ["BUCKETS", "print_header", "print_text"]

#: Arrived-workload percentages reported (the same as ``bench.BUCKETS``).
BUCKETS = (50, 80, 90, 95, 100, 110, 120, 130)


def print_text(summary: dict, departures: bool, out: TextIO) -> None:
    name = summary["policy"]
    if departures:
        print(
            f"{name:14s} time-avg alloc {summary['time_avg_allocation_pct']}%  waited "
            f"{summary['waited']}  mean wait {summary['mean_wait_s']} s  "
            f"p95 {summary['p95_wait_s']} s  "
            f"never placed {summary['failed']}  {summary['placements_per_s']:.0f} placements/s  "
            f"peak RSS {summary['peak_rss_mib']:.0f} MiB",
            file=out,
        )
        return

    def cell(b: str) -> str:
        m, sd = summary["allocation_pct"][b], summary["allocation_sd"][b]
        return "    -     " if m is None else f"{m:6.2f}±{sd:<4.2f}"

    print(f"{name:14s} " + " ".join(cell(str(b)) for b in BUCKETS), file=out)
    frag = " ".join(
        "    -     "
        if summary["fragmentation_pct"][str(b)] is None
        else f"{summary['fragmentation_pct'][str(b)]:6.2f}    "
        for b in BUCKETS
    )
    print(f"{'  frag rate %':14s} {frag}", file=out)
    print(
        f"{'':14s} failed {summary['failed']} {summary['failed_by_kind']}  "
        f"{summary['placements_per_s']:.0f} placements/s  "
        f"peak RSS {summary['peak_rss_mib']:.0f} MiB",
        file=out,
    )
    if "moves" in summary:
        print(
            f"{'':14s} consolidation: {summary['moves']} moves "
            f"({summary['moves_by_100']} by 100 % arrived), {summary['rescued']} tasks placed "
            f"thanks to moves, {summary['tries']} candidate sets tried",
            file=out,
        )


def print_header(
    args: argparse.Namespace, n_pods: int, n_nodes: int, seeds: list[int], workload: TargetWorkload
) -> None:
    """The text report's first lines (trace, mode, seeds, target workload, columns)."""
    mode = "departures" if args.departures else f"tune {args.tune}"
    print(
        f"# {args.pods}: {n_pods} pods; {n_nodes} nodes x{args.scale}; {mode}; seeds "
        f"{seeds[0]}..{seeds[-1]}; target workload {len(workload.classes)} classes "
        f"({100 * workload.coverage:.1f} % of tasks); path place()"
    )
    if not args.departures:
        print(
            f"{'policy':14s} "
            + " ".join(f"{str(b) + '%':>10s}" for b in BUCKETS)
            + "   (allocation % at arrived %)"
        )
