"""A job's or pod set's topology request (Kueue Topology-Aware Scheduling), stored as columns.

The request names levels by their full node-label key (resolved against the group's topology
at submission: :func:`scheduling.placement.topology_names.resolve_level`). Modes (Kueue's pod
template annotations ``kueue.x-k8s.io/podset-required-topology``, ``podset-preferred-topology``,
``podset-unconstrained-topology``): ``required`` (every pod inside one domain of
``topology_level`` or none placed), ``preferred`` (as few domains as possible from that level
up), ``unconstrained`` (any nodes, ranks in domain order), "" (no mode). Slices
(``podset-slice-required-topology`` + ``podset-slice-size``): every ``topology_slice_size``
consecutive pods inside one domain of ``topology_slice_level``; a slice may come with or
without a mode.
"""

from django.db import models

from scheduling.placement.types import TopologyRequest


class TopologyMode(models.TextChoices):
    """How a topology request constrains its pods (Kueue TAS annotation names)."""

    NONE = "", "none"
    REQUIRED = "required", "required"
    PREFERRED = "preferred", "preferred"
    UNCONSTRAINED = "unconstrained", "unconstrained"


LABEL_KEY_MAX = 316
"""A label key: a DNS subdomain prefix (253), ``/``, a name (63)."""


class TopologyRequestFields(models.Model):
    """The topology request columns of :class:`~scheduling.models.Job` and
    :class:`~scheduling.models.JobPodSet` (see the module docstring)."""

    topology_mode = models.CharField(
        max_length=16, choices=TopologyMode.choices, blank=True, default=TopologyMode.NONE
    )
    topology_level = models.CharField(
        max_length=LABEL_KEY_MAX,
        blank=True,
        help_text="Level key of a required / preferred request (a key of the topology).",
    )
    topology_slice_size = models.PositiveIntegerField(
        default=0, help_text="Pods per slice (0 = no slices)."
    )
    topology_slice_level = models.CharField(
        max_length=LABEL_KEY_MAX, blank=True, help_text="Level key each slice stays inside."
    )

    class Meta:
        abstract = True

    @property
    def topology_summary(self) -> str:
        """:func:`topology_text` of the row (pages)."""
        return topology_text(self)


def has_topology_request(row) -> bool:
    """Whether ``row`` (a Job, a JobPodSet, or anything with the ``topology_*`` attributes)
    asks anything of the topology."""
    return bool(getattr(row, "topology_mode", "") or getattr(row, "topology_slice_size", 0))


def topology_request_of(row, levels: tuple[str, ...], group: str = "") -> TopologyRequest:
    """The core's :class:`TopologyRequest` of ``row``'s ``topology_*`` columns under a
    topology of ``levels`` (``group``: its pod set group, Kueue ``podset-group-name``)."""
    mode = row.topology_mode
    return TopologyRequest(
        levels=levels,
        required=row.topology_level if mode == TopologyMode.REQUIRED else "",
        preferred=row.topology_level if mode == TopologyMode.PREFERRED else "",
        unconstrained=mode == TopologyMode.UNCONSTRAINED,
        slice_size=row.topology_slice_size,
        slice_level=row.topology_slice_level if row.topology_slice_size else "",
        group=group,
    )


def topology_text(row) -> str:
    """One line for pages: ``required <key>``, ``slices of 4 in <key>``; "" when none."""
    parts = []
    if row.topology_mode == TopologyMode.UNCONSTRAINED:
        parts.append("unconstrained")
    elif row.topology_mode:
        parts.append(f"{row.topology_mode} {row.topology_level}")
    if row.topology_slice_size:
        parts.append(f"slices of {row.topology_slice_size} in {row.topology_slice_level}")
    return "; ".join(parts)
