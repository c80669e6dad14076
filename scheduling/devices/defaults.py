"""HAMi v2.10.0 defaults per backend (chart ``charts/hami/values.yaml`` and
``templates/scheduler/device-configmap.yaml``; vendor code under ``pkg/device/``), plus the
console's additions (DRA drivers, whole-card resources, minimum slices, type aliases).

Data tables; the research notes (/work/notes/research/hami-v2.10.md §2-§4, §8) give the
source line of every value.
"""

from __future__ import annotations

import math
import re

from scheduling.devices.matching import hami_type_matches, type_matches
from scheduling.devices.resources import template_share_count
from scheduling.devices.schema import DeviceModelConfig, DraSpec, Template
from scheduling.devices.vendors import ascend_family

__all__ = [
    "default_device_configs",
    "ascend_config",
    "iluvatar_config",
    "mig_templates",
    "MIG_PROFILE_ALLOWLIST",
    "ASCEND_CHIPS",
    "ILUVATAR_CHIPS",
    "NVIDIA_DRA",
    "ASCEND_DRA",
    "ENFLAME_DRS_ANNOTATION",
    "CAMBRICON_MODEL_LABEL",
]

ENFLAME_DRS_ANNOTATION = "enflame.com/gcu-drs-capacity"
"""Node annotation of Enflame DRS cards and profiles (``pkg/device/enflame/device.go``)."""

CAMBRICON_MODEL_LABEL = "Model"
"""Node label the Cambricon device plugin writes with ``--node-label`` (card 0's model)."""

NVIDIA_DRA = DraSpec(
    driver="hami-core-gpu.project-hami.io",
    device_class="hami-core-gpu.project-hami.io",
    counter_set="gpu-{minor}-counter-set",
)
"""Project-HAMi/k8s-dra-driver: HAMi-core devices ``hami-gpu-<minor>`` with consumable
``memory``/``cores``; DynamicMIG partitions carry ``parentUUID``/``profile`` and consume
``gpu-<minor>-counter-set``."""

ASCEND_DRA = DraSpec(
    driver="ascend.project-hami.io",
    device_class="npu-{model}.project-hami.io",
    profile_attribute="template",
)
"""Project-HAMi/ascend-dra-driver (HAMivNPUCore mode); its device classes are per model. The
template attribute and counters are a console convention (the upstream driver publishes no
counters, research notes §9.8)."""

MIG_PROFILE_ALLOWLIST: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("A30",), ("1g.6gb", "2g.12gb", "4g.24gb")),
    (
        ("A100-SXM4-40GB", "A100-40GB-PCIe", "A100-PCIE-40GB"),
        ("1g.5gb", "2g.10gb", "3g.20gb", "7g.40gb"),
    ),
    (
        ("A100-SXM4-80GB", "A100-80GB-PCIe", "A100-PCIE-80GB"),
        ("1g.10gb", "2g.20gb", "3g.40gb", "7g.79gb"),
    ),
    (("H100-PCIE-80GB", "H100-SXM5-80GB"), ("1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb")),
    (("H100-PCIE-94GB", "H100-SXM5-94GB"), ("1g.12gb", "2g.24gb", "3g.47gb", "7g.94gb")),
    (("H20", "H100 on GH200"), ("1g.12gb", "2g.24gb", "3g.48gb", "7g.96gb")),
    (("H200 NVL", "H200-SXM5"), ("1g.18gb", "2g.35gb", "3g.71gb", "7g.141gb")),
    (("B200",), ("1g.23gb", "2g.45gb", "3g.90gb", "7g.180gb")),
    (("RTX PRO 6000 Blackwell Server Edition",), ("1g.24gb", "2g.48gb", "4g.96gb")),
)
"""HAMi v2.10 ``nvidia.migProfileAllowlist`` (device-configmap.yaml:35-53). The plugin takes
the **first** entry with a model that is a substring of the GPU's type string."""

