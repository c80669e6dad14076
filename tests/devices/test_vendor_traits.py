"""The vendor descriptors of the device catalogue (``scheduling.devices.vendors``): the values
the rules moved there from the selectors, the Kubernetes adapter, the demo and telemetry
(issue 28) keep the answers those modules gave."""

from __future__ import annotations

import uuid

from scheduling.choices import VENDORS
from scheduling.devices.vendors import (
    CAPACITY_CAMBRICON,
    CAPACITY_MTHREADS,
    CAPACITY_NEURON,
    CAPACITY_UNITS,
    ascend_family,
    serial_vendor_of_exporter,
    vendor_traits,
)


def test_the_vendor_choices_keep_their_order():
    assert VENDORS == (
        "NVIDIA",
        "MLU",
        "DCU",
        "Ascend",
        "Metax",
        "MetaxSGPU",
        "Iluvatar",
        "Enflame",
        "Mthreads",
        "Kunlun",
        "KunlunVXPU",
        "AMD",
        "AWSNeuron",
        "Vastai",
        "Biren",
        "EnflameDRS",
    )


def _with(trait: str) -> set[str]:
    return {v for v in VENDORS if getattr(vendor_traits(v), trait)}


def test_each_rule_names_the_vendors_it_named_before():
    assert _with("per_chip") == {"Ascend", "Iluvatar"}
    assert _with("mig") == {"NVIDIA"}
    assert _with("vnpu_templates") == {"Ascend"}
    assert _with("drs_profiles") == {"EnflameDRS"}
    assert _with("neuron_cores") == {"AWSNeuron"}
    assert _with("unit_sharing") == _with("serial_identity") == {"DCU"}
    assert _with("count_from_limits_only") == {"MetaxSGPU", "AMD"}
    assert _with("memory_quantity") == _with("own_registration_entries") == {"MetaxSGPU"}
    assert _with("qos_annotation") == {"MetaxSGPU"}
    assert _with("whole_cards_when_multi") == {"Mthreads"}
    assert _with("numa_halves") == {"Kunlun"}
    assert {v for v in VENDORS if not vendor_traits(v).hami_reads_type_annotations} == {"MLU"}
    layouts = {v: vendor_traits(v).capacity_layout for v in VENDORS}
    assert {v for v, layout in layouts.items() if layout != CAPACITY_UNITS} == {
        "MLU",
        "Mthreads",
        "AWSNeuron",
    }
    assert (layouts["MLU"], layouts["Mthreads"], layouts["AWSNeuron"]) == (
        CAPACITY_CAMBRICON,
        CAPACITY_MTHREADS,
        CAPACITY_NEURON,
    )


def test_capacity_ids_use_hami_s_id_word():
    assert vendor_traits("Metax").id_word == "metax"
    assert vendor_traits("Enflame").id_word == "GCU"
    assert vendor_traits("Kunlun").id_word == "kunlun"


def test_only_the_hygon_exporter_reports_serials():
    assert serial_vendor_of_exporter("hygon") == "DCU"
    for kind in ("dcgm", "ascend", "cambricon", "hami-monitor", ""):
        assert serial_vendor_of_exporter(kind) == ""


def test_ascend_family():
    assert ascend_family("Ascend910B3") == "Ascend910"
    assert ascend_family("Ascend310P") == "Ascend310P"
    assert ascend_family("Ascend310") == "Ascend310"
    assert ascend_family("MR-V100") == "MR-V100"


def test_made_up_device_ids_have_the_vendor_s_shape():
    raw = uuid.UUID("12345678-1234-5678-1234-567812345678")
    assert vendor_traits("NVIDIA").made_up_device_id(raw) == f"GPU-{raw}"
    assert vendor_traits("DCU").made_up_device_id(raw) == "DCU-1234567812345678"
    assert vendor_traits("MLU").made_up_device_id(raw) == "MLU-1234567812345678"
