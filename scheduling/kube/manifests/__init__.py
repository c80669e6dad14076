"""Pure builders: a placement (``PodAssignment``) plus job metadata -> Kubernetes object dicts.

Three submission modes (shared/docs/hami.md §8):

* ``hami`` - "pin, let HAMi bind": a Pod asking for HAMi's per-container resources (count,
  memory, cores; §2), ``schedulerName`` = HAMi's scheduler, required node affinity to the
  chosen node and each vendor's "use these device uuids" annotation (§3.1) listing exactly
  the granted devices. HAMi re-validates capacity and drives its device plugins.
* ``dra`` - a ResourceClaim per pod (resource.k8s.io v1, or v1beta2 / v1beta1 when the server
  serves only those; KEP-4381) with one request per container device set: ``exactly`` with
  ``deviceClassName``, ``count``, a CEL selector pinning the chosen device(s) by uuid and
  ``capacity.requests`` (memory, cores) for drivers with consumable capacity (KEP-5075, e.g.
  ``hami-core-gpu.project-hami.io``; §7.1). Template devices (NVIDIA MIG, Ascend vNPU) are
  requested as partitionable devices (KEP-4815): the driver publishes one device per
  partition consuming the parent's shared counters; the selector pins parent uuid + profile.
  The Pod references the claim in ``spec.resourceClaims`` and each container lists its
  requests in ``resources.claims``.
* ``whole`` - plain device-plugin count resources (``nvidia.com/gpu: 2``), node pinned by
  affinity; the vendor plugin picks the devices (no device pin is possible).

Names derive from the placement id (deterministic, DNS-1123 labels of <= 63 characters; a
name that had to be shortened or cleaned gets an 8-hex sha256 suffix of the original), so a
retried create hits 409 AlreadyExists, which the gateway counts as success.

Ownership (DRA): the ResourceClaim is created first, without an owner; then the Pod; then the
claim is patched with an ``ownerReference`` to the Pod (apiVersion v1, kind Pod, name, uid)
so that garbage collection deletes the claim with the Pod. The owner's uid only exists once
the Pod does, and a claim created with a made-up owner would be garbage-collected at once.
The reference is neither ``controller`` (the resourceclaim controller treats controller-owned
claims as generated from a ResourceClaimTemplate) nor ``blockOwnerDeletion`` (which would need
``update`` on ``pods/finalizers`` under the OwnerReferencesPermissionEnforcement admission
plugin). A Pod that refers to a claim that does not exist yet simply stays unschedulable, so
the order claim -> pod -> owner patch never lets the Pod run without its devices.

Layout: :mod:`.labels` (the console's labels and annotations), :mod:`.specs` (inputs and the
:class:`Manifests` result), :mod:`.pod` (the Pod every mode starts from), one module per mode
(:mod:`.hami`, :mod:`.whole`, :mod:`.claims` for DRA); :func:`build` dispatches on the mode.
"""

from __future__ import annotations

from scheduling.kube.device_resources import (
    DEFAULT_DRA_DRIVERS,
    HAMI_RESOURCES,
    WHOLE_RESOURCES,
    DraDriver,
    HamiResources,
    ManifestError,
    dra_drivers_for,
)
from scheduling.kube.manifests.claims import POD_CLAIM_NAME, build_dra, owner_reference_patch
from scheduling.kube.manifests.hami import HAMI_SCHEDULER_NAME, build_hami
from scheduling.kube.manifests.labels import (
    ANNOTATION_JOB,
    ANNOTATION_PLACEMENT,
    ANNOTATION_TENANT,
    CONSOLE_SELECTOR,
    LABEL_JOB,
    LABEL_MANAGED_BY,
    LABEL_PLACEMENT,
    LABEL_POD,
    LABEL_TENANT,
    MANAGED_BY,
)
from scheduling.kube.manifests.specs import ContainerSpec, JobMeta, Manifests
from scheduling.kube.manifests.whole import build_whole
from scheduling.kube.names import claim_name, dns_label, pod_name
from scheduling.placement.types import PodAssignment

__all__ = [
    "MODES",
    "LABEL_MANAGED_BY",
    "MANAGED_BY",
    "LABEL_TENANT",
    "LABEL_JOB",
    "LABEL_PLACEMENT",
    "LABEL_POD",
    "ANNOTATION_TENANT",
    "ANNOTATION_JOB",
    "ANNOTATION_PLACEMENT",
    "CONSOLE_SELECTOR",
    "HAMI_SCHEDULER_NAME",
    "POD_CLAIM_NAME",
    "ManifestError",
    "ContainerSpec",
    "JobMeta",
    "DraDriver",
    "DEFAULT_DRA_DRIVERS",
    "dra_drivers_for",
    "HamiResources",
    "HAMI_RESOURCES",
    "WHOLE_RESOURCES",
    "Manifests",
    "dns_label",
    "pod_name",
    "claim_name",
    "build_hami",
    "build_dra",
    "build_whole",
    "build",
    "owner_reference_patch",
]

MODES = ("hami", "dra", "whole")


def build(mode: str, assignment: PodAssignment, job: JobMeta, **options: object) -> Manifests:
    """Dispatch to :func:`build_hami`, :func:`build_dra` or :func:`build_whole`.

    Raises:
        ManifestError: unknown mode, or the builder's errors.
    """
    if mode == "hami":
        return build_hami(assignment, job, **options)  # type: ignore[arg-type]
    if mode == "dra":
        return build_dra(assignment, job, **options)  # type: ignore[arg-type]
    if mode == "whole":
        return build_whole(assignment, job, **options)  # type: ignore[arg-type]
    raise ManifestError(f"unknown submission mode {mode!r}; expected one of {MODES}")
