"""FGD against each node's own demand (scheduling.placement.node_demand): idle nodes are never
fragmented, a vendor's devices are measured against that vendor's tasks only, and a node no
task could ever use reports its free devices as stranded (``model`` / ``shape``), fragment 0.
Hand-worked values; pure core, no Django."""

from collections import Counter

import pytest

from scheduling.placement.fragmentation import STRANDED_MODEL, TaskClass
from scheduling.placement.node_demand import STRANDED_SHAPE, demand_fragmentation, node_tasks
from scheduling.placement.types import ClusterSnapshot, DeviceUsage, NodeInfo

MEM = 65536
NV = TaskClass(1000, 500, 1, ("A100",))  # half an A100
NV2 = TaskClass(1000, 1000, 2, ("A100",))  # two whole A100
DCU = TaskClass(1000, 1000, 1, ("K100",))  # one whole DCU


def dev(node, index, model, vendor, free_milli):
    used = 100 - free_milli // 10
    return DeviceUsage(
        f"{model}-{node}-{index}",
        node,
        index,
        model,
        vendor,
        MEM,
        100,
        10,
        used_slots=1 if used else 0,
        used_cores_percent=used,
        used_memory_mib=MEM * used // 100,
    )


def node(name, model, vendor, frees):
    return NodeInfo(
        name,
        [dev(name, i, model, vendor, f) for i, f in enumerate(frees)],
        cpu_milli=64000,
        memory_mib=256000,
    )


def snap(*nodes):
    return ClusterSnapshot({n.name: n for n in nodes})


def test_idle_heterogeneous_nodes_are_not_fragmented():
    s = snap(node("nv", "A100", "NVIDIA", [1000] * 8), node("dcu", "K100", "Hygon", [1000] * 8))
    frag = demand_fragmentation(s, Counter({NV: 99, NV2: 50, DCU: 1}))
    assert (frag.idle_milli, frag.fragment_milli, frag.rate, frag.stranded_gpus) == (
        16000,
        0.0,
        0.0,
        0.0,
    )


def test_rare_vendor_measured_against_its_own_tasks():
    # The DCU task is 1 in 150: a 95 % cover of the whole mix would drop it and call the
    # DCU's free half "stranded". Against its own node's demand, the half is a fragment of
    # the whole-DCU task (it cannot use 500 milli) and the idle DCU is not stranded.
    s = snap(node("nv", "A100", "NVIDIA", [1000, 1000]), node("dcu", "K100", "Hygon", [500, 1000]))
    frag = demand_fragmentation(s, Counter({NV: 99, NV2: 50, DCU: 1}))
    rows = {r.node: r for r in frag.nodes}
    assert rows["nv"].fragment_milli == 0.0
    assert rows["dcu"].fragment_milli == pytest.approx(500.0)
    assert [d.free_milli for d in rows["dcu"].stranded] == [500]
    assert frag.rate == pytest.approx(500 / 3500)


def test_unasked_and_too_small_nodes_are_stranded_not_fragmented():
    s = snap(node("t4", "T4", "NVIDIA", [1000]), node("one", "A100", "NVIDIA", [1000]))
    frag = demand_fragmentation(s, Counter({NV2: 3}))
    rows = {r.node: r for r in frag.nodes}
    assert rows["t4"].fragment_milli == 0 and [d.code for d in rows["t4"].stranded] == [
        STRANDED_MODEL
    ]
    assert rows["one"].fragment_milli == 0 and [d.code for d in rows["one"].stranded] == [
        STRANDED_SHAPE
    ]
    assert frag.stranded_gpus == 2.0


def test_node_tasks_filters_by_model_count_and_cpu():
    n = node("nv", "A100", "NVIDIA", [1000])
    big_cpu = TaskClass(128000, 500, 1, ("A100",))
    anywhere = TaskClass(1000, 300, 1)
    assert node_tasks(n, {NV: 2, NV2: 5, DCU: 1, big_cpu: 1, anywhere: 4}) == Counter(
        {NV: 2, anywhere: 4}
    )
