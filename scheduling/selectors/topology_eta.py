"""When a queued gang under a ``required`` topology can start: one domain of its level must
have its devices free (issue 31; the pure rule is
:func:`scheduling.admission.eta_domains.domain_start`). Read for the jobs pages' and the API's
start estimates (:mod:`scheduling.selectors.job_board`).

Covers a job's own request (``Job.topology_mode`` required, ``topology_level``); a pod set's
own request is left to the group's device-count estimate.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime

from scheduling.admission.eta_domains import DomainPool, domain_start
from scheduling.choices import BOOKED_PLACEMENT_STATES
from scheduling.models import Job, PlacementDevice
from scheduling.models.topology import TopologyMode
from scheduling.placement.topology_index import domain_of
from scheduling.selectors.allocation import DeviceLoad, in_group
from scheduling.selectors.demand import JobDemand
from scheduling.selectors.snapshot import group_topology
from tenants.models import ResourceGroup

__all__ = ["required_domain_starts"]


def required_domain_starts(
    group: ResourceGroup,
    now: datetime,
    loads: Mapping[int, DeviceLoad],
    holding: Sequence[JobDemand],
    ends: Mapping[int, datetime],
    queued: Sequence[JobDemand],
) -> dict[int, datetime | None]:
    """``{job id: earliest start}`` of the ``queued`` jobs asking a ``required`` topology
    (None: no domain of its level is large enough); jobs without one are absent.

    Args:
        group: their resource group (its topology: :func:`group_topology`).
        now: the current time (aware).
        loads: ``{device id: DeviceLoad}`` (:func:`~scheduling.selectors.allocation.device_loads`).
        holding: the jobs holding devices in the group; ``ends`` their expected ends.
        queued: the queued jobs estimated.

    Queries: those of :func:`group_topology` (none after the first call for ``group``; at
    most two) when jobs are queued, one more when the group has a topology, one more when
    some queued job asks a required level.
    """
    if not queued:
        return {}
    topology = group_topology(group)
    if topology is None:
        return {}
    asks = dict(
        Job.objects.filter(
            pk__in=[d.job_id for d in queued], topology_mode=TopologyMode.REQUIRED
        ).values_list("pk", "topology_level")
    )
    levels = tuple(topology.levels)
    asks = {pk: level for pk, level in asks.items() if level in levels}
    if not asks:
        return {}
    mine = [load for load in loads.values() if load.usable and in_group(load, group)]
    held = _held_devices(holding)
    pools = {
        level: _pools(levels, level, mine, loads, holding, held, ends)
        for level in sorted(set(asks.values()))
    }
    out: dict[int, datetime | None] = {}
    for d in queued:
        if d.job_id in asks:
            found = domain_start(now, pools[asks[d.job_id]], d.devices)
            out[d.job_id] = found[0] if found is not None else None
    return out


def _held_devices(holding: Sequence[JobDemand]) -> dict[int, list[int]]:
    """``{job id: ids of the devices its live placements book}`` (one query)."""
    rows: dict[int, list[int]] = defaultdict(list)
    for job_id, device_id in PlacementDevice.objects.filter(
        placement__job_id__in=[d.job_id for d in holding],
        placement__state__in=BOOKED_PLACEMENT_STATES,
    ).values_list("placement__job_id", "device_id"):
        rows[job_id].append(device_id)
    return rows


def _pools(
    levels: tuple[str, ...],
    level: str,
    mine: Sequence[DeviceLoad],
    loads: Mapping[int, DeviceLoad],
    holding: Sequence[JobDemand],
    held: Mapping[int, list[int]],
    ends: Mapping[int, datetime],
) -> list[DomainPool]:
    """The domains of ``level`` (name order): the group's usable devices in each, and each
    holding job's devices there (its demand spread evenly over the devices it books)."""
    capacity: dict[str, float] = defaultdict(float)
    for load in mine:
        name = domain_of(load.labels, levels, level)
        if name is not None:
            capacity[name] += 1
    running: dict[str, list[tuple[datetime, float]]] = defaultdict(list)
    for d in holding:
        devices = held.get(d.job_id, [])
        share = d.devices / len(devices) if devices else 0.0
        inside: dict[str, float] = defaultdict(float)
        for device_id in devices:
            load = loads.get(device_id)
            name = domain_of(load.labels, levels, level) if load is not None else None
            if name is not None and name in capacity:
                inside[name] += share
        for name, amount in inside.items():
            running[name].append((ends[d.job_id], amount))
    return [DomainPool(name, capacity[name], tuple(running[name])) for name in sorted(capacity)]
