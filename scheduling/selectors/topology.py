"""A resource group's network topology and the topology requests of its jobs (Kueue
Topology-Aware Scheduling, issue 31).

* :func:`~scheduling.selectors.snapshot.group_topology`: the topology a group's jobs are
  placed under: the group's own (``ResourceGroup.topology``), else the one topology its
  flavors name (``DeviceModel.topology``, Kueue ``ResourceFlavor.topologyName``).
* :class:`TopologySpec` / :func:`resolve_topology_spec`: a request as submitted (API, submit
  form, Kueue pod template annotations), its levels resolved to the topology's keys.
* :func:`~scheduling.selectors.snapshot.pod_set_topologies`: a job's requests as the
  placement core's :class:`~scheduling.placement.types.PodSetTopology` tuple.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from scheduling.models import TopologyMode
from scheduling.placement.topology_names import resolve_level
from scheduling.selectors.snapshot import group_topology
from tenants.models import ResourceGroup, Topology

__all__ = ["TopologyRefused", "TopologySpec", "resolve_topology_spec"]


class TopologyRefused(ValueError):
    """A topology request that cannot be taken: ``field`` names the input
    (``required``, ``preferred``, ``unconstrained``, ``slice_size``, ``slice_level``,
    ``topology``); the message says why (an unknown level names the topology's levels)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True)
class TopologySpec:
    """A topology request as submitted: ``mode`` (:class:`~scheduling.models.TopologyMode`),
    ``level`` (required / preferred), ``slice_size`` (pods per slice, 0 = none) and
    ``slice_level``, ``group`` (pod set group, Kueue ``podset-group-name``). Levels are label
    keys or their short names until :func:`resolve_topology_spec` makes them keys."""

    mode: str = ""
    level: str = ""
    slice_size: int = 0
    slice_level: str = ""
    group: str = ""

    @property
    def asks(self) -> bool:
        """Whether it asks anything of the topology."""
        return bool(self.mode or self.slice_size)

    def columns(self) -> dict[str, object]:
        """The ``topology_*`` columns of a Job (``topology_group`` is a pod set's only)."""
        return {
            "topology_mode": self.mode,
            "topology_level": self.level,
            "topology_slice_size": self.slice_size,
            "topology_slice_level": self.slice_level,
        }


def _level(topology: Topology, name: str, field: str) -> str:
    try:
        return resolve_level(topology.levels, name, topology.name)
    except ValueError as exc:
        raise TopologyRefused(field, str(exc)) from None


def resolve_topology_spec(group: ResourceGroup, spec: TopologySpec, pod_count: int) -> TopologySpec:
    """``spec`` with its levels as keys of the group's topology (:func:`group_topology`;
    short names as :func:`~scheduling.placement.topology_names.resolve_level` takes them).

    Raises:
        TopologyRefused: a request on a group without a topology (``topology``); an unknown
            or ambiguous level (the field naming it; the message names the levels); a mode
            without its level or unconstrained with one; a slice without its level or size,
            larger than ``pod_count`` pods, or at a level wider than the required / preferred
            one (Kueue: the slice level is at or below the pod set's level).
    """
    if not spec.asks:
        if spec.slice_level:
            raise TopologyRefused("slice_size", "A slice level needs slice_size (pods per slice).")
        return spec
    topology = group_topology(group)
    if topology is None:
        raise TopologyRefused(
            "topology",
            f"resource group {group.name} has no topology (an operator attaches one to the "
            "group or its device models); submit without a topology request",
        )
    level = spec.level
    if spec.mode in (TopologyMode.REQUIRED, TopologyMode.PREFERRED):
        level = _level(topology, spec.level, spec.mode)
    elif spec.level:
        raise TopologyRefused(
            str(spec.mode or "topology"), "Only required or preferred name a level."
        )
    slice_level = ""
    if spec.slice_size:
        if not spec.slice_level:
            raise TopologyRefused("slice_level", "A slice needs the level it stays inside.")
        slice_level = _level(topology, spec.slice_level, "slice_level")
        if spec.slice_size > pod_count:
            raise TopologyRefused(
                "slice_size",
                f"A slice of {spec.slice_size} pods is more than the {pod_count} asked.",
            )
        if level and topology.levels.index(slice_level) < topology.levels.index(level):
            raise TopologyRefused(
                "slice_level",
                f"{slice_level} is wider than {level}: a slice stays inside one domain of a "
                f"level at or below the {spec.mode} level (levels: {', '.join(topology.levels)}).",
            )
    elif spec.slice_level:
        raise TopologyRefused("slice_size", "A slice level needs slice_size (pods per slice).")
    return replace(spec, level=level, slice_level=slice_level)
