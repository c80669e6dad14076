"""Quota arithmetic of one resource group's cohort tree (Kueue semantics).

Source: Kueue ``pkg/cache/scheduler/resource_node.go`` (subtree quota, local quota,
``available``, ``potentialAvailable``, ``addUsage``/``removeUsage``,
``QuantitiesFitInQuota``, ``IsWithinNominalInResources``) and
``pkg/scheduler/preemption/classical/hierarchical_preemption.go`` (``getNodeHeight``,
``FindHeightOfLowestSubtreeThatFits``).

The tree: the cohort (one per resource group) is the root; top-level tenants hang below it
and nested tenants below their parents. A tenant with children is a Kueue Cohort; a tenant's
own jobs behave like a ClusterQueue located at its node. Per flavor resource
``fr = (flavor, dimension)``:

* ``nominal(n)``: a row's nominal quota is the quota of the tenant's whole subtree: its
  children's rows are carved out of it (a tenant admin splits what the parent has, Run:ai
  department/project). In Kueue's additive terms the node's own nominal is
  ``max(0, row - sum of the direct children's rows)``.
* ``subtree(n)`` = own nominal + sum over children of ``subtree(c) - local(c)``.
* ``local(n)`` = ``max(0, subtree(n) - lending_limit)`` when a lending limit is set, else 0
  (Kueue ``localQuota``). It is never lent upward.
* ``usage(n)`` = own workloads' usage + sum over children of ``max(0, usage(c) - local(c))``
  (usage beyond the local part bubbles up), maintained incrementally as Kueue does.
* ``available(n)`` = ``max(0, local(n) - usage(n))`` + what the parent can supply, the latter
  capped by ``subtree(n) - local(n) - max(0, usage(n) - local(n)) + borrowing_limit`` when a
  borrowing limit is set; at the root it is ``subtree - usage``.

Which quota applies (documented rule, avoiding Volcano's "deserved must list every
dimension" trap, volcano#4658):

* A tenant may be admitted on a flavor only when it or an ancestor has at least one quota row
  for that flavor; otherwise the job is rejected with "no quota for this flavor".
* A flavor resource is *managed* for a tenant when it or an ancestor has a row for exactly
  that ``(flavor, dimension)``. A dimension the tenant's path does not manage on a flavor it
  does manage is not limited and its usage is not counted (only ``devices`` rows means memory
  and cores are free), except while the cohort's usage of that resource exceeds the cohort's
  quota (a row shrunk or deleted below the running usage): then a job needing it waits until
  the usage is back within the quota (``FitChecks._check_overcommitted``). A tenant whose path
  does limit it is held back by ``available`` (negative at the root) in the same state.
* Usage on a flavor the tenant's path has no row for at all (its row was deleted, or the
  tenant moved) still counts in the cohort against a nominal of 0: it is borrowing and can be
  reclaimed (Kueue ``updateWorkloadUsage`` counts every flavor resource of a workload).
* A tenant without its own row for a resource managed through an ancestor is a pass-through
  node (nominal 0, no limits): it draws on the ancestor's pool (Kueue cohort-owned quota).
* In an ``exclusive`` group every row's lending and borrowing limit is 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from scheduling.admission.quota_fit import FitChecks, fr_sort_key, merge_charges
from scheduling.admission.quota_node import QuotaNode
from scheduling.admission.types import (
    AdmissionInputError,
    AggregateCapSpec,
    Charges,
    Dimension,
    FlavorResource,
    GroupKind,
    GroupSpec,
    QuotaSpec,
    TenantSpec,
)

__all__ = ["QuotaNode", "QuotaTree", "fr_sort_key", "merge_charges"]


class QuotaTree(FitChecks):
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
        group: GroupSpec,
        tenants: Iterable[TenantSpec],
        quotas: Iterable[QuotaSpec],
        caps: Iterable[AggregateCapSpec] = (),
    ) -> None:
        self.group = group
        self.caps = tuple(caps)
        self.root = QuotaNode(None, None, 1.0)
        self._nodes: dict[str, QuotaNode] = {}
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
            node.flavors = {fr[0] for fr in node.managed}
        self._carve_out()
        self._compute_subtree()
        for node in self._post_order:
            node.usage = dict.fromkeys(self.managed, 0)

    # -- construction -------------------------------------------------------------------

    def _build_tree(self, tenants: tuple[TenantSpec, ...]) -> None:
        for tenant in tenants:
            if tenant.name in self._nodes:
                raise AdmissionInputError(f"duplicate tenant {tenant.name!r}")
            if tenant.fair_share_weight < 0:
                raise AdmissionInputError(f"tenant {tenant.name!r}: fair_share_weight must be >= 0")
            self._nodes[tenant.name] = QuotaNode(
                tenant.name, None, tenant.fair_share_weight, tenant.history_usage
            )
        for tenant in tenants:
            node = self._nodes[tenant.name]
            if tenant.parent is None:
                node.parent = self.root
            elif tenant.parent in self._nodes:
                node.parent = self._nodes[tenant.parent]
            else:
                raise AdmissionInputError(
                    f"tenant {tenant.name!r}: unknown parent {tenant.parent!r}"
                )
            node.parent.children.append(node)
        for tenant in tenants:  # cycle check: every chain must reach the root
            seen: set[str] = set()
            walk: QuotaNode | None = self._nodes[tenant.name]
            while walk is not None and walk.name is not None:
                if walk.name in seen:
                    raise AdmissionInputError(f"tenant tree has a cycle through {walk.name!r}")
                seen.add(walk.name)
                walk = walk.parent

    def _load_quotas(self, quotas: tuple[QuotaSpec, ...]) -> None:
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
            node.row[(q.flavor, dim)] = q.nominal
            node.explicit.add((q.flavor, dim))
            node.borrowing_limit[(q.flavor, dim)] = 0 if exclusive else q.borrowing_limit
            node.lending_limit[(q.flavor, dim)] = 0 if exclusive else q.lending_limit
        for node in self._nodes.values():
            for fr in self.managed:
                if fr in node.row:
                    continue
                node.row[fr] = 0  # pass-through (Kueue cohort without quota)
                node.borrowing_limit[fr], node.lending_limit[fr] = None, None

    def _carve_out(self) -> None:
        """Own nominal = row - sum of the direct children's rows (floored at 0) for a node
        with an own row; a pass-through node keeps 0."""
        for node in self._nodes.values():
            for fr in self.managed:
                if fr not in node.explicit:
                    node.nominal[fr] = 0
                    continue
                carved = sum(c.row[fr] for c in node.children if fr in c.explicit)
                node.nominal[fr] = max(0, node.row[fr] - carved)

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

    def _compute_post_order(self) -> list[QuotaNode]:
        order: list[QuotaNode] = []

        def visit(node: QuotaNode) -> None:
            node.children.sort(key=lambda c: c.name or "")
            for child in node.children:
                visit(child)
            order.append(node)

        visit(self.root)
        return order

    def _compute_subtree(self) -> None:
        for node in self._post_order:
            for fr in self.managed:
                total = node.nominal.get(fr, 0)
                for child in node.children:
                    total += child.subtree[fr] - self.local_quota(child, fr)
                node.subtree[fr] = total

    # -- nodes and names ------------------------------------------------------------------

    def node(self, tenant: str) -> QuotaNode:
        """The node of ``tenant``.

        Raises:
            AdmissionInputError: unknown tenant.
        """
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
        node = self.node(tenant)
        return [tenant] + [n.name for n in node.path_to_root() if n.name is not None]

    def descendants(self, tenant: str) -> list[str]:
        """``tenant`` and every tenant below it."""
        out: list[str] = []
        stack = [self.node(tenant)]
        while stack:
            node = stack.pop()
            if node.name is not None:
                out.append(node.name)
            stack.extend(node.children)
        return out

    # -- Kueue node arithmetic --------------------------------------------------------------

    @staticmethod
    def local_quota(node: QuotaNode, fr: FlavorResource) -> int:
        """Kueue ``localQuota``: ``max(0, subtree - lending_limit)``; 0 without a lending
        limit and at the root."""
        lending = node.lending_limit.get(fr) if node.parent is not None else None
        if lending is None:
            return 0
        return max(0, node.subtree.get(fr, 0) - lending)

    def local_available(self, node: QuotaNode, fr: FlavorResource) -> int:
        """Kueue ``LocalAvailable``: local quota not used yet, never visible to the parent."""
        return max(0, self.local_quota(node, fr) - node.usage.get(fr, 0))

    @staticmethod
    def borrowing_with(node: QuotaNode, fr: FlavorResource, amount: int) -> bool:
        """Kueue ``BorrowingWith``: ``subtree < usage + amount``."""
        return node.subtree.get(fr, 0) < node.usage.get(fr, 0) + amount

    @staticmethod
    def within_nominal_in(node: QuotaNode, frs: Iterable[FlavorResource]) -> bool:
        """Kueue ``IsWithinNominalInResources``: ``usage <= subtree`` for every ``fr``."""
        return all(node.usage.get(fr, 0) <= node.subtree.get(fr, 0) for fr in frs)

    def fits_in_quota(
        self, node: QuotaNode, requests: Mapping[FlavorResource, int]
    ) -> tuple[bool, dict[FlavorResource, int]]:
        """Kueue ``QuantitiesFitInQuota``: do ``requests`` fit the node's subtree quota, and
        what remains after its local available quota (for the same test on the parent)."""
        fits = True
        remaining = {}
        for fr, amount in requests.items():
            if node.subtree.get(fr, 0) < node.usage.get(fr, 0) + amount:
                fits = False
            remaining[fr] = max(0, amount - self.local_available(node, fr))
        return fits, remaining

    def height(self, node: QuotaNode) -> int:
        """Kueue ``getNodeHeight``: distance to the furthest leaf below a cohort node (1 for
        a cohort whose children are all leaves)."""
        best = min(len(node.children), 1)
        for child in node.children:
            if child.children:
                best = max(best, self.height(child) + 1)
        return best

    def lowest_fitting_height(
        self, node: QuotaNode, fr: FlavorResource, amount: int
    ) -> tuple[int, bool]:
        """Kueue ``FindHeightOfLowestSubtreeThatFits``: the height of the lowest subtree on
        the node's path that can hold ``amount`` more of ``fr`` (0 = the node's own quota),
        and whether that subtree is smaller than the whole cohort (``mayReclaimInHierarchy``).
        """
        if not self.borrowing_with(node, fr, amount) or node.parent is None:
            return 0, node.parent is not None
        remaining = amount - self.local_available(node, fr)
        for ancestor in node.path_to_root():
            if not self.borrowing_with(ancestor, fr, remaining):
                return self.height(ancestor), ancestor.parent is not None
            remaining -= self.local_available(ancestor, fr)
        return self.height(self.root), False

    def _available(self, node: QuotaNode, fr: FlavorResource) -> tuple[int, str]:
        if node.parent is None:
            return node.subtree.get(fr, 0) - node.usage.get(fr, 0), f"cohort {self.group.name}"
        local = self.local_quota(node, fr)
        used = node.usage.get(fr, 0)
        parent_amount, bound = self._available(node.parent, fr)
        limit = node.borrowing_limit.get(fr)
        if limit is not None:
            stored_in_parent = node.subtree.get(fr, 0) - local
            used_in_parent = max(0, used - local)
            capped = stored_in_parent - used_in_parent + limit
            if capped <= parent_amount:
                parent_amount, bound = capped, self._limit_label(node)
        return max(0, local - used) + parent_amount, bound

    def _limit_label(self, node: QuotaNode) -> str:
        if self.group.kind == GroupKind.EXCLUSIVE:
            return f"exclusive group {self.group.name}, no borrowing"
        return f"borrowing limit of tenant {node.name}"

    def _potential(self, node: QuotaNode, fr: FlavorResource) -> tuple[int, str]:
        if node.parent is None:
            return node.subtree.get(fr, 0), f"cohort {self.group.name}"
        parent_amount, bound = self._potential(node.parent, fr)
        amount = self.local_quota(node, fr) + parent_amount
        limit = node.borrowing_limit.get(fr)
        if limit is not None and node.subtree.get(fr, 0) + limit <= amount:
            amount, bound = node.subtree.get(fr, 0) + limit, self._limit_label(node)
        return amount, bound

    def potential_at(self, node: QuotaNode, fr: FlavorResource) -> int:
        """Kueue ``potentialAvailable`` of any node (the root included)."""
        return self._potential(node, fr)[0]

    # -- tenant-level accessors --------------------------------------------------------------

    def available(self, tenant: str, fr: FlavorResource) -> tuple[int, str]:
        """Capacity ``tenant`` can still use for ``fr``, and the level that bounds it.

        Returns:
            ``(amount, bound)``: ``amount`` in the dimension's unit (may be negative when
            the cohort is overcommitted); ``bound`` names the level that limited what could
            be borrowed, e.g. ``"borrowing limit of tenant team-a"`` or
            ``"cohort a100-shared"``.
        """
        return self._available(self.node(tenant), fr)

    def potential(self, tenant: str, fr: FlavorResource) -> tuple[int, str]:
        """Most ``tenant`` could ever use of ``fr`` with an empty cohort (Kueue
        ``potentialAvailable``), and the level that bounds it (as in :meth:`available`)."""
        return self._potential(self.node(tenant), fr)

    def nominal(self, tenant: str, fr: FlavorResource) -> int:
        """The tenant's subtree quota for ``fr`` (its row, or own nominal + what its children
        lend up)."""
        return self.node(tenant).subtree.get(fr, 0)

    def usage(self, tenant: str, fr: FlavorResource) -> int:
        """Kueue usage of the tenant node: own usage + usage bubbled up from children."""
        return self.node(tenant).usage.get(fr, 0)

    def own_usage(self, tenant: str) -> dict[FlavorResource, int]:
        """Usage of the tenant's own workloads (not its children's), non-zero entries."""
        return {fr: v for fr, v in self.node(tenant).own.items() if v}

    def managed_for(self, tenant: str) -> frozenset[FlavorResource]:
        """Flavor resources whose quota applies to ``tenant`` (rows on it or an ancestor)."""
        return frozenset(self.node(tenant).managed)

    def flavors_for(self, tenant: str) -> frozenset[str]:
        """Flavors ``tenant`` may use (some row on it or an ancestor)."""
        return frozenset(self.node(tenant).flavors)

    def borrowing_limit(self, tenant: str, fr: FlavorResource) -> int | None:
        """Effective borrowing limit (None = unlimited)."""
        return self.node(tenant).borrowing_limit.get(fr)

    def counted(self, node: QuotaNode, fr: FlavorResource) -> bool:
        """Whether the node's own usage of ``fr`` counts in the cohort (module docstring)."""
        return fr in self.managed and (fr in node.managed or fr[0] not in node.flavors)

    # -- usage changes ----------------------------------------------------------------------

    def add(self, tenant: str, charges: Charges) -> None:
        """Book ``charges`` on ``tenant`` (own usage) and bubble the usage up (Kueue
        ``addUsage``/``removeUsage``; a negative amount releases)."""
        node = self.node(tenant)
        for fr, amount in charges.items():
            key = (fr[0], Dimension(fr[1]))
            node.own[key] = node.own.get(key, 0) + amount
            if amount and self.counted(node, key):
                if amount > 0:
                    self._add_usage(node, key, amount)
                else:
                    self._remove_usage(node, key, -amount)

    def remove(self, tenant: str, charges: Charges) -> None:
        """Release ``charges`` from ``tenant``; the inverse of :meth:`add`."""
        self.add(tenant, {fr: -amount for fr, amount in charges.items()})

    def _add_usage(self, node: QuotaNode, fr: FlavorResource, amount: int) -> None:
        local_available = self.local_available(node, fr)
        node.usage[fr] = node.usage.get(fr, 0) + amount
        if node.parent is not None and amount > local_available:
            self._add_usage(node.parent, fr, amount - local_available)

    def _remove_usage(self, node: QuotaNode, fr: FlavorResource, amount: int) -> None:
        stored_in_parent = node.usage.get(fr, 0) - self.local_quota(node, fr)
        node.usage[fr] = node.usage.get(fr, 0) - amount
        if stored_in_parent <= 0 or node.parent is None:
            return
        self._remove_usage(node.parent, fr, min(amount, stored_in_parent))

    # -- nominal ------------------------------------------------------------------------------

    def quota_to_reserve(
        self, tenant: str, requests: Mapping[FlavorResource, int]
    ) -> dict[FlavorResource, int]:
        """What a job of ``tenant`` that needs preemption but found no candidates holds for
        the rest of the cycle (Kueue ``quotaResourcesToReserve`` in Preempt mode, used by
        ``reserveCapacityForUnreclaimablePreempt``).

        Args:
            tenant: the job's tenant.
            requests: its quota-counted charges, positive amounts.

        Returns:
            Per flavor resource, the amount to book (zeros left out): when the job would
            borrow (borrowing height > 0), ``min(request, nominal + borrowing_limit -
            usage)``, or the whole request without a borrowing limit; otherwise its free
            nominal ``max(0, min(request, nominal - usage))``. Nominal is the tenant's subtree
            quota, usage its Kueue usage.
        """
        node = self.node(tenant)
        borrowing = self.borrowing_height(tenant, requests) > 0
        out = {}
        for fr, amount in sorted(requests.items(), key=lambda item: fr_sort_key(item[0])):
            room = node.subtree.get(fr, 0) - node.usage.get(fr, 0)
            if borrowing:
                limit = node.borrowing_limit.get(fr)
                amount = amount if limit is None else min(amount, room + limit)
            else:
                amount = min(amount, room)
            if amount > 0:
                out[fr] = amount
        return out

    def within_nominal(self, tenant: str, charges: Charges) -> bool:
        """True when ``tenant`` stays within its nominal quota after adding ``charges``
        (Kueue ``not BorrowingWith`` for every counted flavor resource)."""
        node = self.node(tenant)
        for fr, amount in charges.items():
            key = (fr[0], Dimension(fr[1]))
            if amount > 0 and self.counted(node, key) and self.borrowing_with(node, key, amount):
                return False
        return True

    def borrowing_resources(self, tenant: str) -> list[FlavorResource]:
        """Flavor resources where ``tenant`` uses more than its nominal quota."""
        node = self.node(tenant)
        return sorted(
            (fr for fr in self.managed if self.borrowing_with(node, fr, 0)), key=fr_sort_key
        )

    def borrowing_height(self, tenant: str, charges: Charges) -> int:
        """Max over ``charges`` of :meth:`lowest_fitting_height` (Kueue
        ``Assignment.Borrowing``): 0 = fits the tenant's own quota."""
        node = self.node(tenant)
        height = 0
        for fr, amount in merge_charges(charges).items():
            if amount > 0 and self.counted(node, fr):
                height = max(height, self.lowest_fitting_height(node, fr, amount)[0])
        return height
