"""NVIDIA: HAMi-core fractional vGPU, dynamic MIG and topology-aware selection.

Sources: ``pkg/device/nvidia/device.go`` (Fit), ``mig_topology.go`` (MIG placements),
``pkg/scheduler/policy/gpu_policy.go`` (topology-aware), shared/docs/hami.md §2.1, §4.4, §4.6.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from scheduling.placement import reasons as R
from scheduling.placement.types import DeviceGrant, DeviceRequest, DeviceUsage, MigProfile, NodeInfo
from scheduling.placement.vendors.base import FitContext, FitResult, VendorPlugin


class NvidiaPlugin(VendorPlugin):
    """NVIDIA backend.

    * hami-core / mps devices: the generic Fit (module doc of ``vendors.base``).
    * MIG devices (``mode == "mig"``): the request memory (MiB, or percent of the GPU's
      registered memory, or the whole GPU) picks the smallest profile by (memory, slice
      count) with memory >= request that has a free placement; ``1g.*``/``3g.*`` placements
      are tried from the highest start, others from the lowest; placements never overlap.
      Booked memory/cores are the profile's. One GPU may give several instances to one
      container, so ``count`` may exceed the number of GPUs. No profile ->
      ``CardMigTopologyInfeasible``.
    * MIG, several instances under device policy ``spread`` or ``topology-aware``: spread
      over the MIG GPUs, at most ``ceil(count / MIG GPUs)`` per GPU; only when that does not
      fit are they packed. **Deliberate difference**: HAMi packs the instances of one
      container onto one GPU under every policy (``nvidia/device.go:846-848``); ``place``
      keeps HAMi's packing (profile ``hami_parity``).
    * device policy ``topology-aware``: every passing GPU is collected, a MIG GPU with every
      instance that still fits (HAMi revisits it without counting down, ``nvidia/device.go``
      829-848 at HAMi 4707fb0); exactly N collected -> those; for 1 GPU the first with the
      lowest sum of pair scores to the other candidates of another uuid (keeps
      well-connected GPUs free; ``computeWorstSingleCard``, 927-951); for N GPUs the first
      combination (collection order, ``generateCombinations``, 887-915) with the highest sum
      of pairwise scores (``computeBestCombination``, 953-978). A combination may hold
      several instances of one MIG GPU (a pair on one card scores its self-score, normally
      absent: 0), as HAMi's does. Pair scores come from ``hami.io/node-nvidia-score``.
    """

    vendor = "NVIDIA"
    may_revisit = True

    def allows_revisit(self, dev: DeviceUsage) -> bool:
        return dev.mode == "mig"

    def collect_all(self, req: DeviceRequest, ctx: FitContext) -> bool:
        return ctx.policy == "topology-aware"

    def fit(self, node: NodeInfo, req: DeviceRequest, ctx: FitContext) -> FitResult:
        if req.count > 1 and not self.hami_parity and ctx.policy in ("spread", "topology-aware"):
            gpus = sum(1 for d in self.candidates(node, req) if d.mode == "mig")
            if gpus > 1:
                ctx.per_device_cap = math.ceil(req.count / gpus)
                try:
                    res = super().fit(node, req, ctx)
                finally:
                    ctx.per_device_cap = 0
                if res.grants is not None:
                    return res
        return super().fit(node, req, ctx)

    def check(
        self, dev: DeviceUsage, req: DeviceRequest, ctx: FitContext, taken: list[DeviceGrant]
    ) -> list[DeviceGrant] | str:
        if dev.mode != "mig":
            return super().check(dev, req, ctx, taken)
        mine = [g for g in taken if g.uuid == dev.uuid]
        admitted = self.admit(dev, req, ctx, len(mine))
        if isinstance(admitted, str):
            return admitted
        used, o = admitted
        mem, _ = self.need(dev, req)
        busy = [(i.start, i.size) for i in dev.mig_instances]
        if o:
            busy.extend(o.mig)
        busy.extend((g.mig_start, g.mig_size) for g in mine)
        out: list[DeviceGrant] = []
        # topology-aware collects every instance that fits; the selection picks N of them
        remaining = dev.split_count if self.collect_all(req, ctx) else req.count - len(taken)
        if ctx.per_device_cap:
            remaining = min(remaining, ctx.per_device_cap - len(mine))
        while remaining > 0 and used < dev.split_count:
            found = _pick_mig(dev.mig_profiles, mem, busy)
            if found is None:
                break
            prof, start, size = found
            busy.append((start, size))
            out.append(
                self.grant(
                    dev,
                    prof.memory_mib,
                    prof.cores_percent,
                    mig_profile=prof.name,
                    mig_start=start,
                    mig_size=size,
                )
            )
            remaining -= 1
            used += 1
        return out if out else R.CARD_MIG_TOPOLOGY_INFEASIBLE

    def select_from(
        self, node: NodeInfo, passing: list[list[DeviceGrant]], req: DeviceRequest, ctx: FitContext
    ) -> list[DeviceGrant] | None:
        grants = [g for gs in passing for g in gs]
        if len(grants) <= req.count:
            return grants[: req.count]
        scores = node.pair_scores

        def pair(a: str, b: str) -> int:
            return scores.get(a, {}).get(b, 0)

        if req.count == 1:
            best = min(
                range(len(grants)),
                key=lambda i: (
                    sum(pair(grants[i].uuid, g.uuid) for g in grants if g.uuid != grants[i].uuid),
                    i,
                ),
            )
            return [grants[best]]
        return _best_combination(passing, req.count, pair)


def _best_combination(
    passing: list[list[DeviceGrant]], n: int, pair: Callable[[str, str], int]
) -> list[DeviceGrant]:
    """HAMi's ``computeBestCombination`` over ``generateCombinations`` (module doc) without
    listing every combination of the collected grants: a combination's score depends only on
    how many grants it takes from each device (a device's grants are adjacent in collection
    order), and the first combination of such a count vector takes each device's first
    grants. So the count vectors are enumerated, and among the best-scoring ones the one
    whose first combination comes first (its sorted grant positions, lexicographically).

    Args:
        passing: the collected grants, per device, in collection order (``len > n`` in all).
        n: grants wanted (>= 2).
        pair: pair score of two uuids (``pair(earlier, later)``).

    Returns:
        ``n`` grants in collection order.
    """
    starts = [sum(len(gs) for gs in passing[:i]) for i in range(len(passing))]
    uuids = [gs[0].uuid for gs in passing]
    best: tuple[int, tuple[int, ...]] | None = None
    best_take: tuple[int, ...] = ()

    def walk(i: int, left: int, take: tuple[int, ...], score: int) -> None:
        nonlocal best, best_take
        if left == 0:
            first = tuple(starts[d] + j for d, k in enumerate(take) for j in range(k))
            if best is None or score > best[0] or (score == best[0] and first < best[1]):
                best, best_take = (score, first), take
            return
        if i == len(passing):
            return
        u = uuids[i]
        links = sum(k * pair(uuids[d], u) for d, k in enumerate(take) if k)
        for k in range(min(left, len(passing[i])), -1, -1):
            gain = k * links + k * (k - 1) // 2 * pair(u, u)
            walk(i + 1, left - k, (*take, k), score + gain)

    walk(0, n, (), 0)
    return [g for d, k in enumerate(best_take) for g in passing[d][:k]]


def _pick_mig(
    profiles: tuple[MigProfile, ...], mem: int, busy: list[tuple[int, int]]
) -> tuple[MigProfile, int, int] | None:
    """Smallest profile (memory, slices) with memory >= ``mem`` and a free placement."""
    for prof in sorted(profiles, key=lambda p: (p.memory_mib, p.slice_count, p.name)):
        if prof.memory_mib < mem:
            continue
        places = sorted(
            prof.placements, key=lambda p: p.start, reverse=prof.name.startswith(("1g.", "3g."))
        )
        for pl in places:
            end = pl.start + pl.size
            if all(end <= s or pl.start >= s + z for s, z in busy):
                return prof, pl.start, pl.size
    return None
