"""FGD fragmentation measure on hand-worked examples (shared/docs/fgd.md §4)."""

import pytest
from placement_builders import trace_node

from scheduling.placement.fragmentation import (
    FragCalculator,
    TargetWorkload,
    TaskClass,
    class_fragment,
    device_free_milli,
    node_fragment,
    snapshot_fragmentation,
)
from scheduling.placement.plugins.frag import fgd_score
from scheduling.placement.types import ClusterSnapshot, DeviceUsage

A = TaskClass(1000, 500, 1)  # half a GPU
B = TaskClass(2000, 0, 0)  # CPU-only
C = TaskClass(1000, 1000, 2)  # two whole GPUs
WL = TargetWorkload((A, B, C), (0.5, 0.25, 0.25))
GPUS = (1000, 300, 600, 0)
TYPES = ("T4",) * 4


def test_class_fragment_by_case():
    # A fits on the 1000 and 600 GPUs; the 300 (and the empty one) are fragment.
    assert class_fragment(4000, GPUS, TYPES, A) == 300
    # CPU-only: every idle milli is fragment.
    assert class_fragment(4000, GPUS, TYPES, B) == 1900
    # Two whole GPUs needed, one free: all idle milli.
    assert class_fragment(4000, GPUS, TYPES, C) == 1900
    # Not enough CPU for A.
    assert class_fragment(500, GPUS, TYPES, A) == 1900
    # Model not allowed.
    assert class_fragment(4000, GPUS, TYPES, TaskClass(1000, 500, 1, ("V100M32",))) == 1900


def test_node_fragment_weighted_sum():
    # 0.5*300 + 0.25*1900 + 0.25*1900
    assert node_fragment(4000, GPUS, TYPES, WL) == pytest.approx(1100.0)
    assert node_fragment(500, GPUS, TYPES, WL) == pytest.approx(1900.0)


def test_calculator_matches_direct_sum_and_memoises():
    calc = FragCalculator(WL)
    assert calc.uniform("T4", 4000, tuple(sorted(GPUS))) == pytest.approx(1100.0)
    assert calc.node(4000, GPUS, TYPES) == pytest.approx(1100.0)
    # 1000 and 4000 milli CPU are the same level (both cover the 1000 and 2000 requests).
    assert calc.cpu_level(4000) == calc.cpu_level(2000) == 2
    assert calc.cpu_level(999) == 0
    # mixed models fall back to the direct sum: A may use T4 only.
    wl = TargetWorkload((TaskClass(0, 500, 1, ("T4",)),), (1.0,))
    assert FragCalculator(wl).node(1000, (600, 700), ("T4", "P100")) == pytest.approx(700.0)


def test_target_workload_cut_and_order():
    x, y, z, w = (
        TaskClass(1000, 500, 1),
        TaskClass(0, 0, 0),
        TaskClass(5, 1000, 8),
        TaskClass(9, 1000, 1),
    )
    tasks = [x] * 5 + [y] * 3 + [z, w]
    wl = TargetWorkload.from_classes(tasks, coverage=0.8)
    assert wl.classes == (x, y)
    assert wl.weights == pytest.approx((5 / 8, 3 / 8))
    assert wl.coverage == pytest.approx(0.8)
    full = TargetWorkload.from_classes(tasks, coverage=1.0)
    # equal counts: the larger class first (simulator sort.Reverse)
    assert full.classes == (x, y, w, z)
    with pytest.raises(ValueError):
        TargetWorkload.from_classes([], 0.9)
    with pytest.raises(ValueError):
        TargetWorkload((x,), (0.5,))


def test_fgd_score_quantisation():
    assert fgd_score(1100.0, 1100.0) == 50
    assert fgd_score(2000.0, 1000.0) == 73  # sigmoid(1) = 0.731
    assert fgd_score(1000.0, 2000.0) == 26  # sigmoid(-1) = 0.269


def _node(name, frees, cpu=8000, cpu_used=0):
    return trace_node(name, frees, cpu=cpu, memory_mib=64000, cpu_used=cpu_used)


def test_device_free_milli_uses_the_tighter_of_cores_and_memory():
    d = DeviceUsage(
        "u",
        "n",
        0,
        "T4",
        "NVIDIA",
        16000,
        100,
        10,
        used_slots=1,
        used_cores_percent=30,
        used_memory_mib=8000,
    )
    assert device_free_milli(d) == 500  # memory 50 % free, cores 70 %
    d.used_slots = 10
    assert device_free_milli(d) == 0  # no slot left
    d.used_slots = 1
    d.healthy = False
    assert device_free_milli(d) == 0


def test_snapshot_fragmentation_totals():
    snap = ClusterSnapshot.from_nodes(
        [_node("a", (1000, 300, 600, 0), cpu=4000), _node("b", (1000, 1000))]
    )
    rep = snapshot_fragmentation(snap, WL)
    a, b = rep.nodes
    assert (a.idle_milli, a.fragment_milli) == (1900, pytest.approx(1100.0))
    # b: A fits (frag 0), B 2000, C fits (frag 0): 0.25 * 2000
    assert b.fragment_milli == pytest.approx(500.0)
    assert rep.capacity_milli == 6000
    assert rep.idle_milli == 3900
    assert rep.rate == pytest.approx(1600 / 3900)
    assert rep.fragment_of_capacity == pytest.approx(1600 / 6000)
    # stranded: on a only the 300-milli GPU is useless to every GPU class (A needs 500)
    assert a.stranded_gpus == pytest.approx(0.3)
    assert b.stranded_gpus == 0
