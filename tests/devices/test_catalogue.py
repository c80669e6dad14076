"""The device catalogue: schema, HAMi defaults, overlays, type matching, unit arithmetic."""

import pytest

from scheduling.devices import (
    OVERLAY_KEYS,
    ConfigError,
    DeviceModelConfig,
    build_catalogue,
    charged_memory_mib,
    default_device_configs,
    hami_type_matches,
    memory_for_units,
    mig_templates,
    model_key,
    overlay,
    overlay_diff,
    resolve_model,
    type_matches,
    unit_mib,
    units_for,
)
from scheduling.devices.resources import (
    cambricon_model_of_resource,
    cambricon_model_resources,
    card_counters,
    counter_set_name,
    dra_device_class,
    plugin_devices_per_card,
    template_counters,
    template_share_count,
)


def default(vendor, chip=""):
    return next(c for c in default_device_configs() if (c.vendor, c.chip) == (vendor, chip))


# ---- type matching ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("device", "wanted", "ok"),
    [
        ("NVIDIA A100-SXM4-80GB", "A100", True),
        ("NVIDIA A100-SXM4-80GB", "a100-sxm4", True),
        ("NVIDIA A100-SXM4-80GB", "NVIDIA-A100-SXM4-80GB", True),
        ("NVIDIA A100-SXM4-80GB", "SXM4", False),
        ("NVIDIA H200", "H20", False),
        ("NVIDIA H20", "H20", True),
        ("NVIDIA H200 NVL", "H200", True),
        ("Ascend910B4-1", "910B4", False),
        ("Ascend910B4-1", "Ascend910B4", False),
        ("Ascend910B4", "910B4", True),
        ("Ascend910B4-1", "910B4-1", True),
        ("MLU370-X8", "MLU370", True),
        ("MLU590", "MLU370", False),
        ("NVIDIA-Tesla T4", "T4", True),
        ("K100_AI", "K100", True),
        ("Z100L", "Z100", False),
        ("kunlun", "kunlun", True),
        ("NVIDIA A100", "", False),
    ],
)
def test_whole_token_matching(device, wanted, ok):
    assert type_matches(device, wanted) is ok


def test_hami_substring_rule_kept_for_parity():
    assert hami_type_matches("NVIDIA H200", "H20")
    assert hami_type_matches("Ascend910B4-1", " 910b4 ")
    assert not hami_type_matches("NVIDIA A100", "")


def test_model_key_joins_spellings_of_one_model():
    assert (
        model_key("NVIDIA-A100-SXM4-80GB") == model_key("NVIDIA A100-SXM4-80GB") == "A100-SXM4-80GB"
    )
    assert model_key("Ascend910B3") == model_key("910B3") == "910B3"
    assert model_key("Ascend910B4-1") != model_key("Ascend910B4")
    assert model_key("NVIDIA") == "NVIDIA"  # a prefix alone is kept


# ---- defaults -----------------------------------------------------------------------------


def test_hami_defaults_per_vendor():
    nv = default("NVIDIA")
    assert (
        nv.resource_count,
        nv.resource_memory,
        nv.resource_memory_percent,
        nv.resource_cores,
        nv.resource_priority,
        nv.split_count,
        nv.memory_factor,
    ) == (
        "nvidia.com/gpu",
        "nvidia.com/gpumem",
        "nvidia.com/gpumem-percentage",
        "nvidia.com/gpucores",
        "nvidia.com/priority",
        10,
        1,
    )
    assert nv.dra.driver == "hami-core-gpu.project-hami.io"
    mlu = default("MLU")
    assert (
        mlu.memory_factor,
        mlu.default_cores_percent,
        mlu.split_count,
        mlu.slicing,
        mlu.use_type_annotation,
        mlu.nouse_type_annotation,
    ) == (256, 100, 100, "smlu", "cambricon.com/use-mlutype", "cambricon.com/nouse-mlutype")
    assert (default("DCU").split_count, default("DCU").register_annotation) == (
        4,
        "hami.io/node-dcu-register",
    )
    b3 = default("Ascend", "Ascend910B3")
    assert (
        b3.memory_mib,
        b3.cores_percent,
        b3.split_count,
        [t.name for t in b3.templates],
        b3.templates[0].cores_percent,
        b3.whole_resource,
    ) == (65536, 20, 4, ["vir05_1c_16g", "vir10_3c_32g"], 5, "huawei.com/Ascend910")
    assert default("Ascend", "Ascend310P").split_count == 21527 // 3072
    c = default("Ascend", "Ascend910C")
    assert (c.super_pod, c.aliases) == (True, ("Ascend910",))
    # HAMi's TYPE words: whole Kunlun XPU "kunlun", vXPU "XPU", whole Enflame GCU "GCU"
    assert (
        default("Kunlun").common_word,
        default("KunlunVXPU").common_word,
        default("Enflame").common_word,
        default("EnflameDRS").common_word,
    ) == ("kunlun", "XPU", "GCU", "Enflame")
    assert {c.vendor for c in default_device_configs()} >= {
        "AWSNeuron",
        "Vastai",
        "Biren",
        "EnflameDRS",
        "Iluvatar",
        "Mthreads",
        "AMD",
    }