_MIG = re.compile(r"^(\d+)g\.(\d+)gb$")
# compute slices -> (memory slices taken, allowed starts): NVML placements of 8-slice GPUs
# (A100, H100, H20, H200, B200) and 4-slice GPUs (A30, RTX PRO 6000 Blackwell)
_GEOMETRY_8 = {1: (1, range(7)), 2: (2, (0, 2, 4)), 3: (4, (0, 4)), 4: (4, (0,)), 7: (8, (0,))}
_GEOMETRY_4 = {1: (1, range(4)), 2: (2, (0, 2)), 4: (4, (0,))}


def mig_templates(
    gpu_type: str,
    allowlist: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = MIG_PROFILE_ALLOWLIST,
    *,
    substring: bool = False,
) -> tuple[Template, ...]:
    """Nominal MIG profiles of a GPU type from the allowlist: the first entry naming the
    type's model by whole tokens (:func:`~scheduling.devices.matching.type_matches`; with
    ``substring``, HAMi's ``containsModel``, under which ``H20`` also names an H200).

    Geometry (NVML placements): a GPU whose largest profile is ``4g`` has 4 memory slices
    (A30), else 8 (A100/H100 class: ``1g`` at 0-6, ``2g`` at 0/2/4, ``3g`` 4 slices at 0/4,
    ``4g`` 4 slices at 0, ``7g`` all 8). Memory is
    the profile's GB x 1024 and cores ``ceil(n*100/max_n)``: nominal values for GPUs whose
    registration carries no ``migProfiles``; NVML's figures (registration) always win.
    """
    match = hami_type_matches if substring else type_matches
    profiles = next((p for models, p in allowlist if any(match(gpu_type, m) for m in models)), ())
    parsed = [(name, int(m[1]), int(m[2])) for name in profiles if (m := _MIG.match(name))]
    if not parsed:
        return ()
    top = max(g for _, g, _ in parsed)
    geometry = _GEOMETRY_4 if top == 4 else _GEOMETRY_8
    out = []
    for name, g, gb in parsed:
        size, starts = geometry.get(g, (g, (0,)))
        out.append(
            Template(
                name=name,
                memory_mib=gb * 1024,
                cores_percent=math.ceil(g * 100 / top),
                slices=size,
                placements=tuple(starts),
            )
        )
    return tuple(out)


# chipName, commonWord, memoryAllocatable, memoryCapacity, aiCore, aiCPU, superPod,
# templates name -> (MiB, aiCore, aiCPU)   (device-configmap.yaml:117-274)
ASCEND_CHIPS: tuple[
    tuple[str, str, int, int, int, int, bool, dict[str, tuple[int, int, int]]], ...
] = (
    (
        "910A",
        "Ascend910A",
        32768,
        32768,
        30,
        0,
        False,
        {
            "vir02": (2184, 2, 0),
            "vir04": (4369, 4, 0),
            "vir08": (8738, 8, 0),
            "vir16": (17476, 16, 0),
        },
    ),
    (
        "910B2",
        "Ascend910B2",
        65536,
        65536,
        24,
        6,
        False,
        {
            "vir03_1c_8g": (8192, 3, 1),
            "vir06_1c_16g": (16384, 6, 1),
            "vir12_3c_32g": (32768, 12, 3),
        },
    ),
    (
        "910B3",
        "Ascend910B3",
        65536,
        65536,
        20,
        7,
        False,
        {"vir05_1c_16g": (16384, 5, 1), "vir10_3c_32g": (32768, 10, 3)},
    ),
    (
        "910B4-1",
        "Ascend910B4-1",
        65536,
        65536,
        20,
        7,
        False,
        {"vir05_1c_16g": (16384, 5, 1), "vir10_3c_32g": (32768, 10, 3)},
    ),
    (
        "910B4",
        "Ascend910B4",
        32768,
        32768,
        20,
        7,
        False,
        {"vir05_1c_8g": (8192, 5, 1), "vir10_3c_16g": (16384, 10, 3)},
    ),
    (
        "310P3",
        "Ascend310P",
        21527,
        24576,
        8,
        7,
        False,
        {"vir01": (3072, 1, 1), "vir02": (6144, 2, 2), "vir04": (12288, 4, 4)},
    ),
    (
        "Ascend910",
        "Ascend910C",
        65536,
        65536,
        20,
        7,
        True,
        {"vir05_1c_16g": (16384, 5, 1), "vir10_3c_32g": (32768, 10, 3)},
    ),
)

