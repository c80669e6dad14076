"""Device model rows → the placement core's per-backend/per-chip configuration."""

from __future__ import annotations

from scheduling.models import DeviceModel
from scheduling.placement.vendors.config import DeviceModelConfig, default_device_configs


def get_device_configs() -> tuple[DeviceModelConfig, ...]:
    """HAMi chart defaults overlaid with every DeviceModel row that has a ``config``.

    A row's ``config`` holds :class:`DeviceModelConfig` fields by name (``memory_factor``,
    ``split_count``, ``templates``, ``memory_mib`` ...). It configures the chip named by
    ``config["chip"]`` (default: the row's name), starting from the default of that chip or,
    when there is none, of its vendor. So two models of one vendor (MLU370-X8 and MLU590,
    Ascend910B and Ascend910B4) are configured separately.

    Returns:
        One config per (vendor, chip), defaults first.

    Raises:
        ValueError: a row's config names an unknown field or an invalid value (the message
            names the row).
    """
    configs = {(c.vendor, c.chip): c for c in default_device_configs()}
    for row in DeviceModel.objects.exclude(config={}).order_by("vendor", "name"):
        chip = row.config.get("chip", row.name)
        base = configs.get((row.vendor, chip)) or configs.get((row.vendor, ""))
        data = base.to_dict() if base else {"vendor": row.vendor, "common_word": row.vendor}
        data.update(row.config)
        data["chip"] = chip
        try:
            configs[(row.vendor, chip)] = DeviceModelConfig.from_dict(data)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"device model {row.name}: config: {exc}") from exc
    return tuple(configs.values())