def test_chart_switches_for_ascend_and_iluvatar():
    assert all(c.enabled for c in default_device_configs())
    off = {c.vendor for c in default_device_configs(enable_all=False) if not c.enabled}
    assert off == {"Ascend", "Iluvatar"}


def test_mig_allowlist_templates():
    a100 = mig_templates("NVIDIA A100-SXM4-80GB")
    assert [(t.name, t.memory_mib, t.slices, t.placements) for t in a100] == [
        ("1g.10gb", 10240, 1, (0, 1, 2, 3, 4, 5, 6)),
        ("2g.20gb", 20480, 2, (0, 2, 4)),
        ("3g.40gb", 40960, 4, (0, 4)),
        ("7g.79gb", 80896, 8, (0,)),
    ]
    a30 = mig_templates("NVIDIA A30")
    assert [(t.name, t.slices, t.placements, t.cores_percent) for t in a30] == [
        ("1g.6gb", 1, (0, 1, 2, 3), 25),
        ("2g.12gb", 2, (0, 2), 50),
        ("4g.24gb", 4, (0,), 100),
    ]
    assert mig_templates("NVIDIA H20")[0].name == "1g.12gb"
    assert mig_templates("NVIDIA T4") == ()
    # whole tokens: an H200 NVL is not an H20 (HAMi's containsModel says it is)
    assert mig_templates("NVIDIA H200 NVL")[0].name == "1g.18gb"
    assert mig_templates("NVIDIA H200 NVL", substring=True)[0].name == "1g.12gb"


# ---- schema and overlay -----------------------------------------------------------------------


def test_unknown_key_is_named():
    with pytest.raises(ConfigError) as err:
        resolve_model("MLU", "MLU590", {"bogus_key": 1, "memory_factor": 0})
    assert err.value.errors == {"bogus_key": "unknown key"}
    assert "device model MLU590: config: bogus_key: unknown key" in str(err.value)
    assert "vendor" not in OVERLAY_KEYS


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({"memory_factor": "256"}, "memory_factor"),
        ({"memory_factor": -1}, "memory_factor"),
        ({"split_count": True}, "split_count"),
        ({"slicing": "magic"}, "slicing"),
        ({"templates": [{"name": "t"}]}, "templates.0.memory_mib"),
        (
            {"templates": [{"name": "t", "memory_mib": 1}, {"name": "t", "memory_mib": 2}]},
            "templates",
        ),
        ({"dra": {"driver": "x"}}, "dra.device_class"),
        ({"temperature_limit_c": 500}, "temperature_limit_c"),
        ([1, 2], "config"),
    ],
)
def test_bad_values_name_the_key(config, key):
    with pytest.raises(ConfigError) as err:
        resolve_model("Foo", "Foo-1", config)
    assert key in err.value.errors


def test_overlay_replaces_keys_and_merges_dra():
    base = default("NVIDIA")
    cfg = overlay(base, {"split_count": 4, "dra": {"device_class": "gpu.example.com"}})
    assert (cfg.split_count, cfg.dra.driver, cfg.dra.device_class) == (
        4,
        "hami-core-gpu.project-hami.io",
        "gpu.example.com",
    )
    assert base.split_count == 10  # frozen, untouched
    assert overlay_diff(base, cfg) == {"split_count": 4, "dra": cfg.dra.to_dict()}
    assert DeviceModelConfig.from_dict(cfg.to_dict()) == cfg


