"""Defaults + ``DeviceModel.config`` overlays -> resolved configs (:class:`Catalogue`).

A ``DeviceModel`` row (vendor, name, config) configures one model:

1. its base is the default of the same model (Ascend/Iluvatar chips: the chip's own
   backend, matched by :func:`~scheduling.devices.matching.model_key` on the chip or an
   alias), else the vendor's default (``chip == ""``), else for a new Ascend/Iluvatar chip
   that backend's shape named after the chip, else a bare config of a new vendor (then
   ``common_word`` defaults to the vendor);
2. the row's ``config`` keys replace the base's (``dra`` merges key by key); unknown keys
   are an error naming them (:data:`~scheduling.devices.schema.OVERLAY_KEYS`);
3. ``chip`` becomes the row's name (a per-chip base keeps its chip, the name becomes an
   alias); NVIDIA models without ``templates`` get their MIG allowlist profiles
   (:func:`~scheduling.devices.defaults.mig_templates`).

:func:`build_catalogue` never raises for a bad row: the row's error is kept in
``Catalogue.errors`` and the other rows resolve (issue 15: one bad model must not halt
admission).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduling.devices.defaults import (
    ascend_config,
    default_device_configs,
    iluvatar_config,
    mig_templates,
)
from scheduling.devices.matching import model_key
from scheduling.devices.schema import OVERLAY_KEYS, ConfigError, DeviceModelConfig

__all__ = [
    "overlay",
    "resolve_model",
    "build_catalogue",
    "Catalogue",
    "validate_overlay",
    "overlay_diff",
]


def validate_overlay(data: Any, where: str = "config") -> None:
    """Check an overlay's shape and keys only (not values). Raises :class:`ConfigError`."""
    if not isinstance(data, Mapping):
        raise ConfigError({"config": "must be a JSON object"}, where)
    unknown = sorted(str(k) for k in data if k not in OVERLAY_KEYS)
    if unknown:
        raise ConfigError(dict.fromkeys(unknown, "unknown key"), where)


def overlay(
    base: DeviceModelConfig, data: Mapping[str, Any], where: str = "config"
) -> DeviceModelConfig:
    """``base`` with the keys of ``data`` replaced and validated.

    Raises:
        ConfigError: unknown key, wrong type or value; ``errors`` names each key.
    """
    validate_overlay(data, where)
    merged = {**base.to_dict(), **data}
    if isinstance(data.get("dra"), Mapping) and base.dra is not None:
        merged["dra"] = {**base.dra.to_dict(), **data["dra"]}
    return DeviceModelConfig.from_dict(merged, where)


def _base(vendor: str, key: str, defaults: Iterable[DeviceModelConfig]) -> DeviceModelConfig:
    vendor_default = None
    for c in defaults:
        if c.vendor != vendor:
            continue
        if c.chip and key in {model_key(n) for n in (c.chip, *c.aliases)}:
            return c
        if not c.chip and vendor_default is None:
            vendor_default = c
    if vendor_default is not None:
        return vendor_default
    return DeviceModelConfig(vendor=vendor, common_word=vendor)


def _new_chip(vendor: str, name: str) -> DeviceModelConfig | None:
    """A chip of a per-chip vendor without a default: the backend shape with the chip's
    name as common word (memory and templates come from the overlay)."""
    if vendor == "Ascend":
        cfg = ascend_config(name, name, 0, 0, 0, ())
    elif vendor == "Iluvatar":
        cfg = iluvatar_config(name)
    else:
        return None
    return cfg.model_copy(update={"enabled": True})


