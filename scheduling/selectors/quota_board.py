"""Quota board: per resource group and tenant, nominal / used / borrowed / lent per dimension.

Used is the stored ``QuotaUsage`` the admission cycle charges in its commits (the usage
reconcile, :func:`scheduling.services.usage.recomputed_usage`, keeps it equal to the live
placements), for every group in one query. Borrowed and lent follow Kueue's cohort model:
``borrowed = max(0, used - nominal)``; a tenant's *lendable* capacity is its unused nominal,
capped by its ``lending_limit``; the cohort's total borrowed amount is attributed to the
lenders in proportion to what each can lend (rounded down). Kueue itself does not attribute
borrowing to lenders; the proportional rule is this page's display convention. An exclusive
group neither lends nor borrows.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from tenants.choices import GroupKind
from tenants.models import ANY_FLAVOR, Quota, QuotaUsage, ResourceGroup

UNIT_SCALE = {"devices": (1000, "devices"), "memory_mib": (1024, "GiB"), "cores_percent": (1, "%")}
"""Display scale of each dimension: (divisor, unit label) -- milli-devices → devices, MiB →
GiB, cores in percent of one device (600 % = six devices' worth of cores)."""
DIMENSION_LABELS = {
    "devices": "devices",
    "memory_mib": "device memory",
    "cores_percent": "device cores",
}


@dataclass
class QuotaBar:
    """One quota row with its usage, in the dimension's unit (milli-devices, MiB, percent)."""

    tenant_id: int
    tenant: str
    flavor: str
    dimension: str
    nominal: int
    used: int
    borrowing_limit: int | None
    lending_limit: int | None
    lent: int = 0
    quota_id: int = 0

    @property
    def borrowed(self) -> int:
        return max(0, self.used - self.nominal)

    @property
    def lendable(self) -> int:
        unused = max(0, self.nominal - self.used)
        return unused if self.lending_limit is None else min(unused, self.lending_limit)

    @property
    def scale_max(self) -> int:
        """Right end of the bar: nominal + borrowing limit, or the larger of nominal / used."""
        top = max(self.nominal, self.used, 1)
        if self.borrowing_limit is not None:
            top = max(top, self.nominal + self.borrowing_limit)
        return top

    def _pct(self, amount: int) -> float:
        return round(100.0 * amount / self.scale_max, 2)

    @property
    def segments(self) -> dict[str, float]:
        """Bar widths in percent of :attr:`scale_max`: ``own`` (used within nominal),
        ``lent`` (unused nominal others use), ``free`` (unused nominal, not lent),
        ``borrowed`` (beyond nominal), ``nominal`` (marker position)."""
        own = min(self.used, self.nominal)
        free = max(0, self.nominal - own - self.lent)
        return {
            "own": self._pct(own),
            "lent": self._pct(self.lent),
            "free": self._pct(free),
            "borrowed": self._pct(self.borrowed),
            "nominal": self._pct(self.nominal),
        }

    @property
    def dimension_label(self) -> str:
        return DIMENSION_LABELS.get(self.dimension, self.dimension)

    @property
    def used_pct_of_nominal(self) -> float:
        return 100.0 * self.used / self.nominal if self.nominal else 0.0

    def display(self, amount: int | None) -> str:
        """``amount`` in display units with the unit, e.g. ``"1.5 devices"``."""
        if amount is None:
            return "unlimited"
        div, unit = UNIT_SCALE.get(self.dimension, (1, ""))
        value = amount / div
        text = f"{value:.0f}" if value == int(value) else f"{value:.2f}".rstrip("0")
        return f"{text} {unit}".strip()


@dataclass
class GroupBoard:
    """A resource group's quota rows (visible tenants only)."""

    group: ResourceGroup
    rows: list[QuotaBar] = field(default_factory=list)
    cohort_tenants: int = 0


def _usage_by_group() -> dict[int, dict[int, dict[tuple[str, str], int]]]:
    """``{group id: {tenant id: {(flavor, dimension): amount}}}`` from the stored
    ``QuotaUsage`` rows the admission cycle charges (one query over a table of one row per
    tenant, group, flavor and dimension, whatever the number of running jobs)."""
    usage: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(int)))
    for gid, tid, flavor, dimension, amount in QuotaUsage.objects.filter(amount__gt=0).values_list(
        "resource_group_id", "tenant_id", "flavor", "dimension", "amount"
    ):
        usage[gid][tid][(flavor, dimension)] += amount
    return usage


def _used_for(
    charges: dict[tuple[str, str], int], flavor: str, dimension: str, specific: set[str]
) -> int:
    """Usage counted against one quota row: its flavor, or for ``"*"`` every flavor that has
    no specific row of the tenant (the admission core's rule)."""
    if flavor != ANY_FLAVOR:
        return charges.get((flavor, dimension), 0)
    return sum(a for (f, d), a in charges.items() if d == dimension and f not in specific)