def test_resolve_model_bases():
    mlu590 = resolve_model("MLU", "MLU590", {"memory_factor": 0, "memory_mib": 79872})
    assert (mlu590.chip, mlu590.common_word, mlu590.memory_factor) == ("MLU590", "MLU", 0)
    # an Ascend row keeps its chip's backend (annotation keys), its name becomes an alias
    b3 = resolve_model("Ascend", "910B3", {})
    assert (b3.chip, b3.aliases, b3.register_annotation) == (
        "Ascend910B3",
        ("910B3",),
        "hami.io/node-register-Ascend910B3",
    )
    b41 = resolve_model("Ascend", "Ascend910B4-1", None)
    assert b41.memory_mib == 65536
    h20 = resolve_model("NVIDIA", "NVIDIA-H20", {})
    assert [t.name for t in h20.templates] == ["1g.12gb", "2g.24gb", "3g.48gb", "7g.96gb"]
    t4 = resolve_model("NVIDIA", "Tesla-T4", {})
    assert t4.templates == ()
    new = resolve_model("Foo", "Foo-1", {"resource_count": "foo.com/x"})
    assert (new.common_word, new.chip, new.resource_count) == ("Foo", "Foo-1", "foo.com/x")


def test_catalogue_flags_a_bad_model_and_resolves_the_rest():
    cat = build_catalogue(
        [
            ("MLU", "MLU370-X8", {"memory_factor": 256}),
            ("MLU", "MLU590", {"bogus_key": 1}),
            ("NVIDIA", "NVIDIA-H20", {}),
            ("Ascend", "Ascend910B3", {"memory_mib": 60000}),
        ]
    )
    assert set(cat.errors) == {"MLU590"}
    assert cat.is_flagged("MLU", "MLU590") and not cat.is_flagged("MLU", "MLU370-X8")
    assert cat.for_device("NVIDIA", "NVIDIA H20").chip == "NVIDIA-H20"
    assert cat.for_device("NVIDIA", "NVIDIA H200").chip == ""  # vendor default
    assert cat.for_device("MLU", "MLU590").chip == ""
    assert cat.for_device("Nope", "x") is None
    # a model with a default replaces it in place
    b3 = [c for c in cat.configs if c.chip == "Ascend910B3"]
    assert len(b3) == 1 and b3[0].memory_mib == 60000
    assert len(cat.vendor_configs("MLU")) == 2


# ---- units ------------------------------------------------------------------------------


def test_units_unit_0_is_one_percent_of_allocatable():
    mlu590 = resolve_model("MLU", "MLU590", {"memory_factor": 0, "memory_mib": 79872})
    assert unit_mib(mlu590) == 798
    assert units_for(mlu590, 4096) == 6
    assert charged_memory_mib(mlu590, 4096) == 4788
    assert memory_for_units(mlu590, 6) == 4788
    mlu370 = resolve_model("MLU", "MLU370-X8", {})
    assert (units_for(mlu370, 4096), units_for(mlu370, 4097), units_for(mlu370, 0)) == (16, 17, 0)
    # without a configured allocatable, unit 0 uses the card's registered memory, else fails
    bare = resolve_model("MLU", "MLU-X", {"memory_factor": 0})
    assert unit_mib(bare, card_memory_mib=24576) == 245
    with pytest.raises(ConfigError, match="memory_factor"):
        unit_mib(bare)
    with pytest.raises(ValueError):
        units_for(mlu370, -1)


def test_minimum_slice_rounds_up_and_is_charged():
    cfg = resolve_model("DCU", "K100_AI", {"min_slice_mib": 2048})
    assert (units_for(cfg, 100), charged_memory_mib(cfg, 100)) == (2048, 2048)
    assert charged_memory_mib(cfg, 5000) == 5000
    mlu = resolve_model("MLU", "MLU370-X8", {"min_slice_mib": 1000})
    assert (units_for(mlu, 300), charged_memory_mib(mlu, 300)) == (4, 1024)


def test_plugin_devices_per_card():
    mlu590 = resolve_model("MLU", "MLU590", {"memory_factor": 0, "memory_mib": 79872})
    assert plugin_devices_per_card(mlu590, 79872) == 100
    mib = resolve_model("MLU", "MLU370-X8", {"memory_factor": 1})
    assert plugin_devices_per_card(mib, 49152) == 49152
    assert plugin_devices_per_card(default("NVIDIA"), 81920) == 10


