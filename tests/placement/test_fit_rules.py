"""Generic HAMi device checks (shared/docs/hami.md §4.3) and scores (§4.4), values by hand."""

import pytest
from placement_builders import gpu, node, nv, one, pod_of, snap, uuids

from scheduling.placement import ContainerRequest, DeviceRequest, Profile, place, reserve, unreserve


def test_spread_takes_least_used_device_binpack_the_most_used():
    # GPU-0 score 10*(2/10+30/100+11000/81920) > GPU-1 score 10*(1/10+10/100+1000/81920)
    s = snap(
        node(
            "n1",
            [
                gpu("GPU-0", used_slots=1, used_memory_mib=10000, used_cores_percent=20),
                gpu("GPU-1", index=1),
            ],
        )
    )
    req = one(nv(memory_mib=1000, cores_percent=10))
    assert uuids(place(s, req, Profile(device_policy="spread"))) == ["GPU-1"]
    assert uuids(place(s, req, Profile(device_policy="binpack"))) == ["GPU-0"]


def test_equal_scores_take_the_last_device_in_registration_order():
    s = snap(node("n1", [gpu(f"GPU-{i}", index=i) for i in range(4)]))
    assert uuids(place(s, one(nv(2, memory_mib=1000)))) == ["GPU-3", "GPU-2"]
    assert uuids(place(s, one(nv(2, memory_mib=1000)), Profile(device_policy="binpack"))) == [
        "GPU-3",
        "GPU-2",
    ]


def test_node_policy_binpack_highest_spread_lowest_and_scores_before_the_pod():
    busy = node(
        "a",
        [
            gpu("GPU-a0", used_slots=1, used_memory_mib=10000, used_cores_percent=20),
            gpu("GPU-a1", index=1),
        ],
    )
    idle = node("b", [gpu("GPU-b0"), gpu("GPU-b1", index=1)])
    s = snap(busy, idle)
    req = one(nv(memory_mib=1000))
    d = place(s, req, Profile(node_policy="binpack"))
    assert d.pods[0].node == "a"
    # 10*(1/20 + 20/200 + 10000/163840)
    assert d.node_scores["a"] == pytest.approx(2.1103515625)
    assert d.node_scores["b"] == 0.0
    assert place(s, req, Profile(node_policy="spread")).pods[0].node == "b"


def test_equal_node_scores_pick_the_smallest_node_name():
    s = snap(node("z", [gpu("GPU-z")]), node("m", [gpu("GPU-m")]))
    assert place(s, one(nv(memory_mib=1))).pods[0].node == "m"
    assert place(s, one(nv(memory_mib=1)), Profile(node_policy="spread")).pods[0].node == "m"


def test_reasons_count_devices_per_check_hami_style():
    s = snap(node("n1", [gpu("GPU-0", healthy=False), gpu("GPU-1", index=1, mem=16384)]))
    d = place(s, one(nv(memory_mib=50000)))
    assert not d.schedulable
    assert d.reasons == {"n1": "1/2 CardInsufficientMemory, 1/2 CardNotHealth"}


def test_memory_percent_uses_integer_division_of_registered_memory():
    s = snap(node("n1", [gpu("GPU-0", mem=15360, model="T4")]))
    d = place(s, one(nv(memory_percent=33)))
    assert d.pods[0].containers[0].devices[0].memory_mib == 5068


def test_unset_memory_books_the_whole_card():
    s = snap(node("n1", [gpu("GPU-0", mem=15360)]))
    assert place(s, one(nv())).pods[0].containers[0].devices[0].memory_mib == 15360


def test_cores_above_100_are_refused_with_a_reason_not_clamped():
    """Issue 29: HAMi's Fit logs "core limit can't exceed 100" and books 100 % (step 8,
    pkg/device/nvidia/device.go); the console refuses such a request instead of silently
    giving the job a whole device's cores."""
    s = snap(node("n1", [gpu("GPU-0")]))
    d = place(s, one(nv(memory_mib=10, cores_percent=150)))
    assert not d.schedulable
    assert d.reasons == {
        "n1": (
            "container c: InvalidDeviceRequest: nvidia.com/gpucores 150: "
            "core limit can't exceed 100"
        )
    }
    assert s.nodes["n1"].devices[0].used_cores_percent == 0
    assert place(s, one(nv(memory_mib=10, cores_percent=100))).schedulable


