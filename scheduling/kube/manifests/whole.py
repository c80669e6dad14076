"""``whole`` mode: plain device-plugin count resources (``nvidia.com/gpu: 2``), node pinned
by affinity; the vendor's device plugin picks the devices (no device pin is possible)."""

from __future__ import annotations

from scheduling.devices.overlay import Catalogue
from scheduling.kube.device_resources import ManifestError, whole_resource
from scheduling.kube.manifests.pod import (
    build_pod,
    check_assignment,
    containers_by_name,
    group_by_vendor,
)
from scheduling.kube.manifests.specs import JobMeta, Manifests
from scheduling.placement.types import PodAssignment

__all__ = ["build_whole"]


def build_whole(
    assignment: PodAssignment, job: JobMeta, *, catalogue: Catalogue | None = None
) -> Manifests:
    """Pod with plain device-plugin count resources (whole devices), pinned to the node.

    Each container asks for ``<count resource>: <number of granted devices>``: the grant
    model's ``whole_resource`` from the ``catalogue``, else ``WHOLE_RESOURCES``. The
    vendor's device plugin chooses which devices; only the node is pinned. Default
    scheduler.

    Raises:
        ManifestError: a grant is fractional (cores < 100, or a MIG/template partition),
            unknown vendor, or the other :func:`~scheduling.kube.manifests.build_hami` input
            errors.
    """
    check_assignment(assignment)
    per_container: dict[str, dict[str, str]] = {}
    for c in assignment.containers:
        limits: dict[str, str] = {}
        for (vendor, chip), grants in group_by_vendor(c.devices).items():
            for g in grants:
                if g.cores_percent < 100 or g.mig_profile or g.template:
                    raise ManifestError(
                        f"container {c.name!r}: device {g.uuid!r} is shared or partitioned "
                        f"(cores {g.cores_percent}%, profile {g.mig_profile or g.template!r});"
                        " whole mode needs whole devices"
                    )
            name = whole_resource(vendor, chip, grants, catalogue)
            limits[name] = str(int(limits.get(name, "0")) + len(grants))
        per_container[c.name] = limits
    pod = build_pod(assignment, job, scheduler_name=None, annotations={})
    for cname, container in containers_by_name(pod).items():
        if per_container.get(cname):
            container["resources"].setdefault("limits", {}).update(per_container[cname])
    return Manifests(pod=pod, mode="whole")
