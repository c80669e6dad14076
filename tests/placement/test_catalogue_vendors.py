"""Vendors and rules that read the device catalogue: several Cambricon models in one
cluster, minimum slices, MIG spread, Enflame DRS, Ascend 910C modules, Kunlun node scoring,
AWS Neuron, Vastai dies, DRA shared counters, invalid models."""

from placement_builders import gpu, node, nv, one, pod_of, snap, uuids

from scheduling.devices import default_device_configs, resolve_model
from scheduling.placement import (
    ContainerRequest,
    DeviceRequest,
    DeviceUsage,
    Profile,
    place,
    reserve,
)
from scheduling.placement.types import MigPlacement, MigProfile
from tests.placement.placement_builders import ASCEND_B3_CARD_COUNTERS, ASCEND_B3_TEMPLATES

MLU370 = resolve_model("MLU", "MLU370-X8", {"memory_mib": 24576, "min_slice_mib": 1000})
MLU590 = resolve_model("MLU", "MLU590", {"memory_factor": 0, "memory_mib": 79872})
PROFILE = Profile(device_configs=(*default_device_configs(), MLU370, MLU590))


def mlu(uuid, model, mem, index=0):
    return DeviceUsage(uuid, "n", index, model, "MLU", mem, 100, 100)


def grant(decision, container=0):
    return decision.pods[0].containers[container].devices[0]


# ---- Cambricon: several models, per-model units, pinning --------------------------------


def test_mlu590_unit_0_charges_whole_one_percent_units():
    s = snap(node("n1", [mlu("M590-0", "MLU590", 79872)]))
    g = grant(place(s, one(DeviceRequest("MLU", memory_mib=4096, cores_percent=10)), PROFILE))
    assert (g.memory_mib, g.model) == (4788, "MLU590")  # 6 units of 798 MiB


def test_a_job_pinned_to_mlu370_never_lands_on_mlu590():
    s = snap(
        node("n1", [mlu("M590-0", "MLU590", 79872)]),
        node("n2", [mlu("M370-0", "MLU370-X8", 24576)]),
    )
    req = DeviceRequest("MLU", memory_mib=2048, cores_percent=10, types_include=("MLU370",))
    d = place(s, one(req), PROFILE)
    assert (d.pods[0].node, grant(d).memory_mib) == ("n2", 2048)
    s370_full = snap(node("n1", [mlu("M590-0", "MLU590", 79872)]))
    refused = place(s370_full, one(req), PROFILE)
    assert not refused.schedulable
    assert refused.reasons == {"n1": "1/1 CardTypeMismatch"}
    # nouse-mlutype excludes a model the same way
    out = place(s, one(DeviceRequest("MLU", memory_mib=2048, types_exclude=("MLU370",))), PROFILE)
    assert out.pods[0].node == "n1"


def test_minimum_slice_rounds_a_small_request_up_and_charges_it():
    s = snap(node("n1", [mlu("M370-0", "MLU370-X8", 24576)]))
    d = place(s, one(DeviceRequest("MLU", memory_mib=300, cores_percent=5)), PROFILE)
    assert grant(d).memory_mib == 1024  # min slice 1000 -> 4 units of 256 MiB
    reserve(s, d)
    assert s.nodes["n1"].devices[0].used_memory_mib == 1024


# ---- NVIDIA MIG: spread across cards, packed only when needed or for HAMi parity ---------

MIG = (
    MigProfile("1g.10gb", 9856, 14, 1, tuple(MigPlacement(i, 1) for i in range(7))),
    MigProfile("3g.40gb", 40192, 42, 3, (MigPlacement(0, 4), MigPlacement(4, 4))),
)


def mig_node(n=2):
    return node(
        "n1", [gpu(f"G{i}", index=i, mode="mig", count=7, mig_profiles=MIG) for i in range(n)]
    )


def test_mig_instances_spread_across_cards_under_spread_and_topology_aware():
    for policy in ("spread", "topology-aware"):
        d = place(snap(mig_node()), one(nv(2, memory_mib=9000)), Profile(device_policy=policy))
        assert sorted(uuids(d)) == ["G0", "G1"], policy
    # binpack packs, as HAMi does under every policy
    d = place(snap(mig_node()), one(nv(2, memory_mib=9000)), Profile(device_policy="binpack"))
    assert len(set(uuids(d))) == 1
    hami = place(snap(mig_node()), one(nv(2, memory_mib=9000)), Profile(hami_parity=True))
    assert len(set(uuids(hami))) == 1


def test_mig_spread_falls_back_to_packing_when_cards_are_short():
    s = snap(mig_node())
    reserve(s, place(s, one(nv(1, memory_mib=40000, uuids_include=("G1",)))))
    reserve(s, place(s, one(nv(1, memory_mib=40000, uuids_include=("G1",)))))
    d = place(s, one(nv(2, memory_mib=30000)))
    assert uuids(d) == ["G0", "G0"]