def test_hami_parity_keeps_hamis_clamp_of_cores_above_100():
    s = snap(node("n1", [gpu("GPU-0")]))
    d = place(s, one(nv(memory_mib=10, cores_percent=150)), Profile(hami_parity=True))
    assert d.pods[0].containers[0].devices[0].cores_percent == 100


def test_full_cores_need_an_idle_device():
    s = snap(node("n1", [gpu("GPU-0", used_slots=1, used_memory_mib=100)]))
    d = place(s, one(nv(memory_mib=100, cores_percent=100)))
    assert d.reasons == {"n1": "1/1 ExclusiveDeviceAllocateConflict"}


def test_zero_core_task_cannot_join_a_device_whose_cores_are_full():
    s = snap(node("n1", [gpu("GPU-0", used_slots=1, used_memory_mib=100, used_cores_percent=100)]))
    d = place(s, one(nv(memory_mib=100, cores_percent=0)))
    assert d.reasons == {"n1": "1/1 CardComputeUnitsExhausted"}


def test_insufficient_core_and_time_slicing():
    s = snap(
        node(
            "n1",
            [
                gpu("GPU-0", used_slots=1, used_memory_mib=10, used_cores_percent=80),
                gpu("GPU-1", index=1, count=2, used_slots=2),
            ],
        )
    )
    d = place(s, one(nv(memory_mib=10, cores_percent=30)))
    assert d.reasons == {"n1": "1/2 CardInsufficientCore, 1/2 CardTimeSlicingExhausted"}


def test_too_many_devices_requested():
    s = snap(node("n1", [gpu("GPU-0")]))
    d = place(s, one(nv(2, memory_mib=10)))
    assert d.reasons["n1"].startswith("NodeInsufficientDevice")


def test_partial_selection_reports_allocated_cards_insufficient():
    s = snap(node("n1", [gpu("GPU-0"), gpu("GPU-1", index=1, healthy=False)]))
    d = place(s, one(nv(2, memory_mib=10)))
    assert d.reasons == {"n1": "1/2 AllocatedCardsInsufficientRequest, 1/2 CardNotHealth"}


def test_type_matching_is_exact_h20_is_not_h200():
    s = snap(
        node(
            "n1",
            [
                gpu("GPU-0", model="NVIDIA-H20", count=1, used_slots=1),
                gpu("GPU-1", index=1, model="NVIDIA-H200"),
            ],
        )
    )
    d = place(s, one(nv(memory_mib=10, types_include=("H20",))))
    assert d.reasons == {"n1": "1/2 CardTimeSlicingExhausted, 1/2 CardTypeMismatch"}
    assert uuids(place(s, one(nv(memory_mib=10, types_include=("h200",))))) == ["GPU-1"]
    assert uuids(place(s, one(nv(memory_mib=10, types_exclude=("NVIDIA-H20",))))) == ["GPU-1"]


def test_uuid_include_and_exclude():
    s = snap(node("n1", [gpu(f"GPU-{i}", index=i) for i in range(3)]))
    assert uuids(place(s, one(nv(memory_mib=10, uuids_include=("GPU-0",))))) == ["GPU-0"]
    assert uuids(place(s, one(nv(memory_mib=10, uuids_exclude=("GPU-2",))))) == ["GPU-1"]
    d = place(s, one(nv(memory_mib=10, uuids_include=("GPU-9",))))
    assert d.reasons == {"n1": "3/3 CardUuidMismatch"}


def test_cordoned_device():
    s = snap(node("n1", [gpu("GPU-0", cordoned=True), gpu("GPU-1", index=1)]))
    assert uuids(place(s, one(nv(memory_mib=10, uuids_include=("GPU-0", "GPU-1"))))) == ["GPU-1"]
    d = place(s, one(nv(2, memory_mib=10)))
    assert d.reasons == {"n1": "1/2 AllocatedCardsInsufficientRequest, 1/2 CardCordoned"}


