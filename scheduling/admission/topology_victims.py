"""Topology-aware victim choice (ours, issue 31; Kueue TAS does not choose victims by domain).

A preemptor whose pod set must land in one domain (one rack, say) needs one domain freed, not
capacity anywhere. When the placer can tell which domains the running jobs occupy for this
preemptor (an optional placer method ``victim_domains(entry) -> {workload id: frozenset of
domain names} | None``; None or absent = no topology request, nothing changes), the
candidates of the best domain are moved to the front of the preemption walk:

- per domain, its candidates in the walk's order (Kueue ``CandidatesOrdering``) are removed
  one by one until the preemptor fits (placed and within quota, borrowing allowed);
- the best domain needs the fewest victims, then has the lowest highest victim priority,
  then the smallest name;
- already terminating candidates stay first (they cost nothing more), then that domain's
  needed victims, then every other candidate in the walk's order.

The walk itself (validity, fill-back, fair-sharing strategies) is unchanged, so the result is
still one of the sets the walk could choose; it is the one that frees a domain with the fewest
evictions instead of evicting across the cluster until some domain happens to be free.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from scheduling.admission.candidates import Search
from scheduling.admission.types import RunningWorkload

__all__ = ["prefer_domain"]

T = TypeVar("T")


def prefer_domain(
    search: Search,
    items: Sequence[T],
    workload_of: Callable[[T], RunningWorkload],
    usable: Callable[[T], bool],
) -> list[T]:
    """``items`` (candidates in walk order) with the best domain's needed victims first
    (module docstring); unchanged when the placer offers no domains or no domain helps.
    ``usable``: a candidate may be removed now (classical: ``invalid_rule`` is None). The
    tree, placer, ``search.outcome``, ``tried`` and rejections are left as they were."""
    domains_of = getattr(search.cycle.placer, "victim_domains", None)
    by_id = domains_of(search.ask.entry) if domains_of is not None else None
    if not by_id:
        return list(items)
    groups: dict[str, list[T]] = {}
    for item in items:
        workload = workload_of(item)
        if workload.terminating:
            continue
        for domain in by_id.get(workload.id, ()):
            groups.setdefault(domain, []).append(item)
    saved = (search.outcome, search.tried, dict(search.rejected))
    best: tuple[tuple, list[T]] | None = None
    for domain in sorted(groups):
        needed = _needed(search, groups[domain], workload_of, usable)
        if needed:
            key = (len(needed), max(workload_of(i).priority for i in needed), domain)
            if best is None or key < best[0]:
                best = (key, needed)
    search.outcome, search.tried, search.rejected = saved
    if best is None:
        return list(items)
    first = {id(i) for i in best[1]}
    terminating = [i for i in items if workload_of(i).terminating]
    rest = [i for i in items if not workload_of(i).terminating and id(i) not in first]
    return terminating + best[1] + rest


def _needed(
    search: Search,
    items: list[T],
    workload_of: Callable[[T], RunningWorkload],
    usable: Callable[[T], bool],
) -> list[T] | None:
    """The shortest prefix of the usable ``items`` whose removal makes the preemptor fit
    (with borrowing), or None; everything removed is restored."""
    taken: list[T] = []
    found = None
    for item in items:
        if not usable(item):
            continue
        search.remove(workload_of(item))
        taken.append(item)
        if search.fits(True):
            found = list(taken)
            break
    for item in reversed(taken):
        search.restore(workload_of(item))
    return found
