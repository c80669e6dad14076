"""Per-backend device configuration as plain data (loadable from DB rows or Helm values).

Defaults follow HAMi v2.10.0 Helm chart values (``charts/hami/values.yaml``,
``charts/hami/templates/scheduler/device-configmap.yaml``) and the vendor sections of
docs/hami.md §2. Nothing here is Kubernetes- or Django-specific.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

__all__ = ["Template", "DeviceModelConfig", "default_device_configs", "SLICING_MODES"]

SLICING_MODES = ("hami-core", "template", "whole", "smlu", "sgpu", "drs", "vxpu", "cu")


@dataclass(frozen=True, slots=True)
class Template:
    """A fixed partition size (Ascend vNPU template, Enflame DRS profile, Kunlun vXPU size).

    Attributes:
        name: template name (``"vir05_1c_16g"``, ``"3g.20gb"``).
        memory_mib: memory of the partition in MiB.
        cores_percent: cores the partition books (0 = memory-only accounting).
        slices: slices of the device the partition consumes (Enflame DRS; 0 = n/a).
    """

    name: str
    memory_mib: int
    cores_percent: int = 0
    slices: int = 0

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Template:
        """Build from ``{"name", "memory"|"memory_mib", "cores_percent"?, "slices"?}``."""
        mem = data.get("memory_mib", data.get("memory"))
        if not isinstance(data.get("name"), str) or not isinstance(mem, int):
            raise ValueError(f"template needs a string 'name' and int 'memory_mib': {data!r}")
        return cls(data["name"], mem, int(data.get("cores_percent", 0)),
                   int(data.get("slices", 0)))


@dataclass(frozen=True, slots=True)
class DeviceModelConfig:
    """How one HAMi backend (or chip model) is requested, registered and accounted.

    Attributes:
        vendor: vendor word used in ``Device.vendor``/``DeviceRequest.vendor``.
        common_word: HAMi backend common word; the TYPE written in allocation annotations
            (``"NVIDIA"``, ``"MLU"``, ``"DCU"``, ``"Ascend910B3"``).
        chip: device model this config is for ("" = every device of the vendor). Ascend and
            Iluvatar have one config per chip.
        resource_count / resource_memory / resource_memory_percent / resource_cores:
            container resource names ("" = not supported).
        memory_factor: MiB per unit of the memory resource (HAMi ``memoryFactor``; Cambricon
            256, Iluvatar 256, Mthreads 512, Metax sGPU 1024). 0 = the memory resource is a
            percentage of the card (Cambricon "unit 0": 1 unit = 1 % of card memory).
        cores_unit_percent: percent per unit of the cores resource (1; Mthreads 100/16 is
            expressed with ``cores_percent=16`` per card and unit 1).
        default_memory_mib: memory when none is requested (0 = whole card).
        default_cores_percent: cores when none are requested (NVIDIA 0, Cambricon/Hygon 100).
        default_count: devices when only memory/cores are requested (``defaultGPUNum``).
        exclusive_when_count_only: count-only request books cores 100 (NVIDIA webhook
            ``defaultExclusiveCoreIfNeeded``).
        split_count: tasks per device when devices are synthesised (``deviceSplitCount``).
        memory_scaling / core_scaling: ``deviceMemoryScaling`` / ``deviceCoreScaling``
            (applied when devices are synthesised from capacity).
        memory_mib: per-card registered memory when synthesised (Metax 65536, Kunlun 98304,
            Cambricon configured allocatable memory); 0 = derive from capacity.
        cores_percent: per-card cores when synthesised (100; Ascend aiCore, Mthreads 16).
        memory_capacity_mib: Ascend chip physical memory (requests above it are rejected).
        templates: fixed partitions, smallest first after normalisation.
        slicing: how a device is shared: ``hami-core`` (fractional memory+cores), ``template``
            (Ascend vNPU), ``whole`` (whole idle devices only), ``smlu`` (Cambricon),
            ``sgpu`` (Metax sGPU), ``drs`` (Enflame), ``vxpu`` (Kunlun), ``cu`` (AMD compute
            units).
        register_annotation / handshake_annotation: node annotation keys.
        to_allocate_annotation / allocated_annotation: pod annotation keys (§3.2).
        use_uuid_annotation / nouse_uuid_annotation / use_type_annotation /
        nouse_type_annotation: pod selection annotations (§3.1).
        capacity_resource: node capacity name devices are synthesised from ("" = register
            annotation).
        numa_annotation / mode_annotation: pod annotations for numa-bind / device mode.
    """

    vendor: str
    common_word: str
    chip: str = ""
    resource_count: str = ""
    resource_memory: str = ""
    resource_memory_percent: str = ""
    resource_cores: str = ""
    memory_factor: int = 1
    cores_unit_percent: int = 1
    default_memory_mib: int = 0
    default_cores_percent: int = 0
    default_count: int = 1
    exclusive_when_count_only: bool = False
    split_count: int = 10
    memory_scaling: float = 1.0
    core_scaling: float = 1.0
    memory_mib: int = 0
    cores_percent: int = 100
    memory_capacity_mib: int = 0
    templates: tuple[Template, ...] = ()
    slicing: str = "hami-core"
    register_annotation: str = ""
    handshake_annotation: str = ""
    to_allocate_annotation: str = ""
    allocated_annotation: str = ""
    use_uuid_annotation: str = ""
    nouse_uuid_annotation: str = ""
    use_type_annotation: str = ""
    nouse_type_annotation: str = ""
    capacity_resource: str = ""
    numa_annotation: str = ""
    mode_annotation: str = ""

    def __post_init__(self) -> None:
        if not self.vendor or not self.common_word:
            raise ValueError("DeviceModelConfig needs 'vendor' and 'common_word'")
        if self.slicing not in SLICING_MODES:
            raise ValueError(f"DeviceModelConfig {self.common_word}: slicing "
                             f"{self.slicing!r} not in {SLICING_MODES}")
        for name in ("memory_factor", "split_count", "memory_mib", "cores_percent",
                     "default_memory_mib", "default_cores_percent", "default_count"):
            if getattr(self, name) < 0:
                raise ValueError(f"DeviceModelConfig {self.common_word}: {name} must be >= 0")
        if self.templates:
            ordered = tuple(sorted(self.templates, key=lambda t: (t.memory_mib, t.slices,
                                                                  t.name)))
            object.__setattr__(self, "templates", ordered)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DeviceModelConfig:
        """Build from plain data (a DB row / JSON). Unknown keys raise ValueError naming them;
        ``templates`` is a list of dicts (:meth:`Template.from_dict`) or ``{name: MiB}``."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"DeviceModelConfig: unknown field(s) {', '.join(unknown)}")
        args = dict(data)
        tpl = args.get("templates", ())
        if isinstance(tpl, dict):
            args["templates"] = tuple(Template(str(k), int(v)) for k, v in tpl.items())
        else:
            args["templates"] = tuple(t if isinstance(t, Template) else Template.from_dict(t)
                                      for t in tpl)
        try:
            return cls(**args)
        except TypeError as exc:
            raise ValueError(f"DeviceModelConfig: {exc}") from None

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form accepted by :meth:`from_dict`."""
        out = asdict(self)
        out["templates"] = [asdict(t) for t in self.templates]
        return out

    @property
    def key(self) -> str:
        """Lookup key: ``common_word``."""
        return self.common_word


def _ascend(cw: str, chip_mem: int, capacity: int, ai_core: int,
            templates: dict[str, int]) -> DeviceModelConfig:
    return DeviceModelConfig(
        vendor="Ascend", common_word=cw, chip=cw,
        resource_count=f"huawei.com/{cw}", resource_memory=f"huawei.com/{cw}-memory",
        resource_cores=f"huawei.com/{cw}-core", memory_mib=chip_mem,
        memory_capacity_mib=capacity, cores_percent=ai_core,
        templates=tuple(Template(k, v) for k, v in templates.items()), slicing="template",
        split_count=max(1, chip_mem // min(templates.values())),
        register_annotation=f"hami.io/node-register-{cw}",
        handshake_annotation=f"hami.io/node-handshake-{cw}",
        to_allocate_annotation=f"hami.io/{cw}-devices-to-allocate",
        allocated_annotation=f"hami.io/{cw}-devices-allocated",
        use_uuid_annotation=f"hami.io/use-{cw}-uuid",
        nouse_uuid_annotation=f"hami.io/no-use-{cw}-uuid",
    )


def _iluvatar(chip: str) -> DeviceModelConfig:
    return DeviceModelConfig(
        vendor="Iluvatar", common_word=chip, chip=chip,
        resource_count=f"iluvatar.ai/{chip}-vgpu", resource_memory=f"iluvatar.ai/{chip}.vMem",
        resource_cores=f"iluvatar.ai/{chip}.vCore", memory_factor=256,
        register_annotation=f"hami.io/node-{chip}-register",
        handshake_annotation=f"hami.io/node-handshake-{chip}",
        to_allocate_annotation=f"hami.io/{chip}-devices-to-allocate",
        allocated_annotation=f"hami.io/{chip}-devices-allocated",
        use_uuid_annotation=f"hami.io/use-{chip}-uuid",
        nouse_uuid_annotation=f"hami.io/no-use-{chip}-uuid",
    )


def default_device_configs() -> list[DeviceModelConfig]:
    """HAMi v2.10.0 chart defaults for every backend this core models (hami.md §2)."""
    return [
        DeviceModelConfig(
            vendor="NVIDIA", common_word="NVIDIA", resource_count="nvidia.com/gpu",
            resource_memory="nvidia.com/gpumem",
            resource_memory_percent="nvidia.com/gpumem-percentage",
            resource_cores="nvidia.com/gpucores", exclusive_when_count_only=True,
            register_annotation="hami.io/node-nvidia-register",
            handshake_annotation="hami.io/node-handshake",
            to_allocate_annotation="hami.io/vgpu-devices-to-allocate",
            allocated_annotation="hami.io/vgpu-devices-allocated",
            use_uuid_annotation="nvidia.com/use-gpuuuid",
            nouse_uuid_annotation="nvidia.com/nouse-gpuuuid",
            use_type_annotation="nvidia.com/use-gputype",
            nouse_type_annotation="nvidia.com/nouse-gputype",
            numa_annotation="nvidia.com/numa-bind", mode_annotation="nvidia.com/vgpu-mode",
        ),
        DeviceModelConfig(
            vendor="MLU", common_word="MLU", resource_count="cambricon.com/vmlu",
            resource_memory="cambricon.com/mlu.smlu.vmemory",
            resource_cores="cambricon.com/mlu.smlu.vcore", memory_factor=256,
            default_cores_percent=100, split_count=100, slicing="smlu",
            capacity_resource="cambricon.com/mlu.smlu.vcore",
            to_allocate_annotation="hami.io/cambricon-mlu-devices-to-allocate",
            allocated_annotation="hami.io/cambricon-mlu-devices-allocated",
            use_uuid_annotation="cambricon.com/use-gpuuuid",
            nouse_uuid_annotation="cambricon.com/nouse-gpuuuid",
        ),
        DeviceModelConfig(
            vendor="DCU", common_word="DCU", resource_count="hygon.com/dcunum",
            resource_memory="hygon.com/dcumem", resource_cores="hygon.com/dcucores",
            default_cores_percent=100, split_count=4,
            register_annotation="hami.io/node-dcu-register",
            handshake_annotation="hami.io/node-handshake-dcu",
            to_allocate_annotation="hami.io/dcu-devices-to-allocate",
            allocated_annotation="hami.io/dcu-devices-allocated",
            use_uuid_annotation="hygon.com/use-gpuuuid",
            nouse_uuid_annotation="hygon.com/nouse-gpuuuid",
            use_type_annotation="hygon.com/use-dcutype",
            nouse_type_annotation="hygon.com/nouse-dcutype",
        ),
        _ascend("Ascend910A", 32768, 32768, 30,
                {"vir02": 2184, "vir04": 4369, "vir08": 8738, "vir16": 17476}),
        _ascend("Ascend910B2", 65536, 65536, 24,
                {"vir03_1c_8g": 8192, "vir06_1c_16g": 16384, "vir12_3c_32g": 32768}),
        _ascend("Ascend910B3", 65536, 65536, 20,
                {"vir05_1c_16g": 16384, "vir10_3c_32g": 32768}),
        _ascend("Ascend910B4-1", 65536, 65536, 20,
                {"vir05_1c_16g": 16384, "vir10_3c_32g": 32768}),
        _ascend("Ascend910B4", 32768, 32768, 20,
                {"vir05_1c_8g": 8192, "vir10_3c_16g": 16384}),
        _ascend("Ascend310P", 21527, 24576, 8,
                {"vir01": 3072, "vir02": 6144, "vir04": 12288}),
        DeviceModelConfig(
            vendor="Metax", common_word="Metax-GPU", resource_count="metax-tech.com/gpu",
            memory_mib=65536, split_count=1, slicing="whole",
            capacity_resource="metax-tech.com/gpu",
            to_allocate_annotation="hami.io/metax-gpu-devices-to-allocate",
            allocated_annotation="hami.io/metax-gpu-devices-allocated",
        ),
        DeviceModelConfig(
            vendor="MetaxSGPU", common_word="Metax-SGPU", resource_count="metax-tech.com/sgpu",
            resource_memory="metax-tech.com/vmemory", resource_cores="metax-tech.com/vcore",
            memory_factor=1024, default_cores_percent=100, slicing="sgpu",
            register_annotation="metax-tech.com/node-gpu-devices",
            to_allocate_annotation="hami.io/metax-sgpu-devices-to-allocate",
            allocated_annotation="hami.io/metax-sgpu-devices-allocated",
            use_uuid_annotation="metax-tech.com/use-gpuuuid",
            nouse_uuid_annotation="metax-tech.com/nouse-gpuuuid",
        ),
        _iluvatar("MR-V100"), _iluvatar("MR-V50"), _iluvatar("BI-V150"), _iluvatar("BI-V100"),
        DeviceModelConfig(
            vendor="Enflame", common_word="Enflame", resource_count="enflame.com/gcu",
            split_count=1, slicing="whole", capacity_resource="enflame.com/gcu",
            to_allocate_annotation="hami.io/enflame-gcu-devices-to-allocate",
            allocated_annotation="hami.io/enflame-gcu-devices-allocated",
            use_uuid_annotation="enflame.com/use-gpuuuid",
            nouse_uuid_annotation="enflame.com/nouse-gpuuuid",
        ),
        DeviceModelConfig(
            vendor="Mthreads", common_word="Mthreads", resource_count="mthreads.com/vgpu",
            resource_memory="mthreads.com/sgpu-memory", resource_cores="mthreads.com/sgpu-core",
            memory_factor=512, cores_percent=16, split_count=100,
            capacity_resource="mthreads.com/sgpu-core",
            allocated_annotation="hami.io/mthreads-vgpu-devices-allocated",
            use_uuid_annotation="mthreads.ai/use-gpuuuid",
            nouse_uuid_annotation="mthreads.ai/nouse-gpuuuid",
        ),
        DeviceModelConfig(
            vendor="Kunlun", common_word="XPU", resource_count="kunlunxin.com/xpu",
            memory_mib=98304, split_count=100, slicing="whole",
            capacity_resource="kunlunxin.com/xpu", allocated_annotation="hami.io/kunlun-allocated",
            use_uuid_annotation="baidu.com/use-gpuuuid",
            nouse_uuid_annotation="baidu.com/nouse-gpuuuid",
        ),
        DeviceModelConfig(
            vendor="KunlunVXPU", common_word="kunlun", resource_count="kunlunxin.com/vxpu",
            resource_memory="kunlunxin.com/vxpu-memory", memory_mib=98304, slicing="vxpu",
            templates=(Template("quarter", 24576, 25), Template("half", 49152, 50),
                       Template("full", 98304, 100)),
            register_annotation="hami.io/node-register-xpu",
            handshake_annotation="hami.io/node-handshake-xpu",
            to_allocate_annotation="hami.io/xpu-devices-to-allocate",
            allocated_annotation="hami.io/xpu-devices-allocated",
            use_uuid_annotation="hami.io/use-xpu-uuid",
            nouse_uuid_annotation="hami.io/no-use-xpu-uuid",
        ),
        DeviceModelConfig(
            vendor="AMD", common_word="AMD", resource_count="amd.com/gpu",
            resource_memory="amd.com/gpumem", resource_cores="amd.com/gpucores",
            default_cores_percent=100, slicing="cu",
            register_annotation="hami.io/node-amd-register",
            to_allocate_annotation="hami.io/amd-devices-to-allocate",
            allocated_annotation="hami.io/amd-devices-allocated",
            use_uuid_annotation="amd.com/use-gpu-uuid",
            nouse_uuid_annotation="amd.com/nouse-gpu-uuid",
            use_type_annotation="amd.com/use-gputype",
            nouse_type_annotation="amd.com/nouse-gputype",
        ),
    ]