def test_numa_bind_discards_a_selection_crossing_numa_nodes():
    devs = [
        gpu("GPU-0", numa=0),
        gpu("GPU-1", index=1, numa=0),
        gpu("GPU-2", index=2, numa=1),
        gpu("GPU-3", index=3, numa=1, healthy=False),
    ]
    s = snap(node("n1", devs))
    # spread + numa: NUMA 1 first (GPU-3 unhealthy, GPU-2 taken), then NUMA 0 resets.
    assert uuids(place(s, one(nv(2, memory_mib=10, numa_bind=True)))) == ["GPU-1", "GPU-0"]
    assert uuids(place(s, one(nv(2, memory_mib=10)))) == ["GPU-2", "GPU-1"]
    d = place(s, one(nv(3, memory_mib=10, numa_bind=True)))
    assert d.reasons == {
        "n1": "1/4 CardNotHealth, 1/4 NumaNotFit, 2/4 AllocatedCardsInsufficientRequest"
    }


def test_mode_filter():
    s = snap(node("n1", [gpu("GPU-0", mode="mps"), gpu("GPU-1", index=1)]))
    assert uuids(place(s, one(nv(memory_mib=10, modes=("mps",))))) == ["GPU-0"]


def test_mutex_policy_takes_only_idle_devices():
    s = snap(node("n1", [gpu("GPU-0"), gpu("GPU-1", index=1, used_slots=1, used_memory_mib=10)]))
    assert uuids(place(s, one(nv(memory_mib=10)), Profile(device_policy="mutex"))) == ["GPU-0"]
    d = place(s, one(nv(2, memory_mib=10)), Profile(device_policy="mutex"))
    assert d.reasons == {
        "n1": "1/2 AllocatedCardsInsufficientRequest, 1/2 ExclusiveDeviceAllocateConflict"
    }


def test_two_containers_sequential_on_one_copy():
    s = snap(node("n1", [gpu("GPU-0")]))
    c = [
        ContainerRequest("a", (nv(memory_mib=30000),)),
        ContainerRequest("b", (nv(memory_mib=30000),)),
    ]
    d = place(s, pod_of(*c))
    assert [x.devices[0].uuid for x in d.pods[0].containers] == ["GPU-0", "GPU-0"]
    reserve(s, d)
    dev = s.nodes["n1"].devices[0]
    assert (dev.used_slots, dev.used_memory_mib) == (2, 60000)
    unreserve(s, d)
    assert (dev.used_slots, dev.used_memory_mib) == (0, 0)
    big = [
        ContainerRequest("a", (nv(memory_mib=50000),)),
        ContainerRequest("b", (nv(memory_mib=50000),)),
    ]
    assert place(s, pod_of(*big)).reasons == {"n1": "1/1 CardInsufficientMemory"}


def test_multi_device_container_gets_distinct_devices():
    s = snap(node("n1", [gpu("GPU-0"), gpu("GPU-1", index=1)]))
    assert sorted(uuids(place(s, one(nv(2, memory_mib=10))))) == ["GPU-0", "GPU-1"]


def test_init_containers_fit_on_fresh_copies_and_book_the_peak():
    s = snap(node("n1", [gpu("GPU-0")]))
    d = place(
        s,
        pod_of(
            ContainerRequest("i1", (nv(memory_mib=60000, cores_percent=40),), True),
            ContainerRequest("i2", (nv(memory_mib=70000),), True),
            ContainerRequest("app", (nv(memory_mib=50000, cores_percent=30),)),
        ),
    )
    assert d.schedulable
    reserve(s, d)
    dev = s.nodes["n1"].devices[0]
    # memory max(max(60000,70000), 50000), cores max(40, 30), slots max(1, 1)
    assert (dev.used_slots, dev.used_memory_mib, dev.used_cores_percent) == (1, 70000, 40)


def test_host_cpu_memory_and_node_selector_and_cordon():
    s = snap(
        node("a", [gpu("GPU-a")], cpu=4000, used_cpu_milli=3500),
        node("b", [gpu("GPU-b")], labels={"pool": "x"}),
        node("c", [gpu("GPU-c")], schedulable=False),
    )
    d = place(s, one(nv(memory_mib=10), cpu=1000, selector={"pool": "y"}))
    assert d.reasons == {
        "a": "node(s) didn't match Pod's node affinity/selector",
        "b": "node(s) didn't match Pod's node affinity/selector",
        "c": "node(s) were unschedulable",
    }
    d = place(s, one(nv(memory_mib=10), cpu=1000, mem=10))
    assert d.pods[0].node == "b"
    assert place(s, one(nv(memory_mib=10), cpu=1000, selector={"pool": "x"})).pods[0].node == "b"
    d = place(snap(node("a", [], cpu=4000, mem=100, used_cpu_milli=3500)), one(cpu=1000, mem=200))
    assert d.reasons == {"a": "Insufficient cpu, Insufficient memory"}


