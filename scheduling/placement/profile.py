"""Profiles: which plugins run, with which score weights and policies (plain data).

Like a kube-scheduler profile (``KubeSchedulerConfiguration.profiles[]``): filters run in
the listed order (first failure is the node's reason), scores are weighted and summed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scheduling.devices.policies import NODE_POLICIES, policy_word
from scheduling.devices.schema import DeviceModelConfig
from scheduling.placement.framework import FilterPlugin, PreFilterPlugin, ScorePlugin
from scheduling.placement.node_selection import IncrementalNodeSelection
from scheduling.placement.plugins import build_in_tree_registry, names
from scheduling.placement.registry import Registry
from scheduling.placement.vendors import (
    VendorPlugin,
    build_vendors,
    default_device_configs,
    default_vendors,
)

__all__ = ["Profile", "Framework", "NODE_POLICIES", "DEFAULT_FILTERS", "DEFAULT_SCORES"]

DEFAULT_FILTERS = (
    names.NODE_REGISTRATION,
    names.NODE_UNSCHEDULABLE,
    names.NODE_SELECTOR,
    names.NODE_RESOURCES_FIT,
    names.DEVICE_FIT,
)
DEFAULT_SCORES: tuple[tuple[str, float], ...] = ((names.HAMI_NODE_SCORE, 1.0),)


@dataclass(frozen=True)
class Profile:
    """A placement profile.

    Attributes:
        name: profile name.
        node_policy: ``binpack`` (highest total score wins) | ``spread`` (lowest wins);
            HAMi default binpack. ``select`` overrides the direction for custom scorers.
        device_policy: ``binpack`` | ``spread`` | ``topology-aware`` | ``mutex`` (HAMi
            default spread).
        filters: plugin names run as PreFilter/Filter, in order.
        scores: (plugin name, weight) run as Score. A profile may supply its own node
            scorer (e.g. an FGD plugin registered in ``registry``) instead of HAMiNodeScore.
        device_scoring_weights: default (slot, core, memory) device-score weights.
        device_configs: vendor configs (None = HAMi chart defaults).
        hami_parity: answer as HAMi v2.10 where the console deliberately differs (type
            selection by substring instead of whole tokens, MIG instances packed instead
            of spread; ``manage.py place``).
        registry: extra plugins (merged with the in-tree registry; duplicates rejected).
        plugin_args: extra keyword args for plugin factories, ``{plugin name: {...}}``.
        select: ``"max"`` | ``"min"`` | None (derived from node_policy).
    """

    name: str = "default"
    node_policy: str = "binpack"
    device_policy: str = "spread"
    filters: tuple[str, ...] = DEFAULT_FILTERS
    scores: tuple[tuple[str, float], ...] = DEFAULT_SCORES
    device_scoring_weights: tuple[int, int, int] = (1, 1, 1)
    device_configs: tuple[DeviceModelConfig, ...] | None = None
    hami_parity: bool = False
    registry: Registry | None = field(default=None, compare=False)
    plugin_args: dict[str, dict[str, Any]] = field(default_factory=dict, compare=False)
    select: str | None = None

    def __post_init__(self) -> None:
        # the words as every reader spells them (scheduling.devices.policies): " Spread " = spread
        object.__setattr__(self, "node_policy", policy_word(self.node_policy))
        object.__setattr__(self, "device_policy", policy_word(self.device_policy))
        if self.node_policy not in NODE_POLICIES:
            raise ValueError(f"node policy {self.node_policy!r} not in {NODE_POLICIES}")
        if self.select not in (None, "max", "min"):
            raise ValueError(f"select {self.select!r} must be 'max', 'min' or None")
        names_ = [*self.filters, *(n for n, _ in self.scores)]
        if len(set(self.filters)) != len(self.filters):
            raise ValueError(f"profile {self.name}: duplicate filter names")
        if len({n for n, _ in self.scores}) != len(self.scores):
            raise ValueError(f"profile {self.name}: duplicate score names")
        if not names_:
            raise ValueError(f"profile {self.name}: no plugins")

    @property
    def maximize(self) -> bool:
        """True when the highest total score wins."""
        if self.select is not None:
            return self.select == "max"
        return self.node_policy == "binpack"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Profile:
        """Build from plain data: ``{"name", "node_policy", "device_policy", "filters": [...],
        "scores": [[name, weight], ...], "device_scoring_weights": [s, c, m],
        "device_configs": [{...}], "select"}``. Raises ValueError on bad fields."""
        known = {
            "name",
            "node_policy",
            "device_policy",
            "filters",
            "scores",
            "device_scoring_weights",
            "device_configs",
            "select",
            "plugin_args",
            "hami_parity",
        }
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"Profile: unknown field(s) {', '.join(unknown)}")
        args = dict(data)
        if "filters" in args:
            args["filters"] = tuple(args["filters"])
        if "scores" in args:
            args["scores"] = tuple((str(n), float(w)) for n, w in args["scores"])
        if "device_scoring_weights" in args:
            args["device_scoring_weights"] = tuple(int(x) for x in args["device_scoring_weights"])
        if args.get("device_configs") is not None:
            args["device_configs"] = tuple(
                DeviceModelConfig.from_dict(c) for c in args["device_configs"]
            )
        return cls(**args)

    def build(self, cache: bool = True, incremental: bool = True) -> Framework:
        """Instantiate the plugins (do this once and reuse the Framework in hot loops).

        Args:
            cache: keep per-node Filter/Score results between calls, keyed on the request
                shape, the node object and its usage stamp (``runner.usage_stamp``:
                ``Node.version`` and every usage field, so direct usage edits invalidate it
                too). Only used when every plugin declares ``node_local = True`` (its answer
                depends only on the node and the pod). Edits of device capacity, device
                models or topology of a node already placed on must call
                ``ClusterSnapshot.touch``. On by default (decisions are identical with and
                without it: tests/placement/test_select_hook.py).
            incremental: with ``cache``, answer through the incremental node selection
                (:mod:`scheduling.placement.node_selection`) when the plugins allow it (every
                Filter node-local, every Score node-local or ``score_epoch``-versioned):
                per request shape only the nodes changed since are re-evaluated; decisions
                are identical (tests/placement/test_node_selection_parity.py).
        """
        return Framework(self, cache, incremental)


class Framework:
    """A built profile: plugin instances grouped by extension point."""

    __slots__ = (
        "profile",
        "vendors",
        "pre_filters",
        "filters",
        "scores",
        "maximize",
        "cache",
        "_caches",
        "select_plugin",
        "selector",
        "topology",
    )

    #: request shapes whose per-node results are kept (least recently used dropped)
    CACHE_SHAPES = 256

    def __init__(self, profile: Profile, cache: bool = True, incremental: bool = True) -> None:
        self.profile = profile
        registry = build_in_tree_registry()
        if profile.registry is not None:
            registry = registry.merge(profile.registry)
        self.vendors: dict[str, VendorPlugin] = _vendors(profile)
        common = {
            "vendors": self.vendors,
            "device_policy": profile.device_policy,
            "device_scoring_weights": profile.device_scoring_weights,
        }
        made: dict[str, Any] = {}

        def make(name: str) -> Any:
            if name not in made:
                made[name] = registry.create(
                    name, **{**common, **profile.plugin_args.get(name, {})}
                )
            return made[name]

        self.pre_filters = []
        self.filters = []
        for n in profile.filters:
            p = make(n)
            if isinstance(p, PreFilterPlugin):
                self.pre_filters.append(p)
            if isinstance(p, FilterPlugin):
                self.filters.append(p)
        self.scores = []
        for n, w in profile.scores:
            p = make(n)
            if not isinstance(p, ScorePlugin):
                raise ValueError(f"plugin {n!r} is not a Score plugin")
            self.scores.append((p, w))
            if isinstance(p, PreFilterPlugin) and p not in self.pre_filters:
                self.pre_filters.append(p)
        self.maximize = profile.maximize
        #: the fast-path plugin (runner module doc): the only Score plugin, if it has select
        self.select_plugin = (
            self.scores[0][0]
            if len(self.scores) == 1 and callable(getattr(self.scores[0][0], "select", None))
            else None
        )
        plugins = [*self.pre_filters, *self.filters, *(p for p, _ in self.scores)]
        self.cache = cache and all(getattr(p, "node_local", False) for p in plugins)
        self._caches: dict[tuple, dict[str, tuple]] = {}
        #: the incremental node selection of the general loop (runner module doc), None when off or
        #: when a plugin is neither node-local nor epoch-versioned
        self.selector: IncrementalNodeSelection | None = None
        if (
            cache
            and incremental
            and IncrementalNodeSelection.supports(self.pre_filters, self.filters, self.scores)
        ):
            self.selector = IncrementalNodeSelection(self.filters, self.scores)
        #: topology domains and per-shape domain capacity (``placement/topology_index.py``),
        #: made by the first topology-aware placement
        self.topology: Any = None

    def node_cache(self, shape: tuple) -> dict[str, tuple] | None:
        """Per-node result cache of a request shape (None when caching is off)."""
        if not self.cache:
            return None
        caches = self._caches
        c = caches.pop(shape, None)
        if c is None:
            c = {}
            if len(caches) >= self.CACHE_SHAPES:
                caches.pop(next(iter(caches)))
        caches[shape] = c
        return c


def _vendors(profile: Profile) -> dict[str, VendorPlugin]:
    """The vendor plugins of ``profile``: its device configs (or the chart defaults when only
    ``hami_parity`` is set), else the shared defaults."""
    if profile.device_configs is None and not profile.hami_parity:
        return default_vendors()
    configs = (
        list(profile.device_configs)
        if profile.device_configs is not None
        else default_device_configs()
    )
    return build_vendors(configs, profile.hami_parity)
