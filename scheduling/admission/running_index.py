"""The cycle's running workloads indexed once per cycle for the preemption searches.

A nearly full cluster leaves many heads that do not fit; each asks the preemption search,
which used to sort every running job, test each for the needed flavor resources and build
one rejection per job (about 90 ms per head over 8,000 running jobs in the Alibaba trace's
tail). The running set does not change during a cycle (admissions and holds are booked on
the quota tree and the placer, never added to it), so this index is built once:

* :meth:`RunningIndex.by_tenant`: per set of needed flavor resources, the jobs of each
  tenant holding one of them (Kueue ``WorkloadUsesResources``), in id order;
* :meth:`RunningIndex.by_priority`: the same jobs of one tenant grouped by priority
  (ascending), so a preemption policy that refuses a whole priority is decided once;
* :meth:`RunningIndex.rejections`: the rejection records of a whole group under one rule,
  built the first time and shared (the records are immutable), so rejecting a tenant that
  is within nominal costs one ``dict.update``.

Nothing here decides anything; it only answers, faster, the questions the searches asked
with scans (same jobs, same order, same rules).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from operator import attrgetter

from scheduling.admission.outcomes import RejectedCandidate
from scheduling.admission.types import FlavorResource, RunningWorkload

Jobs = tuple[RunningWorkload, ...]


class RunningIndex:
    """Indexes over a fixed set of running workloads (module docstring).

    Args:
        running: ``{workload id: workload}``; must not change while the index is used.
    """

    def __init__(self, running: Mapping[str, RunningWorkload]) -> None:
        self._ordered: Jobs = tuple(sorted(running.values(), key=attrgetter("id")))
        self._by_frs: dict[frozenset[FlavorResource], dict[str, Jobs]] = {}
        self._by_priority: dict[tuple[frozenset[FlavorResource], str], list[tuple[int, Jobs]]] = {}
        self._rejections: dict[tuple[Hashable, str], dict[str, RejectedCandidate]] = {}

    def by_tenant(self, frs: frozenset[FlavorResource]) -> dict[str, Jobs]:
        """``{tenant: jobs}`` of the jobs holding a positive amount of a flavor resource in
        ``frs``, tenants in order of their first job id, jobs in id order. Do not mutate."""
        cached = self._by_frs.get(frs)
        if cached is None:
            grouped: dict[str, list[RunningWorkload]] = {}
            for workload in self._ordered:
                charges = workload.charges
                if any(charges.get(fr, 0) > 0 for fr in frs):
                    grouped.setdefault(workload.tenant, []).append(workload)
            cached = {tenant: tuple(jobs) for tenant, jobs in grouped.items()}
            self._by_frs[frs] = cached
        return cached

    def by_priority(self, frs: frozenset[FlavorResource], tenant: str) -> list[tuple[int, Jobs]]:
        """``[(priority, jobs)]`` of :meth:`by_tenant`'s jobs of ``tenant``, ascending
        priority, jobs in id order within a priority. Do not mutate."""
        key = (frs, tenant)
        cached = self._by_priority.get(key)
        if cached is None:
            groups: dict[int, list[RunningWorkload]] = {}
            for workload in self.by_tenant(frs).get(tenant, ()):
                groups.setdefault(workload.priority, []).append(workload)
            cached = [(priority, tuple(groups[priority])) for priority in sorted(groups)]
            self._by_priority[key] = cached
        return cached

    def rejections(self, key: Hashable, jobs: Jobs, rule: str) -> dict[str, RejectedCandidate]:
        """``{id: RejectedCandidate(id, tenant, rule)}`` for ``jobs`` (in their order),
        cached under ``(key, rule)``: ``key`` must identify ``jobs`` (e.g. the flavor
        resources, the tenant and the priority that selected them). Do not mutate."""
        cached = self._rejections.get((key, rule))
        if cached is None:
            cached = {w.id: RejectedCandidate(w.id, w.tenant, rule) for w in jobs}
            self._rejections[(key, rule)] = cached
        return cached
