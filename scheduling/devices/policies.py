"""HAMi's scheduling policy words and the one normaliser every reader of them uses.

HAMi chooses a node by ``--node-scheduler-policy`` and a device within it by
``--gpu-scheduler-policy`` (config ``nodeSchedulerPolicy`` / ``gpuSchedulerPolicy``); a pod
overrides both with the annotations :data:`NODE_POLICY_ANNOTATION` /
:data:`DEVICE_POLICY_ANNOTATION`. The console reads these words from a resource group's
policy, a job's annotations (API, submit page), a kubectl workload's pod template (intake),
HAMi's config files and the ``place`` what-if. Every one of them goes through
:func:`policy_word` first, in validation and in use alike, so ``" Binpack "`` means
``binpack`` everywhere, and an unknown word is refused everywhere with
:func:`policy_error` naming the valid words.

(``tenants`` cannot import ``scheduling``: its choices for the group fields,
``tenants.choices.NodePolicy`` / ``DevicePolicy``, are these words, matched by
``core.words.canonical_choice``, which a test keeps equal to :func:`policy_word`.)
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "DEVICE_POLICIES",
    "DEVICE_POLICY_ANNOTATION",
    "GROUP_DEVICE_POLICIES",
    "NODE_POLICIES",
    "NODE_POLICY_ANNOTATION",
    "policy_error",
    "policy_word",
]

#: HAMi's per-pod node policy annotation (``pkg/util/types.go`` NodeSchedulerPolicyAnnotationKey).
NODE_POLICY_ANNOTATION = "hami.io/node-scheduler-policy"
#: HAMi's per-pod GPU policy annotation (``GPUSchedulerPolicyAnnotationKey``).
DEVICE_POLICY_ANNOTATION = "hami.io/gpu-scheduler-policy"
#: Node policies: ``binpack`` (highest HAMi node score wins) | ``spread`` (lowest).
NODE_POLICIES = ("binpack", "spread")
#: Device policies HAMi knows (``mutex``: one pod per device, a vendor mode).
DEVICE_POLICIES = ("binpack", "spread", "topology-aware", "mutex")
#: Device policies a resource group or a job's annotation may choose (``mutex`` is a vendor
#: mode of the placement core, not a group policy).
GROUP_DEVICE_POLICIES = ("binpack", "spread", "topology-aware")


def policy_word(value: object) -> str:
    """``value`` as a policy word: surrounding whitespace dropped, lower case (``" Binpack "``
    -> ``"binpack"``; ``""`` stays ``""``, "no policy given"). Not a check: compare the
    result with the allowed words (or use :func:`policy_error`)."""
    return str(value).strip().lower()


def policy_error(what: str, value: object, allowed: Sequence[str]) -> str | None:
    """Why ``value`` (normalised by :func:`policy_word`) is not one of ``allowed``, naming
    ``what`` (a field or annotation) and the valid words; None when it is one."""
    word = policy_word(value)
    if word in allowed:
        return None
    return f"{what}: {word!r} is not one of {', '.join(allowed)}"
