"""Vendor plugins: MIG, topology-aware, Ascend templates/NetworkID, Cambricon, Kunlun, AMD..."""

import pytest
from placement_builders import gpu, node, nv, one, snap, uuids

from scheduling.placement import DeviceRequest, DeviceUsage, Profile, place, reserve
from scheduling.placement.types import MigPlacement, MigProfile
from scheduling.placement.vendors import DeviceModelConfig, default_device_configs

A100_MIG = (
    MigProfile("1g.10gb", 9856, 14, 1, tuple(MigPlacement(i, 1) for i in range(7))),
    MigProfile("2g.20gb", 19968, 28, 2, tuple(MigPlacement(i, 2) for i in (0, 2, 4))),
    MigProfile("3g.40gb", 40192, 42, 3, (MigPlacement(0, 4), MigPlacement(4, 4))),
    MigProfile("7g.80gb", 80896, 100, 7, (MigPlacement(0, 8),)),
)


def mig_gpu(uuid="GPU-M", **kw):
    return gpu(uuid, mode="mig", count=7, mig_profiles=A100_MIG, **kw)


def test_mig_smallest_profile_lowest_start_and_booked_profile_values():
    s = snap(node("n1", [mig_gpu()]))
    d = place(s, one(nv(memory_mib=15000)))
    g = d.pods[0].containers[0].devices[0]
    assert (g.mig_profile, g.mig_start, g.mig_size, g.memory_mib, g.cores_percent) == (
        "2g.20gb",
        0,
        2,
        19968,
        28,
    )
    reserve(s, d)
    g2 = place(s, one(nv(memory_mib=15000))).pods[0].containers[0].devices[0]
    assert (g2.mig_profile, g2.mig_start) == ("2g.20gb", 2)
    # 1g profiles are tried from the highest start
    g3 = place(s, one(nv(memory_mib=5000))).pods[0].containers[0].devices[0]
    assert (g3.mig_profile, g3.mig_start) == ("1g.10gb", 6)


def test_mig_several_instances_of_one_gpu_in_one_container():
    s = snap(node("n1", [mig_gpu()]))
    d = place(s, one(nv(2, memory_mib=30000)))
    assert [(g.mig_profile, g.mig_start) for g in d.pods[0].containers[0].devices] == [
        ("3g.40gb", 4),
        ("3g.40gb", 0),
    ]  # 3g.* placements from the highest start
    d = place(s, one(nv(3, memory_mib=30000)))
    # HAMi counts found instances over physical GPUs here: 2 instances on 1 GPU
    assert d.reasons == {"n1": "2/1 AllocatedCardsInsufficientRequest"}


def test_mig_infeasible_when_placements_overlap():
    s = snap(node("n1", [mig_gpu()]))
    reserve(s, place(s, one(nv(memory_mib=5000))))  # 1g at start 6
    d = place(s, one(nv(memory_mib=50000)))  # 7g needs slices 0..7
    assert d.reasons == {"n1": "1/1 CardMigTopologyInfeasible"}


def test_topology_aware_uses_pair_scores():
    devs = [gpu(f"GPU-{i}", index=i) for i in range(4)]
    scores = {
        "GPU-0": {"GPU-1": 200, "GPU-2": 10, "GPU-3": 10},
        "GPU-1": {"GPU-0": 200, "GPU-2": 10, "GPU-3": 10},
        "GPU-2": {"GPU-0": 10, "GPU-1": 10, "GPU-3": 20},
        "GPU-3": {"GPU-0": 10, "GPU-1": 10, "GPU-2": 20},
    }
    s = snap(node("n1", devs, pair_scores=scores))
    topo = Profile(device_policy="topology-aware")
    assert sorted(uuids(place(s, one(nv(2, memory_mib=10)), topo))) == ["GPU-0", "GPU-1"]
    # single GPU: the least connected one (sum 40) is GPU-3 or GPU-2; candidate order
    # (spread) lists GPU-3 first.
    assert uuids(place(s, one(nv(memory_mib=10)), topo)) == ["GPU-3"]


def _mig_and_whole(*extra):
    """G1 and ``extra``: hami-core GPUs of split count 2, so that spread walks G0 first: a MIG
    A100 (seven 1g.10gb placements)."""
    return [gpu("G1", index=0, count=2), *extra, mig_gpu("G0", index=1 + len(extra))]


