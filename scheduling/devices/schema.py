"""The per-model configuration schema: :class:`DeviceModelConfig`, :class:`Template`,
:class:`DraSpec` and :class:`ConfigError`.

Validation is pydantic's (strict scalars: ``"3"`` is not an int, ``True`` is not a number;
lists are accepted for tuples; unknown keys are an error). A :class:`ConfigError` carries
``errors`` = ``{"dotted.key": "message"}`` so an API can answer 400 with the key named.

Units are in the names: ``memory_mib`` (MiB), ``cores_percent`` (percent of one device,
100 = whole; Ascend ``aiCore``, Mthreads sixteenths, AMD compute units as registered).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    ValidationError,
    field_validator,
)

__all__ = [
    "ConfigError",
    "Template",
    "DraSpec",
    "DeviceModelConfig",
    "SLICING_MODES",
    "OVERLAY_KEYS",
]

SLICING_MODES = (
    "hami-core",
    "template",
    "whole",
    "smlu",
    "sgpu",
    "drs",
    "vxpu",
    "cu",
    "neuron",
    "die",
)
"""How a device is shared: ``hami-core`` (fractional memory + cores), ``template`` (Ascend
vNPU), ``whole`` (whole idle devices only), ``smlu`` (Cambricon sMLU units), ``sgpu`` (Metax
sGPU), ``drs`` (Enflame DRS profiles), ``vxpu`` (Kunlun vXPU sizes), ``cu`` (AMD compute
units), ``neuron`` (AWS Neuron core bitmasks), ``die`` (Vastai dies)."""

INT32_MAX = 2**31 - 1
"""Upper bound of every integer of a config: HAMi holds counts, MiB and percents as int32
(``util.DeviceInfo`` ``Count``/``Devmem``/``Devcore``), and so do the console's columns; a
larger value would overflow at the first inventory sync instead of being refused here."""
Int = Annotated[int, Strict(), Field(ge=0, le=INT32_MAX)]
Pos = Annotated[int, Strict(), Field(ge=1, le=INT32_MAX)]
Str = Annotated[str, Strict(), Field(max_length=253)]
Bool = Annotated[bool, Strict()]


class ConfigError(ValueError):
    """A device-model configuration is invalid.

    Attributes:
        errors: ``{"key" or "key.sub" or "templates.0.name": "message"}``.
        where: prefix naming the source (``"device model MLU590: config"``).
    """

    def __init__(self, errors: Mapping[str, str], where: str = "config") -> None:
        self.errors = dict(errors)
        self.where = where
        text = "; ".join(f"{k}: {v}" for k, v in self.errors.items())
        super().__init__(f"{where}: {text}")

    @classmethod
    def from_validation(
        cls, exc: ValidationError, where: str = "config", prefix: str = ""
    ) -> ConfigError:
        """Translate a pydantic error (``loc`` -> dotted key)."""
        out: dict[str, str] = {}
        for e in exc.errors():
            key = ".".join(str(p) for p in (prefix, *e["loc"]) if p != "")
            msg = "unknown key" if e["type"] == "extra_forbidden" else e["msg"]
            out.setdefault(key or "config", msg)
        return cls(out, where)


def _pairs(value: Any) -> Any:
    """``{"name": n}`` -> ``(("name", n),)`` sorted by name; other inputs unchanged."""
    if isinstance(value, Mapping):
        return tuple(sorted(value.items()))
    return value


Counters = Annotated[
    tuple[tuple[Annotated[str, Strict(), Field(min_length=1, max_length=63)], Int], ...],
    BeforeValidator(_pairs),
]
"""DRA shared counters ``{name: value}`` (stored as sorted pairs, hashable)."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able data accepted back by the constructor."""
        return self.model_dump(mode="json")


class Template(_Frozen):
    """A fixed partition of a card: Ascend vNPU template, Enflame DRS profile, Kunlun vXPU
    size or NVIDIA MIG profile.

    Attributes:
        name: template name (``"vir05_1c_16g"``, ``"3g.20gb"``, ``"1g.10gb"``).
        memory_mib: memory of one partition, MiB (MIG: nominal, the registration's
            ``migProfiles`` from NVML win).
        cores_percent: cores the partition books (Ascend aiCore; 0 = memory-only).
        cpus: Ascend ``aiCPU`` of the template (informational).
        slices: card slices the partition takes (Enflame DRS size, MIG memory slices).
        placements: MIG start slices the profile may use (empty = any / not MIG).
        counters: DRA shared counters one partition consumes, ``{name: value}``; empty =
            ``{"memory": memory_mib, "cores": cores_percent}`` (see
            :func:`scheduling.devices.resources.template_counters`).
    """

    name: Annotated[str, Strict(), Field(min_length=1, max_length=63)]
    memory_mib: Int
    cores_percent: Int = 0
    cpus: Int = 0
    slices: Int = 0
    placements: tuple[Int, ...] = ()
    counters: Counters = ()


