"""Fit checks with human reasons, and quota invariants, of a :class:`~scheduling.admission
.quota.QuotaTree` (a mixin: the arithmetic lives in :mod:`scheduling.admission.quota`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scheduling.admission.outcomes import CauseKind, PendingCause
from scheduling.admission.quota_node import QuotaNode
from scheduling.admission.types import (
    AggregateCapSpec,
    Charges,
    Dimension,
    FlavorResource,
    GroupSpec,
)

_DIMENSION_ORDER = {Dimension.DEVICES: 0, Dimension.MEMORY_MIB: 1, Dimension.CORES_PERCENT: 2}


def fr_sort_key(fr: FlavorResource) -> tuple[str, int]:
    """Deterministic order of flavor resources: flavor name, then devices/memory/cores."""
    return (fr[0], _DIMENSION_ORDER[Dimension(fr[1])])


def merge_charges(*parts: Mapping[FlavorResource, int]) -> dict[FlavorResource, int]:
    """Sum several charge mappings (keys normalised to :class:`Dimension`)."""
    total: dict[FlavorResource, int] = {}
    for part in parts:
        for fr, amount in part.items():
            key = (fr[0], Dimension(fr[1]))
            total[key] = total.get(key, 0) + amount
    return total


@dataclass(frozen=True, slots=True)
class QuotaBlock:
    """Why some charges do not fit, for one flavor resource or one aggregate cap.

    Attributes:
        cause: the reason as structure (``quota`` kind); its ``text`` is the human reason
            (see :meth:`FitChecks.check_fit`).
        exceeds_max: True when the charge exceeds what the tenant could ever get
            (nominal + borrowing limit, or the cap), so no preemption can help.
        flavor_resource: the blocking ``(flavor, dimension)`` (None for a cap or a missing
            flavor).
        need: the amount asked for ``flavor_resource`` (0 for a cap).
    """

    cause: PendingCause
    exceeds_max: bool
    flavor_resource: FlavorResource | None = None
    need: int = 0

    @property
    def text(self) -> str:
        """The human reason, rendered from :attr:`cause`."""
        return self.cause.text


@dataclass(frozen=True, slots=True)
class QuotaViolation:
    """One broken quota invariant.

    Attributes:
        kind: ``over_limit`` | ``cohort_overcommit`` | ``over_cap``.
        tenant: the tenant concerned (None for the cohort).
        flavor_resource: the flavor resource concerned (None for a cap).
        message: human-readable description with the amounts.
        cap: the aggregate cap concerned (``over_cap`` only).
    """

    kind: str
    tenant: str | None
    flavor_resource: FlavorResource | None
    message: str
    cap: AggregateCapSpec | None = None


def _quota_cause(scope: str, fr: FlavorResource, need: int, rule: str) -> PendingCause:
    """A ``quota`` cause for ``need`` of ``fr`` with no free amount (``SCOPE: needs N,
    RULE``)."""
    return PendingCause(
        CauseKind.QUOTA, rule, scope=scope, dimension=Dimension(fr[1]), flavor=fr[0], needed=need
    )


class FitChecks:
    """Reasoned fit checks and invariants; mixed into ``QuotaTree``, which provides the
    state and the arithmetic declared here (for the type checker only)."""

    group: GroupSpec
    caps: tuple[AggregateCapSpec, ...]
    root: QuotaNode
    managed: frozenset[FlavorResource]

    if TYPE_CHECKING:

        def node(self, tenant: str) -> QuotaNode: ...
        def tenant_names(self) -> list[str]: ...
        def ancestors(self, tenant: str) -> list[str]: ...
        def descendants(self, tenant: str) -> list[str]: ...
        def available(self, tenant: str, fr: FlavorResource) -> tuple[int, str]: ...
        def potential(self, tenant: str, fr: FlavorResource) -> tuple[int, str]: ...
        def nominal(self, tenant: str, fr: FlavorResource) -> int: ...
        def usage(self, tenant: str, fr: FlavorResource) -> int: ...

    def subtree_own_usage(
        self, tenant: str, flavors: Iterable[str] | None, dimension: Dimension
    ) -> int:
        """Raw usage of ``tenant`` and all its descendants over ``flavors`` (None = all)."""
        wanted = None if flavors is None else set(flavors)
        total = 0
        for name in self.descendants(tenant):
            for (flavor, dim), amount in self.node(name).own.items():
                if dim == dimension and (wanted is None or flavor in wanted):
                    total += amount
        return total

    def check_fit(
        self, tenant: str, charges: Charges, *, allow_borrowing: bool = True
    ) -> list[QuotaBlock]:
        """Every reason why ``charges`` do not fit for ``tenant`` now (empty = fits).

        Checks, in order: each managed flavor resource (sorted by flavor, then devices,
        memory_mib, cores_percent), then the resources the tenant's path does not limit
        while the cohort is over its quota, then the aggregate caps of the tenant and its
        ancestors.

        Reason formats (amounts in the dimension's unit)::

            tenant T, group G, flavor F: no quota for this flavor
            tenant T, group G, flavor F, DIM: needs N, free X, borrowable Y (NOTES)
            tenant T, group G, flavor F, DIM: needs N, max M (nominal X; bounded by LEVEL)
            tenant T, group G, flavor F, DIM: needs N, cohort G usage U exceeds its quota Q
                (a quota row was shrunk or deleted); waits until the usage is back within
                the quota
            tenant T, cap NAME, DIM: needs N, used U, cap C

        ``free`` is the unused part of T's nominal quota T can use now, ``borrowable`` what
        the cohort can still lend to it; NOTES name the level that bounded borrowing and
        any of T's nominal currently lent to others.

        Args:
            tenant: requesting tenant.
            charges: exact charges of the job.
            allow_borrowing: False for non-preemptible jobs, which must fit in nominal.
        """
        blocks: list[QuotaBlock] = []
        node = self.node(tenant)
        for flavor in sorted({fr[0] for fr, a in charges.items() if a > 0} - node.flavors):
            blocks.append(
                QuotaBlock(
                    PendingCause(
                        CauseKind.QUOTA,
                        "no quota for this flavor",
                        scope=f"tenant {tenant}, group {self.group.name}, flavor {flavor}",
                        flavor=flavor,
                    ),
                    exceeds_max=True,
                )
            )
        for fr in sorted(charges, key=fr_sort_key):
            key = (fr[0], Dimension(fr[1]))
            need = charges[fr]
            if key not in node.managed or need <= 0:
                continue
            block = self._check_resource(tenant, key, need, allow_borrowing)
            if block is not None:
                blocks.append(block)
        blocks.extend(self._check_overcommitted(tenant, charges))
        blocks.extend(self._check_caps(tenant, charges))
        return blocks

    def _check_overcommitted(self, tenant: str, charges: Charges) -> list[QuotaBlock]:
        """Blocks for the flavor resources the tenant's path does not limit (no row for that
        dimension on a flavor it manages: its usage is not counted) while the cohort's
        usage exceeds the cohort's quota, i.e. after a row was shrunk or deleted below the
        running usage. Such a job waits until the usage is back within the quota; a tenant
        whose path limits the resource is already held back by :meth:`available` (negative
        at the root)."""
        node = self.node(tenant)
        blocks = []
        for fr, need in sorted(merge_charges(charges).items(), key=lambda i: fr_sort_key(i[0])):
            if need <= 0 or fr not in self.managed or fr in node.managed:
                continue
            if fr[0] not in node.flavors:
                continue  # refused as "no quota for this flavor"
            used, total = self.root.usage.get(fr, 0), self.root.subtree.get(fr, 0)
            if used <= total:
                continue
            blocks.append(
                QuotaBlock(
                    _quota_cause(
                        f"tenant {tenant}, group {self.group.name}, flavor {fr[0]}, {fr[1].value}",
                        fr,
                        need,
                        f"cohort {self.group.name} usage {used} exceeds its quota {total} (a "
                        f"quota row was shrunk or deleted); waits until the usage is back "
                        f"within the quota",
                    ),
                    exceeds_max=False,
                    flavor_resource=fr,
                    need=need,
                )
            )
        return blocks

    def _check_resource(
        self, tenant: str, fr: FlavorResource, need: int, allow_borrowing: bool
    ) -> QuotaBlock | None:
        flavor, dim = fr
        head = f"tenant {tenant}, group {self.group.name}, flavor {flavor}, {dim.value}"
        potential, max_bound = self.potential(tenant, fr)
        nominal = self.nominal(tenant, fr)
        if not allow_borrowing and nominal < potential:
            potential, max_bound = nominal, "non-preemptible jobs may not borrow"
        if need > potential:
            return QuotaBlock(
                _quota_cause(
                    head, fr, need, f"max {potential} (nominal {nominal}; bounded by {max_bound})"
                ),
                exceeds_max=True,
                flavor_resource=fr,
                need=need,
            )
        available, bound = self.available(tenant, fr)
        used = self.usage(tenant, fr)
        unused_nominal = max(0, nominal - used)
        free = max(0, min(available, unused_nominal))
        borrowable = max(0, available - free)
        notes = []
        if not allow_borrowing:
            borrowable = 0
            notes.append("non-preemptible jobs may not borrow")
            fits = need <= free
        else:
            fits = need <= available
            notes.append(f"bounded by {bound}")
        if fits:
            return None
        if fr not in self.node(tenant).explicit:
            notes.append("no quota row for this tenant")
        lent = unused_nominal - free
        if lent > 0:
            notes.append(f"{lent} of its nominal quota in use by other tenants")
        return QuotaBlock(
            PendingCause(
                CauseKind.QUOTA,
                "; ".join(notes),
                scope=head,
                dimension=dim,
                flavor=flavor,
                needed=need,
                free=free,
                borrowable=borrowable,
            ),
            exceeds_max=False,
            flavor_resource=fr,
            need=need,
        )

    def _check_caps(self, tenant: str, charges: Charges) -> list[QuotaBlock]:
        path = set(self.ancestors(tenant))
        blocks = []
        for cap in self.caps:
            if cap.tenant not in path:
                continue
            wanted = None if cap.flavors is None else set(cap.flavors)
            need = sum(
                amount
                for (flavor, dim), amount in charges.items()
                if Dimension(dim) == cap.dimension and (wanted is None or flavor in wanted)
            )
            if need <= 0:
                continue
            used = self.subtree_own_usage(cap.tenant, cap.flavors, cap.dimension)
            if used + need > cap.limit:
                blocks.append(
                    QuotaBlock(
                        PendingCause(
                            CauseKind.QUOTA,
                            f"used {used}, cap {cap.limit}",
                            scope=f"tenant {cap.tenant}, cap {cap.name}, {cap.dimension.value}",
                            dimension=cap.dimension,
                            needed=need,
                        ),
                        exceeds_max=need > cap.limit,
                    )
                )
        return blocks

    def violations(self) -> list[QuotaViolation]:
        """Quota invariants broken by the current usage (DESIGN.md §7).

        * ``over_limit``: a tenant uses more than nominal + borrowing limit.
        * ``cohort_overcommit``: the cohort's usage exceeds its total quota (somebody borrowed
          capacity that is not there, or more than the lending limits allow).
        * ``over_cap``: an aggregate cap is exceeded.

        Usage above nominal alone (a shrunk or deleted row) is no violation: it is borrowing
        and can be reclaimed (Kueue never evicts on a quota change).
        """
        found: list[QuotaViolation] = []
        for name in self.tenant_names():
            node = self.node(name)
            for fr in sorted(node.managed, key=fr_sort_key):
                limit = node.borrowing_limit.get(fr)
                if limit is None:
                    continue
                used, nominal = node.usage.get(fr, 0), node.subtree.get(fr, 0)
                if used > nominal + limit:
                    found.append(
                        QuotaViolation(
                            "over_limit",
                            name,
                            fr,
                            f"tenant {name}, group {self.group.name}, flavor {fr[0]}, "
                            f"{fr[1].value}: usage {used} exceeds nominal {nominal} + "
                            f"borrowing limit {limit}",
                        )
                    )
        for fr in sorted(self.managed, key=fr_sort_key):
            used, total = self.root.usage.get(fr, 0), self.root.subtree.get(fr, 0)
            if used > total:
                found.append(
                    QuotaViolation(
                        "cohort_overcommit",
                        None,
                        fr,
                        f"cohort {self.group.name}, flavor {fr[0]}, {fr[1].value}: "
                        f"usage {used} exceeds cohort quota {total}",
                    )
                )
        for cap in self.caps:
            used = self.subtree_own_usage(cap.tenant, cap.flavors, cap.dimension)
            if used > cap.limit:
                found.append(
                    QuotaViolation(
                        "over_cap",
                        cap.tenant,
                        None,
                        f"tenant {cap.tenant}, cap {cap.name}, {cap.dimension.value}: "
                        f"usage {used} exceeds cap {cap.limit}",
                        cap=cap,
                    )
                )
        return found
