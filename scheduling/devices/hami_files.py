"""Read either HAMi config file, detected by its shape (``manage.py place --config``).

* ``kind: ConfigMap`` -> ``data["device-config.yaml"]`` is read as the scheduler's device
  config (:func:`scheduling.devices.hami_config.read_device_config`);
* every top-level key a device-config key -> device config;
* every top-level key a chart values key -> chart values
  (:func:`scheduling.devices.hami_values.read_chart_values`);
* otherwise the shape with more known keys is assumed and its first unknown key is named.
"""

from __future__ import annotations

from typing import Any

from scheduling.devices.hami_config import (
    DEVICE_CONFIG_SECTIONS,
    POLICY_KEYS,
    HamiConfig,
    HamiConfigError,
    mapping,
    only_keys,
    parse_yaml_text,
    read_device_config,
)
from scheduling.devices.hami_values import VALUES_KEYS, read_chart_values

__all__ = ["read_hami_config"]


def read_hami_config(data: Any) -> HamiConfig:
    """Read either HAMi config file, detected by shape (module doc). None = defaults.

    Raises:
        HamiConfigError: unknown key (named, with its path) or bad value.
    """
    if data is None or data == {}:
        return read_device_config({}, "default")
    data = mapping(data, "")
    if data.get("kind") == "ConfigMap":
        only_keys(data, {"apiVersion", "kind", "metadata", "data"}, "")
        files = mapping(data.get("data") or {}, "data")
        if "device-config.yaml" not in files:
            raise HamiConfigError("data", "a HAMi device ConfigMap needs 'device-config.yaml'")
        text = parse_yaml_text(files["device-config.yaml"], "data.device-config.yaml")
        return read_device_config(text or {}, "configmap")
    keys = set(data)
    if keys <= DEVICE_CONFIG_SECTIONS | POLICY_KEYS:
        return read_device_config(data)
    if keys <= VALUES_KEYS:
        return read_chart_values(data)
    dc = len(keys & (DEVICE_CONFIG_SECTIONS | POLICY_KEYS))
    if dc >= len(keys & VALUES_KEYS):
        return read_device_config(data)
    return read_chart_values(data)