class DraSpec(_Frozen):
    """How a model is published and claimed through DRA (``resource.k8s.io``).

    Attributes:
        driver: DRA driver name (``hami-core-gpu.project-hami.io``).
        device_class: DeviceClass claims name; ``{model}`` is replaced by the model name
            lower-cased with spaces and ``/`` as ``-`` (Ascend: ``npu-{model}.project-hami.io``).
        consumable_capacity: one device per card shared by several claims (KEP-5075);
            False = one allocation per device.
        uuid_attribute / parent_attribute / profile_attribute: device attributes that pin a
            card, a partition's card and a partition's template.
        memory_capacity / cores_capacity: capacity names of a shared card.
        counter_set: name of a card's shared counter set; ``{minor}`` / ``{index}`` /
            ``{uuid}`` are replaced (NVIDIA DynamicMIG ``gpu-{minor}-counter-set``); "" = the
            model's templates consume no counters.
        counters: the counters of one card, ``{name: value}``; empty = ``{"memory":
            memory_mib, "cores": cores_percent}`` of the card.
    """

    driver: Annotated[str, Strict(), Field(min_length=1, max_length=63)]
    device_class: Annotated[str, Strict(), Field(min_length=1, max_length=253)]
    consumable_capacity: Bool = True
    uuid_attribute: Str = "uuid"
    parent_attribute: Str = "parentUUID"
    profile_attribute: Str = "profile"
    memory_capacity: Str = "memory"
    cores_capacity: Str = "cores"
    counter_set: Str = ""
    counters: Counters = ()


