"""GPU fragmentation measure of FGD (Weng et al., USENIX ATC'23), see shared/docs/fgd.md §4.

Vocabulary (simulator ``pkg/utils/frag.go`` of
github.com/hkust-adsl/kubernetes-scheduler-simulator):

- A *task class* m = (cpu_milli, gpu_milli per GPU, num_gpu, allowed GPU types).
- The *target workload* M: the most frequent classes of a task list, added one at a time until
  they cover >= ``coverage`` (0.95) of the tasks, with popularities p_m renormalised to sum 1
  (``GetTypicalPods``; CPU-only classes included, memory ignored).
- F_n(m): the idle GPU milli of node n that class m cannot use:
  T_n (all idle milli) when m is CPU-only, when m cannot run on n (type, CPU, or fewer than
  ``num_gpu`` GPUs with >= ``gpu_milli`` free), else the sum of free milli of the GPUs with less
  than ``gpu_milli`` free (``NodeGpuShareFragAmount`` / ``GetNodePodFrag``).
- F_n(M) = sum_m p_m F_n(m); cluster F(M) = sum_n F_n(M); fragmentation rate = F(M) / idle milli.

A GPU's free milli in the core's HAMi terms is ``10 * min(free cores %, free memory %)`` (a trace
GPU is ``cores_percent`` 100; a trace request of m milli books m/10 % cores and memory), and 0
once the device is full by slots, unhealthy or cordoned.

Everything here is plain Python (stdlib only), deterministic, and side-effect free except for the
memo of :class:`FragCalculator`.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from scheduling.placement.types import ClusterSnapshot, DeviceUsage, NodeInfo

__all__ = [
    "GPU_MILLI",
    "TaskClass",
    "TargetWorkload",
    "FragCalculator",
    "NodeFragmentation",
    "ClusterFragmentation",
    "StrandedDevice",
    "stranded_devices",
    "class_fragment",
    "node_fragment",
    "device_free_milli",
    "node_gpu_view",
    "snapshot_fragmentation",
]

GPU_MILLI = 1000


@dataclass(frozen=True, slots=True, order=True)
class TaskClass:
    """A task shape of the target workload.

    Attributes:
        cpu_milli: CPU request, milli-vCPU.
        gpu_milli: per-GPU share, milli-GPU (0 for CPU-only tasks).
        num_gpu: number of GPUs (0 for CPU-only tasks).
        gpu_types: allowed GPU models, sorted; empty = any.
    """

    cpu_milli: int
    gpu_milli: int
    num_gpu: int
    gpu_types: tuple[str, ...] = ()

    @property
    def cpu_only(self) -> bool:
        """True when the class asks no GPU."""
        return self.num_gpu == 0 or self.gpu_milli == 0


@dataclass(frozen=True, slots=True)
class TargetWorkload:
    """The target workload M: task classes with popularities summing to 1.

    Attributes:
        classes: the classes, most popular first.
        weights: popularity p_m of each class (same order), sum 1.
        coverage: share of the source tasks covered by the kept classes (0..1).
    """

    classes: tuple[TaskClass, ...]
    weights: tuple[float, ...]
    coverage: float = 1.0

    def __post_init__(self) -> None:
        if len(self.classes) != len(self.weights):
            raise ValueError("classes and weights differ in length")
        if not self.classes:
            raise ValueError("a target workload needs at least one class")
        if any(w < 0 for w in self.weights):
            raise ValueError("negative popularity")
        if abs(sum(self.weights) - 1.0) > 1e-6:
            raise ValueError(f"popularities sum to {sum(self.weights)}, expected 1")

    @classmethod
    def from_classes(
        cls, tasks: Iterable[TaskClass], coverage: float = 0.95, step: int = 1
    ) -> TargetWorkload:
        """Build M from task shapes, as the simulator's ``GetTypicalPods``.

        Classes are counted, sorted by count descending (equal counts: larger
        (cpu, gpu_milli, num_gpu, types) first, the simulator's ``sort.Reverse``), then added
        ``step`` at a time until the cumulative count reaches ``coverage`` x the task count.

        Args:
            tasks: one entry per task, or a mapping class -> number of tasks (a Counter).
            coverage: 0 < coverage <= 1; 1.0 keeps every class.
            step: classes added per round (simulator ``podIncreaseStep``, 1 in the paper).

        Raises:
            ValueError: empty task list, coverage outside (0, 1], step < 1.
        """
        if not 0 < coverage <= 1:
            raise ValueError(f"coverage {coverage} outside (0, 1]")
        if step < 1:
            raise ValueError("step must be >= 1")
        counts = Counter(tasks)
        total = sum(counts.values())
        if not total:
            raise ValueError("no tasks to build a target workload from")
        ranked = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
        kept = 0
        cum = 0
        target = coverage * total
        while cum < target and kept < len(ranked):
            upto = min(kept + step, len(ranked))
            cum += sum(c for _, c in ranked[kept:upto])
            kept = upto
        chosen = ranked[:kept]
        return cls(
            classes=tuple(k for k, _ in chosen),
            weights=tuple(c / cum for _, c in chosen),
            coverage=cum / total,
        )


def class_fragment(
    cpu_free_milli: int, gpu_free_milli: Sequence[int], gpu_types: Sequence[str], task: TaskClass
) -> int:
    """F_n(m): idle GPU milli of one node that ``task`` cannot use (fgd.md §4).

    Args:
        cpu_free_milli: free CPU of the node, milli-vCPU.
        gpu_free_milli: free milli of each GPU of the node.
        gpu_types: model of each GPU (same order).
        task: the class m.

    Returns:
        Milli-GPU, integer.
    """
    total = sum(gpu_free_milli)
    if task.cpu_only or cpu_free_milli < task.cpu_milli:
        return total
    allowed = task.gpu_types
    frag = 0
    fits = 0
    for g, t in zip(gpu_free_milli, gpu_types, strict=False):
        if g >= task.gpu_milli and (not allowed or t in allowed):
            fits += 1
        else:
            frag += g
    return frag if fits >= task.num_gpu else total


def node_fragment(
    cpu_free_milli: int,
    gpu_free_milli: Sequence[int],
    gpu_types: Sequence[str],
    workload: TargetWorkload,
) -> float:
    """F_n(M) = sum_m p_m F_n(m), milli-GPU (float)."""
    out = 0.0
    for task, p in zip(workload.classes, workload.weights, strict=False):
        out += p * class_fragment(cpu_free_milli, gpu_free_milli, gpu_types, task)
    return out


class FragCalculator:
    """F_n(M) for one target workload, memoised on the node's (model, CPU level, sorted GPUs).

    F_n(M) depends on the free CPU only through which class CPU requests it covers, so the
    CPU enters the memo key as its *level* (number of distinct class CPU requests <= free CPU).
    Nodes whose GPUs are of one model (every trace node) share memo entries.

    The memo grows with the number of distinct node states seen; :meth:`clear` empties it.
    """

    __slots__ = ("workload", "_cpu_levels", "_memo", "_by_type", "_classes")

    def __init__(self, workload: TargetWorkload) -> None:
        self.workload = workload
        self._cpu_levels = sorted({c.cpu_milli for c in workload.classes})
        self._memo: dict[tuple, float] = {}
        self._by_type: dict[str, tuple] = {}
        self._classes = list(zip(workload.classes, workload.weights, strict=False))

    def cpu_level(self, cpu_free_milli: int) -> int:
        """Number of distinct class CPU requests that fit in ``cpu_free_milli``."""
        return bisect_right(self._cpu_levels, cpu_free_milli)

    def _compiled(self, model: str) -> tuple:
        """Per model: CPU-only weight, and (cpu, gpu_milli, num_gpu, p) of usable GPU classes."""
        comp = self._by_type.get(model)
        if comp is None:
            blind = 0.0
            usable = []
            for task, p in self._classes:
                if task.cpu_only or (task.gpu_types and model not in task.gpu_types):
                    blind += p
                else:
                    usable.append((task.cpu_milli, task.gpu_milli, task.num_gpu, p))
            comp = (blind, tuple(usable))
            self._by_type[model] = comp
        return comp

    def uniform(self, model: str, cpu_free_milli: int, gpus_sorted: tuple[int, ...]) -> float:
        """F_n(M) of a node whose GPUs all have model ``model``.

        Args:
            model: GPU model of every GPU of the node.
            cpu_free_milli: free CPU, milli-vCPU.
            gpus_sorted: free milli per GPU, sorted ascending.
        """
        level = bisect_right(self._cpu_levels, cpu_free_milli)
        key = (model, level, gpus_sorted)
        val = self._memo.get(key)
        if val is not None:
            return val
        total = sum(gpus_sorted)
        blind, usable = self._compiled(model)
        val = blind * total
        n = len(gpus_sorted)
        below = [0]  # below[j]: sum of the j smallest free shares
        for g in gpus_sorted:
            below.append(below[-1] + g)
        for cpu, d, k, p in usable:
            if cpu_free_milli < cpu:
                val += p * total
                continue
            # GPUs below d are the fragment; the rest (sorted ascending) can host the class.
            j = bisect_right(gpus_sorted, d - 1)
            if n - j >= k:
                if j:
                    val += p * below[j]
            else:
                val += p * total
        self._memo[key] = val
        return val

    def node(
        self, cpu_free_milli: int, gpu_free_milli: Sequence[int], gpu_types: Sequence[str]
    ) -> float:
        """F_n(M) for any node (mixed models fall back to the direct sum)."""
        if not gpu_free_milli:
            return 0.0
        first = gpu_types[0]
        if all(t == first for t in gpu_types):
            return self.uniform(first, cpu_free_milli, tuple(sorted(gpu_free_milli)))
        return node_fragment(cpu_free_milli, gpu_free_milli, gpu_types, self.workload)

    def clear(self) -> None:
        """Drop the memo."""
        self._memo.clear()


def device_free_milli(device: DeviceUsage) -> int:
    """Free share of one device in milli-GPU: 10 x min(free cores %, free memory %).

    0 when the device is unhealthy, cordoned, has no free slot, or reports no capacity.
    """
    if not device.healthy or device.cordoned or device.used_slots >= device.split_count:
        return 0
    cores_cap = device.cores_percent
    mem_cap = device.memory_mib
    if cores_cap <= 0 or mem_cap <= 0:
        return 0
    pct = (cores_cap - device.used_cores_percent) * 100 // cores_cap
    mem = (mem_cap - device.used_memory_mib) * 100 // mem_cap
    if mem < pct:
        pct = mem
    if pct > 100:
        pct = 100
    return pct * 10 if pct > 0 else 0


def node_gpu_view(node: NodeInfo) -> tuple[int, int, tuple[int, ...], tuple[str, ...]]:
    """(free CPU milli, free memory MiB, free milli per device, device models) of a node.

    Devices come in ``node.devices`` order. A node that is not schedulable, has an error or
    unmatched bookings (:meth:`NodeInfo.unmatched_bookings`) is seen with no free CPU, memory
    or GPU.
    """
    if not node.schedulable or node.error or node.unmatched_bookings():
        return 0, 0, tuple(0 for _ in node.devices), tuple(d.type for d in node.devices)
    return (
        node.cpu_milli - node.used_cpu_milli,
        node.memory_mib - node.used_memory_mib,
        tuple(device_free_milli(d) for d in node.devices),
        tuple(d.type for d in node.devices),
    )


@dataclass(frozen=True, slots=True)
class NodeFragmentation:
    """Fragmentation of one node.

    Attributes:
        node: node name.
        idle_milli: free GPU milli on the node (T_n).
        fragment_milli: F_n(M), milli-GPU.
        rate: fragment / idle (0 when nothing is idle).
        stranded_gpus: free milli of GPUs that no class of M can use at all on this node now
            (F_n(m) counts them for every m), in GPUs.
        stranded: the stranded devices with the reason each is stranded (node device
            order); their ``free_milli`` sum to ``stranded_gpus`` x 1000.
    """

    node: str
    idle_milli: int
    fragment_milli: float
    rate: float
    stranded_gpus: float
    stranded: tuple[StrandedDevice, ...] = ()


@dataclass(frozen=True, slots=True)
class ClusterFragmentation:
    """Fragmentation of a cluster snapshot.

    Attributes:
        capacity_milli: GPU capacity, milli-GPU (1000 per usable device).
        idle_milli: free GPU milli.
        fragment_milli: F(M).
        rate: F(M) / idle (the FGD fragmentation rate, 0..1).
        fragment_of_capacity: F(M) / capacity.
        stranded_gpus: sum of the nodes' stranded GPUs.
        nodes: per-node figures, by node name order.
    """

    capacity_milli: int
    idle_milli: int
    fragment_milli: float
    rate: float
    fragment_of_capacity: float
    stranded_gpus: float
    nodes: tuple[NodeFragmentation, ...] = field(default_factory=tuple)


def snapshot_fragmentation(
    snapshot: ClusterSnapshot, workload: TargetWorkload, calc: FragCalculator | None = None
) -> ClusterFragmentation:
    """FGD fragmentation of every node of ``snapshot`` and of the cluster (dashboards, bench).

    Args:
        snapshot: the cluster.
        workload: the target workload M (e.g. ``TargetWorkload.from_classes`` over recent jobs).
        calc: optional memoising calculator for ``workload`` (reused across calls).

    Returns:
        Cluster totals and per-node figures (nodes sorted by name).
    """
    calc = calc or FragCalculator(workload)
    rows = []
    cap = idle = 0
    frag = 0.0
    stranded = 0.0
    for name in sorted(snapshot.nodes):
        node = snapshot.nodes[name]
        cpu, _mem, gpus, types = node_gpu_view(node)
        cap += GPU_MILLI * sum(1 for d in node.devices if d.healthy and not d.cordoned)
        t = sum(gpus)
        f = calc.node(cpu, gpus, types) if t else 0.0
        found = _stranded_devices_of(node, cpu, gpus, types, workload) if t else ()
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


# --- stranded devices -----------------------------------------------------------------------

#: Reason codes of :class:`StrandedDevice`, in the order the classes of M are filtered.
STRANDED_NO_GPU_CLASS = "no_gpu_class"
STRANDED_MODEL = "model"
STRANDED_CPU = "cpu"
STRANDED_TOO_SMALL = "too_small"
STRANDED_TOO_FEW = "too_few_gpus"


@dataclass(frozen=True, slots=True)
class StrandedDevice:
    """A device with free capacity that no class of the target workload can use on its node.

    Attributes:
        index: device index on the node.
        uuid: device serial / UUID.
        model: device model.
        free_milli: its free share, milli-GPU (> 0).
        code: why, one of ``"no_gpu_class"`` (M has only CPU-only classes), ``"model"`` (no
            GPU class allows the model), ``"cpu"`` (the node's free CPU is below every class
            that allows the model), ``"too_small"`` (the free share is below the per-GPU
            request of every class that allows the model and fits the CPU),
            ``"too_few_gpus"`` (classes fit this GPU but need more GPUs with that much free
            than the node has).
        reason: the same in words, with the figures.
    """

    index: int
    uuid: str
    model: str
    free_milli: int
    code: str
    reason: str


def _stranded(
    cpu: int, gpus: Sequence[int], types: Sequence[str], wl: TargetWorkload
) -> list[tuple[int, str, str]]:
    """``[(position, code, reason)]`` of the GPUs (by position in ``gpus``) with free milli
    that no GPU class of ``wl`` can use on this node.

    A GPU j is usable by class m when the model is allowed, the node's free CPU covers
    cpu_m, g_j >= d_m and at least k_m GPUs of the node (j included) have >= d_m free of an
    allowed model: exactly the GPUs that F_n(m) counts as fragment for every m of M. Memory is
    not part of the measure (fgd.md §4). The reason names the last filter the classes reach
    (model, then CPU, then per-GPU share, then GPU count); for ``too_few_gpus`` the class
    closest to fitting is named (smallest shortfall, then fewest GPUs, then smallest share).
    """
    gpu_classes = [c for c in wl.classes if not c.cpu_only]
    out = []
    for j, g in enumerate(gpus):
        if g <= 0:
            continue
        size_fit, found = _filter_classes(g, types[j], cpu, gpu_classes)
        if found is None:
            found = _too_few_gpus(size_fit, gpus, types)
        if found is not None:
            out.append((j, *found))
    return out


def _filter_classes(
    g: int, t: str, cpu: int, gpu_classes: Sequence[TaskClass]
) -> tuple[list[TaskClass], tuple[str, str] | None]:
    """The per-GPU filters of :func:`_stranded` for a GPU of model ``t`` with ``g`` milli
    free on a node with ``cpu`` milli free: model, then CPU, then per-GPU share.

    Returns:
        ``(classes passing all three, None)``, or ``([], (code, reason))`` naming the filter
        that the last remaining classes fail (``no_gpu_class`` when there are none at all).
    """
    if not gpu_classes:
        return [], (STRANDED_NO_GPU_CLASS, "the target workload has no GPU class")
    allowed = [c for c in gpu_classes if not c.gpu_types or t in c.gpu_types]
    if not allowed:
        return [], (STRANDED_MODEL, f"no class of the target workload allows model {t}")
    cpu_fit = [c for c in allowed if cpu >= c.cpu_milli]
    if not cpu_fit:
        need = min(c.cpu_milli for c in allowed)
        return [], (
            STRANDED_CPU,
            f"node free CPU {cpu} milli is below every class "
            f"that allows {t} (the smallest needs {need} milli)",
        )
    size_fit = [c for c in cpu_fit if g >= c.gpu_milli]
    if not size_fit:
        need = min(c.gpu_milli for c in cpu_fit)
        return [], (
            STRANDED_TOO_SMALL,
            f"{g} milli free is below the smallest "
            f"per-GPU request ({need} milli) of the classes that can run here",
        )
    return size_fit, None


def _too_few_gpus(
    size_fit: Sequence[TaskClass], gpus: Sequence[int], types: Sequence[str]
) -> tuple[str, str] | None:
    """The GPU-count filter of :func:`_stranded`: ``(too_few_gpus, reason)`` when none of
    ``size_fit`` (the classes that fit this GPU) finds ``k_m`` GPUs of the node with ``d_m``
    free of an allowed model; None when one does. The reason names the class closest to
    fitting (smallest shortfall, then fewest GPUs, then smallest share)."""
    best: tuple[int, int, int, int] | None = None
    for c in size_fit:
        fits = sum(
            1
            for g2, t2 in zip(gpus, types, strict=False)
            if g2 >= c.gpu_milli and (not c.gpu_types or t2 in c.gpu_types)
        )
        if fits >= c.num_gpu:
            return None
        key = (c.num_gpu - fits, c.num_gpu, c.gpu_milli, fits)
        if best is None or key < best:
            best = key
    if best is None:
        return None
    _short, k, d, fits = best
    return (
        STRANDED_TOO_FEW,
        f"the classes this GPU fits need {k} GPUs with >= {d} milli free; the node has {fits}",
    )


def _stranded_devices_of(
    node: NodeInfo, cpu: int, gpus: Sequence[int], types: Sequence[str], wl: TargetWorkload
) -> tuple[StrandedDevice, ...]:
    return tuple(
        StrandedDevice(node.devices[j].index, node.devices[j].uuid, types[j], gpus[j], code, reason)
        for j, code, reason in _stranded(cpu, gpus, types, wl)
    )


def stranded_devices(node: NodeInfo, workload: TargetWorkload) -> tuple[StrandedDevice, ...]:
    """The devices of ``node`` whose free share no class of ``workload`` can use there now.

    Args:
        node: the node (its usage as booked; an unschedulable node or one with an error has
            nothing free, so nothing stranded).
        workload: the target workload M.

    Returns:
        Stranded devices in ``node.devices`` order, each with its reason code and text.
    """
    cpu, _mem, gpus, types = node_gpu_view(node)
    return _stranded_devices_of(node, cpu, gpus, types, workload)
