"""Transition shim: the device configuration lives in :mod:`scheduling.devices`.

Kept only while ``scheduling.kube.hami.nodes`` / ``pods`` and ``scheduling.kube.inventory``
still import from here; new code imports ``scheduling.devices.schema`` /
``scheduling.devices.defaults``. Remove once nothing imports it.
"""

from scheduling.devices.defaults import default_device_configs
from scheduling.devices.schema import SLICING_MODES, DeviceModelConfig, Template

__all__ = ["Template", "DeviceModelConfig", "default_device_configs", "SLICING_MODES"]