class DeviceModelConfig(_Frozen):
    """One device model (or, with ``chip == ""``, every model of a HAMi backend): how it is
    registered, requested, sliced, charged, published through DRA and watched.

    Identity:
        vendor: backend vendor word (``NVIDIA``, ``MLU``, ``DCU``, ``Ascend``, ``Metax``,
            ``MetaxSGPU``, ``Iluvatar``, ``Enflame``, ``EnflameDRS``, ``Mthreads``, ``Kunlun``,
            ``KunlunVXPU``, ``AWSNeuron``, ``AMD``, ``Vastai``, ``Biren``).
        common_word: HAMi's TYPE word written in allocation annotations (``NVIDIA``, ``MLU``,
            ``Ascend910B3``, ``kunlun``, ``XPU``).
        chip: the model ("" = every device of the vendor). Ascend/Iluvatar: the common word.
        aliases: other names of the model: HAMi type strings it registers with (``NVIDIA
            A100-SXM4-80GB``) and short names; matched by
            :func:`scheduling.devices.matching.model_key`.
        enabled: the backend is on (HAMi: Ascend/Iluvatar off unless the chart enables them).
    Requests (container resources, HAMi webhook defaults):
        resource_count / resource_memory / resource_memory_percent / resource_cores: names
            ("" = none), per model where the plugin names them so
            (``cambricon.com/mlu370.smlu.vmemory``).
        resource_priority: NVIDIA ``nvidia.com/priority``.
        whole_resource: count resource of the vendor's own (non-HAMi) device plugin.
        memory_factor: MiB per unit of the memory resource (HAMi ``memoryFactor``; the
            Cambricon sMLU unit ``min-dsmlu-unit``, HAMi assumes 256; Iluvatar 256,
            Mthreads 512, Metax sGPU 1024). **0 = 1 % of ``memory_mib``** (Cambricon
            unit 0; ``memory_mib`` must then be set or the card's registered memory is used).
        min_slice_mib: smallest bookable memory slice; a smaller request is rounded up and
            charged so (then rounded up to whole units). 0 = one unit.
        cores_unit_percent: percent per unit of the cores resource (1).
        default_memory_mib / default_cores_percent / default_count: used when not requested.
        exclusive_when_count_only: count-only request books cores 100 (NVIDIA webhook).
    Cards:
        memory_mib: allocatable memory per card, MiB (Ascend ``memoryAllocatable``,
            Cambricon configured allocatable; 0 = as registered).
        memory_capacity_mib: physical memory per card (Ascend ``memoryCapacity``; 0 = same).
        cores_percent: cores per card in the vendor unit (100; Ascend aiCore; Mthreads 16).
        split_count: tasks per card (HAMi ``deviceSplitCount`` / ``count``).
        memory_scaling / core_scaling: NVIDIA ``deviceMemoryScaling`` / ``deviceCoreScaling``.
        max_plugin_devices: bound on device-plugin devices per (node, resource) before the
            inventory warns (kubelet's 4 MiB ListAndWatch message, kubernetes#109304).
        slicing: one of :data:`SLICING_MODES`.
        templates: fixed partitions, smallest (memory, slices) first (``{name: MiB}`` is
            accepted for memory-only ones).
        super_pod: Ascend 910C: whole 2-NPU modules (``index // 2``).
    Wire (HAMi annotations, §3 of the research notes): register_annotation,
        handshake_annotation, to_allocate_annotation, allocated_annotation,
        use_uuid_annotation, nouse_uuid_annotation, use_type_annotation,
        nouse_type_annotation, capacity_resource (devices synthesised from node capacity),
        numa_annotation, mode_annotation.
    DRA: ``dra`` (:class:`DraSpec`, None = no driver known).
    Telemetry: ``temperature_limit_c`` (°C; None = the console default).
    """

    vendor: Annotated[str, Strict(), Field(min_length=1, max_length=32)]
    common_word: Annotated[str, Strict(), Field(min_length=1, max_length=100)]
    chip: Annotated[str, Strict(), Field(max_length=100)] = ""
    aliases: tuple[Annotated[str, Strict(), Field(min_length=1, max_length=100)], ...] = ()
    enabled: Bool = True
    resource_count: Str = ""
    resource_memory: Str = ""
    resource_memory_percent: Str = ""
    resource_cores: Str = ""
    resource_priority: Str = ""
    whole_resource: Str = ""
    memory_factor: Int = 1
    min_slice_mib: Int = 0
    cores_unit_percent: Pos = 1
    default_memory_mib: Int = 0
    default_cores_percent: Int = 0
    default_count: Int = 1
    exclusive_when_count_only: Bool = False
    memory_mib: Int = 0
    memory_capacity_mib: Int = 0
    cores_percent: Int = 100
    split_count: Int = 10
    memory_scaling: Annotated[float, Strict(), Field(gt=0)] = 1.0
    core_scaling: Annotated[float, Strict(), Field(gt=0)] = 1.0
    max_plugin_devices: Pos = 10_000
    slicing: Annotated[str, Strict()] = "hami-core"
    templates: tuple[Template, ...] = ()
    super_pod: Bool = False
    register_annotation: Str = ""
    handshake_annotation: Str = ""
    to_allocate_annotation: Str = ""
    allocated_annotation: Str = ""
    use_uuid_annotation: Str = ""
    nouse_uuid_annotation: Str = ""
    use_type_annotation: Str = ""
    nouse_type_annotation: Str = ""
    capacity_resource: Str = ""
    numa_annotation: Str = ""
    mode_annotation: Str = ""
    dra: DraSpec | None = None
    temperature_limit_c: Annotated[float, Strict(), Field(gt=0, le=200)] | None = None

    @field_validator("slicing")
    @classmethod
    def _slicing_known(cls, v: str) -> str:
        if v not in SLICING_MODES:
            raise ValueError(f"{v!r} is not one of {', '.join(SLICING_MODES)}")
        return v

    @field_validator("templates", mode="before")
    @classmethod
    def _templates_map(cls, v: Any) -> Any:
        """``{name: MiB}`` is accepted for memory-only templates."""
        if isinstance(v, Mapping):
            return tuple({"name": k, "memory_mib": m} for k, m in v.items())
        return v

    @field_validator("templates")
    @classmethod
    def _templates_sorted(cls, v: tuple[Template, ...]) -> tuple[Template, ...]:
        names = [t.name for t in v]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"duplicate template name(s) {', '.join(dup)}")
        return tuple(sorted(v, key=lambda t: (t.memory_mib, t.slices, t.name)))

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], where: str = "DeviceModelConfig"
    ) -> DeviceModelConfig:
        """Build and validate. Raises :class:`ConfigError` naming every bad key."""
        if not isinstance(data, Mapping):
            raise ConfigError({"config": "must be a mapping"}, where)
        try:
            return cls.model_validate(dict(data))
        except ValidationError as exc:
            raise ConfigError.from_validation(exc, where) from None

    def replace(self, **changes: Any) -> DeviceModelConfig:
        """A validated copy with ``changes`` (same rules as :meth:`from_dict`)."""
        return type(self).from_dict({**self.to_dict(), **changes})

    @property
    def key(self) -> str:
        """Lookup key of a backend: ``common_word``."""
        return self.common_word


OVERLAY_KEYS = frozenset(DeviceModelConfig.model_fields) - {"vendor"}
"""Keys a ``DeviceModel.config`` overlay may set (every field but ``vendor``, which is the
row's column)."""
