"""Extension points of the placement cycle, shaped like the kube-scheduler framework.

A cycle places one pod: PreFilter (once per pod) -> Filter (per node) -> Score (per feasible
node) -> the runner picks a node -> Reserve (book usage in the snapshot). Plugins implement
only the protocols they need; the runner detects them with ``isinstance`` on these
runtime-checkable protocols (kube-scheduler ``framework/interface.go``).

Per-cycle data lives in a :class:`CycleState` under typed :class:`StateKey` s, so a value
computed in PreFilter is read back in Filter/Score without string-keyed casts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Generic, Protocol, TypeVar, runtime_checkable

from scheduling.placement.types import ClusterSnapshot, DeviceGrant, NodeInfo, PodRequest

T = TypeVar("T")

__all__ = [
    "Code",
    "Status",
    "StateKey",
    "CycleState",
    "NodeFit",
    "Plugin",
    "PreFilterPlugin",
    "FilterPlugin",
    "ScorePlugin",
    "ReservePlugin",
    "SUCCESS",
]


class Code(Enum):
    """Status codes (kube-scheduler ``framework.Code`` subset)."""

    SUCCESS = "Success"
    UNSCHEDULABLE = "Unschedulable"  # does not fit now, may fit after changes
    UNRESOLVABLE = "UnschedulableAndUnresolvable"  # can never fit this node
    ERROR = "Error"  # bad input / bug
    SKIP = "Skip"  # plugin not relevant for this pod


@dataclass(frozen=True, slots=True)
class Status:
    """Result of one extension point call; ``reason`` is shown to the user."""

    code: Code = Code.SUCCESS
    reason: str = ""
    plugin: str = ""

    @property
    def ok(self) -> bool:
        """True for SUCCESS and SKIP."""
        return self.code is Code.SUCCESS or self.code is Code.SKIP


SUCCESS = Status()


class StateKey(Generic[T]):
    """A typed key of :class:`CycleState`; identity-compared, ``name`` only for messages."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"StateKey({self.name!r})"


class CycleState:
    """Typed value store for one scheduling cycle (one pod)."""

    __slots__ = ("_data",)

    def __init__(self) -> None:
        self._data: dict[StateKey, object] = {}

    def write(self, key: StateKey[T], value: T) -> None:
        """Store ``value`` under ``key`` (overwrites)."""
        self._data[key] = value

    def read(self, key: StateKey[T]) -> T:
        """Value under ``key``. Raises KeyError naming the key when it was never written."""
        try:
            return self._data[key]  # type: ignore[return-value]
        except KeyError:
            raise KeyError(f"cycle state has no {key.name!r}; was its PreFilter run?") from None

    def get(self, key: StateKey[T], default: T | None = None) -> T | None:
        """Value under ``key`` or ``default``."""
        return self._data.get(key, default)  # type: ignore[return-value]


@dataclass(slots=True)
class NodeFit:
    """Devices chosen on one node for one pod (written by the device Filter for Score).

    Attributes:
        containers: per container of the pod (same order as ``PodRequest.containers``),
            the grants for it.
        extra_score: vendor node-score terms (HAMi backend ``ScoreNode``), summed.
    """

    containers: list[tuple[DeviceGrant, ...]] = field(default_factory=list)
    extra_score: float = 0.0

    def grants(self) -> list[DeviceGrant]:
        """All grants of all containers, flattened."""
        return [g for c in self.containers for g in c]


class Plugin(Protocol):
    """Every plugin has a unique ``name``."""

    name: str


@runtime_checkable
class PreFilterPlugin(Protocol):
    """Called once per pod; computes per-pod data into the cycle state.

    Returns a non-ok Status to reject the pod on every node (reason shown per node).
    """

    name: str

    def pre_filter(
        self, state: CycleState, pod: PodRequest, snapshot: ClusterSnapshot
    ) -> Status: ...


@runtime_checkable
class FilterPlugin(Protocol):
    """Called per node; must only read the node it is given and the cycle state."""

    name: str

    def filter(self, state: CycleState, pod: PodRequest, node: NodeInfo) -> Status: ...


@runtime_checkable
class ScorePlugin(Protocol):
    """Called per feasible node with the devices chosen there (``fit``).

    Returns a float; the runner multiplies it by the profile weight and sums. Whether the
    highest or the lowest total wins is the profile's ``node_policy`` (binpack: highest,
    spread: lowest, as in HAMi ``pkg/scheduler/policy/node_policy.go``).
    """

    name: str

    def score(self, state: CycleState, pod: PodRequest, node: NodeInfo, fit: NodeFit) -> float: ...


@runtime_checkable
class ReservePlugin(Protocol):
    """Books/unbooks a chosen placement in the snapshot. ``unreserve`` must be idempotent
    with respect to a matching ``reserve`` (applies the exact inverse)."""

    name: str

    def reserve(
        self, snapshot: ClusterSnapshot, pod: PodRequest, node: NodeInfo, fit: NodeFit
    ) -> None: ...

    def unreserve(
        self, snapshot: ClusterSnapshot, pod: PodRequest, node: NodeInfo, fit: NodeFit
    ) -> None: ...
