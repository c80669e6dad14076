"""The trace policies inside one topology domain (issue 31, ``placement/topology.py``).

- :func:`fit_count`: how many copies of a trace-shaped task fit on a node, by the policies' own
  fit rule (:meth:`NodeTable.fits`), for the free capacity of topology domains;
- :func:`select_among`: a :class:`LazySelector`'s answer restricted to some nodes (a domain),
  with the same scores, score memo and tie ranks.

They read the selector's memo (``_memo``, ``_key_memo``) as the selector itself does; the
memo's contract is in ``frag_engine``'s module docstring.
"""

from __future__ import annotations

from collections.abc import Collection

from scheduling.placement.fragmentation import GPU_MILLI
from scheduling.placement.plugins.frag_engine import LazySelector, NodeTable, TaskView

__all__ = ["FIT_COUNT_CAP", "fit_count", "select_among"]

#: Most copies of one task counted on one node by :func:`fit_count`.
FIT_COUNT_CAP = 64


def fit_count(table: NodeTable, i: int, task: TaskView) -> int:
    """How many copies of ``task`` fit on node ``i`` one after the other, by
    :meth:`NodeTable.fits` (free CPU and host memory divided by the task's, whole free devices
    divided by ``num_gpu`` for whole-GPU tasks, the sum of ``free // gpu_milli`` over the
    usable devices for a share), at most :data:`FIT_COUNT_CAP`; 0 on an unschedulable node."""
    cpu = table.cpu[i]
    if cpu < 0:
        return 0
    n = FIT_COUNT_CAP
    if task.cpu_milli:
        n = min(n, cpu // task.cpu_milli)
    if task.memory_mib:
        n = min(n, table.mem[i] // task.memory_mib)
    k = task.num_gpu
    if k and n:
        d = task.gpu_milli
        g = table.gpus[i]
        usable = range(len(g)) if table.type_ok(i, task) else table.usable(i, task)
        if k > 1 or d >= GPU_MILLI:
            n = min(n, sum(1 for j in usable if g[j] >= d) // k)
        else:
            n = min(n, sum(g[j] // d for j in usable))
    return max(n, 0)


def select_among(
    selector: LazySelector, task: TaskView, nodes: Collection[int]
) -> tuple[int, int] | None:
    """(node index, score) of the best feasible node of ``nodes`` for ``task``, or None:
    the answer ``selector.select`` would give on a cluster of only those nodes (same scores,
    memo and tie ranks; the policy's cluster-wide figures stay the whole cluster's). For
    topology-aware placement inside one domain (``placement/topology.py``)."""
    table = selector.table
    policy = selector.policy
    prepare = getattr(policy, "prepare", None)
    if prepare is not None:
        prepare(table)
    key = policy.key(task)
    memo = selector._key_memo(selector._memo, key) if selector._memo is not None else None
    rank, state, mem = table.rank, table.state, table.mem
    need = task.memory_mib
    score = policy.score
    best: tuple[int, int] | None = None
    best_entry = 0
    n = len(rank)
    for i in selector._feasible(nodes, task):
        if mem[i] < need:
            continue
        if memo is None:
            s = score(table, i, task)
        else:
            s = memo.get(state[i], memo)
            if s is memo:
                s = memo[state[i]] = score(table, i, task)
                selector._memo_size += 1
        if s is None:
            continue
        e = rank[i] - s * n
        if best is None or e < best_entry:
            best, best_entry = (i, s), e
    selector.evaluations += len(nodes)
    return best
