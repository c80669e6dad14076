"""Baseline GPU-sharing placement policies of the FGD paper's evaluation (shared/docs/fgd.md §3).

Score rules follow the authors' simulator (github.com/hkust-adsl/kubernetes-scheduler-simulator,
``pkg/simulator/plugin/*_score.go``): integer scores 0..100, highest wins, ties to the lowest
tie rank. GPU choice for a sharing task is best-fit (least free GPU that fits, lowest index on
ties) except for Random; whole-GPU tasks take the lowest-numbered fully free GPUs.

Notation: c = node free CPU (milli), T = node free GPU milli, request cpu and R = num_gpu x
gpu_milli. Normalisers are the simulator's ``MaxSpecCpu`` 128000 and ``MaxSpecGpu`` 8000.
"""

from __future__ import annotations

import random

from scheduling.placement.fragmentation import GPU_MILLI
from scheduling.placement.plugins.frag_engine import NodeTable, TaskView

__all__ = [
    "MAX_SPEC_CPU",
    "MAX_SPEC_GPU",
    "RandomPolicy",
    "DotProdPolicy",
    "GpuClusteringPolicy",
    "GpuPackingPolicy",
    "BestFitPolicy",
    "gpu_tag",
]

MAX_SPEC_CPU = 128000
MAX_SPEC_GPU = 8000


def _go_div(a: int, b: int) -> int:
    """Integer division truncating toward zero (Go ``/`` on int64)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def gpu_tag(task: TaskView) -> str:
    """GpuClustering class of a task: "" (CPU-only), "share", or "<k>-gpu"
    (``GetGpuAffinityFromPodAnnotation``)."""
    if not task.num_gpu:
        return ""
    if task.is_share:
        return "share"
    return f"{task.num_gpu}-gpu"


class _BestFitGpus:
    """Best-fit GPU choice for sharing tasks, lowest fully free GPUs for whole-GPU tasks."""

    def choose_gpus(self, table: NodeTable, i: int, task: TaskView) -> tuple[int, ...]:
        if not task.num_gpu:
            return ()
        if task.is_share:
            return (table.best_fit_gpu(i, task),)
        return table.whole_gpus(i, task)

    def key(self, task: TaskView) -> tuple:
        return task.key


class RandomPolicy:
    """Uniform over the feasible nodes; a sharing task goes on a uniformly random fitting GPU.

    Not a :class:`LazySelector` policy: :meth:`pick` scans the table with its own seeded RNG.
    """

    name = "Random"

    def __init__(self, seed: int | None = 0) -> None:
        self.rng = random.Random(seed)

    def pick(self, table: NodeTable, task: TaskView) -> int | None:
        """A uniformly random feasible node index, or None."""
        feasible = [i for i in range(len(table.cpu)) if table.fits(i, task)]
        if not feasible:
            return None
        return feasible[self.rng.randrange(len(feasible))]

    def choose_gpus(self, table: NodeTable, i: int, task: TaskView) -> tuple[int, ...]:
        if not task.num_gpu:
            return ()
        if task.is_share:
            fit = table.fitting_gpus(i, task)
            return (fit[self.rng.randrange(len(fit))],)
        return table.whole_gpus(i, task)


class DotProdPolicy(_BestFitGpus):
    """Tetris-like alignment, "merge" dimensions and "max" normalisation (``dot_product_score.go``).

    score = int(100 * (1 - ((c/128000)(cpu/128000) + (T/8000)(R/8000)) / 2)).
    """

    name = "DotProd"
    state_scored = True  # score reads the node state only (LazySelector memo)

    def score(self, table: NodeTable, i: int, task: TaskView) -> int | None:
        if not table.fits_but_memory(i, task):
            return None
        c = table.cpu[i]
        t = sum(table.gpus[i])
        dot = (c / MAX_SPEC_CPU) * (task.cpu_milli / MAX_SPEC_CPU)
        dot += (t / MAX_SPEC_GPU) * (task.total_gpu_milli / MAX_SPEC_GPU)
        return int(100 * (1 - dot / 2))


class BestFitPolicy(_BestFitGpus):
    """Least leftover after placement (``best_fit_score.go``).

    raw = 0.5 (c - cpu)/128000 + 0.5 (T - R)/8000; score = int(100 (1 - raw)).
    """

    name = "BestFit"
    state_scored = True  # score reads the node state only (LazySelector memo)

    def score(self, table: NodeTable, i: int, task: TaskView) -> int | None:
        if not table.fits_but_memory(i, task):
            return None
        raw = (table.cpu[i] - task.cpu_milli) / MAX_SPEC_CPU * 0.5
        raw += (sum(table.gpus[i]) - task.total_gpu_milli) / MAX_SPEC_GPU * 0.5
        return int((1.0 - raw) * 100)


class GpuPackingPolicy(_BestFitGpus):
    """Prefer a partly used GPU, then free GPUs on a used node, then an empty (small) node
    (``gpu_packing_score.go``). CPU-only tasks score 0 everywhere.

    - node entirely free: max(33 - free GPUs, free GPUs);
    - best-fit GPUs include fully free ones: max(50 - their number, 33);
    - else: max(100 - (sum over used GPUs of free*100/1000) / 10, 50).
    """

    name = "GpuPacking"
    state_scored = True  # score reads the node state only (LazySelector memo)

    def score(self, table: NodeTable, i: int, task: TaskView) -> int | None:
        if not table.fits_but_memory(i, task):
            return None
        if not task.num_gpu:
            return 0
        g = table.gpus[i]
        full = sum(1 for x in g if x == GPU_MILLI)
        if full == len(g):
            return max(33 - full, full)
        fit = table.fitting_gpus(i, task)
        fit.sort(key=lambda j: g[j])  # stable: ascending free, index order on ties
        use = fit[: task.num_gpu]
        n_full = sum(1 for j in use if g[j] == GPU_MILLI)
        if n_full:
            return max(50 - n_full, 33)
        ratio = sum(g[j] * 100 // GPU_MILLI for j in use)
        return max(100 - ratio // 10, 50)


class GpuClusteringPolicy(_BestFitGpus):
    """Keep tasks of one GPU class together (``gpu_clustering_score.go``).

    fullness = 25 (8000 - T) / 8000 (integer), plus 75 when the node hosts only this class,
    50 when it hosts this class and others, 25 when it hosts no GPU task, 0 otherwise.
    CPU-only tasks score 0. Node tags come from ``NodeTable.tags`` (kept by the caller on
    reserve/unreserve).
    """

    name = "GpuClustering"
    state_scored = False  # score reads NodeTable.tags: no LazySelector memo
    uses_tags = True  # the plugin keeps NodeTable.tags current (TracePolicyPlugin.sync)

    def score(self, table: NodeTable, i: int, task: TaskView) -> int | None:
        if not table.fits_but_memory(i, task):
            return None
        tag = gpu_tag(task)
        if not tag:
            return 0
        fullness = _go_div(25 * (MAX_SPEC_GPU - sum(table.gpus[i])), MAX_SPEC_GPU)
        tags = table.tags[i]
        if tags.get(tag, 0) > 0:
            return fullness + (75 if len(tags) == 1 else 50)
        return fullness + (25 if not tags else 0)
