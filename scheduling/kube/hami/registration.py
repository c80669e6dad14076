"""Schemas (pydantic) of what a Kubernetes Node tells the inventory: its envelope and HAMi's
register annotation entries, with per-node bounds
(:class:`~scheduling.kube.limits.InventoryLimits`).

HAMi's ``DeviceInfo`` (``pkg/device/devices.go`` 127-144, v2.10) has every key ``omitempty``:
a missing ``health`` is false, a missing ``index`` / ``numa`` is 0; unknown keys are ignored as
Go's ``json.Unmarshal`` ignores them. What the console adds is bounds and types: a count of
10**30, a negative ``devmem`` or a ``migProfiles`` that is not a list is refused with the
field's path, e.g. ``hami.io/node-nvidia-register[0].migProfiles: Input should be a valid
list``.

Bounds that depend on the limits are checked by validators reading ``context["limits"]``
(pass ``context={"limits": limits}`` to ``model_validate``; default: the built-in limits).
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictStr,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from scheduling.kube.limits import DEFAULT_LIMITS, SETTINGS, InventoryLimits

__all__ = [
    "MigPlacementIn",
    "MigProfileIn",
    "DeviceIn",
    "MetaxSDeviceIn",
    "NodeIn",
    "NodeStatusIn",
    "validate",
    "describe_errors",
    "limits_of",
]

ModelT = TypeVar("ModelT", bound=BaseModel)

ERRORS_SHOWN = 3
"""Validation errors named in one message (the rest are counted)."""


def limits_of(info: ValidationInfo) -> InventoryLimits:
    """The limits passed in the validation context (default: built-in)."""
    ctx = info.context or {}
    return ctx.get("limits") or DEFAULT_LIMITS


def _bounded(value: int, info: ValidationInfo, attribute: str) -> int:
    bound = getattr(limits_of(info), attribute)
    if value > bound:
        raise ValueError(f"must be less than or equal to {bound} (setting {SETTINGS[attribute]})")
    return value


NonNegative = Annotated[int, Field(ge=0)]


class _In(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class MigPlacementIn(_In):
    """A MIG placement ``{"start", "size"}`` (NVML memory slices)."""

    start: Annotated[int, Field(ge=0, le=1024)] = 0
    size: Annotated[int, Field(ge=1, le=1024)]


class MigProfileIn(_In):
    """HAMi ``MigProfile`` (``devices.go`` 79-90)."""

    name: Annotated[StrictStr, Field(min_length=1, max_length=64)]
    memoryMB: NonNegative = 0  # noqa: N815 - HAMi's key
    core: NonNegative = 0
    sliceCount: Annotated[int, Field(ge=0, le=1024)] = 0  # noqa: N815
    placements: list[MigPlacementIn] = Field(default_factory=list)

    @field_validator("memoryMB")
    @classmethod
    def _memory(cls, v: int, info: ValidationInfo) -> int:
        return _bounded(v, info, "max_memory_mib")

    @field_validator("core")
    @classmethod
    def _core(cls, v: int, info: ValidationInfo) -> int:
        return _bounded(v, info, "max_cores")

    @field_validator("placements", mode="before")
    @classmethod
    def _placements(cls, v: Any, info: ValidationInfo) -> Any:
        if isinstance(v, list):
            _bounded(len(v), info, "max_mig_placements")
        return v


class DeviceIn(_In):
    """One HAMi ``DeviceInfo`` as registered (JSON entry, or a legacy entry's fields).

    Attributes mirror HAMi's keys: ``id`` (1-128 characters: the console's ``Device.uuid``
    column), ``index``, ``count`` (tasks), ``devmem`` (MiB), ``devcore``, ``type`` (model
    string, at most 100 characters: ``DeviceModel.name``), ``numa``, ``mode``,
    ``migProfiles``, ``health``, ``custominfo`` (vendor extras, e.g. Ascend ``NetworkID``).
    """

    id: Annotated[StrictStr, Field(min_length=1, max_length=128)]
    index: Annotated[int, Field(ge=0, le=65535)] = 0
    count: NonNegative = 0
    devmem: NonNegative = 0
    devcore: NonNegative = 0
    type: Annotated[StrictStr, Field(max_length=100)] = ""
    numa: Annotated[int, Field(ge=-1, le=65535)] = 0
    mode: Annotated[str | None, Field(max_length=32)] = ""
    migProfiles: list[MigProfileIn] | None = None  # noqa: N815 - HAMi's key
    health: bool = False
    custominfo: dict[str, Any] | None = None

    @field_validator("count")
    @classmethod
    def _count(cls, v: int, info: ValidationInfo) -> int:
        return _bounded(v, info, "max_split_count")

    @field_validator("devmem")
    @classmethod
    def _devmem(cls, v: int, info: ValidationInfo) -> int:
        return _bounded(v, info, "max_memory_mib")

    @field_validator("devcore")
    @classmethod
    def _devcore(cls, v: int, info: ValidationInfo) -> int:
        return _bounded(v, info, "max_cores")

    @field_validator("migProfiles", mode="before")
    @classmethod
    def _profiles(cls, v: Any, info: ValidationInfo) -> Any:
        if isinstance(v, list):
            _bounded(len(v), info, "max_mig_profiles")
        return v

    @field_validator("custominfo")
    @classmethod
    def _custom(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        net = (v or {}).get("NetworkID")
        if net is not None and (isinstance(net, bool) or not isinstance(net, int)):
            raise ValueError(f"NetworkID {net!r} is not an integer")
        return v

    @property
    def network_id(self) -> int | None:
        """Ascend ``custominfo.NetworkID`` (None when absent)."""
        return (self.custominfo or {}).get("NetworkID")


class MetaxSDeviceIn(_In):
    """One Metax sGPU as its device plugin registers it in ``metax-tech.com/node-gpu-devices``
    (HAMi ``MetaxSDeviceInfo``, ``pkg/device/metax/protocol.go`` 50-64: every key
    ``omitempty``, a missing ``healthy`` is false). ``totalDevCount`` is the task count,
    ``totalVRam`` MiB, ``totalCompute`` percent; ``qosPolicy`` the device's current QoS
    policy; ``available*`` and ``linkZone`` are not read (HAMi books usage from the pods'
    annotations; MetaLink zones are not modelled)."""

    uuid: Annotated[StrictStr, Field(min_length=1, max_length=128)]
    model: Annotated[StrictStr, Field(max_length=100)] = ""
    totalDevCount: NonNegative = 0  # noqa: N815 - the plugin's keys
    totalCompute: NonNegative = 0  # noqa: N815
    totalVRam: NonNegative = 0  # noqa: N815
    numa: Annotated[int, Field(ge=-1, le=65535)] = 0
    healthy: bool = False
    qosPolicy: Annotated[StrictStr, Field(max_length=32)] = ""  # noqa: N815

    @field_validator("totalDevCount")
    @classmethod
    def _count(cls, v: int, info: ValidationInfo) -> int:
        return _bounded(v, info, "max_split_count")

    @field_validator("totalVRam")
    @classmethod
    def _vram(cls, v: int, info: ValidationInfo) -> int:
        return _bounded(v, info, "max_memory_mib")

    @field_validator("totalCompute")
    @classmethod
    def _compute(cls, v: int, info: ValidationInfo) -> int:
        return _bounded(v, info, "max_cores")


class _Meta(_In):
    name: Annotated[StrictStr, Field(min_length=1, max_length=253)]
    labels: dict[str, StrictStr] | None = None
    annotations: dict[str, StrictStr] | None = None


class _Spec(_In):
    unschedulable: bool | None = False


class _Condition(_In):
    type: StrictStr
    status: StrictStr = ""
    reason: StrictStr | None = ""
    message: StrictStr | None = ""


Quantity = StrictStr | int | float


class NodeStatusIn(_In):
    capacity: dict[str, Quantity] | None = None
    allocatable: dict[str, Quantity] | None = None
    conditions: list[_Condition] | None = None


class NodeIn(_In):
    """The parts of a Kubernetes Node the inventory reads (everything else is ignored)."""

    metadata: _Meta
    spec: _Spec | None = None
    status: NodeStatusIn | None = None


def describe_errors(exc: ValidationError, prefix: str = "") -> str:
    """One line naming each failing field: ``<prefix><loc>: <message>; ...``.

    ``prefix`` is joined to an integer first location as ``prefix[i]`` and to a name as
    ``prefix.name``.
    """
    parts = []
    errors = exc.errors(include_url=False)
    for err in errors[:ERRORS_SHOWN]:
        where = prefix
        for item in err["loc"]:
            where += f"[{item}]" if isinstance(item, int) else (f".{item}" if where else item)
        msg = str(err["msg"]).removeprefix("Value error, ")
        parts.append(f"{where}: {msg}" if where else msg)
    if len(errors) > ERRORS_SHOWN:
        parts.append(f"and {len(errors) - ERRORS_SHOWN} more")
    return "; ".join(parts)


def validate(
    model: type[ModelT], data: Any, prefix: str, limits: InventoryLimits = DEFAULT_LIMITS
) -> ModelT:
    """``model.model_validate(data)`` with the limits in context.

    Raises:
        ValueError: the data does not fit the schema; the message names the fields
            (:func:`describe_errors` with ``prefix``).
    """
    try:
        return model.model_validate(data, context={"limits": limits})
    except ValidationError as exc:
        raise ValueError(describe_errors(exc, prefix)) from None
