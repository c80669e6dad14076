"""HAMi node score (``ComputeDefaultScore`` + backend ``ScoreNode``,
``pkg/scheduler/policy/node_policy.go``; shared/docs/hami.md §4.4).

``score = 10 * (sum used/sum count + sum used_cores/sum cores + sum used_mem/sum mem)`` over
all devices of the node, on usage BEFORE the pod (as HAMi's code does), plus the vendor
node-score terms of the devices chosen for the pod (``NodeFit.extra_score``, e.g. Ascend
NetworkID locality). A term whose denominator is 0 is 0. binpack picks the highest score,
spread the lowest (the profile's ``node_policy``).
"""

from __future__ import annotations

from scheduling.placement.framework import CycleState, NodeFit
from scheduling.placement.plugins import names
from scheduling.placement.types import NodeInfo, PodRequest


def hami_node_usage_score(node: NodeInfo) -> float:
    """The HAMi base node score of ``node`` on its current usage."""
    used = count = ucores = cores = umem = mem = 0
    for d in node.devices:
        used += d.used_slots
        count += d.split_count
        ucores += d.used_cores_percent
        cores += d.cores_percent
        umem += d.used_memory_mib
        mem += d.memory_mib
    s = 0.0
    if count:
        s += used / count
    if cores:
        s += ucores / cores
    if mem:
        s += umem / mem
    return 10.0 * s


class HAMiNodeScore:
    """Score plugin returning the HAMi node score (see module doc)."""

    name = names.HAMI_NODE_SCORE
    node_local = True

    def __init__(self, **_: object) -> None:
        pass

    def score(self, state: CycleState, pod: PodRequest, node: NodeInfo, fit: NodeFit) -> float:
        return hami_node_usage_score(node) + fit.extra_score