@pytest.mark.parametrize("parity", [False, True])
def test_topology_aware_three_gpus_with_a_mig_card_are_placed_as_hami(parity):
    """Issue 29: 3 GPUs, topology-aware, on a MIG card and a whole card. HAMi collects every
    MIG instance that fits and takes the best combination, which may hold one card twice
    (nvidia/device.go:829-870, 887-915, 953-978); the console answered
    CardNotFoundCustomFilterRule. Without pair scores every combination scores 0, so the
    first one is taken: three instances of G0, collected first."""
    s = snap(node("n1", _mig_and_whole()))
    prof = Profile(device_policy="topology-aware", hami_parity=parity)
    d = place(s, one(nv(3, memory_mib=9000)), prof)
    assert d.schedulable, d.reasons
    assert uuids(d) == ["G0", "G0", "G0"]
    assert [g.mig_start for g in d.pods[0].containers[0].devices] == [6, 5, 4]


def test_topology_aware_best_set_counts_a_mig_card_twice_when_its_links_win():
    """HAMi scores {G0, G0, G1} (2 x 200, same-card pairs 0) above {G0, G1, G2} (200 + 10 +
    10) and takes it; the console took only sets of distinct cards."""
    scores = {"G0": {"G1": 200, "G2": 10}, "G1": {"G0": 200, "G2": 10}, "G2": {"G0": 10, "G1": 10}}
    s = snap(node("n1", _mig_and_whole(gpu("G2", index=1, count=2)), pair_scores=scores))
    for parity in (False, True):
        prof = Profile(device_policy="topology-aware", hami_parity=parity)
        d = place(s, one(nv(3, memory_mib=9000)), prof)
        assert sorted(uuids(d)) == ["G0", "G0", "G1"], parity


def ascend(uuid, chip="Ascend910B3", mem=65536, index=0, net=None, cores=20, count=4):
    return DeviceUsage(uuid, "n1", index, chip, "Ascend", mem, cores, count, network_id=net)


@pytest.mark.parametrize(
    ("req_mib", "booked", "template"),
    [
        (5000, 16384, "vir05_1c_16g"),
        (16384, 16384, "vir05_1c_16g"),
        (20000, 32768, "vir10_3c_32g"),
        (40000, 65536, ""),
        (0, 65536, ""),
    ],
)
def test_ascend_910b3_template_rounding(req_mib, booked, template):
    s = snap(node("n1", [ascend("NPU-0")]))
    d = place(s, one(DeviceRequest("Ascend", memory_mib=req_mib, chip="Ascend910B3")))
    g = d.pods[0].containers[0].devices[0]
    assert (g.memory_mib, g.template, g.type, g.cores_percent) == (
        booked,
        template,
        "Ascend910B3",
        0,
    )


def test_ascend_rejects_above_capacity_and_multi_device_vnpu():
    s = snap(node("n1", [ascend("NPU-0"), ascend("NPU-1", index=1)]))
    d = place(s, one(DeviceRequest("Ascend", memory_mib=70000, chip="Ascend910B3")))
    assert "exceeds the chip capacity 65536" in d.reasons["n1"]
    d = place(s, one(DeviceRequest("Ascend", 2, memory_mib=5000, chip="Ascend910B3")))
    assert "vNPU not supported for multiple devices" in d.reasons["n1"]


def test_ascend_910b4_does_not_take_910b4_1_and_310p_templates():
    s = snap(node("n1", [ascend("NPU-x", chip="Ascend910B4-1")]))
    d = place(s, one(DeviceRequest("Ascend", memory_mib=8000, chip="Ascend910B4")))
    assert not d.schedulable
    s = snap(node("n1", [ascend("NPU-4", chip="Ascend910B4", mem=32768)]))
    g = (
        place(s, one(DeviceRequest("Ascend", memory_mib=8000, chip="Ascend910B4")))
        .pods[0]
        .containers[0]
        .devices[0]
    )
    assert (g.memory_mib, g.template) == (8192, "vir05_1c_8g")
    s = snap(node("n1", [ascend("NPU-3", chip="Ascend310P", mem=21527, cores=8, count=7)]))
    g = (
        place(s, one(DeviceRequest("Ascend", memory_mib=4000, chip="Ascend310P")))
        .pods[0]
        .containers[0]
        .devices[0]
    )
    assert (g.memory_mib, g.template) == (6144, "vir02")


