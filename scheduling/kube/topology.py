"""Kueue's Topology-Aware Scheduling annotations on a pod template (issue 31), read as Kueue
spells them (kueue.sigs.k8s.io, "Run Workloads with Topology-Aware Scheduling"):

* ``kueue.x-k8s.io/podset-required-topology: <level key>``: every pod of the pod set
  inside one domain of the level, or none placed;
* ``kueue.x-k8s.io/podset-preferred-topology: <level key>``: as few domains as possible;
* ``kueue.x-k8s.io/podset-unconstrained-topology: "true"``: any nodes;
* ``kueue.x-k8s.io/podset-slice-required-topology: <level key>`` with
  ``kueue.x-k8s.io/podset-slice-size: "<pods>"``: every slice of that many pods inside one
  domain of the level;
* ``kueue.x-k8s.io/podset-group-name: <name>``: pod sets of one group placed together.

Levels are read as written; the intake resolves them against the queue's resource group's
topology (``scheduling.selectors.topology.resolve_topology_spec``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from scheduling.kube.workloads import WorkloadError

__all__ = [
    "ANNOTATION_GROUP_NAME",
    "ANNOTATION_PREFERRED",
    "ANNOTATION_REQUIRED",
    "ANNOTATION_SLICE_REQUIRED",
    "ANNOTATION_SLICE_SIZE",
    "ANNOTATION_UNCONSTRAINED",
    "TopologyAnnotations",
    "read_topology_annotations",
]

ANNOTATION_REQUIRED = "kueue.x-k8s.io/podset-required-topology"
ANNOTATION_PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
ANNOTATION_UNCONSTRAINED = "kueue.x-k8s.io/podset-unconstrained-topology"
ANNOTATION_SLICE_REQUIRED = "kueue.x-k8s.io/podset-slice-required-topology"
ANNOTATION_SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
ANNOTATION_GROUP_NAME = "kueue.x-k8s.io/podset-group-name"


class TopologyAnnotations(NamedTuple):
    """A pod template's topology request as written: ``mode`` (``required``,
    ``preferred``, ``unconstrained`` or ""), ``level``, ``slice_size`` (0 = none),
    ``slice_level``, ``group``."""

    mode: str = ""
    level: str = ""
    slice_size: int = 0
    slice_level: str = ""
    group: str = ""


def read_topology_annotations(annotations: Mapping[str, str], where: str) -> TopologyAnnotations:
    """The topology request of a pod template's ``annotations`` (``where`` names the
    template in errors).

    Raises:
        WorkloadError: two modes at once, ``podset-unconstrained-topology`` not ``true`` /
            ``false``, a slice size that is not a positive integer, or one of the two slice
            annotations without the other (Kueue refuses the same).
    """
    modes = [
        (mode, annotations[key].strip())
        for mode, key in (("required", ANNOTATION_REQUIRED), ("preferred", ANNOTATION_PREFERRED))
        if key in annotations
    ]
    unconstrained = annotations.get(ANNOTATION_UNCONSTRAINED, "").strip().lower()
    if unconstrained not in ("", "true", "false"):
        raise WorkloadError(f"{where}: {ANNOTATION_UNCONSTRAINED} must be true or false")
    if unconstrained == "true":
        modes.append(("unconstrained", ""))
    if len(modes) > 1:
        raise WorkloadError(
            f"{where}: give one of {ANNOTATION_REQUIRED}, {ANNOTATION_PREFERRED}, "
            f"{ANNOTATION_UNCONSTRAINED} (not {' and '.join(m for m, _ in modes)})"
        )
    slice_level = annotations.get(ANNOTATION_SLICE_REQUIRED, "").strip()
    size_text = annotations.get(ANNOTATION_SLICE_SIZE, "").strip()
    if bool(slice_level) != bool(size_text):
        raise WorkloadError(
            f"{where}: {ANNOTATION_SLICE_REQUIRED} and {ANNOTATION_SLICE_SIZE} go together"
        )
    slice_size = 0
    if size_text:
        if not size_text.isdigit() or int(size_text) < 1:
            raise WorkloadError(f"{where}: {ANNOTATION_SLICE_SIZE} must be a positive integer")
        slice_size = int(size_text)
    mode, level = modes[0] if modes else ("", "")
    return TopologyAnnotations(
        mode=mode,
        level=level,
        slice_size=slice_size,
        slice_level=slice_level,
        group=annotations.get(ANNOTATION_GROUP_NAME, "").strip()[:63],
    )
