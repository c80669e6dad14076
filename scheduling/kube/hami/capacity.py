"""Devices of backends HAMi registers only through the node's ``status.capacity``.

Cambricon, Metax GPU, Mthreads, Kunlun XPU, Enflame GCU and AWS Neuron device plugins write
no register annotation: HAMi's ``GetNodeDevices`` of each backend synthesises the devices
from the capacity the plugin advertises, and so does :func:`capacity_devices`, with HAMi's
device ids (``<node>-<word>-<i>``) and per-backend rules:

* Cambricon (``cambricon/device.go``): the capacity counts sMLU slots, 100 per card; memory
  per card from the config, else the ``vmemory`` capacity over the cards; the model from
  :func:`cambricon_model`;
* Mthreads (``mthreads/device.go``): the capacity counts cores, ``cores_percent`` per card;
  memory from the config, else the memory capacity (``memory_factor`` MiB units) per card;
* Kunlun (``kunlun/device.go``): one device per capacity unit, the second half on NUMA 1;
* AWS Neuron (``awsneuron/device.go``): one device per ``aws.amazon.com/neuron``, its
  NeuronCores from ``aws.amazon.com/neuroncore``;
* the others: one device per capacity unit with the config's memory and cores.

Every count and memory is bounded by the :class:`~scheduling.kube.limits.InventoryLimits`
before any device is built.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from scheduling.devices.matching import type_matches
from scheduling.devices.schema import DeviceModelConfig
from scheduling.devices.vendors import (
    CAPACITY_CAMBRICON,
    CAPACITY_MTHREADS,
    CAPACITY_NEURON,
    vendor_traits,
)
from scheduling.kube.limits import DEFAULT_LIMITS, InventoryLimits, check_bound
from scheduling.kube.quantity import plain_int
from scheduling.placement.types import DeviceUsage

__all__ = ["capacity_devices", "cambricon_model", "CAMBRICON_MODEL_LABEL"]

CAMBRICON_MODEL_LABEL = "Model"
"""Node label the Cambricon device plugin writes with ``--node-label`` (bare key, the model
of card 0, e.g. ``MLU370-X8``; ``pkg/nodeLabel/nodelabel.go``)."""


def cambricon_model(
    cfg: DeviceModelConfig, labels: dict[str, str], siblings: Sequence[DeviceModelConfig]
) -> tuple[str, DeviceModelConfig]:
    """The model of a node's MLU cards and the config they follow.

    A per-model config (``chip`` set, e.g. the ``cambricon.com/mlu590.smlu.*`` capacities of
    the plugin's ``--enable-device-type``) names it. For the model-less
    ``cambricon.com/mlu.smlu.*`` capacities the plugin's ``Model`` node label names it
    (``MLU590-M9D``); the MLU model config whose name matches the label on whole tokens
    (``MLU590``) then gives the memory and unit, else the vendor default does and the label
    is the model. Without a label the model is HAMi's ``MLU``.
    """
    if cfg.chip:
        return cfg.chip, cfg
    label = str(labels.get(CAMBRICON_MODEL_LABEL, "")).strip()
    if not label:
        return cfg.common_word, cfg
    for other in siblings:
        if other.vendor == cfg.vendor and other.chip and type_matches(label, other.chip):
            return other.chip, other.model_copy(update={"resource_memory": cfg.resource_memory})
    return label, cfg


def capacity_devices(
    node: str,
    cfg: DeviceModelConfig,
    capacity: dict[str, Any],
    limits: InventoryLimits = DEFAULT_LIMITS,
    labels: dict[str, str] | None = None,
    siblings: Sequence[DeviceModelConfig] = (),
) -> list[DeviceUsage]:
    """Devices of one capacity-registered backend on ``node`` (see the module docstring);
    ``siblings``: the other configs (Cambricon models, :func:`cambricon_model`).

    Raises:
        ValueError: a capacity that is not a plain integer, or more devices (or more memory
            per device) than the bound (checked before any device is built).
    """
    what = f"status.capacity.{cfg.capacity_resource}"
    raw = capacity.get(cfg.capacity_resource)
    if raw is None:
        return []
    cap = plain_int(raw, what)
    if cap == 0:
        return []
    traits = vendor_traits(cfg.vendor)
    if traits.capacity_layout == CAPACITY_CAMBRICON:
        return _cambricon(node, cfg, cap, capacity, limits, labels or {}, siblings)
    if traits.capacity_layout == CAPACITY_MTHREADS:
        return _mthreads(node, cfg, cap, capacity, limits)
    if traits.capacity_layout == CAPACITY_NEURON:
        return _neuron(node, cfg, cap, capacity, labels or {}, limits)
    # One device per capacity unit (Kunlun: the second half of the cards on NUMA node 1).
    _cards(what, cap, 1, limits)
    halves = traits.numa_halves
    word = traits.id_word
    return [
        DeviceUsage(
            f"{node}-{word}-{i}",
            node,
            i,
            cfg.common_word,
            cfg.vendor,
            cfg.memory_mib,
            100 if halves else cfg.cores_percent,
            cfg.split_count,
            numa=1 if halves and i >= cap // 2 else 0,
        )
        for i in range(cap)
    ]


def _cards(what: str, cap: int, per_card: int, limits: InventoryLimits) -> int:
    """Cards behind ``cap`` capacity units of ``per_card`` each (bounded)."""
    cards = math.ceil(cap / per_card)
    check_bound(what, cards, limits, "max_devices_per_node", " devices")
    return cards


def _memory_capacity(capacity: dict[str, Any], cfg: DeviceModelConfig) -> int:
    name = cfg.resource_memory
    return plain_int(capacity.get(name, 0), f"status.capacity.{name}")


def _cambricon(
    node: str,
    cfg: DeviceModelConfig,
    cap: int,
    capacity: dict[str, Any],
    limits: InventoryLimits,
    labels: dict[str, str],
    siblings: Sequence[DeviceModelConfig],
) -> list[DeviceUsage]:
    """Cambricon MLU cards: ``cap`` sMLU slots, 100 per card (``cambricon/device.go``)."""
    what = f"status.capacity.{cfg.capacity_resource}"
    cards = _cards(what, cap, 100, limits)
    model, cfg = cambricon_model(cfg, labels, siblings)
    mem = cfg.memory_mib
    if not mem:
        if cfg.memory_factor == 0:
            raise ValueError(
                "cambricon memoryFactor 0 (1 % units) needs memoryAllocatable "
                "(MiB per card) in the config"
            )
        mem = _memory_capacity(capacity, cfg) * cfg.memory_factor * 100 // cap
    check_bound(what, mem, limits, "max_memory_mib", " MiB per device")
    return [
        DeviceUsage(
            f"{node}-cambricon-mlu-{i}", node, i, model, cfg.vendor, mem, 100, cfg.split_count
        )
        for i in range(cards)
    ]


def _mthreads(
    node: str, cfg: DeviceModelConfig, cap: int, capacity: dict[str, Any], limits: InventoryLimits
) -> list[DeviceUsage]:
    """Mthreads GPUs: ``cap`` cores, ``cores_percent`` per card (``mthreads/device.go``)."""
    what = f"status.capacity.{cfg.capacity_resource}"
    cards = _cards(what, cap, max(1, cfg.cores_percent), limits)
    vm = _memory_capacity(capacity, cfg)
    mem = cfg.memory_mib or vm * cfg.memory_factor // cards
    check_bound(what, mem, limits, "max_memory_mib", " MiB per device")
    return [
        DeviceUsage(
            f"{node}-mthreads-{i}",
            node,
            i,
            "Mthreads",
            cfg.vendor,
            mem,
            cfg.cores_percent,
            cfg.split_count,
        )
        for i in range(cards)
    ]


def _neuron(
    node: str,
    cfg: DeviceModelConfig,
    cap: int,
    capacity: dict[str, Any],
    labels: dict[str, str],
    limits: InventoryLimits,
) -> list[DeviceUsage]:
    """AWS Neuron devices (``awsneuron/device.go`` ``GetNodeDevices``): ``<node>-AWSNeuron-<i>``
    with NeuronCores per device = ``aws.amazon.com/neuroncore`` / ``aws.amazon.com/neuron``
    capacity (the config's ``split_count`` when the node advertises no cores) as both cores
    and slots, and the instance type label (``inf*`` instances allow any contiguous run)."""
    _cards(f"status.capacity.{cfg.capacity_resource}", cap, 1, limits)
    what = f"status.capacity.{cfg.resource_cores}"
    cores = plain_int(capacity.get(cfg.resource_cores, 0), what) // cap or cfg.split_count
    check_bound(what, cores, limits, "max_split_count", " cores per device")
    kind = labels.get("node.kubernetes.io/instance-type", "")
    return [
        DeviceUsage(
            f"{node}-AWSNeuron-{i}",
            node,
            i,
            cfg.common_word,
            cfg.vendor,
            0,
            cores,
            cores,
            custom={"AWSNodeType": kind},
        )
        for i in range(cap)
    ]
