"""Dominant resource share (DRS) of a cohort-tree node and the fair-sharing strategies.

Source: Kueue ``pkg/cache/scheduler/fair_sharing.go`` (``dominantResourceShare``,
``calculateLendable``, ``CompareDRS``, ``zeroWeightBorrows``) and
``pkg/scheduler/preemption/fairsharing/strategy.go`` (rules S2-a and S2-b of KEP-1714).

For a node ``n`` that has a parent, with optional extra usage ``w``:

* ``borrowed[dimension] = sum over flavors of max(0, w + usage(n) - subtree(n))`` (summed
  over flavors per dimension, as Kueue sums per resource name);
* ``lendable[dimension] = sum over flavors of potentialAvailable(parent(n), fr)``;
* ``ratio = borrowed * 1000 / lendable`` (dimensions with ``lendable <= 0`` are skipped); the
  unweighted share is the largest ratio (ties: dimension name), the weighted share that
  divided by the node's weight; weight 0 with any borrowing is +inf, and two such nodes
  compare by their unweighted shares.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from scheduling.admission.policy import FairSharingStrategy
from scheduling.admission.types import Dimension, FlavorResource

if TYPE_CHECKING:
    from scheduling.admission.quota import QuotaNode, QuotaTree


@dataclass(frozen=True, slots=True)
class Share:
    """A dominant resource share (Kueue ``DRS``).

    Attributes:
        weight: the node's fair-share weight.
        unweighted: the largest borrowed/lendable ratio, in per-mille.
        dominant: the dimension that gave it ("" when not borrowing).
        borrowed: the flavor resources the node borrows.
    """

    weight: float
    unweighted: Fraction
    dominant: str
    borrowed: frozenset[FlavorResource]

    @property
    def borrowing(self) -> bool:
        """The node uses more than its quota in some flavor resource."""
        return bool(self.borrowed)

    @property
    def zero_weight_borrows(self) -> bool:
        """Kueue ``zeroWeightBorrows``: weight 0 and a non-zero share (an infinite share)."""
        return self.weight == 0 and self.unweighted != 0

    @property
    def weighted(self) -> Fraction | None:
        """The weighted share; None stands for +inf."""
        if self.unweighted == 0:
            return Fraction(0)
        if self.weight == 0:
            return None
        return self.unweighted / Fraction(self.weight)

    def key(self) -> tuple[int, Fraction]:
        """A sort key with Kueue ``CompareDRS`` order (lower = preferred for admission,
        higher = preempted first)."""
        if self.zero_weight_borrows:
            return (1, self.unweighted)
        weighted = self.weighted
        return (0, weighted if weighted is not None else Fraction(0))

    def borrowing_on(self, requests: Mapping[FlavorResource, int]) -> bool:
        """Kueue ``IsBorrowingOn``: borrows on a flavor resource that ``requests`` asks for."""
        return any(requests.get(fr, 0) > 0 for fr in self.borrowed)

    def text(self) -> str:
        """The weighted share with one decimal, e.g. ``"166.7"``; ``"inf (unweighted 55.6)"``
        for a zero-weight borrower."""
        if self.zero_weight_borrows:
            return f"inf (unweighted {float(self.unweighted):.1f})"
        weighted = self.weighted
        return f"{float(weighted or 0):.1f}"


ZERO_SHARE = Share(1.0, Fraction(0), "", frozenset())


def compare(a: Share, b: Share) -> int:
    """Kueue ``CompareDRS``: -1, 0 or 1."""
    ka, kb = a.key(), b.key()
    return (ka > kb) - (ka < kb)


def dominant_share(
    tree: QuotaTree, node: QuotaNode, extra: Mapping[FlavorResource, int] | None = None
) -> Share:
    """The DRS of ``node`` (any node; the root cohort's is 0), with ``extra`` usage added to
    the node itself (see the module docstring)."""
    if node.parent is None:
        return Share(node.weight, Fraction(0), "", frozenset())
    extra = extra or {}
    borrowed: dict[str, int] = {}
    borrowed_frs = []
    for fr, quota in node.subtree.items():
        amount = extra.get(fr, 0) + node.usage.get(fr, 0) - quota
        if amount > 0:
            dim = Dimension(fr[1]).value
            borrowed[dim] = borrowed.get(dim, 0) + amount
            borrowed_frs.append(fr)
    if not borrowed:
        return Share(node.weight, Fraction(0), "", frozenset())
    lendable: dict[str, int] = {}
    for fr in tree.root.subtree:
        dim = Dimension(fr[1]).value
        lendable[dim] = lendable.get(dim, 0) + tree.potential_at(node.parent, fr)
    best, dominant = Fraction(0), ""
    for dim in sorted(borrowed):
        if lendable.get(dim, 0) <= 0:
            continue
        ratio = Fraction(borrowed[dim] * 1000, lendable[dim])
        if ratio > best:
            best, dominant = ratio, dim
    return Share(node.weight, best, dominant, frozenset(borrowed_frs))


def strategy_passes(
    strategy: FairSharingStrategy, preemptor_new: Share, target_old: Share, target_new: Share
) -> bool:
    """Kueue ``LessThanOrEqualToFinalShare`` (S2-a: preemptor's new share <= target's share
    after the removal) or ``LessThanInitialShare`` (S2-b: preemptor's new share < target's
    share before it)."""
    if strategy == FairSharingStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE:
        return compare(preemptor_new, target_new) <= 0
    return compare(preemptor_new, target_old) < 0


def strategy_unsatisfiable(preemptor_new: Share, target_old: Share) -> bool:
    """Kueue ``fsStrategyUnsatisfiable``: an infinite preemptor share can pass no strategy
    against a finite target share, so the per-candidate simulation is skipped."""
    return preemptor_new.zero_weight_borrows and not target_old.zero_weight_borrows
