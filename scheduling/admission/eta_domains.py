"""Estimated start of a gang under a ``required`` topology (issue 31; pure, time passed in).

A gang whose pods must all land inside one domain of a level (Kueue ``required`` topology:
one rack, one block) starts only when *one* domain has its devices free: the group's device
count (:func:`scheduling.admission.eta.estimate_queue_starts`) may free enough devices spread
over several racks long before any single rack has room. :func:`domain_start` gives the
earliest time some domain frees ``own_devices``: per domain, what is free now plus the
releases of the jobs holding devices inside it, in the order of their expected ends;
:func:`narrow_to_domain` moves the group's range no earlier than that.

The domain step does not model the queued jobs ahead taking the domain's devices first (the
group's range does, by device count), so the narrowed range is a lower bound on the domain's
side: ``earliest`` and ``latest`` are the group's, each at least :func:`domain_start`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from scheduling.admission.eta import StartRange
from scheduling.admission.types import AdmissionInputError
from scheduling.admission.validation import require_aware

__all__ = ["DomainPool", "domain_start", "narrow_to_domain"]


@dataclass(frozen=True)
class DomainPool:
    """One domain of the required level: ``name`` (its values joined with ``/``),
    ``capacity_devices`` (its usable devices in the group) and ``running`` (``(expected end,
    devices held inside the domain)`` of each job holding devices there)."""

    name: str
    capacity_devices: float
    running: tuple[tuple[datetime, float], ...] = ()


def domain_start(
    now: datetime, domains: Sequence[DomainPool], own_devices: float
) -> tuple[datetime, str] | None:
    """The earliest time some domain has ``own_devices`` free, and that domain's name.

    Per domain: free now is its capacity less what the running jobs hold there; each running
    job gives its devices back at its expected end (an overdue one now). Ties go to the
    domain named first in ``domains``.

    Args:
        now: the current time (aware).
        domains: the domains of the required level.
        own_devices: the devices the gang asks (all its pods).

    Returns:
        ``(start, domain name)``, or None when no domain is large enough (it never starts).

    Raises:
        AdmissionInputError: a negative demand or capacity; a naive ``now`` or end.
    """
    require_aware(now, "domain_start", "now")
    if own_devices < 0:
        raise AdmissionInputError("own_devices must be >= 0")
    best: tuple[datetime, str] | None = None
    for pool in domains:
        if pool.capacity_devices < 0:
            raise AdmissionInputError("a domain's capacity must be >= 0")
        if pool.capacity_devices + 1e-9 < own_devices:
            continue
        free = pool.capacity_devices - sum(d for _, d in pool.running)
        at = now
        for end, devices in sorted(pool.running, key=lambda r: r[0]):
            require_aware(end, "domain_start", "a running job's end")
            if free + 1e-9 >= own_devices:
                break
            free += devices
            at = max(now, end)
        if best is None or at < best[0]:
            best = (at, pool.name)
    return best


def narrow_to_domain(group: StartRange | None, start: datetime | None) -> StartRange | None:
    """The group's range with both bounds at least ``start`` (:func:`domain_start`); None
    when either is None (the gang never starts as it is)."""
    if group is None or start is None:
        return None
    return StartRange(max(group.earliest, start), max(group.latest, start))
