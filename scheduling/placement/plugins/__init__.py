"""In-tree plugins and their registry."""

from __future__ import annotations

from scheduling.placement.plugins import names
from scheduling.placement.plugins.device_fit import DeviceFit
from scheduling.placement.plugins.node import (
    NodeRegistration,
    NodeResourcesFit,
    NodeSelector,
    NodeUnschedulable,
)
from scheduling.placement.plugins.score import HAMiNodeScore
from scheduling.placement.registry import Registry

__all__ = ["build_in_tree_registry", "names"]


def build_in_tree_registry() -> Registry:
    """Registry of every in-tree plugin (factories accept keyword args and ignore unknown
    ones: ``vendors``, ``device_policy``, ``device_scoring_weights``)."""
    return Registry(
        {
            names.NODE_REGISTRATION: NodeRegistration,
            names.NODE_UNSCHEDULABLE: NodeUnschedulable,
            names.NODE_SELECTOR: NodeSelector,
            names.NODE_RESOURCES_FIT: NodeResourcesFit,
            names.DEVICE_FIT: DeviceFit,
            names.HAMI_NODE_SCORE: HAMiNodeScore,
        }
    )