def test_ascend_network_id_group_and_node_score():
    devs = [ascend(f"NPU-{i}", index=i, net=0 if i < 4 else 1) for i in range(8)]
    for d in devs[:2]:
        d.used_slots, d.used_memory_mib = 1, 16384  # network 0 has only 2 idle-ish...
    for d in devs[:3]:
        d.used_slots, d.used_memory_mib = 1, 65536  # ... make 3 of network 0 full
    s = snap(node("n1", devs))
    d = place(s, one(DeviceRequest("Ascend", 2, chip="Ascend910B3")))
    got = uuids(d)
    assert set(got) <= {f"NPU-{i}" for i in range(4, 8)}
    # node score: usage 3/32 slots, 0 cores, 3*65536/(8*65536) memory -> 10*(3/32+3/8)
    # plus 10 * (2 devices on one NetworkID / 2)
    assert d.node_scores["n1"] == pytest.approx(10 * (3 / 32 + 3 / 8) + 10)


def test_ascend_soft_split_needs_node_support():
    s = snap(node("n1", [ascend("NPU-0", cores=100)]))
    req = one(
        DeviceRequest(
            "Ascend", memory_mib=5000, cores_percent=30, chip="Ascend910B3", soft_split=True
        )
    )
    assert place(s, req).reasons == {"n1": "1/1 ModeNotFit"}
    s.nodes["n1"].annotations["hami-vnpu-core"] = "true"
    g = place(s, req).pods[0].containers[0].devices[0]
    assert (g.memory_mib, g.cores_percent) == (5000, 30)


def test_kunlun_wings():
    devs = [DeviceUsage(f"XPU-{i}", "n1", i, "XPU", "Kunlun", 98304, 100, 100) for i in range(8)]
    for i in (0, 1, 4):
        devs[i].used_slots, devs[i].used_memory_mib, devs[i].used_cores_percent = 1, 98304, 100
    s = snap(node("n1", devs))
    # wing 0 free {2,3}, wing 1 free {5,6,7}; count 1 prefers a wing with 1 free, then 3 free
    assert uuids(place(s, one(DeviceRequest("Kunlun", 1)))) == ["XPU-5"]
    assert uuids(place(s, one(DeviceRequest("Kunlun", 2)))) == ["XPU-2", "XPU-3"]
    # no wing has 4 free; the cross-wing set 2-3-6-7 is free
    assert uuids(place(s, one(DeviceRequest("Kunlun", 4)))) == ["XPU-2", "XPU-3", "XPU-6", "XPU-7"]
    devs[6].used_slots, devs[6].used_memory_mib, devs[6].used_cores_percent = 1, 98304, 100
    assert not place(s, one(DeviceRequest("Kunlun", 4))).schedulable
    assert "must be 1, 2, 4 or 8" in place(s, one(DeviceRequest("Kunlun", 3))).reasons["n1"]


def test_kunlun_vxpu_rounding_and_same_size_rule():
    d0 = DeviceUsage(
        "V-0",
        "n1",
        0,
        "kunlun",
        "KunlunVXPU",
        98304,
        100,
        10,
        used_slots=1,
        used_memory_mib=24576,
        used_cores_percent=25,
    )
    s = snap(node("n1", [d0]))
    g = (
        place(s, one(DeviceRequest("KunlunVXPU", memory_mib=20000)))
        .pods[0]
        .containers[0]
        .devices[0]
    )
    assert (g.memory_mib, g.cores_percent) == (24576, 25)
    d = place(s, one(DeviceRequest("KunlunVXPU", memory_mib=40000)))
    assert d.reasons == {"n1": "1/1 CardNotFoundCustomFilterRule"}


def test_amd_cores_are_compute_units():
    s = snap(node("n1", [DeviceUsage("AMD-0", "n1", 0, "MI300X", "AMD", 196608, 304, 10)]))
    g = (
        place(s, one(DeviceRequest("AMD", memory_mib=1000, cores_percent=25)))
        .pods[0]
        .containers[0]
        .devices[0]
    )
    assert (g.cores_percent, g.type) == (76, "MI300X")