def test_cambricon_per_model_names():
    assert cambricon_model_resources("MLU370-X8") == (
        "cambricon.com/mlu370.smlu.vmemory",
        "cambricon.com/mlu370.smlu.vcore",
    )
    assert cambricon_model_resources("MLU590-M9D")[0] == "cambricon.com/mlu590.smlu.vmemory"
    assert cambricon_model_resources("MLU270-X5K")[1] == "cambricon.com/mlu270-x5k.smlu.vcore"
    assert cambricon_model_of_resource("cambricon.com/mlu590.smlu.vcore") == "mlu590"
    assert cambricon_model_of_resource("cambricon.com/mlu.smlu.vcore") is None
    assert cambricon_model_of_resource("nvidia.com/gpu") is None


def test_dra_names_and_counters():
    b3 = default("Ascend", "Ascend910B3")
    assert dra_device_class(b3) == "npu-ascend910b3.project-hami.io"
    assert dra_device_class(default("MLU")) == ""
    assert counter_set_name(default("NVIDIA").dra, minor=3) == "gpu-3-counter-set"
    assert card_counters(b3) == {"memory": 65536, "cores": 20}
    assert template_counters(b3.templates[0]) == {"memory": 16384, "cores": 5}
    assert (template_share_count(b3), template_share_count(default("NVIDIA"))) == (4, 0)
    assert template_share_count(default("Ascend", "Ascend310P")) == 7
    own = resolve_model(
        "Ascend",
        "Ascend910B3",
        {
            "dra": {"counters": {"hbm": 64}},
            "templates": [{"name": "t", "memory_mib": 16384, "counters": {"hbm": 16}}],
        },
    )
    assert card_counters(own) == {"hbm": 64}
    assert template_counters(own.templates[0]) == {"hbm": 16}


# ---- unknown models (issue 29 item 3) --------------------------------------------------------


@pytest.mark.parametrize(
    ("device", "known"),
    [
        ("NVIDIA A100-SXM4-80GB", True),
        ("MLU590", True),
        ("K100_AI", True),
        ("", False),
        ("NVIDIA", False),
        ("MLU", False),
        ("Metax-GPU", False),
        ("GCU", False),
        ("kunlun", False),
        ("AWSNeuron", False),
    ],
)
def test_type_known_tells_a_model_from_a_vendor_word(device, known):
    from scheduling.devices.matching import type_known

    assert type_known(device) is known


def test_every_backend_word_of_a_model_less_default_is_unknown():
    from scheduling.devices.matching import type_known

    words = {c.common_word for c in default_device_configs() if not c.chip}
    assert "MLU" in words and "GCU" in words
    assert [w for w in sorted(words) if type_known(w)] == []


def test_nouse_refuses_a_device_whose_model_cannot_be_read():
    from scheduling.devices.matching import type_excluded

    assert type_excluded("MLU", ["MLU370"]) is True  # cannot be verified
    assert type_excluded("", ["H20"]) is True
    assert type_excluded("MLU590", ["MLU370"]) is False
    assert type_excluded("MLU370-X8", ["MLU370"]) is True
    assert type_excluded("MLU", []) is False  # no type constraint: allowed


# ---- HAMi's long NVIDIA form (issue 29 item 4) -----------------------------------------------


def test_long_nvidia_form_is_the_model_it_names():
    # the device plugin registers "NVIDIA-" + the NVML name: "NVIDIA-NVIDIA H20"
    assert model_key("NVIDIA-NVIDIA H20") == model_key("NVIDIA H20") == model_key("H20") == "H20"
    assert model_key("NVIDIA-NVIDIA A100-SXM4-80GB") == "A100-SXM4-80GB"
    assert type_matches("NVIDIA-NVIDIA H20", "H20")
    assert type_matches("NVIDIA-NVIDIA H20", "nvidia h20")
    assert not type_matches("NVIDIA-NVIDIA H200", "H20")
    assert type_matches("NVIDIA-NVIDIA H200", "H200")
    # HAMi's substring rule, kept for place: H20 is in H200
    assert hami_type_matches("NVIDIA-NVIDIA H200", "H20")
