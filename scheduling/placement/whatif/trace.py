"""Reader for the Alibaba GPU-sharing trace ``cluster-trace-gpu-v2023`` ("openb").

The trace is the one behind *Beware of Fragmentation* (FGD, Weng et al., USENIX ATC'23); the
file layout is described in ``shared/data/alibaba-gpu-v2023/README.md`` and the method in
``shared/docs/fgd.md``.

Two layers:

- ``read_nodes(path)`` / ``read_pods(path)`` parse the CSVs into plain frozen records
  (:class:`NodeRecord`, :class:`PodRecord`). They check every row and raise :class:`TraceError`
  naming the file, the 1-based line and the column. The Django ``import_trace`` command reuses
  them.
- ``build_snapshot(nodes)`` / ``pod_request(pod)`` turn records into the placement core's types
  with HAMi semantics: a trace GPU is one device of ``cores_percent`` 100; a pod asking
  ``gpu_milli`` m per GPU asks ``cores_percent`` m/10 and ``memory_percent`` m/10 of each of its
  ``num_gpu`` devices (``gpu_milli`` 1000 therefore means whole, exclusive devices);
  ``gpu_spec`` "A|B" becomes ``types_include`` ("A", "B").

Stdlib only; no clock, no randomness.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from scheduling.placement.fragmentation import TaskClass
from scheduling.placement.types import (
    ClusterSnapshot,
    ContainerRequest,
    DeviceRequest,
    DeviceUsage,
    NodeInfo,
    PodRequest,
)

__all__ = [
    "GPU_MILLI",
    "NodeRecord",
    "PodRecord",
    "TraceError",
    "build_snapshot",
    "device_memory_mib",
    "pod_request",
    "read_nodes",
    "read_pods",
    "task_classes",
]

#: Milli-GPU of one whole trace GPU (simulator constant ``MILLI``).
GPU_MILLI = 1000

NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_REQUIRED_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
POD_OPTIONAL_COLUMNS = (
    "gpu_spec",
    "qos",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
)

#: Device memory per trace model, MiB. The trace gives none; placement uses
#: ``memory_percent`` so these only set the scale shown on dashboards. G1/G2/G3 are
#: undisclosed internal models; 32 GiB is an assumption.
_MODEL_MEMORY_MIB = {"P100": 16384, "T4": 15360, "V100M16": 16384, "V100M32": 32768, "A10": 24576}
_DEFAULT_MEMORY_MIB = 32768


class TraceError(ValueError):
    """A trace file could not be read.

    Attributes:
        path: the file.
        line: 1-based line number (1 is the header), or 0 for whole-file problems.
        column: the column name, or "" when not tied to one column.
    """

    def __init__(self, path: str | Path, line: int, column: str, message: str) -> None:
        self.path = str(path)
        self.line = line
        self.column = column
        where = f"{self.path}:{line}" if line else self.path
        if column:
            where += f" column {column!r}"
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True, slots=True)
class NodeRecord:
    """One row of ``openb_node_list_*.csv``.

    Attributes:
        name: ``sn``.
        cpu_milli: vCPUs x 1000.
        memory_mib: main memory, MiB.
        gpu_count: number of GPUs (0-8).
        model: GPU model string ("" for CPU-only nodes).
        line: 1-based line in the file.
    """

    name: str
    cpu_milli: int
    memory_mib: int
    gpu_count: int
    model: str
    line: int = 0


@dataclass(frozen=True, slots=True)
class PodRecord:
    """One row of ``openb_pod_list_*.csv``.

    Attributes:
        name: pod name.
        cpu_milli: CPU request, milli-vCPU.
        memory_mib: memory request, MiB.
        num_gpu: number of GPUs (0-8).
        gpu_milli: share of each GPU in thousandths (< 1000 only with ``num_gpu`` 1).
        gpu_spec: allowed GPU models, sorted and de-duplicated; empty = any model.
        qos, pod_phase: as in the trace ("" when the file has no such column).
        creation_time, deletion_time, scheduled_time: seconds, ``None`` when absent.
        line: 1-based line in the file.
    """

    name: str
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int
    gpu_spec: tuple[str, ...] = ()
    qos: str = ""
    pod_phase: str = ""
    creation_time: int | None = None
    deletion_time: int | None = None
    scheduled_time: int | None = None
    line: int = 0

    @property
    def total_gpu_milli(self) -> int:
        """GPU request of the whole pod, milli-GPU (``num_gpu * gpu_milli``)."""
        return self.num_gpu * self.gpu_milli

    @property
    def is_gpu_share(self) -> bool:
        """True for a fractional (GPU-sharing) pod: one GPU, less than 1000 milli."""
        return self.num_gpu == 1 and self.gpu_milli < GPU_MILLI


def _open_rows(
    path: str | Path, required: tuple[str, ...]
) -> tuple[list[str], list[tuple[int, list[str]]]]:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TraceError(p, 0, "", "file not found") from None
    except UnicodeDecodeError as exc:
        raise TraceError(p, 0, "", f"not UTF-8 text ({exc.reason})") from None
    reader = csv.reader(text.splitlines())
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise TraceError(p, 1, "", "empty file, expected a header line") from None
    missing = [c for c in required if c not in header]
    if missing:
        raise TraceError(p, 1, missing[0], f"header lacks column(s) {', '.join(missing)}")
    dup = [h for h in header if header.count(h) > 1]
    if dup:
        raise TraceError(p, 1, dup[0], "duplicate column in header")
    rows = []
    for line_no, row in enumerate(reader, start=2):
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise TraceError(p, line_no, "", f"expected {len(header)} fields, found {len(row)}")
        rows.append((line_no, [cell.strip() for cell in row]))
    return header, rows


def _int(
    path: str | Path, line: int, column: str, raw: str, *, lo: int = 0, hi: int | None = None
) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise TraceError(path, line, column, f"expected an integer, found {raw!r}") from None
    if value < lo or (hi is not None and value > hi):
        bound = f"{lo}..{hi}" if hi is not None else f">= {lo}"
        raise TraceError(path, line, column, f"value {value} out of range {bound}")
    return value


def read_nodes(path: str | Path) -> list[NodeRecord]:
    """Parse a node list (``openb_node_list_gpu_node.csv`` or ``..._all_node.csv``).

    Args:
        path: CSV with columns ``sn,cpu_milli,memory_mib,gpu,model``.

    Returns:
        The nodes in file order.

    Raises:
        TraceError: missing file or column, wrong field count, a non-integer or negative number,
            more than 8 GPUs, a GPU count without a model, or a duplicate node name.
    """
    header, rows = _open_rows(path, NODE_COLUMNS)
    col = {name: header.index(name) for name in NODE_COLUMNS}
    seen: dict[str, int] = {}
    out: list[NodeRecord] = []
    for line, row in rows:
        name = _claim_name(path, line, "sn", "node", row[col["sn"]], seen)
        cpu = _int(path, line, "cpu_milli", row[col["cpu_milli"]])
        mem = _int(path, line, "memory_mib", row[col["memory_mib"]])
        gpus = _int(path, line, "gpu", row[col["gpu"]], hi=8)
        model = row[col["model"]]
        if gpus and not model:
            raise TraceError(path, line, "model", f"{gpus} GPU(s) but no model")
        out.append(NodeRecord(name, cpu, mem, gpus, model if gpus else "", line))
    return out


def read_pods(path: str | Path) -> list[PodRecord]:
    """Parse a pod list (any of the 26 ``openb_pod_list_*.csv`` variants).

    The ``multigpu*`` files have only the five resource columns; the missing columns read as
    ``""`` / ``None``.

    Args:
        path: CSV with at least ``name,cpu_milli,memory_mib,num_gpu,gpu_milli``.

    Returns:
        The pods in file order.

    Raises:
        TraceError: missing file or column, wrong field count, bad integers, ``num_gpu`` above 8,
            ``gpu_milli`` outside 0..1000 or not a multiple of 10, a fractional share with more
            than one GPU, a GPU count without a share (or the reverse), a deletion before the
            creation, or a duplicate pod name.
    """
    header, rows = _open_rows(path, POD_REQUIRED_COLUMNS)
    col = {
        name: header.index(name)
        for name in POD_REQUIRED_COLUMNS + POD_OPTIONAL_COLUMNS
        if name in header
    }
    seen: dict[str, int] = {}
    out: list[PodRecord] = []
    for line, row in rows:
        _claim_name(path, line, "name", "pod", row[col["name"]], seen)
        out.append(_pod_record(path, line, row, col))
    return out


def _claim_name(
    path: str | Path, line: int, column: str, kind: str, name: str, seen: dict[str, int]
) -> str:
    """Record ``name`` (of a ``kind`` row, from ``column``) as first seen on ``line``.

    Returns:
        ``name``.

    Raises:
        TraceError: the name is empty or was already seen (the first line is named).
    """
    if not name:
        raise TraceError(path, line, column, f"empty {kind} name")
    if name in seen:
        raise TraceError(
            path, line, column, f"duplicate {kind} {name!r} (first on line {seen[name]})"
        )
    seen[name] = line
    return name


def _pod_record(path: str | Path, line: int, row: list[str], col: dict[str, int]) -> PodRecord:
    """One pod row (``col``: column index by name, optional columns only when present).

    Raises:
        TraceError: as :func:`read_pods` lists, except the name checks.
    """
    cpu = _int(path, line, "cpu_milli", row[col["cpu_milli"]])
    mem = _int(path, line, "memory_mib", row[col["memory_mib"]])
    num_gpu, gpu_milli = _gpu_request(path, line, row[col["num_gpu"]], row[col["gpu_milli"]])
    spec_raw = row[col["gpu_spec"]] if "gpu_spec" in col else ""
    spec = tuple(sorted({s.strip() for s in spec_raw.split("|") if s.strip()}))
    if spec and not num_gpu:
        raise TraceError(path, line, "gpu_spec", "GPU model constraint on a CPU-only pod")
    created, deleted, scheduled = _pod_times(path, line, row, col)
    return PodRecord(
        name=row[col["name"]],
        cpu_milli=cpu,
        memory_mib=mem,
        num_gpu=num_gpu,
        gpu_milli=gpu_milli,
        gpu_spec=spec,
        qos=row[col["qos"]] if "qos" in col else "",
        pod_phase=row[col["pod_phase"]] if "pod_phase" in col else "",
        creation_time=created,
        deletion_time=deleted,
        scheduled_time=scheduled,
        line=line,
    )


def _pod_times(
    path: str | Path, line: int, row: list[str], col: dict[str, int]
) -> tuple[int | None, int | None, int | None]:
    """``(creation, deletion, scheduled)`` times of a pod row (None: column absent or empty).

    Raises:
        TraceError: a bad integer, or a deletion before the creation.
    """

    def opt_time(name: str) -> int | None:
        if name not in col or row[col[name]] == "":
            return None
        return _int(path, line, name, row[col[name]])

    created, deleted = opt_time("creation_time"), opt_time("deletion_time")
    if created is not None and deleted is not None and deleted < created:
        raise TraceError(path, line, "deletion_time", f"{deleted} is before creation {created}")
    return created, deleted, opt_time("scheduled_time")


def _gpu_request(path: str | Path, line: int, num_raw: str, milli_raw: str) -> tuple[int, int]:
    """``(num_gpu, gpu_milli)`` of one pod row, checked as :func:`read_pods` documents."""
    num_gpu = _int(path, line, "num_gpu", num_raw, hi=8)
    gpu_milli = _int(path, line, "gpu_milli", milli_raw, hi=GPU_MILLI)
    if gpu_milli % 10:
        raise TraceError(path, line, "gpu_milli", f"{gpu_milli} is not a multiple of 10")
    if num_gpu == 0 and gpu_milli:
        raise TraceError(path, line, "gpu_milli", f"{gpu_milli} milli-GPU with num_gpu 0")
    if num_gpu and not gpu_milli:
        raise TraceError(path, line, "gpu_milli", f"num_gpu {num_gpu} with 0 milli-GPU")
    if num_gpu > 1 and gpu_milli < GPU_MILLI:
        raise TraceError(
            path, line, "gpu_milli", f"fractional share {gpu_milli} with num_gpu {num_gpu}"
        )
    return num_gpu, gpu_milli


def device_memory_mib(model: str) -> int:
    """Device memory used for a trace GPU model, MiB (assumed; the trace has none)."""
    return _MODEL_MEMORY_MIB.get(model, _DEFAULT_MEMORY_MIB)


def build_snapshot(
    nodes: Sequence[NodeRecord], replicas: int = 1, split_count: int = 100
) -> ClusterSnapshot:
    """A :class:`~scheduling.placement.types.ClusterSnapshot` of trace nodes (HAMi semantics).

    Each trace GPU becomes a ``Device`` with vendor "NVIDIA", ``type`` = the CSV model,
    ``cores_percent`` 100, ``memory_mib`` from :func:`device_memory_mib`, ``split_count``
    ``split_count`` (100: a 10-milli share granularity never runs out of slots), uuid
    ``"<node>-gpu<index>"``.

    Args:
        nodes: parsed node records.
        replicas: K >= 1 copies of the node list (benchmark ``--scale``); copy r > 0 of node
            "n" is named "n-r<r>".
        split_count: HAMi slots per device.

    Raises:
        ValueError: replicas < 1, duplicate node names.
    """
    if replicas < 1:
        raise ValueError("replicas must be >= 1")
    out = []
    for r in range(replicas):
        for rec in nodes:
            name = rec.name if r == 0 else f"{rec.name}-r{r}"
            mem = device_memory_mib(rec.model)
            devices = [
                DeviceUsage(
                    uuid=f"{name}-gpu{j}",
                    node=name,
                    index=j,
                    type=rec.model,
                    vendor="NVIDIA",
                    memory_mib=mem,
                    cores_percent=100,
                    split_count=split_count,
                )
                for j in range(rec.gpu_count)
            ]
            out.append(
                NodeInfo(
                    name=name, devices=devices, cpu_milli=rec.cpu_milli, memory_mib=rec.memory_mib
                )
            )
    return ClusterSnapshot.from_nodes(out)


def pod_request(pod: PodRecord, name: str | None = None) -> PodRequest:
    """The :class:`~scheduling.placement.types.PodRequest` of a trace pod (HAMi semantics).

    One container "main"; a GPU pod gets one ``DeviceRequest(vendor="NVIDIA", count=num_gpu,
    cores_percent=gpu_milli/10, memory_percent=gpu_milli/10, types_include=gpu_spec)``.
    """
    return PodRequest(
        name=name or pod.name,
        cpu_milli=pod.cpu_milli,
        memory_mib=pod.memory_mib,
        containers=_containers(pod.num_gpu, pod.gpu_milli, pod.gpu_spec),
    )


@lru_cache(maxsize=1024)
def _containers(num_gpu: int, gpu_milli: int, gpu_spec: tuple[str, ...]) -> tuple:
    """The (frozen, shareable) containers of a trace pod of this GPU shape."""
    devices: tuple = ()
    if num_gpu:
        pct = gpu_milli // 10
        devices = (
            DeviceRequest(
                vendor="NVIDIA",
                count=num_gpu,
                memory_percent=pct,
                cores_percent=pct,
                types_include=gpu_spec,
            ),
        )
    return (ContainerRequest("main", devices),)


def task_classes(pods: Sequence[PodRecord]) -> list[TaskClass]:
    """One :class:`TaskClass` per pod (the FGD target-workload input)."""
    return [
        TaskClass(p.cpu_milli, p.gpu_milli if p.num_gpu else 0, p.num_gpu, p.gpu_spec) for p in pods
    ]
