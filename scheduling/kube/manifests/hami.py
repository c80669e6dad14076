"""``hami`` mode, "pin, let HAMi bind" (shared/docs/hami.md §8): the Pod asks for HAMi's
per-container resources and pins the granted devices by annotation."""

from __future__ import annotations

from scheduling.devices.overlay import Catalogue
from scheduling.kube.device_resources import hami_container_resources, model_resources
from scheduling.kube.manifests.pod import (
    build_pod,
    check_assignment,
    containers_by_name,
    group_by_vendor,
)
from scheduling.kube.manifests.specs import JobMeta, Manifests
from scheduling.placement.types import PodAssignment

__all__ = ["HAMI_SCHEDULER_NAME", "build_hami"]

HAMI_SCHEDULER_NAME = "hami-scheduler"
"""HAMi's kube-scheduler profile name (helm default, ``charts/hami/values.yaml``)."""


def build_hami(
    assignment: PodAssignment,
    job: JobMeta,
    *,
    scheduler_name: str = HAMI_SCHEDULER_NAME,
    catalogue: Catalogue | None = None,
) -> Manifests:
    """Pod for HAMi ("pin, let HAMi bind", shared/docs/hami.md §8).

    Each container asks, per vendor, for ``<count>`` = number of granted devices,
    ``<memory>`` = granted MiB per device (in the vendor's unit, rounded up) and ``<cores>`` =
    granted percent (in the vendor's unit); the pod carries each vendor's use-uuid
    annotation with the granted uuids in grant order, comma separated (§3.1), required node
    affinity to ``assignment.node`` and ``schedulerName = scheduler_name``. With a
    ``catalogue`` the names, the memory unit and the use-uuid key are the grant model's
    (:func:`~scheduling.kube.device_resources.model_resources`; an MLU590 at unit 0 = 798 MiB
    asks 6 ``vmemory`` units for 4788 MiB), else HAMi's defaults (``HAMI_RESOURCES``).

    Raises:
        ManifestError: unknown vendor, missing image, MIG on non-NVIDIA, multi-device vNPU
            template, duplicate container names, no app container.
    """
    check_assignment(assignment)
    annotations: dict[str, str] = {}
    per_container: dict[str, dict[str, str]] = {}
    pins: dict[str, list[str]] = {}
    for c in assignment.containers:
        limits: dict[str, str] = {}
        for (vendor, chip), grants in group_by_vendor(c.devices).items():
            res = model_resources(vendor, chip, grants, catalogue)
            limits.update(hami_container_resources(vendor, chip, grants, annotations, res))
            key = res.use_uuid.format(chip=chip)
            for g in grants:
                if g.uuid not in pins.setdefault(key, []):
                    pins[key].append(g.uuid)
        per_container[c.name] = limits
    for key, uuids in pins.items():
        annotations[key] = ",".join(uuids)
    pod = build_pod(assignment, job, scheduler_name=scheduler_name, annotations=annotations)
    for cname, container in containers_by_name(pod).items():
        if per_container.get(cname):
            container["resources"].setdefault("limits", {}).update(per_container[cname])
    return Manifests(pod=pod, mode="hami")