# ---- Enflame DRS ----------------------------------------------------------------------------

DRS = {"profiles": {"1g.6gb": "0", "3g.20gb": "1", "6g.40gb": "2"}, "maxSlice": 6}


def drs(uuid, index=0):
    return DeviceUsage(uuid, "n", index, "Enflame", "EnflameDRS", 40960, 100, 6, custom=DRS)


def test_enflame_drs_profile_by_spec_and_direct_size():
    s = snap(node("n1", [drs("E0")]))
    g = grant(place(s, one(DeviceRequest("EnflameDRS", memory_mib=20480))))
    assert (g.template, g.memory_mib, g.cores_percent, g.slices) == ("3g.20gb", 20480, 50, 3)
    g = grant(place(s, one(DeviceRequest("EnflameDRS", slices=1))))
    assert (g.template, g.memory_mib, g.cores_percent) == ("1g.6gb", 6144, 17)
    bad = place(s, one(DeviceRequest("EnflameDRS", slices=2)))
    assert bad.reasons == {"n1": "1/1 ModeNotFit"}


def test_enflame_drs_slices_are_booked():
    s = snap(node("n1", [drs("E0")]))
    reserve(s, place(s, one(DeviceRequest("EnflameDRS", slices=3))))
    reserve(s, place(s, one(DeviceRequest("EnflameDRS", slices=1))))
    assert s.nodes["n1"].devices[0].used_slots == 4
    full = place(s, one(DeviceRequest("EnflameDRS", slices=3)))
    assert full.reasons == {"n1": "1/1 CardTimeSlicingExhausted"}


# ---- Ascend 910C modules ----------------------------------------------------------------


def npu(i, cw="Ascend910C"):
    return DeviceUsage(f"C{i}", "n", i, cw, "Ascend", 65536, 20, 4, network_id=0)


def test_ascend_910c_takes_whole_two_npu_modules():
    s = snap(node("n1", [npu(i) for i in range(4)]))
    first = place(s, one(DeviceRequest("Ascend", 2, chip="Ascend910C")))
    # lowest module first, its NPUs in candidate order (the last device first, as HAMi)
    assert uuids(first) == ["C1", "C0"]
    reserve(s, first)
    d = place(s, one(DeviceRequest("Ascend", 1, chip="Ascend910C")))
    assert uuids(d) == ["C3", "C2"]  # a request for 1 NPU is a whole module
    odd = place(s, one(DeviceRequest("Ascend", 3, chip="Ascend910C")))
    assert not odd.schedulable
    s2 = snap(node("n1", [npu(i) for i in range(4)]))
    busy = s2.nodes["n1"].devices
    busy[1].used_slots, busy[2].used_slots = 4, 4  # one NPU of each module is full
    refused = place(s2, one(DeviceRequest("Ascend", 2, chip="Ascend910C")))
    assert "AllocatedCardsInsufficientRequest" in refused.reasons["n1"]


# ---- Kunlun node score -------------------------------------------------------------------


def xpu(i):
    return DeviceUsage(f"X{i}", "n", i, "kunlun", "Kunlun", 98304, 100, 100)


def test_kunlun_node_score_prefers_fewer_bubbles():
    # n1: XPU 0 used (bubbles 2+1 = 3); the pod takes XPU 1 (3 free in the left wing):
    # cur {1} -> 3, difference 0 -> 2000. n2 idle (bubbles 1); the pod takes XPU 0:
    # cur {0} -> 3, difference 2 -> 0. Binpack keeps the highest node score.
    n1 = node("n1", [xpu(i) for i in range(8)])
    n1.devices[0].used_slots, n1.devices[0].used_memory_mib = 1, 98304
    n1.devices[0].used_cores_percent = 100
    n2 = node("n2", [xpu(i) for i in range(8)])
    d = place(snap(n1, n2), one(DeviceRequest("Kunlun", 1)))
    assert d.pods[0].node == "n1"
    assert d.node_scores["n1"] > d.node_scores["n2"]


# ---- AWS Neuron ------------------------------------------------------------------------------


def neuron(i, node_type="trn1.32xlarge"):
    return DeviceUsage(
        f"N{i}", "n", i, "AWSNeuron", "AWSNeuron", 0, 2, 2, custom={"AWSNodeType": node_type}
    )