def test_metax_gpu_later_containers_only_on_earlier_devices():
    from placement_builders import pod_of

    from scheduling.placement import ContainerRequest

    devs = [DeviceUsage(f"MX-{i}", "n1", i, "Metax-GPU", "Metax", 65536, 100, 2) for i in range(2)]
    s = snap(node("n1", devs))
    r = DeviceRequest("Metax", memory_mib=1000, cores_percent=10)
    d = place(s, pod_of(ContainerRequest("a", (r,)), ContainerRequest("b", (r,))))
    assert [c.devices[0].uuid for c in d.pods[0].containers] == ["MX-1", "MX-1"]


def test_metax_sgpu_qos_and_unclamped_cores():
    d0 = DeviceUsage(
        "S-0",
        "n1",
        0,
        "MXC500",
        "MetaxSGPU",
        65536,
        100,
        16,
        used_slots=1,
        used_memory_mib=1024,
        used_cores_percent=10,
        qos_policy="fixed-share",
    )
    s = snap(node("n1", [d0]))
    r = DeviceRequest("MetaxSGPU", memory_mib=1024, cores_percent=10, qos_policy="best-effort")
    assert place(s, one(r)).reasons == {"n1": "1/1 CardNotFoundCustomFilterRule"}
    r2 = DeviceRequest("MetaxSGPU", memory_mib=1024, cores_percent=10, qos_policy="fixed-share")
    assert place(s, one(r2)).pods[0].containers[0].devices[0].type == "Metax-SGPU"
    r3 = DeviceRequest("MetaxSGPU", memory_mib=1024, cores_percent=120)
    assert place(s, one(r3)).reasons == {"n1": "1/1 CardInsufficientCore"}


def test_mthreads_cores_in_sixteenths():
    d0 = DeviceUsage(
        "MT-0",
        "n1",
        0,
        "Mthreads",
        "Mthreads",
        49152,
        16,
        100,
        used_slots=1,
        used_memory_mib=1024,
        used_cores_percent=12,
    )
    s = snap(node("n1", [d0]))
    assert place(s, one(DeviceRequest("Mthreads", memory_mib=1024, cores_percent=4))).schedulable
    assert place(s, one(DeviceRequest("Mthreads", memory_mib=1024, cores_percent=5))).reasons == {
        "n1": "1/1 CardInsufficientCore"
    }


def test_iluvatar_multi_device_is_exclusive():
    devs = [DeviceUsage(f"IL-{i}", "n1", i, "BI-V150", "Iluvatar", 32768, 100, 4) for i in range(2)]
    devs[0].used_slots, devs[0].used_memory_mib = 1, 256
    s = snap(node("n1", devs))
    d = place(s, one(DeviceRequest("Iluvatar", 2, memory_mib=256, chip="BI-V150")))
    assert d.reasons == {
        "n1": "1/2 AllocatedCardsInsufficientRequest, 1/2 ExclusiveDeviceAllocateConflict"
    }


def test_device_model_config_round_trips_and_rejects_unknown_fields():
    for c in default_device_configs():
        assert DeviceModelConfig.from_dict(c.to_dict()) == c
    with pytest.raises(ValueError, match="bogus: unknown key"):
        DeviceModelConfig.from_dict({"vendor": "X", "common_word": "X", "bogus": 1})
    cfg = DeviceModelConfig.from_dict(
        {"vendor": "Foo", "common_word": "FOO", "templates": {"big": 2000, "small": 1000}}
    )
    assert [t.name for t in cfg.templates] == ["small", "big"]


def test_a_new_vendor_from_data_uses_the_generic_fit():
    cfg = DeviceModelConfig(vendor="Foo", common_word="FOO")
    prof = Profile(device_configs=tuple(default_device_configs()) + (cfg,))
    s = snap(node("n1", [DeviceUsage("F-0", "n1", 0, "foo-1", "Foo", 1000, 100, 2)]))
    g = place(s, one(DeviceRequest("Foo", memory_mib=600)), prof).pods[0].containers[0].devices[0]
    assert (g.type, g.memory_mib) == ("FOO", 600)
