"""The device catalogue: one home for what the console knows about accelerator models.

Pure (stdlib, pydantic; PyYAML only inside :func:`hami_config.parse_yaml_text` for YAML
embedded in a ConfigMap / the chart's ``device-config.content``). Placement, the Kubernetes
adapter, selectors and services import it; it imports nothing of the console. Pure cores
(``scheduling.placement``) import its submodules, not this package, so that the yaml-reading
modules stay out of their import graph.

Public API (see each module; docs/devices.md says where each setting flows):

``schema``      :class:`DeviceModelConfig` (one model or backend: vendor, chip/model, aliases,
                resource names incl. per-model ones, memory_mib = allocatable, memory unit
                ``memory_factor`` (0 = 1 %), ``min_slice_mib``, cores, split_count,
                templates, ``dra`` = :class:`DraSpec`, HAMi annotation keys, ...),
                :class:`Template`, :class:`DraSpec`, :class:`ConfigError` (``.errors`` =
                ``{key: message}``), :data:`OVERLAY_KEYS`, :data:`SLICING_MODES`.
``defaults``    :func:`default_device_configs` (HAMi v2.10 per backend),
                :func:`mig_templates` (MIG allowlist -> nominal profiles),
                :func:`ascend_config`, :func:`iluvatar_config`, tables.
``overlay``     :func:`overlay` (base + ``DeviceModel.config`` dict, unknown key -> error),
                :func:`resolve_model` (vendor, name, config) -> config,
                :func:`build_catalogue` (rows -> :class:`Catalogue` with ``configs``,
                ``errors`` per bad model, ``for_device(vendor, type)``, ``is_flagged``),
                :func:`validate_overlay`, :func:`overlay_diff`.
``matching``    :func:`type_tokens`, :func:`model_key` (canonical model key),
                :func:`type_matches` (whole tokens: A100 ~ "NVIDIA A100-SXM4-80GB", H20 !~
                H200, 910B4 !~ 910B4-1), :func:`hami_type_matches` (HAMi substring rule),
                :func:`type_known` / :func:`type_excluded` (a model that cannot be read is
                refused to a model-excluding request).
``resources``   :class:`ResourceNames`/:func:`resource_names`, :func:`unit_mib`,
                :func:`units_for` (MiB -> units, min slice + round up),
                :func:`memory_for_units`, :func:`charged_memory_mib`,
                :func:`plugin_devices_per_card`, Cambricon per-model names
                (:func:`cambricon_model_resources`, :func:`cambricon_model_of_resource`),
                DRA: :func:`dra_device_class`, :func:`counter_set_name`,
                :func:`card_counters`, :func:`template_counters`.
``vendors``     :class:`VendorTraits` per vendor word (:data:`VENDOR_TRAITS`,
                :func:`vendor_traits`: every vendor rule outside the placement plugins, as a
                named trait), :data:`VENDOR_WORDS` (the vendor choices),
                :func:`serial_vendor_of_exporter`, :func:`ascend_family`,
                :data:`HAMI_RESOURCES` (the manifest builders' per-vendor fallback).
``hami_files``  :func:`read_hami_config` (values.yaml | device-config.yaml | ConfigMap,
                detected by shape) -> :class:`HamiConfig` (``hami_config``/``hami_values``
                hold the two readers; :class:`HamiConfigError` names the key path).
"""

from scheduling.devices.defaults import default_device_configs, mig_templates
from scheduling.devices.hami_config import HamiConfig, HamiConfigError, read_device_config
from scheduling.devices.hami_files import read_hami_config
from scheduling.devices.hami_values import read_chart_values
from scheduling.devices.matching import (
    any_type_matches,
    hami_type_matches,
    model_key,
    type_excluded,
    type_known,
    type_matches,
    type_tokens,
)
from scheduling.devices.overlay import (
    Catalogue,
    build_catalogue,
    overlay,
    overlay_diff,
    resolve_model,
    validate_overlay,
)
from scheduling.devices.resources import (
    ResourceNames,
    card_counters,
    charged_memory_mib,
    dra_device_class,
    memory_for_units,
    resource_names,
    template_counters,
    unit_mib,
    units_for,
)
from scheduling.devices.schema import (
    OVERLAY_KEYS,
    SLICING_MODES,
    ConfigError,
    DeviceModelConfig,
    DraSpec,
    Template,
)

__all__ = [
    "DeviceModelConfig",
    "Template",
    "DraSpec",
    "ConfigError",
    "OVERLAY_KEYS",
    "SLICING_MODES",
    "default_device_configs",
    "mig_templates",
    "overlay",
    "resolve_model",
    "build_catalogue",
    "Catalogue",
    "validate_overlay",
    "overlay_diff",
    "type_tokens",
    "model_key",
    "type_matches",
    "any_type_matches",
    "hami_type_matches",
    "type_excluded",
    "type_known",
    "ResourceNames",
    "resource_names",
    "unit_mib",
    "units_for",
    "memory_for_units",
    "charged_memory_mib",
    "dra_device_class",
    "card_counters",
    "template_counters",
    "HamiConfig",
    "HamiConfigError",
    "read_hami_config",
    "read_device_config",
    "read_chart_values",
]
