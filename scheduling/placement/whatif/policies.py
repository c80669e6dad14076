"""Every trace placement policy of the benchmark by name: the live FragGuard and FGD
(``plugins/frag_plugins.py``) and the FGD paper's baselines (:mod:`.baselines`).

Registry names (:data:`POLICY_NAMES`, recommended first): "FragGuard" (ours), "FGD",
"BestFit", "GpuPacking", "GpuClustering", "DotProd", "Random".
"""

from __future__ import annotations

from typing import Any

from scheduling.placement.fragmentation import TargetWorkload
from scheduling.placement.plugins.frag_engine import task_view
from scheduling.placement.plugins.frag_plugins import (
    FRAG_POLICY_NAMES,
    TracePolicyPlugin,
    make_frag_policy,
)
from scheduling.placement.types import PodRequest
from scheduling.placement.whatif.baselines import (
    BestFitPolicy,
    DotProdPolicy,
    GpuClusteringPolicy,
    GpuPackingPolicy,
    RandomPolicy,
    gpu_tag,
)

__all__ = [
    "POLICY_NAMES",
    "make_policy",
    "register_trace_policies",
    "tag_of",
    "trace_policy_plugin",
]

#: Registered policy names, our recommended policy first.
POLICY_NAMES = (*FRAG_POLICY_NAMES, "BestFit", "GpuPacking", "GpuClustering", "DotProd", "Random")

_BASELINES = {
    "BestFit": BestFitPolicy,
    "GpuPacking": GpuPackingPolicy,
    "GpuClustering": GpuClusteringPolicy,
    "DotProd": DotProdPolicy,
}


def make_policy(name: str, workload: TargetWorkload | None = None, seed: int | None = 0) -> Any:
    """Build the policy object ``name`` (one of :data:`POLICY_NAMES`).

    Raises:
        KeyError: unknown name. ValueError: FGD/FragGuard without a workload.
    """
    if name in FRAG_POLICY_NAMES:
        return make_frag_policy(name, workload)
    if name in _BASELINES:
        return _BASELINES[name]()
    if name == "Random":
        return RandomPolicy(seed)
    raise KeyError(f"unknown policy {name!r} (known: {', '.join(POLICY_NAMES)})")


def trace_policy_plugin(
    name: str,
    workload: TargetWorkload | None = None,
    tie_seed: int | None = None,
    seed: int | None = 0,
    **_: object,
) -> TracePolicyPlugin:
    """The plugin of policy ``name`` (any of :data:`POLICY_NAMES`).

    Args:
        name: the policy name.
        workload: target workload (FGD, FragGuard).
        tie_seed: seed of the tie order (see :class:`TracePolicyPlugin`).
        seed: RNG seed of the Random policy.

    Raises:
        KeyError: unknown name. ValueError: FGD/FragGuard without a workload.
    """
    return TracePolicyPlugin(name, tie_seed=tie_seed, policy=make_policy(name, workload, seed))


def register_trace_policies(registry: Any) -> None:
    """Register every policy of :data:`POLICY_NAMES` in a core ``Registry``.

    Factories take ``workload`` (FGD, FragGuard), ``tie_seed`` and ``seed`` keyword args.
    """
    for name in POLICY_NAMES:
        registry.register(name, lambda _n=name, **args: trace_policy_plugin(_n, **args))


def tag_of(pod: PodRequest) -> str:
    """GpuClustering tag of a pod ("" for pods that are CPU-only or not trace-shaped)."""
    task = task_view(pod)
    return gpu_tag(task) if task is not None else ""