def test_place_leaves_snapshot_untouched_and_gang_pods_see_each_other():
    from scheduling.placement import PlacementRequest, PodRequest

    s = snap(node("n1", [gpu("GPU-0", count=1)]), node("n2", [gpu("GPU-1", count=1)]))
    pods = tuple(
        PodRequest(f"p{i}", containers=(ContainerRequest("c", (nv(memory_mib=10),)),))
        for i in range(3)
    )
    d = place(s, PlacementRequest("g", pods))
    assert not d.schedulable and d.unplaced == ("p2",)
    assert all(dv.used_slots == 0 for n in s.nodes.values() for dv in n.devices)
    d = place(s, PlacementRequest("g", pods, min_pods=2))
    assert d.schedulable and [p.node for p in d.pods] == ["n1", "n2"] and d.unplaced == ("p2",)


def test_unreserve_refuses_what_was_not_reserved():
    s = snap(node("n1", [gpu("GPU-0")]))
    d = place(s, one(nv(memory_mib=10)))
    with pytest.raises(ValueError, match="exceeds"):
        unreserve(s, d)
    assert s.nodes["n1"].devices[0].used_slots == 0


def test_invalid_request_is_reported_not_raised():
    s = snap(node("n1", [gpu("GPU-0")]))
    d = place(s, one(DeviceRequest("NVIDIA", 0)))
    assert "count must be >= 1" in d.reasons["n1"]
    d = place(s, one(DeviceRequest("Nope", 1)))
    assert "unknown device vendor 'Nope'" in d.reasons["n1"]


def test_device_scoring_weights_change_the_order():
    # GPU-0: many slots used, little memory; GPU-1: one slot, lots of memory.
    s = snap(
        node(
            "n1",
            [
                gpu("GPU-0", used_slots=5, used_memory_mib=1000),
                gpu("GPU-1", index=1, used_slots=1, used_memory_mib=60000),
            ],
        )
    )
    req = nv(memory_mib=10)
    slot_only = Profile(device_policy="binpack", device_scoring_weights=(1, 0, 0))
    mem_only = Profile(device_policy="binpack", device_scoring_weights=(0, 0, 1))
    assert uuids(place(s, one(req), slot_only)) == ["GPU-0"]
    assert uuids(place(s, one(req), mem_only)) == ["GPU-1"]


def test_cached_framework_gives_the_same_decisions_as_uncached():
    import random

    from scheduling.placement import PlacementRequest, PodRequest

    def build():
        rnd = random.Random(7)
        return snap(
            *(
                node(
                    f"n{i}",
                    [gpu(f"n{i}-g{j}", index=j, count=4) for j in range(rnd.choice((1, 2, 4)))],
                )
                for i in range(12)
            )
        )

    rnd = random.Random(3)
    reqs = [
        PlacementRequest(
            f"p{k}",
            (
                PodRequest(
                    f"p{k}",
                    containers=(
                        ContainerRequest(
                            "c",
                            (
                                nv(
                                    rnd.choice((1, 2)),
                                    memory_mib=rnd.choice((10000, 30000)),
                                    cores_percent=rnd.choice((0, 50, 100)),
                                ),
                            ),
                        ),
                    ),
                ),
            ),
        )
        for k in range(60)
    ]
    results = []
    for fw in (Profile().build(), Profile().build(cache=True)):
        s, out = build(), []
        for r in reqs:
            d = place(s, r, fw)
            out.append((d.schedulable, d.pods, dict(d.reasons), dict(d.node_scores)))
            if d.schedulable:
                reserve(s, d)
        results.append(out)
    assert results[0] == results[1]
    assert sum(1 for x in results[0] if x[0]) > 10 and any(not x[0] for x in results[0])