ILUVATAR_CHIPS = ("MR-V100", "MR-V50", "BI-V150", "BI-V100")
"""HAMi chart ``iluvatars`` (chipName = commonWord)."""


def ascend_config(
    cw: str,
    chip_name: str,
    allocatable: int,
    capacity: int,
    ai_core: int,
    templates: tuple[Template, ...],
    super_pod: bool = False,
    resources: tuple[str, str, str] | None = None,
    memory_factor: int = 1,
) -> DeviceModelConfig:
    """One Ascend backend (HAMi ``vnpus.configs[]`` entry); annotation keys from the common
    word (``pkg/device/ascend/device.go:81-109``). ``split_count`` = allocatable / smallest
    template (the plugin's ``VDeviceCount``)."""
    count, mem, core = resources or (
        f"huawei.com/{cw}",
        f"huawei.com/{cw}-memory",
        f"huawei.com/{cw}-core",
    )
    cfg = DeviceModelConfig(
        vendor="Ascend",
        common_word=cw,
        chip=cw,
        aliases=(chip_name,),
        enabled=False,
        resource_count=count,
        resource_memory=mem,
        resource_cores=core,
        whole_resource=f"huawei.com/{ascend_family(cw)}",
        memory_factor=memory_factor,
        memory_mib=allocatable,
        memory_capacity_mib=capacity,
        cores_percent=ai_core,
        templates=templates,
        slicing="template",
        super_pod=super_pod,
        register_annotation=f"hami.io/node-register-{cw}",
        handshake_annotation=f"hami.io/node-handshake-{cw}",
        to_allocate_annotation=f"hami.io/{cw}-devices-to-allocate",
        allocated_annotation=f"hami.io/{cw}-devices-allocated",
        use_uuid_annotation=f"hami.io/use-{cw}-uuid",
        nouse_uuid_annotation=f"hami.io/no-use-{cw}-uuid",
        dra=ASCEND_DRA,
    )
    return cfg.model_copy(update={"split_count": template_share_count(cfg) or 1})


def iluvatar_config(
    chip: str, cw: str | None = None, resources: tuple[str, str, str] | None = None
) -> DeviceModelConfig:
    """One Iluvatar backend; annotation keys from the common word
    (``pkg/device/iluvatar/device.go:61-82``); ``vMem`` unit 256 MiB."""
    cw = cw or chip
    count, mem, core = resources or (
        f"iluvatar.ai/{chip}-vgpu",
        f"iluvatar.ai/{chip}.vMem",
        f"iluvatar.ai/{chip}.vCore",
    )
    return DeviceModelConfig(
        vendor="Iluvatar",
        common_word=cw,
        chip=chip,
        enabled=False,
        resource_count=count,
        resource_memory=mem,
        resource_cores=core,
        whole_resource="iluvatar.ai/gpu",
        memory_factor=256,
        register_annotation=f"hami.io/node-{cw}-register",
        handshake_annotation=f"hami.io/node-handshake-{cw}",
        to_allocate_annotation=f"hami.io/{cw}-devices-to-allocate",
        allocated_annotation=f"hami.io/{cw}-devices-allocated",
        use_uuid_annotation=f"hami.io/use-{cw}-uuid",
        nouse_uuid_annotation=f"hami.io/no-use-{cw}-uuid",
    )


