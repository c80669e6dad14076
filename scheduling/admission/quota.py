"""Quota arithmetic of one resource group's cohort tree (Kueue semantics).

Source: Kueue ``pkg/cache/scheduler/resource_node.go`` (subtree quota, local/guaranteed
quota, ``available``, ``potentialAvailable``, usage bubbling) and Kueue fair sharing
(``pkg/cache/scheduler/fair_sharing.go``: dominant resource share).

The tree: the cohort (one per resource group) is the root; top-level tenants hang below it
and nested tenants below their parents. Per flavor resource ``fr = (flavor, dimension)``:

* ``subtree(n)`` = own nominal + sum over children of ``subtree(c) - guaranteed(c)``.
* ``guaranteed(n)`` = ``max(0, subtree(n) - lending_limit)`` when a lending limit is set,
  else 0. It is never lent upward.
* ``usage(n)`` = own workloads' usage + sum over children of
  ``max(0, usage(c) - guaranteed(c))`` (usage beyond the guaranteed part bubbles up).
* ``available(n)`` = ``max(0, guaranteed(n) - usage(n))`` + what the parent can supply,
  the latter capped by ``subtree(n) - guaranteed(n) - max(0, usage(n) - guaranteed(n))
  + borrowing_limit`` when a borrowing limit is set; at the root it is
  ``subtree - usage``.

Which quota applies (documented rule, avoiding Volcano's "deserved must list every
dimension" trap, volcano#4658):

* A tenant may use a flavor only when it or an ancestor has at least one quota row for that
  flavor; otherwise the job is rejected with "no quota for this flavor".
* A flavor resource is *managed* for a tenant when it or an ancestor has a row for exactly
  that ``(flavor, dimension)``. Unmanaged dimensions are not limited and their usage is not
  counted in the cohort (e.g. only ``devices`` rows means memory and cores are free).
* A tenant without its own row for a resource managed through an ancestor is a pass-through
  node (nominal 0, no limits): it draws on the ancestor's pool (Kueue cohort-owned quota).
* In an ``exclusive`` group every row's lending and borrowing limit is 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction

from scheduling.admission.types import (
    AdmissionInputError,
    AggregateCap,
    Charges,
    Dimension,
    FlavorResource,
    GroupKind,
    Quota,
    ResourceGroup,
    Tenant,
)

_DIMENSION_ORDER = {Dimension.DEVICES: 0, Dimension.MEMORY_MIB: 1, Dimension.CORES_PERCENT: 2}

ShareKey = tuple[int, Fraction]
"""A weighted dominant share: ``(1, 0)`` is infinite (weight 0 and borrowing), else
``(0, share)`` with ``share`` in per-mille of the cohort's lendable capacity / weight."""


def fr_sort_key(fr: FlavorResource) -> tuple[str, int]:
    """Deterministic order of flavor resources: flavor name, then devices/memory/cores."""
    return (fr[0], _DIMENSION_ORDER[fr[1]])


@dataclass(frozen=True, slots=True)
class QuotaBlock:
    """Why some charges do not fit, for one flavor resource or one aggregate cap.

    Attributes:
        text: the human reason (see :meth:`QuotaTree.check_fit`).
        exceeds_max: True when the charge exceeds what the tenant could ever get
            (nominal + borrowing limit, or the cap), so no preemption can help.
        flavor_resource: the blocking ``(flavor, dimension)`` (None for a cap).
    """

    text: str
    exceeds_max: bool
    flavor_resource: FlavorResource | None = None


class _Node:
    __slots__ = (
        "name", "parent", "children", "nominal", "borrowing_limit", "lending_limit",
        "subtree", "own", "usage", "weight", "explicit", "managed",
    )

    def __init__(self, name: str | None, parent: _Node | None, weight: float) -> None:
        self.name = name
        self.parent = parent
        self.children: list[_Node] = []
        self.nominal: dict[FlavorResource, int] = {}
        self.borrowing_limit: dict[FlavorResource, int | None] = {}
        self.lending_limit: dict[FlavorResource, int | None] = {}
        self.subtree: dict[FlavorResource, int] = {}
        self.own: dict[FlavorResource, int] = {}
        self.usage: dict[FlavorResource, int] = {}
        self.weight = weight
        self.explicit: set[FlavorResource] = set()
        self.managed: set[FlavorResource] = set()


