"""A resource group's placement profile, built for its admission cycles and dry runs.

The group's fields (``node_policy``, ``device_policy``, ``fragmentation_policy``,
``pod_policy_override``) become a :class:`~scheduling.placement.group_profile.PlacementPolicy`
and, with the device catalogue's configs, a placement-core profile
(:func:`~scheduling.placement.group_profile.policy_profile`). FragGuard / FGD score against the
group's target workload M: the task shapes of its newest jobs, exactly as the overview's
fragmentation panel measures the group (:func:`scheduling.selectors.fragmentation.
target_workload`), not a trace file.

M changes slowly (it is read from the newest ``RECENT_JOBS`` jobs), so it is kept per process for
``PLACEMENT_WORKLOAD_TTL_S`` seconds (setting; 0 = read it every cycle): three queries per
group and period instead of per cycle.
"""

from __future__ import annotations

import threading
import time

from django.conf import settings

from scheduling.devices.overlay import Catalogue
from scheduling.placement.fragmentation import TargetWorkload
from scheduling.placement.group_profile import PlacementPolicy, policy_profile
from scheduling.placement.profile import Framework, Profile
from scheduling.selectors.fragmentation import target_workload
from tenants.models import ResourceGroup

_lock = threading.Lock()
#: ``{group id: (read at (monotonic s), M)}``
_workloads: dict[int, tuple[float, TargetWorkload]] = {}


def group_policy(group: ResourceGroup) -> PlacementPolicy:
    """The group's :class:`PlacementPolicy` (a stored value outside the choices — written
    around the model's validation — falls back to HAMi's default for that field)."""
    try:
        return PlacementPolicy(
            group.node_policy,
            group.device_policy,
            group.fragmentation_policy,
            group.pod_policy_override,
        )
    except ValueError:
        fields = {}
        for name, value in (
            ("node_policy", group.node_policy),
            ("device_policy", group.device_policy),
            ("fragmentation", group.fragmentation_policy),
        ):
            try:
                PlacementPolicy(**{name: value})
                fields[name] = value
            except ValueError:
                continue
        return PlacementPolicy(**fields, pod_override=group.pod_policy_override)


def group_workload(group: ResourceGroup, *, now_s: float | None = None) -> TargetWorkload:
    """The group's target workload M (module docstring: cached ``PLACEMENT_WORKLOAD_TTL_S``)."""
    ttl = settings.PLACEMENT_WORKLOAD_TTL_S
    now_s = time.monotonic() if now_s is None else now_s
    with _lock:
        hit = _workloads.get(group.pk)
    if hit is not None and ttl > 0 and now_s - hit[0] < ttl:
        return hit[1]
    workload = target_workload(group)
    with _lock:
        _workloads[group.pk] = (now_s, workload)
    return workload


def forget_workloads() -> None:
    """Drop every cached M (tests; a group whose jobs were rewritten)."""
    with _lock:
        _workloads.clear()


def group_profile(group: ResourceGroup, catalogue: Catalogue | None = None) -> Profile:
    """The placement-core profile of ``group`` (module docstring).

    Queries: none for HAMi policies; three when M is read (FragGuard / FGD, cache expired).
    """
    policy = group_policy(group)
    workload = group_workload(group) if policy.needs_workload else None
    configs = catalogue.configs if catalogue is not None else None
    return policy_profile(
        policy, workload=workload, device_configs=configs, name=f"group-{group.name}"
    )


def group_framework(group: ResourceGroup, catalogue: Catalogue | None = None) -> Framework:
    """:func:`group_profile` built (one per cycle: its caches live as long as the cycle).

    ``PLACEMENT_INCREMENTAL_SELECTOR = False`` (default True) builds it without the placement
    core's incremental node selection (every non-fast-path pod then runs the Filter/Score loop on
    every node; decisions are the same, only slower: for measurements and as an escape hatch).
    """
    incremental = getattr(settings, "PLACEMENT_INCREMENTAL_SELECTOR", True)
    return group_profile(group, catalogue).build(incremental=incremental)