def _ascend_defaults() -> list[DeviceModelConfig]:
    out = []
    for chip, cw, alloc, cap, core, _cpu, pod, tpls in ASCEND_CHIPS:
        templates = tuple(
            Template(name=n, memory_mib=m, cores_percent=c, cpus=p) for n, (m, c, p) in tpls.items()
        )
        out.append(ascend_config(cw, chip, alloc, cap, core, templates, pod))
    return out


def _nvidia() -> DeviceModelConfig:
    return DeviceModelConfig(
        vendor="NVIDIA",
        common_word="NVIDIA",
        resource_count="nvidia.com/gpu",
        resource_memory="nvidia.com/gpumem",
        resource_memory_percent="nvidia.com/gpumem-percentage",
        resource_cores="nvidia.com/gpucores",
        resource_priority="nvidia.com/priority",
        whole_resource="nvidia.com/gpu",
        exclusive_when_count_only=True,
        register_annotation="hami.io/node-nvidia-register",
        handshake_annotation="hami.io/node-handshake",
        to_allocate_annotation="hami.io/vgpu-devices-to-allocate",
        allocated_annotation="hami.io/vgpu-devices-allocated",
        use_uuid_annotation="nvidia.com/use-gpuuuid",
        nouse_uuid_annotation="nvidia.com/nouse-gpuuuid",
        use_type_annotation="nvidia.com/use-gputype",
        nouse_type_annotation="nvidia.com/nouse-gputype",
        numa_annotation="nvidia.com/numa-bind",
        mode_annotation="nvidia.com/vgpu-mode",
        dra=NVIDIA_DRA,
    )


def _cambricon_hygon() -> list[DeviceModelConfig]:
    return [
        DeviceModelConfig(
            vendor="MLU",
            common_word="MLU",
            resource_count="cambricon.com/vmlu",
            resource_memory="cambricon.com/mlu.smlu.vmemory",
            resource_cores="cambricon.com/mlu.smlu.vcore",
            whole_resource="cambricon.com/mlu",
            memory_factor=256,
            default_cores_percent=100,
            split_count=100,
            slicing="smlu",
            capacity_resource="cambricon.com/mlu.smlu.vcore",
            to_allocate_annotation="hami.io/cambricon-mlu-devices-to-allocate",
            allocated_annotation="hami.io/cambricon-mlu-devices-allocated",
            use_uuid_annotation="cambricon.com/use-gpuuuid",
            nouse_uuid_annotation="cambricon.com/nouse-gpuuuid",
            use_type_annotation="cambricon.com/use-mlutype",
            nouse_type_annotation="cambricon.com/nouse-mlutype",
        ),
        DeviceModelConfig(
            vendor="DCU",
            common_word="DCU",
            resource_count="hygon.com/dcunum",
            resource_memory="hygon.com/dcumem",
            resource_cores="hygon.com/dcucores",
            whole_resource="hygon.com/dcu",
            default_cores_percent=100,
            split_count=4,
            register_annotation="hami.io/node-dcu-register",
            handshake_annotation="hami.io/node-handshake-dcu",
            to_allocate_annotation="hami.io/dcu-devices-to-allocate",
            allocated_annotation="hami.io/dcu-devices-allocated",
            use_uuid_annotation="hygon.com/use-gpuuuid",
            nouse_uuid_annotation="hygon.com/nouse-gpuuuid",
            use_type_annotation="hygon.com/use-dcutype",
            nouse_type_annotation="hygon.com/nouse-dcutype",
        ),
    ]


