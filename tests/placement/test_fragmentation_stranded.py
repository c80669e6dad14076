"""Stranded devices of the FGD measure: which free GPUs no class of M can use, and why.

Hand-worked on small nodes (shared/docs/fgd.md §4). Pure core, no Django.
"""

import pytest

from scheduling.placement.fragmentation import (
    TargetWorkload,
    TaskClass,
    snapshot_fragmentation,
    stranded_devices,
)
from scheduling.placement.types import ClusterSnapshot, DeviceUsage, NodeInfo

A = TaskClass(1000, 500, 1)  # half a GPU, any model
B = TaskClass(2000, 0, 0)  # CPU-only
C = TaskClass(1000, 1000, 2)  # two whole GPUs
MEM = 16000


def gpu(index, free_milli, model="T4", node="n", **kw):
    """A device with ``free_milli`` free: cores and memory booked to 100 - free/10 %."""
    used = 100 - free_milli // 10
    return DeviceUsage(
        f"GPU-{node}-{index}",
        node,
        index,
        model,
        "NVIDIA",
        MEM,
        100,
        10,
        used_slots=1 if used else 0,
        used_cores_percent=used,
        used_memory_mib=MEM * used // 100,
        **kw,
    )


def node(name, frees, cpu_free=4000, model="T4", **kw):
    return NodeInfo(
        name,
        [gpu(i, f, model, name) for i, f in enumerate(frees)],
        cpu_milli=64000,
        memory_mib=256000,
        used_cpu_milli=64000 - cpu_free,
        **kw,
    )


def wl(*classes):
    return TargetWorkload(tuple(classes), tuple(1 / len(classes) for _ in classes))


def codes(found):
    return [(d.index, d.free_milli, d.code) for d in found]


def test_too_small_for_every_class_that_can_run_here():
    # A uses the 1000 and 600 GPUs; the 300 one is below A's 500 (C needs 1000); the full
    # GPU (0 free) is not stranded, it is simply used.
    (d,) = stranded_devices(node("n", (1000, 300, 600, 0)), wl(A, B, C))
    assert (d.index, d.uuid, d.model, d.free_milli, d.code) == (
        1,
        "GPU-n-1",
        "T4",
        300,
        "too_small",
    )
    assert d.reason == (
        "300 milli free is below the smallest per-GPU request (500 milli) of "
        "the classes that can run here"
    )


def test_smallest_request_counts_only_classes_the_node_can_run():
    # D asks 200 milli on a V100 but 8000 milli CPU; the node has 4000 free, so the smallest
    # request that could run here is A's 500, and the 300-milli V100 is stranded.
    d_class = TaskClass(8000, 200, 1, ("V100",))
    found = stranded_devices(node("v", (300, 1000), model="V100"), wl(A, d_class))
    assert codes(found) == [(0, 300, "too_small")]
    assert "(500 milli)" in found[0].reason
    # With 8000 milli CPU free, D can use it: nothing stranded.
    assert (
        stranded_devices(node("v", (300, 1000), cpu_free=8000, model="V100"), wl(A, d_class)) == ()
    )


def test_model_not_allowed_by_any_class():
    only_a100 = wl(TaskClass(0, 500, 1, ("A100",)))
    found = stranded_devices(node("n", (1000, 700)), only_a100)
    assert codes(found) == [(0, 1000, "model"), (1, 700, "model")]
    assert found[0].reason == "no class of the target workload allows model T4"


def test_node_cpu_below_every_class():
    found = stranded_devices(node("n", (1000, 500), cpu_free=500), wl(A, C))
    assert codes(found) == [(0, 1000, "cpu"), (1, 500, "cpu")]
    assert found[0].reason == (
        "node free CPU 500 milli is below every class that allows T4 "
        "(the smallest needs 1000 milli)"
    )


def test_too_few_fitting_gpus_names_the_closest_class():
    c4 = TaskClass(0, 500, 4)
    # 1000 GPU: C has 1 of 2 (short 1), c4 has 2 of 4 (short 2) -> C is named.
    # 600 GPU: only c4 fits its share, 2 GPUs have >= 500 of the 4 it needs.
    found = stranded_devices(node("n", (1000, 600, 200)), wl(C, c4))
    assert codes(found) == [
        (0, 1000, "too_few_gpus"),
        (1, 600, "too_few_gpus"),
        (2, 200, "too_small"),
    ]
    assert found[0].reason == (
        "the classes this GPU fits need 2 GPUs with >= 1000 milli free; the node has 1"
    )
    assert found[1].reason == (
        "the classes this GPU fits need 4 GPUs with >= 500 milli free; the node has 2"
    )


def test_only_cpu_classes_strand_every_free_gpu():
    found = stranded_devices(node("n", (1000, 400, 0)), wl(B))
    assert codes(found) == [(0, 1000, "no_gpu_class"), (1, 400, "no_gpu_class")]


def test_unusable_devices_and_nodes_strand_nothing():
    n = node("n", (1000, 300))
    n.devices[1].cordoned = True  # no free share: not idle, not stranded
    assert stranded_devices(n, wl(A)) == ()
    n.devices[1].cordoned = False
    assert codes(stranded_devices(n, wl(A))) == [(1, 300, "too_small")]
    n.schedulable = False  # nothing free on an unschedulable node
    assert stranded_devices(n, wl(A)) == ()
    n.schedulable = True
    n.error = "bad annotation"
    assert stranded_devices(n, wl(A)) == ()


def test_snapshot_rows_carry_the_stranded_devices():
    snap = ClusterSnapshot.from_nodes(
        [node("a", (1000, 300, 600, 0)), node("b", (1000, 1000)), node("c", (200, 100), cpu_free=0)]
    )
    rep = snapshot_fragmentation(snap, TargetWorkload((A, B, C), (0.5, 0.25, 0.25)))
    a, b, c = rep.nodes
    assert [(d.uuid, d.code) for d in a.stranded] == [("GPU-a-1", "too_small")]
    assert a.stranded_gpus == pytest.approx(0.3)
    assert b.stranded == () and b.stranded_gpus == 0
    # c: no CPU left for any GPU class; both GPUs stranded, F_c(M) = all idle (300).
    assert [(d.index, d.code) for d in c.stranded] == [(0, "cpu"), (1, "cpu")]
    assert (c.idle_milli, c.fragment_milli, c.stranded_gpus) == (
        300,
        pytest.approx(300.0),
        pytest.approx(0.3),
    )
    assert rep.stranded_gpus == pytest.approx(0.6)