def test_registry_rejects_duplicates_and_profile_custom_scorer():
    from scheduling.placement.framework import CycleState, StateKey
    from scheduling.placement.registry import Registry

    class LowestIndex:
        name = "LowestIndexFirst"

        def __init__(self, **_):
            pass

        def score(self, state, pod, node, fit):
            return -sum(g.index for g in fit.grants())

    reg = Registry({"LowestIndexFirst": LowestIndex})
    with pytest.raises(ValueError, match="already registered"):
        reg.register("LowestIndexFirst", LowestIndex)
    with pytest.raises(ValueError, match="already registered"):
        reg.merge(Registry({"LowestIndexFirst": LowestIndex}))
    s = snap(
        node("a", [gpu("GPU-a0"), gpu("GPU-a1", index=1)]), node("b", [gpu("GPU-b0", index=0)])
    )
    # custom scorer sees the chosen devices: a picks index 1 (spread tie rule), b index 0
    prof = Profile(scores=(("LowestIndexFirst", 1.0),), registry=reg)
    d = place(s, one(nv(memory_mib=10)), prof)
    assert d.pods[0].node == "b" and d.node_scores == {"a": -1.0, "b": 0.0}
    with pytest.raises(KeyError, match="unknown plugin 'Nope'"):
        Profile(scores=(("Nope", 1.0),)).build()
    key = StateKey[int]("x")
    st = CycleState()
    with pytest.raises(KeyError, match="'x'"):
        st.read(key)
    st.write(key, 3)
    assert st.read(key) == 3


def test_a_node_holding_bookings_on_devices_it_no_longer_registers_takes_nothing_new():
    # GPU-old left the registration while a pod still books it; GPU-new sits at its index
    def held_node():
        return node(
            "n1",
            [
                gpu("GPU-old", healthy=False, missing=True, used_slots=1, used_memory_mib=81920),
                gpu("GPU-new", index=0),
                gpu("GPU-2", index=2),
            ],
        )

    s = snap(held_node(), node("n2", [gpu("GPU-n2")]))
    d = place(s, one(nv(memory_mib=1000)))
    assert uuids(d) == ["GPU-n2"]
    alone = place(snap(held_node()), one(nv(memory_mib=1000)))
    assert not alone.schedulable
    assert alone.reasons["n1"] == (
        "NodeBookingsUnmatched: booked device(s) GPU-old no longer registered; the node's "
        "capacity is uncertain until their pods end or are rebound"
    )
    # once the booking is gone (pod ended), the missing device alone holds nothing back
    free = held_node()
    free.devices[0].used_slots = free.devices[0].used_memory_mib = 0
    assert free.unmatched_bookings() == []
    assert uuids(place(snap(free), one(nv(memory_mib=1000)))) == ["GPU-2"]


def test_nouse_never_lands_on_a_device_whose_model_cannot_be_read():
    # n-unknown registered its GPUs without a model; n-h100 says what it is
    unknown = node("n-unknown", [gpu("GPU-u0", model=""), gpu("GPU-u1", index=1, model="NVIDIA")])
    h100 = node("n-h100", [gpu("GPU-h0", model="NVIDIA H100 80GB HBM3")])
    s = snap(unknown, h100)
    assert uuids(place(s, one(nv(memory_mib=1000, types_exclude=("A100",))))) == ["GPU-h0"]
    alone = place(snap(unknown), one(nv(memory_mib=1000, types_exclude=("A100",))))
    assert alone.reasons["n-unknown"] == "2/2 CardTypeUnknown"
    # without a type constraint the unknown model is fine (spread: the idlest, last first)
    assert uuids(place(snap(unknown), one(nv(memory_mib=1000)))) == ["GPU-u1"]
    # HAMi's own rule (place) has no such notion: "A100" is no substring of ""
    parity = place(
        snap(unknown), one(nv(memory_mib=1000, types_exclude=("A100",))), Profile(hami_parity=True)
    )
    assert parity.schedulable


def test_long_form_types_match_whole_tokens_in_the_console_and_substrings_in_place():
    s = snap(
        node("n20", [gpu("GPU-h20", model="NVIDIA-NVIDIA H20", mem=98304)]),
        node("n200", [gpu("GPU-h200", model="NVIDIA-NVIDIA H200", mem=143360)]),
    )
    assert uuids(place(s, one(nv(memory_mib=1000, types_include=("H20",))))) == ["GPU-h20"]
    assert uuids(place(s, one(nv(memory_mib=1000, types_exclude=("H20",))))) == ["GPU-h200"]
    hami = Profile(hami_parity=True)
    # HAMi's checkGPUtype (strings.Contains): "H20" is in both, so its nouse excludes both
    both = place(s, one(nv(memory_mib=1000, types_exclude=("H20",))), hami)
    assert not both.schedulable
    assert set(both.reasons) == {"n20", "n200"}
