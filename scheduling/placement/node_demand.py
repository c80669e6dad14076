"""FGD fragmentation of each node against the demand that can run on it (dashboards, gauges).

:func:`~scheduling.placement.fragmentation.snapshot_fragmentation` measures every node against
one target workload M, as the FGD simulator does on its one-model-per-task trace. On a
heterogeneous cluster that reads wrongly: an idle Ascend node is "fragmented" by every NVIDIA
class of M (they cannot use it, so F_n(m) = all its idle milli), and the 95 % coverage cut of
a mixed M can drop every class of a rare vendor, so its free devices look stranded although
its jobs keep arriving.

Here each node n is measured against its own M_n: the tasks of the scope that could run on n
*when it is empty* (a GPU model of n allowed, no more GPUs than n has of those models, no more
CPU than n's allocatable CPU), most frequent classes first up to ``coverage`` of those tasks,
popularities renormalised (``TargetWorkload.from_classes``). Then, as in FGD (fgd.md §4):
F_n(M_n) = sum_m p_m F_n(m), the fragmentation rate is sum_n F_n(M_n) / idle milli, and a
device is stranded when no class of M_n can use its free share. So an idle node is never
fragmented (every class of M_n fits an empty node), and what blocks a class now is the
allocation state only (partly used GPUs, used CPU, too few free GPUs).

A node with no task of the scope that could ever run on it has fragment 0: nothing there is
fragmented, it is simply not asked for; its free devices are reported as stranded with code
``"model"`` (no task allows its model) or ``"shape"`` (tasks allow the model but need more GPUs
or CPU than the node has).

Pure and deterministic; M_n and its memo are shared by nodes of the same shape (models and
device count, CPU), so a 1,000-node trace cluster builds a handful of workloads.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from scheduling.placement.fragmentation import (
    GPU_MILLI,
    STRANDED_MODEL,
    ClusterFragmentation,
    FragCalculator,
    NodeFragmentation,
    StrandedDevice,
    TargetWorkload,
    TaskClass,
    node_gpu_view,
    stranded_devices,
)
from scheduling.placement.types import ClusterSnapshot, NodeInfo

__all__ = ["STRANDED_SHAPE", "demand_fragmentation", "node_tasks"]

#: Stranded because no task of the scope fits the node's shape (GPU count or CPU).
STRANDED_SHAPE = "shape"


def _shape(node: NodeInfo) -> tuple:
    models = Counter(d.type for d in node.devices)
    return tuple(sorted(models.items())), node.cpu_milli


def node_tasks(node: NodeInfo, tasks: Mapping[TaskClass, int]) -> Counter[TaskClass]:
    """The tasks of ``tasks`` (class -> count) that could run on ``node`` when it is empty:
    GPU classes whose allowed types include a model of the node (any model when the class
    names none), that ask no more GPUs than the node has of those models and no more CPU
    than its allocatable CPU."""
    models = Counter(d.type for d in node.devices)
    out: Counter[TaskClass] = Counter()
    for task, count in tasks.items():
        if task.cpu_only or count <= 0 or task.cpu_milli > node.cpu_milli:
            continue
        have = sum(n for m, n in models.items() if not task.gpu_types or m in task.gpu_types)
        if have >= task.num_gpu:
            out[task] += count
    return out


def _unasked(node: NodeInfo, tasks: Mapping[TaskClass, int]) -> tuple[StrandedDevice, ...]:
    """Free devices of a node no task could ever run on (see the module docstring)."""
    _cpu, _mem, gpus, types = node_gpu_view(node)
    out = []
    for j, free in enumerate(gpus):
        if free <= 0:
            continue
        model = types[j]
        allowed = [t for t in tasks if not t.cpu_only and (not t.gpu_types or model in t.gpu_types)]
        if not allowed:
            out.append(
                StrandedDevice(
                    node.devices[j].index,
                    node.devices[j].uuid,
                    model,
                    free,
                    STRANDED_MODEL,
                    f"no class of the target workload allows model {model}",
                )
            )
        else:
            out.append(
                StrandedDevice(
                    node.devices[j].index,
                    node.devices[j].uuid,
                    model,
                    free,
                    STRANDED_SHAPE,
                    f"the recent tasks that allow {model} need more GPUs or CPU than this node "
                    f"has ({sum(1 for t in types if t == model)} x {model}, "
                    f"{node.cpu_milli} milli CPU)",
                )
            )
    return tuple(out)


def demand_fragmentation(
    snapshot: ClusterSnapshot, tasks: Mapping[TaskClass, int], *, coverage: float = 0.95
) -> ClusterFragmentation:
    """FGD fragmentation of every node of ``snapshot`` against its own M_n (module docstring).

    Args:
        snapshot: the nodes (with their current bookings) to measure.
        tasks: the scope's task classes with their number of tasks (e.g. the recent jobs of
            a resource group, one task per pod and device container).
        coverage: FGD's coverage of each M_n, 0 < coverage <= 1.

    Returns:
        :class:`ClusterFragmentation`; ``fragment_of_capacity`` and ``rate`` over the whole
        snapshot, nodes in name order.
    """
    #: per node shape: its M_n and the calculator of it (None: no task of the scope fits)
    by_shape: dict[tuple, tuple[TargetWorkload, FragCalculator] | None] = {}
    rows = []
    cap = idle = 0
    frag = stranded = 0.0
    for name in sorted(snapshot.nodes):
        node = snapshot.nodes[name]
        key = _shape(node)
        if key not in by_shape:
            relevant = node_tasks(node, tasks)
            wl = TargetWorkload.from_classes(relevant, coverage) if relevant else None
            by_shape[key] = (wl, FragCalculator(wl)) if wl else None
        measure = by_shape[key]
        cpu, _mem, gpus, types = node_gpu_view(node)
        cap += GPU_MILLI * sum(1 for d in node.devices if d.healthy and not d.cordoned)
        t = sum(gpus)
        if measure is None:
            f, found = 0.0, _unasked(node, tasks) if t else ()
        else:
            wl, calc = measure
            f = calc.node(cpu, gpus, types) if t else 0.0
            found = stranded_devices(node, wl) if t else ()
        s = sum(d.free_milli for d in found) / GPU_MILLI
        rows.append(NodeFragmentation(name, t, f, f / t if t else 0.0, s, found))
        idle += t
        frag += f
        stranded += s
    return ClusterFragmentation(
        capacity_milli=cap,
        idle_milli=idle,
        fragment_milli=frag,
        rate=frag / idle if idle else 0.0,
        fragment_of_capacity=frag / cap if cap else 0.0,
        stranded_gpus=stranded,
        nodes=tuple(rows),
    )