def quota_board(tenant_ids: set[int] | None) -> list[GroupBoard]:
    """Quota rows of every resource group; only the given tenants' rows (None = all).

    Lending is computed over the whole cohort, so a member sees how much of their tenant's
    quota is lent without seeing who borrows it. Three queries.
    """
    usage = _usage_by_group()
    by_group: dict[int, list[QuotaBar]] = defaultdict(list)
    quotas = list(
        Quota.objects.select_related("tenant").order_by(
            "resource_group_id", "tenant__name", "flavor", "dimension"
        )
    )
    specific: dict[tuple[int, int], set[str]] = defaultdict(set)
    for q in quotas:
        if q.flavor != ANY_FLAVOR:
            specific[(q.resource_group_id, q.tenant_id)].add(q.flavor)
    for q in quotas:
        charges = usage.get(q.resource_group_id, {}).get(q.tenant_id, {})
        used = _used_for(
            charges, q.flavor, q.dimension, specific[(q.resource_group_id, q.tenant_id)]
        )
        by_group[q.resource_group_id].append(
            QuotaBar(
                q.tenant_id,
                q.tenant.name,
                q.flavor,
                q.dimension,
                q.nominal,
                used,
                q.borrowing_limit,
                q.lending_limit,
                quota_id=q.pk,
            )
        )
    boards = []
    for group in ResourceGroup.objects.order_by("name"):
        rows = by_group.get(group.pk, [])
        if group.kind != GroupKind.EXCLUSIVE:
            _attribute_lending(rows)
        visible = [r for r in rows if tenant_ids is None or r.tenant_id in tenant_ids]
        if tenant_ids is not None and not visible:
            continue
        boards.append(GroupBoard(group, visible, len({r.tenant_id for r in rows})))
    return boards


@dataclass
class SplitRow:
    """One flavor and dimension of a parent's quota in a group: the parent's row and its
    children's rows (each with usage), what the children hold together and what is left."""

    parent: QuotaBar
    children: list[QuotaBar]

    @property
    def given(self) -> int:
        return sum(c.nominal for c in self.children)

    @property
    def left(self) -> int:
        """The parent's own part: its row minus its children's (its own jobs' nominal)."""
        return max(0, self.parent.nominal - self.given)

    @property
    def subtree_used(self) -> int:
        """What the parent's own jobs and its children's use together (against the row)."""
        return self.parent.used + sum(c.used for c in self.children)

    @property
    def display_subtree_used(self) -> str:
        return self.parent.display(self.subtree_used)

    @property
    def display_given(self) -> str:
        return self.parent.display(self.given)

    @property
    def display_left(self) -> str:
        return self.parent.display(self.left)


@dataclass
class SplitBoard:
    """A resource group's split rows of one parent tenant."""

    group: ResourceGroup
    rows: list[SplitRow] = field(default_factory=list)


def quota_split(parent_id: int, child_ids: list[int]) -> list[SplitBoard]:
    """The split view of a parent tenant's quota: per resource group, flavor and dimension
    where the parent has a row, that row and its children's rows (Kueue nominal quota,
    borrowing limit, lending limit, with usage and lending as :func:`quota_board` computes
    them over the whole cohort). A child without a row for it is left out. Three queries."""
    boards = quota_board({parent_id, *child_ids})
    order = {pk: i for i, pk in enumerate(child_ids)}
    out = []
    for board in boards:
        split = SplitBoard(board.group)
        for bar in (r for r in board.rows if r.tenant_id == parent_id):
            children = [
                r
                for r in board.rows
                if r.tenant_id in order and (r.flavor, r.dimension) == (bar.flavor, bar.dimension)
            ]
            children.sort(key=lambda r: order[r.tenant_id])
            split.rows.append(SplitRow(bar, children))
        if split.rows:
            out.append(split)
    return out


def _attribute_lending(rows: list[QuotaBar]) -> None:
    """Set ``lent`` on each row: the cohort's borrowed amount per (flavor, dimension), split
    over the lenders in proportion to their lendable amount (floor)."""
    keys = {(r.flavor, r.dimension) for r in rows}
    for key in keys:
        same = [r for r in rows if (r.flavor, r.dimension) == key]
        borrowed = sum(r.borrowed for r in same)
        lendable = sum(r.lendable for r in same)
        if not borrowed or not lendable:
            continue
        take = min(borrowed, lendable)
        for r in same:
            r.lent = take * r.lendable // lendable


def _display_property(attr: str):
    return property(lambda self: self.display(getattr(self, attr)))


for _attr in ("nominal", "used", "borrowed", "lent", "borrowing_limit", "lending_limit"):
    setattr(QuotaBar, f"display_{_attr}", _display_property(_attr))
