"""Benchmark of the placement core (prints figures; not a test).

``python -m scheduling.placement.lab.bench_core [--nodes 1213] [--placements 5000]``: a synthetic
cluster of NVIDIA nodes (0-8 GPUs each), six request shapes, place + reserve in a loop, with
and without the per-node result cache (``Profile.build(cache=True)``).
"""

from __future__ import annotations

import argparse
import random
import time

from scheduling.placement import (
    ClusterSnapshot,
    ContainerRequest,
    DeviceRequest,
    DeviceUsage,
    NodeInfo,
    PlacementRequest,
    PodRequest,
    Profile,
    place,
    reserve,
)

SHAPES = ((1, 8000, 30), (1, 0, 100), (2, 40000, 0), (1, 20000, 50), (4, 0, 100), (8, 0, 100))


def cluster(n: int, seed: int) -> ClusterSnapshot:
    """``n`` nodes with 0, 1, 2, 4 or 8 A100-80GB (split 10), seeded."""
    rnd = random.Random(seed)
    nodes = []
    for i in range(n):
        name = f"node-{i:04d}"
        g = rnd.choice((0, 1, 2, 4, 8, 8))
        nodes.append(
            NodeInfo(
                name,
                [
                    DeviceUsage(f"{name}-g{j}", name, j, "A100", "NVIDIA", 81920, 100, 10)
                    for j in range(g)
                ],
                cpu_milli=960000,
                memory_mib=7864320,
            )
        )
    return ClusterSnapshot.from_nodes(nodes)


def run(nodes: int, placements: int, cache: bool, policy: str, seed: int = 1) -> None:
    """Place ``placements`` pods and print placements/s."""
    rnd = random.Random(seed)
    snap = cluster(nodes, seed)
    fw = Profile(node_policy=policy).build(cache=cache)
    reqs = []
    for k in range(placements):
        c, m, co = rnd.choice(SHAPES)
        reqs.append(
            PlacementRequest(
                f"p{k}",
                (
                    PodRequest(
                        f"p{k}",
                        1000,
                        1024,
                        (
                            ContainerRequest(
                                "c", (DeviceRequest("NVIDIA", c, memory_mib=m, cores_percent=co),)
                            ),
                        ),
                    ),
                ),
            )
        )
    t = time.process_time()
    ok = 0
    for r in reqs:
        d = place(snap, r, fw)
        if d.schedulable:
            reserve(snap, d)
            ok += 1
    dt = time.process_time() - t
    print(
        f"nodes={nodes} placements={placements} policy={policy} cache={cache}: "  # noqa: T201
        f"{placements / dt:.0f} placements/s, {ok} placed"
    )


def main() -> None:
    """CLI entry point."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=1213)
    ap.add_argument("--placements", type=int, default=5000)
    a = ap.parse_args()
    for policy in ("binpack", "spread"):
        run(a.nodes, a.placements, True, policy)
    run(a.nodes, min(a.placements, 200), False, "binpack")


if __name__ == "__main__":
    main()
