"""A node of the cohort tree: the state :class:`~scheduling.admission.quota.QuotaTree` keeps
per tenant (and for the root cohort), read by its arithmetic (:mod:`~scheduling.admission
.quota`) and by its fit checks (:mod:`~scheduling.admission.quota_fit`)."""

from __future__ import annotations

from scheduling.admission.types import FlavorResource

__all__ = ["QuotaNode"]


class QuotaNode:
    """One node of the cohort tree (a tenant, or the root cohort with ``name`` None).

    Attributes (per flavor resource): ``row`` (the tenant's quota row nominal),
    ``nominal`` (own nominal after the carve-out), ``borrowing_limit``, ``lending_limit``,
    ``subtree``, ``own`` (own workloads' usage), ``usage`` (Kueue usage); plus ``weight``
    (fair-share weight), ``history`` (decayed past usage), ``explicit`` (resources with an own
    row), ``managed`` (resources with a row on the node or an ancestor) and ``flavors``
    (flavors managed on the path).
    """

    __slots__ = (
        "name",
        "parent",
        "children",
        "row",
        "nominal",
        "borrowing_limit",
        "lending_limit",
        "subtree",
        "own",
        "usage",
        "weight",
        "history",
        "explicit",
        "managed",
        "flavors",
    )

    def __init__(
        self, name: str | None, parent: QuotaNode | None, weight: float, history: float = 0.0
    ) -> None:
        self.name = name
        self.parent = parent
        self.children: list[QuotaNode] = []
        self.row: dict[FlavorResource, int] = {}
        self.nominal: dict[FlavorResource, int] = {}
        self.borrowing_limit: dict[FlavorResource, int | None] = {}
        self.lending_limit: dict[FlavorResource, int | None] = {}
        self.subtree: dict[FlavorResource, int] = {}
        self.own: dict[FlavorResource, int] = {}
        self.usage: dict[FlavorResource, int] = {}
        self.weight = weight
        self.history = history
        self.explicit: set[FlavorResource] = set()
        self.managed: set[FlavorResource] = set()
        self.flavors: set[str] = set()

    @property
    def label(self) -> str:
        """``"tenant NAME"`` or ``"cohort"`` for the root (used in reasons)."""
        return f"tenant {self.name}" if self.name is not None else "cohort"

    def path_to_root(self) -> list[QuotaNode]:
        """The ancestors, parent first, ending with the root cohort (Kueue
        ``PathParentToRoot``)."""
        out = []
        node = self.parent
        while node is not None:
            out.append(node)
            node = node.parent
        return out