def _metax_enflame_mthreads() -> list[DeviceModelConfig]:
    return [
        DeviceModelConfig(
            vendor="Metax",
            common_word="Metax-GPU",
            resource_count="metax-tech.com/gpu",
            whole_resource="metax-tech.com/gpu",
            memory_mib=65536,
            split_count=1,
            slicing="whole",
            capacity_resource="metax-tech.com/gpu",
            to_allocate_annotation="hami.io/metax-gpu-devices-to-allocate",
            allocated_annotation="hami.io/metax-gpu-devices-allocated",
        ),
        DeviceModelConfig(
            vendor="MetaxSGPU",
            common_word="Metax-SGPU",
            resource_count="metax-tech.com/sgpu",
            resource_memory="metax-tech.com/vmemory",
            resource_cores="metax-tech.com/vcore",
            whole_resource="metax-tech.com/gpu",
            memory_factor=1024,
            default_cores_percent=100,
            slicing="sgpu",
            register_annotation="metax-tech.com/node-gpu-devices",
            to_allocate_annotation="hami.io/metax-sgpu-devices-to-allocate",
            allocated_annotation="hami.io/metax-sgpu-devices-allocated",
            use_uuid_annotation="metax-tech.com/use-gpuuuid",
            nouse_uuid_annotation="metax-tech.com/nouse-gpuuuid",
        ),
        DeviceModelConfig(
            vendor="Enflame",
            common_word="GCU",
            resource_count="enflame.com/gcu",
            whole_resource="enflame.com/gcu",
            memory_mib=100,
            split_count=1,
            slicing="whole",
            capacity_resource="enflame.com/gcu",
            to_allocate_annotation="hami.io/enflame-gcu-devices-to-allocate",
            allocated_annotation="hami.io/enflame-gcu-devices-allocated",
            use_uuid_annotation="enflame.com/use-gpuuuid",
            nouse_uuid_annotation="enflame.com/nouse-gpuuuid",
        ),
        DeviceModelConfig(
            vendor="EnflameDRS",
            common_word="Enflame",
            resource_count="enflame.com/drs-gcu",
            resource_memory="enflame.com/gcu-memory",
            resource_cores="enflame.com/gcu-core",
            whole_resource="enflame.com/gcu",
            slicing="drs",
            split_count=0,
            allocated_annotation="hami.io/enflame-vgpu-devices-allocated",
            use_uuid_annotation="enflame.com/use-gpuuuid",
            nouse_uuid_annotation="enflame.com/nouse-gpuuuid",
        ),
        DeviceModelConfig(
            vendor="Mthreads",
            common_word="Mthreads",
            resource_count="mthreads.com/vgpu",
            resource_memory="mthreads.com/sgpu-memory",
            resource_cores="mthreads.com/sgpu-core",
            whole_resource="mthreads.com/gpu",
            memory_factor=512,
            cores_percent=16,
            split_count=100,
            capacity_resource="mthreads.com/sgpu-core",
            allocated_annotation="hami.io/mthreads-vgpu-devices-allocated",
            use_uuid_annotation="mthreads.ai/use-gpuuuid",
            nouse_uuid_annotation="mthreads.ai/nouse-gpuuuid",
        ),
    ]


