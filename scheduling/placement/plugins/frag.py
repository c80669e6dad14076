"""Fragmentation-aware placement policies: FGD (Weng et al., ATC'23) and our variant.

FGD (shared/docs/fgd.md §3-4; simulator ``pkg/simulator/plugin/fgd_score.go``): place a task
where the node's expected fragmentation F_n(M) grows least. Score of node n:
``int(100 * sigmoid((F_before - F_after) / 1000))``; for a sharing task every GPU that fits is
tried and the best kept (lowest index on ties); whole-GPU tasks take the lowest-numbered free
GPUs. Ties between nodes go to the lowest tie rank.

See :class:`FgdPolicy` for the parameters of our variant.
"""

from __future__ import annotations

import math

from scheduling.placement.fragmentation import FragCalculator, TargetWorkload
from scheduling.placement.plugins.frag_engine import NodeTable, TaskView

__all__ = ["FgdPolicy", "FragGuardPolicy", "fgd_score"]


def fgd_score(before: float, after: float) -> int:
    """The simulator's FGD node score: int(100 * sigmoid((before - after) / 1000))."""
    x = (before - after) / 1000
    return int(1.0 / (1.0 + math.exp(-x)) * 100)


class FgdPolicy:
    """FGD, and the knobs of our fragmentation-aware variant.

    Args:
        workload: the target workload M.
        name: policy name.
        pack_tiebreak: when True, the integer FGD score is refined by a packing key so that
            equal FGD scores prefer the node left with less free GPU (then less free CPU):
            ``score = fgd * 2^20 + (8000 - T_after) * 2^... `` (still an integer, still
            highest wins). False = simulator-faithful.
    """

    def __init__(
        self, workload: TargetWorkload, name: str = "FGD", pack_tiebreak: bool = False
    ) -> None:
        self.name = name
        self.workload = workload
        self.calc = FragCalculator(workload)
        self.pack_tiebreak = pack_tiebreak
        self._memo: dict[tuple, int] = {}

    def key(self, task: TaskView) -> tuple:
        return task.key

    # -- helpers -------------------------------------------------------------------------------

    def _frag(self, table: NodeTable, i: int, cpu: int, gpus: list[int] | tuple[int, ...]) -> float:
        model = table.model[i]
        if model is not None:
            return self.calc.uniform(model, cpu, tuple(sorted(gpus)))
        return self.calc.node(cpu, gpus, table.types[i])

    def _gpu_scores(self, table: NodeTable, i: int, task: TaskView) -> list[tuple[int, int]]:
        """(score, device index) for each device a sharing task could use on node i."""
        g = table.gpus[i]
        cpu = table.cpu[i]
        before = self._frag(table, i, cpu, g)
        cpu2 = cpu - task.cpu_milli
        out = []
        for j in table.fitting_gpus(i, task):
            after_g = list(g)
            after_g[j] -= task.gpu_milli
            out.append(
                (
                    self._refine(
                        fgd_score(before, self._frag(table, i, cpu2, after_g)), after_g, cpu2
                    ),
                    j,
                )
            )
        return out

    def _refine(self, s: int, after_g: list[int], cpu_after: int) -> int:
        if not self.pack_tiebreak:
            return s
        t_after = sum(after_g)
        return (s << 24) + ((8000 - min(t_after, 8000)) << 10) + max(0, 1023 - cpu_after // 256)

    # -- TracePolicy -----------------------------------------------------------------------------

    def score(self, table: NodeTable, i: int, task: TaskView) -> int | None:
        if not table.fits(i, task):
            return None
        model = table.model[i]
        g = table.gpus[i]
        cpu = table.cpu[i]
        if model is not None:
            calc = self.calc
            memo_key = (
                model,
                calc.cpu_level(cpu),
                calc.cpu_level(cpu - task.cpu_milli),
                tuple(sorted(g)),
                task.gpu_milli,
                task.num_gpu,
                cpu // 256 if self.pack_tiebreak else 0,
            )
            hit = self._memo.get(memo_key)
            if hit is not None:
                return hit
        else:
            memo_key = None
        if task.is_share:
            s = max(sc for sc, _ in self._gpu_scores(table, i, task))
        else:
            before = self._frag(table, i, cpu, g)
            after_g = list(g)
            for j in table.whole_gpus(i, task) if task.num_gpu else ():
                after_g[j] = 0
            s = self._refine(
                fgd_score(before, self._frag(table, i, cpu - task.cpu_milli, after_g)),
                after_g,
                cpu - task.cpu_milli,
            )
        if memo_key is not None:
            self._memo[memo_key] = s
        return s

    def choose_gpus(self, table: NodeTable, i: int, task: TaskView) -> tuple[int, ...]:
        if not task.num_gpu:
            return ()
        if not task.is_share:
            return table.whole_gpus(i, task)
        best_s = None
        best_j = -1
        for s, j in self._gpu_scores(table, i, task):
            if best_s is None or s > best_s:
                best_s, best_j = s, j
        return (best_j,)


class FragGuardPolicy(FgdPolicy):
    """Our policy: FGD for GPU tasks; CPU-only tasks go where they strand the least GPU.

    A CPU-only task takes CPU and memory that the GPUs of its node may later need; FGD's
    quantised score hardly sees that (a CPU change moves F_n(M) by less than its 40-milli score
    step). FragGuard scores a CPU-only task ``(8000 - T_n) * 128 + fgd``: first the node with
    the least idle GPU milli (nodes whose GPUs are all booked first), FGD's score breaking
    ties, then the tie rank. GPU tasks are scored exactly as FGD.
    """

    def __init__(self, workload: TargetWorkload, name: str = "FragGuard") -> None:
        super().__init__(workload, name=name)

    def score(self, table: NodeTable, i: int, task: TaskView) -> int | None:
        s = super().score(table, i, task)
        if s is None or task.num_gpu:
            return s
        return (8000 - min(8000, sum(table.gpus[i]))) * 128 + s
