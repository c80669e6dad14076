"""Benchmark of the placement core (prints figures; not a test).

``python -m scheduling.placement.lab.bench_core [--nodes 1213] [--placements 5000]``: a synthetic
cluster of NVIDIA nodes (0-8 GPUs each), six request shapes, place + reserve in a loop: the
incremental node selection, the loop with the per-node result cache (``build(incremental=False)``)
and the uncached loop (``build(cache=False)``), decisions hashed.

``--mixed``: the general loop on every request shape (:func:`run_mixed`): a mixed-model cluster
with zone labels and a sequence of multi-device, multi-container, absolute-memory, type
include/exclude, NUMA-bound, node-selector, per-pod-policy pods and gangs, with releases;
placements/s (CPU time) for the incremental node selection, the loop with the per-node cache (the
path before the selector) and the uncached loop (on a prefix), decisions hashed.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import time
from dataclasses import replace

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
    unreserve,
)
from scheduling.placement.fragmentation import TargetWorkload, TaskClass
from scheduling.placement.group_profile import PlacementPolicy, policy_profile
from scheduling.placement.profile import Framework

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


def run(
    nodes: int, placements: int, cache: bool, policy: str, seed: int = 1, incremental: bool = True
) -> None:
    """Place ``placements`` pods and print placements/s and the decisions' hash (``cache``
    without ``incremental``: the loop with the per-node cache, the path before the selector)."""
    rnd = random.Random(seed)
    snap = cluster(nodes, seed)
    fw = Profile(node_policy=policy).build(cache=cache, incremental=incremental)
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
    digest = hashlib.sha256()
    for r in reqs:
        d = place(snap, r, fw)
        digest.update(repr((d.pods, sorted(d.reasons.items()))).encode())
        if d.schedulable:
            reserve(snap, d)
            ok += 1
    dt = time.process_time() - t
    how = "selector" if fw.selector is not None else "loop+cache" if cache else "loop"
    print(
        f"nodes={nodes} placements={placements} policy={policy} {how}: "  # noqa: T201
        f"{placements / dt:.0f} placements/s, {ok} placed, decisions {digest.hexdigest()[:12]}"
    )


MODELS = ("NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB", "Tesla-T4")


def mixed_cluster(n: int, seed: int) -> ClusterSnapshot:
    """``n`` nodes: 0-8 NVIDIA GPUs of one of three models (one node in eight mixed), split
    4 or 10, two NUMA halves, zone labels a/b/c, seeded."""
    rnd = random.Random(seed)
    nodes = []
    for i in range(n):
        name = f"node-{i:05d}"
        g = rnd.choice((0, 1, 2, 4, 8, 8))
        model = rnd.choice(MODELS)
        mixed = rnd.random() < 0.125
        devs = []
        for j in range(g):
            m = rnd.choice(MODELS) if mixed else model
            mem = 16000 if m == "Tesla-T4" else 81920
            split = rnd.choice((4, 10))
            devs.append(
                DeviceUsage(f"{name}-g{j}", name, j, m, "NVIDIA", mem, 100, split, j * 2 // g)
            )
        nodes.append(
            NodeInfo(
                name,
                devs,
                cpu_milli=rnd.choice((64000, 128000)),
                memory_mib=rnd.choice((262144, 1048576)),
                labels={"zone": rnd.choice("abc")},
            )
        )
    return ClusterSnapshot.from_nodes(nodes)


def mixed_pod(rnd: random.Random, name: str) -> PodRequest:
    """A pod of a shape the trace fast path declines (see the module docstring)."""
    kind = rnd.randrange(7)
    count = rnd.choice((1, 1, 2, 4))
    kw: dict = {"cores_percent": rnd.choice((10, 25, 50, 100))}
    if kind in (0, 1):
        kw["memory_mib"] = rnd.choice((4000, 10000, 20000))
    else:
        kw["memory_percent"] = rnd.choice((10, 25, 50))
    if kind == 2:
        kw["types_include"] = (rnd.choice(MODELS),)
    if kind == 3:
        kw["types_exclude"] = ("Tesla-T4",)
    if kind == 4:
        kw["numa_bind"] = True
    containers = [ContainerRequest("main", (DeviceRequest("NVIDIA", count, **kw),))]
    if kind == 5:
        side = DeviceRequest("NVIDIA", 1, memory_mib=2000, cores_percent=10)
        containers.append(ContainerRequest("side", (side,)))
    return PodRequest(
        name,
        rnd.choice((1000, 4000, 8000)),
        rnd.choice((4096, 16384)),
        tuple(containers),
        node_selector={"zone": rnd.choice("abc")} if kind == 6 else {},
        node_policy=rnd.choice(("", "", "spread")),
        device_policy=rnd.choice(("", "", "binpack", "topology-aware")),
    )


def mixed_sequence(placements: int, seed: int) -> list[tuple[PlacementRequest, float]]:
    """``placements`` requests (one in ten a gang of 2-4 pods) from a pool of 40 pod shapes,
    each with a draw deciding whether a held placement is released before it."""
    rnd = random.Random(seed)
    pool = [mixed_pod(rnd, f"shape{j}") for j in range(40)]
    out = []
    for k in range(placements):
        if rnd.random() < 0.1:
            pods = tuple(
                replace(rnd.choice(pool), name=f"g{k}-{j}") for j in range(rnd.choice((2, 3, 4)))
            )
            req = PlacementRequest(f"g{k}", pods)
        else:
            req = PlacementRequest(f"p{k}", (replace(rnd.choice(pool), name=f"p{k}"),))
        out.append((req, rnd.random()))
    return out


def run_mixed(
    nodes: int, seq: list[tuple[PlacementRequest, float]], fw: Framework, seed: int = 1
) -> tuple[float, str, int]:
    """Place ``seq`` on a fresh :func:`mixed_cluster` (a draw under 0.3 releases the oldest held
    placement first); (placements/s of CPU time, decisions' sha256, placed)."""
    snap = mixed_cluster(nodes, seed)
    held: list = []
    digest = hashlib.sha256()
    placed = 0
    t = time.process_time()
    for req, draw in seq:
        if draw < 0.3 and held:
            unreserve(snap, held.pop(0))
        d = place(snap, req, fw)
        digest.update(repr((d.pods, sorted(d.reasons.items()))).encode())
        if d.schedulable:
            reserve(snap, d)
            held.append(d)
            placed += 1
    dt = time.process_time() - t
    return len(seq) / dt, digest.hexdigest()[:16], placed


#: FragGuard's target workload for the group-profile run (whole GPUs, halves, pairs).
MIXED_WORKLOAD = TargetWorkload(
    (TaskClass(8000, 1000, 1), TaskClass(4000, 500, 1), TaskClass(16000, 1000, 2)), (0.5, 0.3, 0.2)
)


def mixed(nodes: int, placements: int, loop_placements: int) -> None:
    """Print :func:`run_mixed` for the selector, the cached loop and the uncached loop (on the
    first ``loop_placements``): HAMi binpack and spread profiles, and a FragGuard group profile
    (its trace-shaped pods on the policy's fast path; before the selector its other pods ran the
    uncached loop: the fallback score was not declared node-local)."""
    seq = mixed_sequence(placements, 7)
    for policy in ("binpack", "spread", "FragGuard"):
        if policy == "FragGuard":
            group = PlacementPolicy("binpack", "spread", "FragGuard")
            prof = policy_profile(group, workload=MIXED_WORKLOAD)
        else:
            prof = Profile(node_policy=policy)
        runs = (
            ("selector", prof.build(), seq),
            ("loop+cache", prof.build(incremental=False), seq),
            ("selector", prof.build(), seq[:loop_placements]),
            ("loop", prof.build(cache=False), seq[:loop_placements]),
        )
        for label, fw, part in runs:
            rate, digest, placed = run_mixed(nodes, part, fw)
            print(  # noqa: T201
                f"mixed nodes={nodes} policy={policy} {label}: {len(part)} requests, "
                f"{rate:.0f} placements/s, {placed} placed, decisions {digest}"
            )


def main() -> None:
    """CLI entry point."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=1213)
    ap.add_argument("--placements", type=int, default=5000)
    ap.add_argument("--mixed", action="store_true", help="every request shape (run_mixed)")
    ap.add_argument("--loop-placements", type=int, default=200)
    a = ap.parse_args()
    if a.mixed:
        mixed(a.nodes, a.placements, a.loop_placements)
        return
    for policy in ("binpack", "spread"):
        run(a.nodes, a.placements, True, policy)
        run(a.nodes, a.placements, True, policy, incremental=False)
    run(a.nodes, min(a.placements, 200), False, "binpack")


if __name__ == "__main__":
    main()