class QuotaTree:
    """Mutable quota/usage state of one cohort, used during one cycle or simulation.

    Args:
        group: the resource group (its name is the cohort name).
        tenants: every tenant (ancestors included).
        quotas: quota rows of the group.
        caps: aggregate caps of the group.

    Raises:
        AdmissionInputError: unknown parent or flavor, a cycle in the tenant tree, duplicate
            rows, negative amounts, or a lending limit above nominal.
    """

    def __init__(
        self,
        group: ResourceGroup,
        tenants: Iterable[Tenant],
        quotas: Iterable[Quota],
        caps: Iterable[AggregateCap] = (),
    ) -> None:
        self.group = group
        self.caps = tuple(caps)
        self._root = _Node(None, None, 1.0)
        self._nodes: dict[str, _Node] = {}
        self._build_tree(tuple(tenants))
        quota_rows = tuple(quotas)
        self.managed: frozenset[FlavorResource] = frozenset(
            (q.flavor, Dimension(q.dimension)) for q in quota_rows
        )
        self._load_quotas(quota_rows)
        self._validate_caps()
        self._post_order = self._compute_post_order()
        for node in reversed(self._post_order):  # parents before children
            parent_managed = node.parent.managed if node.parent is not None else set()
            node.managed = node.explicit | parent_managed
        self._compute_subtree()
        self._recompute_usage()

    # -- construction -------------------------------------------------------------------

    def _build_tree(self, tenants: tuple[Tenant, ...]) -> None:
        for tenant in tenants:
            if tenant.name in self._nodes:
                raise AdmissionInputError(f"duplicate tenant {tenant.name!r}")
            if tenant.fair_share_weight < 0:
                raise AdmissionInputError(
                    f"tenant {tenant.name!r}: fair_share_weight must be >= 0"
                )
            self._nodes[tenant.name] = _Node(tenant.name, None, tenant.fair_share_weight)
        for tenant in tenants:
            node = self._nodes[tenant.name]
            if tenant.parent is None:
                node.parent = self._root
            elif tenant.parent in self._nodes:
                node.parent = self._nodes[tenant.parent]
            else:
                raise AdmissionInputError(
                    f"tenant {tenant.name!r}: unknown parent {tenant.parent!r}"
                )
            node.parent.children.append(node)
        for tenant in tenants:  # cycle check: every chain must reach the root
            seen: set[str] = set()
            walk: _Node | None = self._nodes[tenant.name]
            while walk is not None and walk.name is not None:
                if walk.name in seen:
                    raise AdmissionInputError(f"tenant tree has a cycle through {walk.name!r}")
                seen.add(walk.name)
                walk = walk.parent

    def _load_quotas(self, quotas: tuple[Quota, ...]) -> None:
        flavors = {f.name for f in self.group.flavors}
        exclusive = self.group.kind == GroupKind.EXCLUSIVE
        seen: set[tuple[str, str, Dimension]] = set()
        for q in quotas:
            dim = Dimension(q.dimension)
            key = (q.tenant, q.flavor, dim)
            where = f"quota {q.tenant}/{q.flavor}/{dim.value}"
            if q.tenant not in self._nodes:
                raise AdmissionInputError(f"{where}: unknown tenant")
            if q.flavor not in flavors:
                raise AdmissionInputError(f"{where}: flavor not in group {self.group.name}")
            if key in seen:
                raise AdmissionInputError(f"{where}: duplicate row")
            seen.add(key)
            if q.nominal < 0:
                raise AdmissionInputError(f"{where}: nominal must be >= 0")
            if q.borrowing_limit is not None and q.borrowing_limit < 0:
                raise AdmissionInputError(f"{where}: borrowing_limit must be >= 0 or None")
            if q.lending_limit is not None and not 0 <= q.lending_limit <= q.nominal:
                raise AdmissionInputError(f"{where}: lending_limit must be in [0, nominal]")
            node = self._nodes[q.tenant]
            node.nominal[(q.flavor, dim)] = q.nominal
            node.explicit.add((q.flavor, dim))
            node.borrowing_limit[(q.flavor, dim)] = 0 if exclusive else q.borrowing_limit
            node.lending_limit[(q.flavor, dim)] = 0 if exclusive else q.lending_limit
        for node in self._nodes.values():
            for fr in self.managed:
                if fr in node.nominal:
                    continue
                node.nominal[fr] = 0  # pass-through (Kueue cohort without quota)
                node.borrowing_limit[fr], node.lending_limit[fr] = None, None

    def _validate_caps(self) -> None:
        flavors = {f.name for f in self.group.flavors}
        for cap in self.caps:
            if cap.tenant not in self._nodes:
                raise AdmissionInputError(f"cap {cap.name!r}: unknown tenant {cap.tenant!r}")
            if cap.limit < 0:
                raise AdmissionInputError(f"cap {cap.name!r}: limit must be >= 0")
            unknown = set(cap.flavors or ()) - flavors
            if unknown:
                raise AdmissionInputError(f"cap {cap.name!r}: unknown flavors {sorted(unknown)}")

    def _compute_post_order(self) -> list[_Node]:
        order: list[_Node] = []

        def visit(node: _Node) -> None:
            for child in sorted(node.children, key=lambda c: c.name or ""):
                visit(child)
            order.append(node)

        visit(self._root)
        return order

    def _compute_subtree(self) -> None:
        for node in self._post_order:
            for fr in self.managed:
                total = node.nominal.get(fr, 0)
                for child in node.children:
                    total += child.subtree[fr] - self._guaranteed(child, fr)
                node.subtree[fr] = total

    def _recompute_usage(self) -> None:
        for node in self._post_order:
            usage = {fr: v for fr, v in node.own.items() if fr in node.managed}
            for child in node.children:  # a child's usage holds managed keys only
                for fr, used in child.usage.items():
                    excess = used - self._guaranteed(child, fr)
                    if excess > 0:
                        usage[fr] = usage.get(fr, 0) + excess
            node.usage = usage

    # -- basic accessors ------------------------------------------------------------------

    def _node(self, tenant: str) -> _Node:
        try:
            return self._nodes[tenant]
        except KeyError:
            raise AdmissionInputError(f"unknown tenant {tenant!r}") from None

    def has_tenant(self, tenant: str) -> bool:
        """True when ``tenant`` is part of the tree."""
        return tenant in self._nodes

    def tenant_names(self) -> list[str]:
        """Tenant names in deterministic (post-order, by name) order."""
        return [n.name for n in self._post_order if n.name is not None]

    def ancestors(self, tenant: str) -> list[str]:
        """``tenant`` followed by its ancestors, nearest first (the cohort excluded)."""
        out: list[str] = []
        node: _Node | None = self._node(tenant)
        while node is not None and node.name is not None:
            out.append(node.name)
            node = node.parent
        return out

    def descendants(self, tenant: str) -> list[str]:
        """``tenant`` and every tenant below it."""
        out: list[str] = []
        stack = [self._node(tenant)]
        while stack:
            node = stack.pop()
            if node.name is not None:
                out.append(node.name)
            stack.extend(node.children)
        return out

    def _guaranteed(self, node: _Node, fr: FlavorResource) -> int:
        if node.parent is None:
            return node.subtree.get(fr, 0)
        lending = node.lending_limit.get(fr)
        if lending is None:
            return 0
        return max(0, node.subtree.get(fr, 0) - lending)

    def nominal(self, tenant: str, fr: FlavorResource) -> int:
        """The tenant's subtree quota for ``fr`` (own nominal + what its children lend up)."""
        return self._node(tenant).subtree.get(fr, 0)

    def usage(self, tenant: str, fr: FlavorResource) -> int:
        """Kueue usage of the tenant node: own usage + usage bubbled up from children."""
        return self._node(tenant).usage.get(fr, 0)

    def own_usage(self, tenant: str) -> dict[FlavorResource, int]:
        """Usage of the tenant's own workloads (not its children's), non-zero entries."""
        return {fr: v for fr, v in self._node(tenant).own.items() if v}

    def managed_for(self, tenant: str) -> frozenset[FlavorResource]:
        """Flavor resources whose quota applies to ``tenant`` (rows on it or an ancestor)."""
        return frozenset(self._node(tenant).managed)

    def flavors_for(self, tenant: str) -> frozenset[str]:
        """Flavors ``tenant`` may use (some row on it or an ancestor)."""
        return frozenset(fr[0] for fr in self._node(tenant).managed)

    def borrowing_limit(self, tenant: str, fr: FlavorResource) -> int | None:
        """Effective borrowing limit (None = unlimited)."""
        return self._node(tenant).borrowing_limit.get(fr)

    # -- usage changes ----------------------------------------------------------------------

    def add(self, tenant: str, charges: Charges) -> None:
        """Book ``charges`` on ``tenant`` (own usage) and re-bubble usage up the tree."""
        node = self._node(tenant)
        for fr, amount in charges.items():
            key = (fr[0], Dimension(fr[1]))
            node.own[key] = node.own.get(key, 0) + amount
        self._recompute_usage()

    def remove(self, tenant: str, charges: Charges) -> None:
        """Release ``charges`` from ``tenant``; the inverse of :meth:`add`."""
        self.add(tenant, {fr: -amount for fr, amount in charges.items()})

    # -- Kueue availability ----------------------------------------------------------------

    def available(self, tenant: str, fr: FlavorResource) -> tuple[int, str]:
        """Capacity ``tenant`` can still use for ``fr``, and the level that bounds it.

        Returns:
            ``(amount, bound)``: ``amount`` in the dimension's unit (may be negative when
            the cohort is overcommitted); ``bound`` names the level that limited what could
            be borrowed, e.g. ``"borrowing limit of tenant team-a"`` or
            ``"cohort a100-shared"``.
        """
        return self._available(self._node(tenant), fr)

    def _available(self, node: _Node, fr: FlavorResource) -> tuple[int, str]:
        if node.parent is None:
            return node.subtree.get(fr, 0) - node.usage.get(fr, 0), f"cohort {self.group.name}"
        guaranteed = self._guaranteed(node, fr)
        used = node.usage.get(fr, 0)
        local = max(0, guaranteed - used)
        parent_amount, bound = self._available(node.parent, fr)
        limit = node.borrowing_limit.get(fr)
        if limit is not None:
            stored_in_parent = node.subtree.get(fr, 0) - guaranteed
            used_in_parent = max(0, used - guaranteed)
            capped = stored_in_parent - used_in_parent + limit
            if capped <= parent_amount:
                parent_amount, bound = capped, self._limit_label(node)
        return local + parent_amount, bound

    def _limit_label(self, node: _Node) -> str:
        if self.group.kind == GroupKind.EXCLUSIVE:
            return f"exclusive group {self.group.name}, no borrowing"
        return f"borrowing limit of tenant {node.name}"

    def potential(self, tenant: str, fr: FlavorResource) -> tuple[int, str]:
        """Most ``tenant`` could ever use of ``fr`` with an empty cohort (Kueue
        ``potentialAvailable``), and the level that bounds it.

        Returns:
            ``(amount, bound)``, ``bound`` as in :meth:`available`.
        """
        return self._potential(self._node(tenant), fr)

    def _potential(self, node: _Node, fr: FlavorResource) -> tuple[int, str]:
        if node.parent is None:
            return node.subtree.get(fr, 0), f"cohort {self.group.name}"
        parent_amount, bound = self._potential(node.parent, fr)
        amount = self._guaranteed(node, fr) + parent_amount
        limit = node.borrowing_limit.get(fr)
        if limit is not None and node.subtree.get(fr, 0) + limit <= amount:
            amount, bound = node.subtree.get(fr, 0) + limit, self._limit_label(node)
        return amount, bound

    # -- fit ---------------------------------------------------------------------------------

    def subtree_own_usage(self, tenant: str, flavors: Iterable[str] | None,
                          dimension: Dimension) -> int:
        """Raw usage of ``tenant`` and all its descendants over ``flavors`` (None = all)."""
        wanted = None if flavors is None else set(flavors)
        total = 0
        for name in self.descendants(tenant):
            for (flavor, dim), amount in self._nodes[name].own.items():
                if dim == dimension and (wanted is None or flavor in wanted):
                    total += amount
        return total

    def check_fit(self, tenant: str, charges: Charges, *,
                  allow_borrowing: bool = True) -> list[QuotaBlock]:
        """Every reason why ``charges`` do not fit for ``tenant`` now (empty = fits).

        Checks, in order: each managed flavor resource (sorted by flavor, then devices,
        memory_mib, cores_percent), then the aggregate caps of the tenant and its ancestors.

        Reason formats (amounts in the dimension's unit)::

            tenant T, group G, flavor F: no quota for this flavor
            tenant T, group G, flavor F, DIM: needs N, free X, borrowable Y (NOTES)
            tenant T, group G, flavor F, DIM: needs N, max M (nominal X; bounded by LEVEL)
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
        managed = self._node(tenant).managed
        allowed = self.flavors_for(tenant)
        for flavor in sorted({fr[0] for fr, a in charges.items() if a > 0} - allowed):
            blocks.append(QuotaBlock(
                f"tenant {tenant}, group {self.group.name}, flavor {flavor}: "
                f"no quota for this flavor", exceeds_max=True))
        for fr in sorted(charges, key=fr_sort_key):
            key = (fr[0], Dimension(fr[1]))
            need = charges[fr]
            if key not in managed or need <= 0:
                continue
            block = self._check_resource(tenant, key, need, allow_borrowing)
            if block is not None:
                blocks.append(block)
        blocks.extend(self._check_caps(tenant, charges))
        return blocks

    def _check_resource(self, tenant: str, fr: FlavorResource, need: int,
                        allow_borrowing: bool) -> QuotaBlock | None:
        flavor, dim = fr
        head = f"tenant {tenant}, group {self.group.name}, flavor {flavor}, {dim.value}"
        potential, max_bound = self.potential(tenant, fr)
        nominal = self.nominal(tenant, fr)
        if not allow_borrowing and nominal < potential:
            potential, max_bound = nominal, "non-preemptible jobs may not borrow"
        if need > potential:
            return QuotaBlock(
                f"{head}: needs {need}, max {potential} (nominal {nominal}; bounded by "
                f"{max_bound})",
                exceeds_max=True, flavor_resource=fr,
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
        if fr not in self._node(tenant).explicit:
            notes.append("no quota row for this tenant")
        lent = unused_nominal - free
        if lent > 0:
            notes.append(f"{lent} of its nominal quota in use by other tenants")
        return QuotaBlock(
            f"{head}: needs {need}, free {free}, borrowable {borrowable} ({'; '.join(notes)})",
            exceeds_max=False, flavor_resource=fr,
        )

    def _check_caps(self, tenant: str, charges: Charges) -> list[QuotaBlock]:
        path = set(self.ancestors(tenant))
        blocks = []
        for cap in self.caps:
            if cap.tenant not in path:
                continue
            wanted = None if cap.flavors is None else set(cap.flavors)
            need = sum(
                amount for (flavor, dim), amount in charges.items()
                if Dimension(dim) == cap.dimension and (wanted is None or flavor in wanted)
            )
            if need <= 0:
                continue
            used = self.subtree_own_usage(cap.tenant, cap.flavors, cap.dimension)
            if used + need > cap.limit:
                blocks.append(QuotaBlock(
                    f"tenant {cap.tenant}, cap {cap.name}, {cap.dimension.value}: "
                    f"needs {need}, used {used}, cap {cap.limit}",
                    exceeds_max=need > cap.limit,
                ))
        return blocks

    def within_nominal(self, tenant: str, charges: Charges) -> bool:
        """True when ``tenant`` stays within its nominal quota after adding ``charges``."""
        managed = self._node(tenant).managed
        for fr, amount in charges.items():
            key = (fr[0], Dimension(fr[1]))
            if key in managed and amount > 0 and (
                self.usage(tenant, key) + amount > self.nominal(tenant, key)
            ):
                return False
        return True

    def borrowing_resources(self, tenant: str) -> list[FlavorResource]:
        """Managed flavor resources where ``tenant`` uses more than its nominal quota."""
        return sorted(
            (fr for fr in self._node(tenant).managed
             if self.usage(tenant, fr) > self.nominal(tenant, fr)),
            key=fr_sort_key,
        )

    # -- fair sharing ------------------------------------------------------------------------

    def dominant_share(self, tenant: str, extra: Charges | None = None) -> ShareKey:
        """Weighted dominant resource share of ``tenant`` (Kueue fair sharing).

        For each managed flavor resource: ``borrowed = max(0, usage + extra - nominal)``;
        ``ratio = borrowed * 1000 / lendable`` where ``lendable`` is the cohort's total
        subtree quota. The share is the largest ratio divided by the tenant's
        ``fair_share_weight``; weight 0 with any borrowing is infinite.

        Returns:
            A sortable :data:`ShareKey`.
        """
        node = self._node(tenant)
        extra = extra or {}
        share = Fraction(0)
        for fr in node.managed:
            lendable = self._root.subtree.get(fr, 0)
            if lendable <= 0:
                continue
            added = sum(a for k, a in extra.items() if (k[0], Dimension(k[1])) == fr)
            borrowed = node.usage.get(fr, 0) + added - node.subtree.get(fr, 0)
            if borrowed > 0:
                share = max(share, Fraction(borrowed * 1000, lendable))
        if share == 0:
            return (0, Fraction(0))
        if node.weight == 0:
            return (1, Fraction(0))
        return (0, share / Fraction(node.weight))

    # -- invariants ----------------------------------------------------------------------------

    def violations(self) -> list[QuotaViolation]:
        """Quota invariants broken by the current usage (DESIGN.md §7).

        * ``no_quota``: a tenant uses a flavor it has no quota row for.
        * ``over_limit``: a tenant uses more than nominal + borrowing limit.
        * ``cohort_overcommit``: the cohort's usage exceeds its total quota (somebody borrowed
          capacity that is not there, or more than the lending limits allow).
        * ``over_cap``: an aggregate cap is exceeded.
        """
        found: list[QuotaViolation] = []
        for name in self.tenant_names():
            node = self._nodes[name]
            no_quota = sorted({fr[0] for fr, a in node.own.items() if a > 0}
                              - self.flavors_for(name))
            for flavor in no_quota:
                found.append(QuotaViolation(
                    "no_quota", name, None,
                    f"tenant {name}, group {self.group.name}, flavor {flavor}: "
                    f"usage without quota for this flavor",
                    flavor=flavor,
                ))
            for fr in sorted(node.managed, key=fr_sort_key):
                limit = node.borrowing_limit.get(fr)
                if limit is None:
                    continue
                used, nominal = node.usage.get(fr, 0), node.subtree.get(fr, 0)
                if used > nominal + limit:
                    found.append(QuotaViolation(
                        "over_limit", name, fr,
                        f"tenant {name}, group {self.group.name}, flavor {fr[0]}, "
                        f"{fr[1].value}: usage {used} exceeds nominal {nominal} + "
                        f"borrowing limit {limit}",
                    ))
        for fr in sorted(self.managed, key=fr_sort_key):
            used, total = self._root.usage.get(fr, 0), self._root.subtree.get(fr, 0)
            if used > total:
                found.append(QuotaViolation(
                    "cohort_overcommit", None, fr,
                    f"cohort {self.group.name}, flavor {fr[0]}, {fr[1].value}: "
                    f"usage {used} exceeds cohort quota {total}",
                ))
        for cap in self.caps:
            used = self.subtree_own_usage(cap.tenant, cap.flavors, cap.dimension)
            if used > cap.limit:
                found.append(QuotaViolation(
                    "over_cap", cap.tenant, None,
                    f"tenant {cap.tenant}, cap {cap.name}, {cap.dimension.value}: "
                    f"usage {used} exceeds cap {cap.limit}",
                    cap=cap,
                ))
        return found


@dataclass(frozen=True, slots=True)
class QuotaViolation:
    """One broken quota invariant.

    Attributes:
        kind: ``no_quota`` | ``over_limit`` | ``cohort_overcommit`` | ``over_cap``.
        tenant: the tenant concerned (None for the cohort).
        flavor_resource: the flavor resource concerned (None for a cap).
        message: human-readable description with the amounts.
        cap: the aggregate cap concerned (``over_cap`` only).
        flavor: the flavor concerned (``no_quota`` only).
    """

    kind: str
    tenant: str | None
    flavor_resource: FlavorResource | None
    message: str
    cap: AggregateCap | None = None
    flavor: str | None = None


def merge_charges(*parts: Mapping[FlavorResource, int]) -> dict[FlavorResource, int]:
    """Sum several charge mappings (keys normalised to :class:`Dimension`)."""
    total: dict[FlavorResource, int] = {}
    for part in parts:
        for fr, amount in part.items():
            key = (fr[0], Dimension(fr[1]))
            total[key] = total.get(key, 0) + amount
    return total