def resolve_model(
    vendor: str,
    name: str,
    config: Mapping[str, Any] | None,
    defaults: Iterable[DeviceModelConfig] | None = None,
) -> DeviceModelConfig:
    """The resolved config of one model (module doc).

    Raises:
        ConfigError: the overlay is invalid; ``where`` names the model.
    """
    where = f"device model {name}: config"
    data = {} if config is None else config
    validate_overlay(data, where)
    raw_chip = data.get("chip")
    chip = raw_chip if isinstance(raw_chip, str) else name
    base = _base(
        vendor, model_key(chip), default_device_configs() if defaults is None else defaults
    )
    new = _new_chip(vendor, chip) if not base.chip and base.common_word == vendor else None
    if new is not None:
        base = new
    resolved = overlay(base, data, where)
    changes: dict[str, Any] = {}
    if base.chip and "chip" not in data:
        if model_key(name) != model_key(base.chip) and name not in resolved.aliases:
            changes["aliases"] = (*resolved.aliases, name)
    elif "chip" not in data:
        changes["chip"] = name
    if resolved.vendor == "NVIDIA" and "templates" not in data and not resolved.templates:
        tpls = mig_templates(" ".join((name, *resolved.aliases)))
        if tpls:
            changes["templates"] = tpls
    return resolved.model_copy(update=changes) if changes else resolved


def overlay_diff(base: DeviceModelConfig, resolved: DeviceModelConfig) -> dict[str, Any]:
    """The overlay that turns ``base`` into ``resolved`` (keys whose values differ), e.g. to
    store a model discovered by the inventory with only what differs from the defaults."""
    a, b = base.to_dict(), resolved.to_dict()
    return {k: v for k, v in b.items() if k != "vendor" and a.get(k) != v}


@dataclass(frozen=True)
class Catalogue:
    """Resolved configs: the defaults, each replaced or joined by the models' own.

    Attributes:
        configs: defaults first (a model with the same vendor and chip replaces its
            default in place), then the other models.
        errors: ``{model name: message}`` of models whose overlay is invalid; they are not
            in ``configs``.
        invalid: ``{(vendor, model_key)}`` of those models (:meth:`is_flagged`).
    """

    configs: tuple[DeviceModelConfig, ...]
    errors: Mapping[str, str] = field(default_factory=dict)
    invalid: frozenset[tuple[str, str]] = frozenset()

    def __post_init__(self) -> None:
        index: dict[tuple[str, str], DeviceModelConfig] = {}
        for c in self.configs:
            for n in (c.chip, *c.aliases):
                index.setdefault((c.vendor, model_key(n)), c)
        object.__setattr__(self, "_index", index)

    def for_device(self, vendor: str, type_name: str) -> DeviceModelConfig | None:
        """Config of a device of ``vendor`` registered as ``type_name``: the model's own, else
        the vendor's default, else None."""
        index = self._index  # type: ignore[attr-defined]
        return index.get((vendor, model_key(type_name))) or index.get((vendor, ""))

    def is_flagged(self, vendor: str, type_name: str) -> bool:
        """True when the model of such a device has an invalid overlay."""
        return (vendor, model_key(type_name)) in self.invalid

    def vendor_configs(self, vendor: str) -> list[DeviceModelConfig]:
        """Every config of a vendor, in catalogue order."""
        return [c for c in self.configs if c.vendor == vendor]


def build_catalogue(
    rows: Iterable[tuple[str, str, Mapping[str, Any] | None]],
    defaults: Iterable[DeviceModelConfig] | None = None,
) -> Catalogue:
    """Resolve every ``(vendor, name, config)`` row over ``defaults`` (HAMi's when None).

    Never raises for a bad row: its message goes to ``Catalogue.errors``.
    """
    base = list(default_device_configs() if defaults is None else defaults)
    slots = {(c.vendor, c.chip): i for i, c in enumerate(base)}
    out = list(base)
    errors: dict[str, str] = {}
    invalid: set[tuple[str, str]] = set()
    for vendor, name, config in rows:
        try:
            cfg = resolve_model(vendor, name, config, base)
        except ConfigError as exc:
            errors[name] = str(exc)
            invalid.add((vendor, model_key(name)))
            continue
        slot = slots.get((cfg.vendor, cfg.chip))
        if slot is None:
            slots[(cfg.vendor, cfg.chip)] = len(out)
            out.append(cfg)
        else:
            out[slot] = cfg
    return Catalogue(tuple(out), errors, frozenset(invalid))