def test_neuron_cores_and_aligned_device_runs():
    s = snap(node("n1", [neuron(i) for i in range(8)]))
    g = grant(place(s, one(DeviceRequest("AWSNeuron", 1, cores_percent=1))))
    assert (g.cores_percent, g.slices) == (1, 1)
    s.nodes["n1"].devices[1].used_slots = 1
    d = place(s, one(DeviceRequest("AWSNeuron", 4)))
    assert uuids(d) == ["N4", "N5", "N6", "N7"]  # starts aligned to 4; N1 is in use
    assert place(s, one(DeviceRequest("AWSNeuron", 3))).reasons == {"n1": "1/8 NumaNotFit"}
    ring = snap(node("n1", [neuron(i, "inf2.48xlarge") for i in range(8)]))
    ring.nodes["n1"].devices[0].used_slots = 1
    assert uuids(place(ring, one(DeviceRequest("AWSNeuron", 3)))) == ["N1", "N2", "N3"]


# ---- Vastai dies -------------------------------------------------------------------------


def die(i, aic):
    return DeviceUsage(
        f"V{i}",
        "n",
        i,
        "Vastai",
        "Vastai",
        32768,
        100,
        1,
        custom={"DeviceStrategy": "die", "AIC": aic},
    )


def test_vastai_dies_fill_one_card_first_and_score_it():
    s = snap(node("n1", [die(0, "a"), die(1, "b"), die(2, "b"), die(3, "b")]))
    d = place(s, one(DeviceRequest("Vastai", 2)))
    assert uuids(d) == ["V3", "V2"]  # both on card b (spread order within the card)
    assert d.node_scores["n1"] == 1.0
    s.nodes["n1"].devices[1].used_slots = 1
    mutex = place(s, one(DeviceRequest("Vastai", 1)), Profile(device_policy="mutex"))
    assert uuids(mutex) == ["V0"]  # idle dies of card b are refused under mutex


def test_vastai_mutex_keeps_a_card_to_one_container_of_the_pod():
    """Issue 29: under mutex a die-mode card (AIC) with a used die is busy, and the dies this
    pod's earlier containers took count as used: HAMi books each fitted container onto its
    node copy before the next one (``fitInDevices``, scheduler/score.go:105-131) and Fit
    refuses an idle die of an occupied card (vastai/device.go:236-249, 274-286). The console
    gave the second container the other die of the first one's card."""
    s = snap(node("n1", [die(0, "a"), die(1, "a"), die(2, "b"), die(3, "b")]))
    two = pod_of(
        ContainerRequest("c1", (DeviceRequest("Vastai", 1),)),
        ContainerRequest("c2", (DeviceRequest("Vastai", 1),)),
    )
    d = place(s, two, Profile(device_policy="mutex"))
    assert (uuids(d, 0), uuids(d, 1)) == (["V3"], ["V1"])
    # without mutex the dies of one card are shared out as usual
    d = place(s, two)
    assert (uuids(d, 0), uuids(d, 1)) == (["V3"], ["V2"])


# ---- DRA shared counters and invalid models ----------------------------------------------


def test_template_devices_consume_the_cards_shared_counters():
    b3 = resolve_model(
        "Ascend",
        "Ascend910B3",
        {
            "dra": {"counters": dict(ASCEND_B3_CARD_COUNTERS)},
            "templates": list(ASCEND_B3_TEMPLATES),
        },
    )
    prof = Profile(
        device_configs=(*(c for c in default_device_configs() if c.chip != "Ascend910B3"), b3)
    )
    card = DeviceUsage(
        "B0", "n", 0, "Ascend910B3", "Ascend", 65536, 20, 4, counters={"aicore": 20, "hbm-gib": 64}
    )
    s = snap(node("n1", [card]))
    big = one(DeviceRequest("Ascend", 1, memory_mib=30000, chip="Ascend910B3"))
    d = place(s, big, prof)
    assert grant(d).counters == (("aicore", 12), ("hbm-gib", 32))
    reserve(s, d)
    assert s.nodes["n1"].devices[0].used_counters == {"aicore": 12, "hbm-gib": 32}
    # memory is left (32 GiB) but the aicore counter is not (8 < 12)
    refused = place(s, big, prof)
    assert refused.reasons == {"n1": "1/1 CardSharedCountersExhausted"}
    small = place(s, one(DeviceRequest("Ascend", 1, memory_mib=8000, chip="Ascend910B3")), prof)
    assert grant(small).template == "vir05_1c_16g"


def test_a_device_of_an_invalid_model_is_out_with_its_reason():
    bad = gpu("G0", error="device model X: config: bogus: unknown key")
    s = snap(node("n1", [bad, gpu("G1", index=1)]))
    assert uuids(place(s, one(nv(1, memory_mib=1000)))) == ["G1"]
    s1 = snap(node("n1", [gpu("G0", error="bad")]))
    assert place(s1, one(nv(1))).reasons == {"n1": "1/1 DeviceModelInvalid"}
