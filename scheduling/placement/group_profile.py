"""A resource group's placement policy as a placement-core :class:`Profile` (plain data in,
profile out; no framework imports).

A group chooses (``tenants.ResourceGroup`` fields, mirrored by :class:`PlacementPolicy`):

- ``node_policy``: HAMi's node scheduler policy, ``binpack`` (highest HAMi node score wins)
  or ``spread`` (lowest wins) — HAMi ``--node-scheduler-policy``, shared/docs/hami.md §4.4;
- ``device_policy``: HAMi's GPU scheduler policy inside the chosen node, ``binpack`` |
  ``spread`` | ``topology-aware`` — HAMi ``--gpu-scheduler-policy``;
- ``fragmentation``: ``none`` (HAMi's node score), ``FragGuard`` or ``FGD``: the trace
  policies of ``plugins/frag_plugins.py`` score nodes by the fragmentation a placement adds
  against a target workload M (shared/docs/fgd.md). They answer every pod they model
  (``frag_engine.task_view``: one device request, cores = memory share, no selector and no
  per-pod policy) through their incremental node selection and choose the devices themselves; other
  pods run the Filter/Score loop with the group's device policy and HAMi's node score in the
  direction of the group's node policy (:class:`FragFallbackScore`);
- ``pod_override``: whether a job's pod annotations ``hami.io/node-scheduler-policy`` /
  ``hami.io/gpu-scheduler-policy`` (HAMi's per-pod overrides) apply; with them set a pod is
  placed by HAMi's rules in the asked directions, whatever the fragmentation policy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scheduling.devices.policies import (
    DEVICE_POLICY_ANNOTATION,
    GROUP_DEVICE_POLICIES,
    NODE_POLICIES,
    NODE_POLICY_ANNOTATION,
    policy_error,
    policy_word,
)
from scheduling.devices.schema import DeviceModelConfig
from scheduling.placement.fragmentation import TargetWorkload
from scheduling.placement.framework import CycleState, NodeFit
from scheduling.placement.plugins.frag_engine import task_view
from scheduling.placement.plugins.frag_plugins import (
    FRAG_POLICY_NAMES,
    FastSelection,
    TracePolicyPlugin,
)
from scheduling.placement.plugins.score import hami_node_usage_score
from scheduling.placement.profile import Profile
from scheduling.placement.registry import Registry
from scheduling.placement.types import ClusterSnapshot, NodeInfo, PodRequest

__all__ = [
    "DEVICE_POLICY_ANNOTATION",
    "annotation_errors",
    "normalised_annotations",
    "FRAGMENTATION_POLICIES",
    "GROUP_DEVICE_POLICIES",
    "NODE_POLICY_ANNOTATION",
    "FragFallbackScore",
    "PlacementPolicy",
    "policy_profile",
]

#: The pod policy annotations and the words each may say.
POLICY_ANNOTATIONS = (
    (NODE_POLICY_ANNOTATION, NODE_POLICIES),
    (DEVICE_POLICY_ANNOTATION, GROUP_DEVICE_POLICIES),
)
#: Fragmentation policies of a group, "none" = HAMi's node score.
FRAGMENTATION_POLICIES = ("none", *FRAG_POLICY_NAMES)


@dataclass(frozen=True)
class PlacementPolicy:
    """A resource group's placement policy (module docstring).

    Raises:
        ValueError: a value outside :data:`NODE_POLICIES`, :data:`GROUP_DEVICE_POLICIES` or
            :data:`FRAGMENTATION_POLICIES`, naming the field.
    """

    node_policy: str = "binpack"
    device_policy: str = "spread"
    fragmentation: str = "none"
    pod_override: bool = True

    def __post_init__(self) -> None:
        # " Spread " is spread, as in validation (scheduling.devices.policies)
        object.__setattr__(self, "node_policy", policy_word(self.node_policy))
        object.__setattr__(self, "device_policy", policy_word(self.device_policy))
        for name, value, allowed in (
            ("node_policy", self.node_policy, NODE_POLICIES),
            ("device_policy", self.device_policy, GROUP_DEVICE_POLICIES),
            ("fragmentation", self.fragmentation, FRAGMENTATION_POLICIES),
        ):
            if value not in allowed:
                raise ValueError(f"{name}: {value!r} is not one of {', '.join(allowed)}")

    def pod_overrides(self, annotations: Mapping[str, str] | None) -> tuple[str, str]:
        """``(node policy, device policy)`` a job's pod ``annotations`` ask for ("" = the
        group's); both "" when the group does not allow overrides. The words are normalised
        as in validation (:func:`~scheduling.devices.policies.policy_word`), not checked here
        (an unknown one makes the placement core answer "unknown ... policy" for the pod; the
        API rejects them with :func:`annotation_errors`)."""
        if not self.pod_override or not annotations:
            return "", ""
        return (
            policy_word(annotations.get(NODE_POLICY_ANNOTATION, "")),
            policy_word(annotations.get(DEVICE_POLICY_ANNOTATION, "")),
        )

    @property
    def needs_workload(self) -> bool:
        """True when the profile needs a target workload M (FragGuard, FGD)."""
        return self.fragmentation != "none"


def annotation_errors(annotations: Mapping[str, str], override_allowed: bool) -> list[str]:
    """Problems with the HAMi policy annotations of a job (empty = fine): a policy where the
    group allows none, or a word (normalised by
    :func:`~scheduling.devices.policies.policy_word`) that is not one of the valid ones,
    which the message names.

    Args:
        annotations: the job's pod annotations.
        override_allowed: the group's ``pod_policy_override``.
    """
    errors = []
    for key, allowed in POLICY_ANNOTATIONS:
        if key not in annotations:
            continue
        if not override_allowed:
            errors.append(f"{key}: the resource group does not allow per-job policies")
        elif (error := policy_error(key, annotations[key], allowed)) is not None:
            errors.append(error)
    return errors


def normalised_annotations(annotations: Mapping[str, str]) -> dict[str, str]:
    """``annotations`` with the HAMi policy words spelled as HAMi reads them (``" Binpack "``
    -> ``binpack``; what the API stores and puts on the pods); other keys unchanged."""
    out = dict(annotations)
    for key, _allowed in POLICY_ANNOTATIONS:
        if key in out:
            out[key] = policy_word(out[key])
    return out


class FragFallbackScore:
    """A fragmentation policy (FragGuard, FGD) as the profile's only Score plugin.

    ``select`` is the policy's incremental fast path (pods it models); ``score`` serves the
    other pods with HAMi's node score, negated for a ``spread`` group so that the profile's
    highest-wins selection spreads (a pod with its own node policy gets the plain score: the
    runner then uses the pod's direction).

    Args:
        name: the policy name (registry name).
        workload: target workload M.
        node_policy: the group's node policy.
        tie_seed: tie order seed (None = lowest node name), as :class:`TracePolicyPlugin`.
    """

    #: Node-local in the general loop: the pods it models never reach the loop (``select``
    #: answers them) and the others get HAMi's node score of the node alone; so the runner's
    #: incremental node selection serves a FragGuard/FGD group's other pods too.
    node_local = True

    def __init__(
        self,
        name: str,
        workload: TargetWorkload,
        node_policy: str = "binpack",
        tie_seed: int | None = None,
        **_: object,
    ) -> None:
        self.name = name
        self.inner = TracePolicyPlugin(name, workload, tie_seed)
        self.sign = 1.0 if node_policy == "binpack" else -1.0

    def select(
        self, state: CycleState, snapshot: ClusterSnapshot, pod: PodRequest
    ) -> FastSelection | None:
        """The policy's choice for a pod it models, None for the others."""
        return self.inner.select(state, snapshot, pod)

    def score(self, state: CycleState, pod: PodRequest, node: NodeInfo, fit: NodeFit) -> float:
        if task_view(pod) is not None:
            return self.inner.score(state, pod, node, fit)
        base = hami_node_usage_score(node) + fit.extra_score
        return base if pod.node_policy else self.sign * base


def policy_profile(
    policy: PlacementPolicy,
    *,
    workload: TargetWorkload | None = None,
    device_configs: Sequence[DeviceModelConfig] | None = None,
    name: str = "group",
) -> Profile:
    """The placement-core profile of ``policy``.

    Args:
        policy: the group's policy.
        workload: target workload M (required for FragGuard / FGD).
        device_configs: the device catalogue's resolved configs (None = HAMi defaults).
        name: profile name.

    Raises:
        ValueError: a fragmentation policy without ``workload``.
    """
    configs = tuple(device_configs) if device_configs is not None else None
    if not policy.needs_workload:
        return Profile(
            name=name,
            node_policy=policy.node_policy,
            device_policy=policy.device_policy,
            device_configs=configs,
        )
    if workload is None:
        raise ValueError(f"fragmentation policy {policy.fragmentation} needs a target workload")
    frag = policy.fragmentation
    registry = Registry({frag: lambda **args: FragFallbackScore(frag, **args)})
    return Profile(
        name=name,
        node_policy=policy.node_policy,
        device_policy=policy.device_policy,
        device_configs=configs,
        scores=((frag, 1.0),),
        registry=registry,
        select="max",
        plugin_args={frag: {"workload": workload, "node_policy": policy.node_policy}},
    )