def _kunlun_neuron_amd() -> list[DeviceModelConfig]:
    return [
        DeviceModelConfig(
            vendor="Kunlun",
            common_word="kunlun",
            resource_count="kunlunxin.com/xpu",
            whole_resource="kunlunxin.com/xpu",
            memory_mib=98304,
            split_count=100,
            slicing="whole",
            capacity_resource="kunlunxin.com/xpu",
            allocated_annotation="hami.io/kunlun-allocated",
            use_uuid_annotation="baidu.com/use-gpuuuid",
            nouse_uuid_annotation="baidu.com/nouse-gpuuuid",
        ),
        DeviceModelConfig(
            vendor="KunlunVXPU",
            common_word="XPU",
            resource_count="kunlunxin.com/vxpu",
            resource_memory="kunlunxin.com/vxpu-memory",
            whole_resource="kunlunxin.com/xpu",
            memory_mib=98304,
            slicing="vxpu",
            templates=(
                Template(name="quarter", memory_mib=24576, cores_percent=25),
                Template(name="half", memory_mib=49152, cores_percent=50),
                Template(name="full", memory_mib=98304, cores_percent=100),
            ),
            register_annotation="hami.io/node-register-xpu",
            handshake_annotation="hami.io/node-handshake-xpu",
            to_allocate_annotation="hami.io/xpu-devices-to-allocate",
            allocated_annotation="hami.io/xpu-devices-allocated",
            use_uuid_annotation="hami.io/use-xpu-uuid",
            nouse_uuid_annotation="hami.io/no-use-xpu-uuid",
        ),
        DeviceModelConfig(
            vendor="AWSNeuron",
            common_word="AWSNeuron",
            resource_count="aws.amazon.com/neuron",
            resource_cores="aws.amazon.com/neuroncore",
            whole_resource="aws.amazon.com/neuron",
            split_count=2,
            slicing="neuron",
            capacity_resource="aws.amazon.com/neuron",
            allocated_annotation="hami.io/aws-neuron-devices-allocated",
            use_uuid_annotation="aws.amazon.com/use-neuron-uuid",
            nouse_uuid_annotation="aws.amazon.com/nouse-neuron-uuid",
        ),
        DeviceModelConfig(
            vendor="AMD",
            common_word="AMD",
            resource_count="amd.com/gpu",
            resource_memory="amd.com/gpumem",
            resource_cores="amd.com/gpucores",
            whole_resource="amd.com/gpu",
            default_cores_percent=100,
            slicing="cu",
            register_annotation="hami.io/node-amd-register",
            to_allocate_annotation="hami.io/amd-devices-to-allocate",
            allocated_annotation="hami.io/amd-devices-allocated",
            use_uuid_annotation="amd.com/use-gpu-uuid",
            nouse_uuid_annotation="amd.com/nouse-gpu-uuid",
            use_type_annotation="amd.com/use-gputype",
            nouse_type_annotation="amd.com/nouse-gputype",
        ),
    ]


def _vastai_biren() -> list[DeviceModelConfig]:
    return [
        DeviceModelConfig(
            vendor="Vastai",
            common_word="Vastai",
            resource_count="vastaitech.com/va",
            whole_resource="vastaitech.com/va",
            split_count=1,
            slicing="die",
            register_annotation="hami.io/node-va-register",
            handshake_annotation="hami.io/node-handshake-va",
            to_allocate_annotation="hami.io/Vastai-devices-to-allocate",
            allocated_annotation="hami.io/Vastai-devices-allocated",
            use_uuid_annotation="vastaitech.com/use-gpuuuid",
            nouse_uuid_annotation="vastaitech.com/nouse-gpuuuid",
        ),
        DeviceModelConfig(
            vendor="Biren",
            common_word="Biren",
            resource_count="birentech.com/gpu",
            whole_resource="birentech.com/gpu",
            split_count=1,
            register_annotation="hami.io/node-biren-register",
            handshake_annotation="hami.io/node-handshake-biren",
            to_allocate_annotation="hami.io/Biren-devices-to-allocate",
            allocated_annotation="hami.io/Biren-devices-allocated",
            use_uuid_annotation="birentech.com/use-gpuuuid",
            nouse_uuid_annotation="birentech.com/nouse-gpuuuid",
        ),
    ]


def default_device_configs(*, enable_all: bool = True) -> list[DeviceModelConfig]:
    """HAMi v2.10.0 defaults for every backend, one config per backend (per chip for
    Ascend and Iluvatar), in a stable order.

    Args:
        enable_all: the console turns every backend on (HAMi's chart leaves Ascend and
            Iluvatar off, ``devices.<v>.enabled: false``); False keeps the chart's switches.
    """
    out = [
        _nvidia(),
        *_cambricon_hygon(),
        *_ascend_defaults(),
        *_metax_enflame_mthreads(),
        *(iluvatar_config(c) for c in ILUVATAR_CHIPS),
        *_kunlun_neuron_amd(),
        *_vastai_biren(),
    ]
    if enable_all:
        out = [c if c.enabled else c.model_copy(update={"enabled": True}) for c in out]
    return out
