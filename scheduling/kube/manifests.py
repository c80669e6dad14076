"""Pure builders: a placement (``PodAssignment``) plus job metadata -> Kubernetes object dicts.

Three submission modes (docs/hami.md §8):

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
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from scheduling.devices.overlay import Catalogue
from scheduling.devices.resources import dra_device_class, unit_mib
from scheduling.devices.schema import ConfigError, DeviceModelConfig
from scheduling.placement.types import ContainerAssignment, DeviceGrant, PodAssignment

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

LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY = "llmops-console"
LABEL_TENANT = "console.llmops.io/tenant"
LABEL_JOB = "console.llmops.io/job"
LABEL_PLACEMENT = "console.llmops.io/placement"
LABEL_POD = "console.llmops.io/pod"
ANNOTATION_TENANT = "console.llmops.io/tenant"
ANNOTATION_JOB = "console.llmops.io/job"
ANNOTATION_PLACEMENT = "console.llmops.io/placement"
CONSOLE_SELECTOR = f"{LABEL_MANAGED_BY}={MANAGED_BY}"
"""Label selector matching every object the console creates."""

HAMI_SCHEDULER_NAME = "hami-scheduler"
"""HAMi's kube-scheduler profile name (helm default, ``charts/hami/values.yaml``)."""

POD_CLAIM_NAME = "devices"
"""Name of the Pod's ``spec.resourceClaims`` entry that refers to the pod's ResourceClaim."""


class ManifestError(ValueError):
    """The placement cannot be expressed in the requested mode (message says why)."""


# ------------------------------------------------------------------------------------------
# Inputs
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ContainerSpec:
    """What runs in one container (the placement says only which devices it gets).

    Attributes:
        image: container image.
        command / args: entrypoint and arguments (empty = image default).
        env: environment variables as (name, value) pairs, in order.
        cpu_milli / memory_mib: host CPU (millicores) and memory (MiB) requested and limited
            (0 = none); when no container of the pod gives any, the pod's booked
            ``PodAssignment.cpu_milli`` / ``memory_mib`` go on its first app container.
    """

    image: str
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cpu_milli: int = 0
    memory_mib: int = 0


@dataclass(frozen=True, slots=True)
class JobMeta:
    """Job identity and workload, shared by all pods of a placement.

    Attributes:
        tenant: tenant slug (label value is cleaned to a DNS label; annotation keeps it as is).
        job_id: job id (any string).
        placement_id: placement id; every object name derives from it.
        namespace: namespace of the Pods and ResourceClaims.
        default: container spec for containers not named in ``containers``.
        containers: per container name overrides.
        restart_policy: Pod ``restartPolicy`` (``"Never"`` | ``"OnFailure"`` | ``"Always"``).
        priority_class: Pod ``priorityClassName`` ("" = none).
        service_account: Pod ``serviceAccountName`` ("" = namespace default).
        extra_labels / extra_annotations: added to every object (console keys win).
    """

    tenant: str
    job_id: str
    placement_id: str
    namespace: str
    default: ContainerSpec
    containers: Mapping[str, ContainerSpec] = field(default_factory=dict)
    restart_policy: str = "Never"
    priority_class: str = ""
    service_account: str = ""
    extra_labels: Mapping[str, str] = field(default_factory=dict)
    extra_annotations: Mapping[str, str] = field(default_factory=dict)

    def spec_for(self, container: str) -> ContainerSpec:
        """The container's spec (override or default)."""
        return self.containers.get(container, self.default)


@dataclass(frozen=True, slots=True)
class DraDriver:
    """How to ask one DRA driver for devices (per vendor).

    Attributes:
        driver: driver name (ResourceSlice ``spec.driver``; CEL attribute domain).
        device_class: DeviceClass name requests use.
        consumable_capacity: devices have ``allowMultipleAllocations`` and capacities
            ``memory`` (bytes) / ``cores`` (percent) that requests consume (KEP-5075).
        uuid_attribute: device attribute holding the physical device uuid.
        parent_attribute / profile_attribute: attributes of partition devices (MIG, vNPU
            templates) naming the parent uuid and the profile/template; "" = the driver has
            no partition devices.
        memory_capacity / cores_capacity: capacity names.
    """

    driver: str
    device_class: str
    consumable_capacity: bool = True
    uuid_attribute: str = "uuid"
    parent_attribute: str = "parentUUID"
    profile_attribute: str = "profile"
    memory_capacity: str = "memory"
    cores_capacity: str = "cores"


DEFAULT_DRA_DRIVERS: Mapping[str, DraDriver] = {
    # Project-HAMi/k8s-dra-driver (hami.md §7.1); partition attributes are our assumption
    # (the driver's dynamic MIG devices) - override per cluster if they differ.
    "NVIDIA": DraDriver("hami-core-gpu.project-hami.io", "hami-core-gpu.project-hami.io"),
    # Project-HAMi/ascend-dra-driver, HAMivNPUCore mode (hami.md §7.1); template partitions
    # named by the "template" attribute.
    "Ascend": DraDriver("ascend.project-hami.io", "ascend.project-hami.io",
                        profile_attribute="template"),
}
"""Vendor word -> DraDriver for the drivers HAMi ships; other vendors must be configured."""


@dataclass(frozen=True, slots=True)
class HamiResources:
    """HAMi resource names of one vendor (docs/hami.md §2) and its device pin annotation.

    Attributes:
        count: device count resource (``{chip}`` is replaced by the grant's common word).
        memory: per-device memory resource ("" = vendor has none).
        cores: per-device cores resource ("" = none).
        memory_unit_mib: MiB per memory unit (Cambricon/Iluvatar 256, Mthreads 512); memory
            is rounded UP to whole units.
        memory_suffix: appended to the value (Metax sGPU: ``"Mi"``, a bare number is GiB).
        cores_per_device: unit of the cores resource for one whole device (Mthreads 16).
        use_uuid: pod annotation listing the granted device uuids (hami.md §3.1).
    """

    count: str
    memory: str = ""
    cores: str = ""
    memory_unit_mib: int = 1
    memory_suffix: str = ""
    cores_per_device: int = 100
    use_uuid: str = ""


HAMI_RESOURCES: Mapping[str, HamiResources] = {
    "NVIDIA": HamiResources("nvidia.com/gpu", "nvidia.com/gpumem", "nvidia.com/gpucores",
                            use_uuid="nvidia.com/use-gpuuuid"),
    "MLU": HamiResources("cambricon.com/vmlu", "cambricon.com/mlu.smlu.vmemory",
                         "cambricon.com/mlu.smlu.vcore", memory_unit_mib=256,
                         use_uuid="cambricon.com/use-gpuuuid"),
    "DCU": HamiResources("hygon.com/dcunum", "hygon.com/dcumem", "hygon.com/dcucores",
                         use_uuid="hygon.com/use-gpuuuid"),
    "Ascend": HamiResources("huawei.com/{chip}", "huawei.com/{chip}-memory",
                            "huawei.com/{chip}-core", use_uuid="hami.io/use-{chip}-uuid"),
    "Metax": HamiResources("metax-tech.com/gpu", use_uuid="metax-tech.com/use-gpuuuid"),
    "MetaxSGPU": HamiResources("metax-tech.com/sgpu", "metax-tech.com/vmemory",
                               "metax-tech.com/vcore", memory_suffix="Mi",
                               use_uuid="metax-tech.com/use-gpuuuid"),
    "Iluvatar": HamiResources("iluvatar.ai/{chip}-vgpu", "iluvatar.ai/{chip}.vMem",
                              "iluvatar.ai/{chip}.vCore", memory_unit_mib=256,
                              use_uuid="hami.io/use-{chip}-uuid"),
    "Enflame": HamiResources("enflame.com/gcu", use_uuid="enflame.com/use-gpuuuid"),
    "Mthreads": HamiResources("mthreads.com/vgpu", "mthreads.com/sgpu-memory",
                              "mthreads.com/sgpu-core", memory_unit_mib=512,
                              cores_per_device=16, use_uuid="mthreads.ai/use-gpuuuid"),
    "Kunlun": HamiResources("kunlunxin.com/xpu", use_uuid="baidu.com/use-gpuuuid"),
    "KunlunVXPU": HamiResources("kunlunxin.com/vxpu", "kunlunxin.com/vxpu-memory",
                                use_uuid="hami.io/use-xpu-uuid"),
    "AMD": HamiResources("amd.com/gpu", "amd.com/gpumem", "amd.com/gpucores",
                         use_uuid="amd.com/use-gpu-uuid"),
}
"""Vendor word (``DeviceGrant.vendor``) -> HAMi resource names."""

WHOLE_RESOURCES: Mapping[str, str] = {
    "NVIDIA": "nvidia.com/gpu",
    "MLU": "cambricon.com/mlu",
    "DCU": "hygon.com/dcu",
    "Ascend": "huawei.com/{family}",
    "Metax": "metax-tech.com/gpu",
    "MetaxSGPU": "metax-tech.com/gpu",
    "Iluvatar": "iluvatar.ai/gpu",
    "Enflame": "enflame.com/gcu",
    "Mthreads": "mthreads.com/gpu",
    "Kunlun": "kunlunxin.com/xpu",
    "KunlunVXPU": "kunlunxin.com/xpu",
    "AMD": "amd.com/gpu",
}
"""Vendor word -> count resource of the vendor's own (non-HAMi) device plugin. Ascend's
MindX plugin names it by chip family (``huawei.com/Ascend910``, ``huawei.com/Ascend310P``)."""


@dataclass(frozen=True, slots=True)
class Manifests:
    """Objects to create for one pod, in order: ``claims`` first, then ``pod``.

    Attributes:
        pod: the Pod dict.
        claims: ResourceClaim dicts (dra mode: exactly one; other modes: none).
        mode: ``"hami"`` | ``"dra"`` | ``"whole"``.
    """

    pod: dict
    claims: tuple[dict, ...] = ()
    mode: str = "hami"

    @property
    def namespace(self) -> str:
        return self.pod["metadata"]["namespace"]

    @property
    def pod_name(self) -> str:
        return self.pod["metadata"]["name"]

    @property
    def claim_names(self) -> tuple[str, ...]:
        return tuple(c["metadata"]["name"] for c in self.claims)


# ------------------------------------------------------------------------------------------
# Names
# ------------------------------------------------------------------------------------------

_NOT_LABEL_CHARS = re.compile(r"[^a-z0-9-]+")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def dns_label(*parts: str, max_len: int = 63) -> str:
    """Join ``parts`` with '-' into a DNS-1123 label (RFC 1123: ``[a-z0-9]([-a-z0-9]*[a-z0-9])?``).

    Lower-cases, replaces runs of other characters by '-', trims '-' at the ends. When that
    changed the text or it is longer than ``max_len``, it is cut and suffixed with
    ``-<first 8 hex of sha256(original joined text)>`` so distinct inputs stay distinct.

    Raises:
        ManifestError: nothing usable is left (e.g. all parts empty).
    """
    raw = "-".join(p for p in parts if p != "")
    clean = _NOT_LABEL_CHARS.sub("-", raw.lower()).strip("-")
    clean = re.sub(r"-{2,}", "-", clean)
    if not clean:
        raise ManifestError(f"cannot make a DNS-1123 label from {parts!r}")
    if clean == raw and len(clean) <= max_len:
        return clean
    digest = hashlib.sha256(raw.encode()).hexdigest()[:8]
    head = clean[: max_len - 9].rstrip("-")
    return f"{head}-{digest}" if head else digest


def _label_value(value: str) -> str:
    if len(value) <= 63 and _LABEL_VALUE.match(value):
        return value
    return dns_label(value)


def pod_name(placement_id: str, pod: str) -> str:
    """Pod name for one pod of a placement: ``p-<placement id>-<pod>`` as a DNS label.

    ``pod`` is ``PodAssignment.pod`` (a ``namespace/name`` prefix is dropped).
    """
    return dns_label("p", placement_id, pod.rsplit("/", 1)[-1])


def claim_name(pod: str) -> str:
    """ResourceClaim name of a pod: ``<pod name>-dev`` (DNS label, <= 63)."""
    return dns_label(pod, "dev")


# ------------------------------------------------------------------------------------------
# Shared pieces
# ------------------------------------------------------------------------------------------


def _meta(job: JobMeta, name: str, pod: str) -> dict:
    labels = dict(job.extra_labels)
    labels.update({
        LABEL_MANAGED_BY: MANAGED_BY,
        LABEL_TENANT: _label_value(job.tenant),
        LABEL_JOB: _label_value(job.job_id),
        LABEL_PLACEMENT: _label_value(job.placement_id),
        LABEL_POD: _label_value(pod),
    })
    annotations = dict(job.extra_annotations)
    annotations.update({
        ANNOTATION_TENANT: job.tenant,
        ANNOTATION_JOB: job.job_id,
        ANNOTATION_PLACEMENT: job.placement_id,
    })
    return {"name": name, "namespace": job.namespace, "labels": labels,
            "annotations": annotations}


def _node_affinity(node: str) -> dict:
    # matchFields on metadata.name pins the exact node object (the DaemonSet controller's
    # way); the kubernetes.io/hostname label may differ from the node name.
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}


def _cpu(milli: int) -> str:
    return f"{milli}m"


def _mem(mib: int) -> str:
    return f"{mib}Mi"


def _container(job: JobMeta, c: ContainerAssignment, host: tuple[int, int]) -> dict:
    spec = job.spec_for(c.name)
    if not spec.image:
        raise ManifestError(f"container {c.name!r}: no image")
    out: dict = {"name": c.name, "image": spec.image}
    if spec.command:
        out["command"] = list(spec.command)
    if spec.args:
        out["args"] = list(spec.args)
    if spec.env:
        out["env"] = [{"name": k, "value": v} for k, v in spec.env]
    cpu, mem = host
    limits: dict[str, str] = {}
    requests: dict[str, str] = {}
    if cpu > 0:
        requests["cpu"] = limits["cpu"] = _cpu(cpu)
    if mem > 0:
        requests["memory"] = limits["memory"] = _mem(mem)
    out["resources"] = {}
    if requests:
        out["resources"]["requests"] = requests
    if limits:
        out["resources"]["limits"] = limits
    return out


def _host_shares(assignment: PodAssignment, job: JobMeta) -> dict[str, tuple[int, int]]:
    shares = {c.name: (job.spec_for(c.name).cpu_milli, job.spec_for(c.name).memory_mib)
              for c in assignment.containers}
    if not any(cpu or mem for cpu, mem in shares.values()):
        first_app = next((c.name for c in assignment.containers if not c.init), None)
        if first_app is not None:
            shares[first_app] = (assignment.cpu_milli, assignment.memory_mib)
    return shares


def _check_assignment(assignment: PodAssignment) -> None:
    if not assignment.node:
        raise ManifestError(f"pod {assignment.pod!r} has no node")
    if not any(not c.init for c in assignment.containers):
        raise ManifestError(f"pod {assignment.pod!r} has no app container")
    names = [c.name for c in assignment.containers]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ManifestError(f"pod {assignment.pod!r}: duplicate container names {sorted(dup)}")
    for c in assignment.containers:
        seen: set[str] = set()
        for g in c.devices:
            if not g.vendor:
                raise ManifestError(f"container {c.name!r}: grant {g.uuid!r} has no vendor")
            key = f"{g.uuid}/{g.mig_profile}/{g.mig_start}"
            if key in seen and not g.mig_profile:
                raise ManifestError(f"container {c.name!r}: device {g.uuid!r} granted twice")
            seen.add(key)


def _pod(assignment: PodAssignment, job: JobMeta, *, scheduler_name: str | None,
         annotations: Mapping[str, str]) -> dict:
    """The Pod of ``assignment`` (already checked by the calling builder)."""
    name = pod_name(job.placement_id, assignment.pod)
    meta = _meta(job, name, assignment.pod)
    meta["annotations"].update(annotations)
    shares = _host_shares(assignment, job)
    init = [_container(job, c, shares[c.name]) for c in assignment.containers if c.init]
    app = [_container(job, c, shares[c.name]) for c in assignment.containers if not c.init]
    spec: dict = {"restartPolicy": job.restart_policy, "affinity": _node_affinity(
        assignment.node), "containers": app}
    if init:
        spec["initContainers"] = init
    if scheduler_name:
        spec["schedulerName"] = scheduler_name
    if job.priority_class:
        spec["priorityClassName"] = job.priority_class
    if job.service_account:
        spec["serviceAccountName"] = job.service_account
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def _containers_by_name(pod: dict) -> dict[str, dict]:
    out = {c["name"]: c for c in pod["spec"].get("initContainers", [])}
    out.update({c["name"]: c for c in pod["spec"]["containers"]})
    return out


def _group_by_vendor(devices: Sequence[DeviceGrant]) -> dict[tuple[str, str], list[DeviceGrant]]:
    groups: dict[tuple[str, str], list[DeviceGrant]] = {}
    for g in devices:
        # Ascend / Iluvatar backends are per chip: the grant type is the common word
        chip = g.type if g.vendor in ("Ascend", "Iluvatar") else ""
        groups.setdefault((g.vendor, chip), []).append(g)
    return groups


# ------------------------------------------------------------------------------------------
# hami
# ------------------------------------------------------------------------------------------


def _model_resources(vendor: str, chip: str, grants: list[DeviceGrant],
                     catalogue: Catalogue | None) -> HamiResources:
    """HAMi resource names and memory unit of the grants' model: the catalogue's resolved
    config of the model (per-model names such as ``cambricon.com/mlu590.smlu.vmemory``, the
    model's ``memory_factor`` incl. 0 = 1 % of ``memory_mib``), else the vendor's table entry.

    Raises:
        ManifestError: unknown vendor, grants of several models in one vendor group, or a
            model whose memory unit cannot be computed.
    """
    res = HAMI_RESOURCES.get(vendor)
    if res is None:
        raise ManifestError(f"vendor {vendor!r} has no HAMi resource names")
    if catalogue is None:
        return res
    cfgs = {id(c): c for c in (catalogue.for_device(vendor, g.model or g.type) for g in grants)
            if c is not None}
    if len(cfgs) > 1:
        raise ManifestError(f"vendor {vendor!r}: grants of several models in one container "
                            f"({sorted({g.model or g.type for g in grants})})")
    if not cfgs:
        return res
    cfg: DeviceModelConfig = next(iter(cfgs.values()))
    try:
        # a suffixed value is written in MiB whatever the model's bare-number unit
        unit = unit_mib(cfg) if cfg.resource_memory and not res.memory_suffix else 1
    except ConfigError as exc:
        raise ManifestError(f"model {cfg.chip or vendor}: {exc}") from None
    return HamiResources(
        cfg.resource_count or res.count, cfg.resource_memory, cfg.resource_cores,
        memory_unit_mib=unit, memory_suffix=res.memory_suffix,
        cores_per_device=res.cores_per_device,
        use_uuid=cfg.use_uuid_annotation or res.use_uuid)


def _hami_container_resources(vendor: str, chip: str, grants: list[DeviceGrant],
                              annotations: dict[str, str], res: HamiResources
                              ) -> dict[str, str]:
    if "{chip}" in res.count and not chip:
        raise ManifestError(f"vendor {vendor!r} grants need the chip common word as type")
    if any(g.mig_profile for g in grants) and vendor != "NVIDIA":
        raise ManifestError(f"MIG profiles are NVIDIA only (vendor {vendor!r})")
    out = {res.count.format(chip=chip): str(len(grants))}
    # HAMi books the same memory / cores on every device of a container request (one
    # ContainerDeviceRequest per vendor); with unequal grants the smallest is requested, so
    # HAMi's own fit never needs more than our placement booked on any device.
    mem = min(g.memory_mib for g in grants)
    cores = min(g.cores_percent for g in grants)
    if vendor == "Ascend":
        soft = any(not g.template and g.cores_percent < 100 for g in grants)
        if soft:
            annotations["huawei.com/vnpu-mode"] = "hami-core"
        elif all(g.cores_percent >= 100 and not g.template for g in grants):
            return out  # whole NPUs: count only (webhook books the whole card)
        if len(grants) > 1 and not soft:
            raise ManifestError("Ascend vNPU templates are single-device (hami.md §2.4)")
        out[res.memory.format(chip=chip)] = str(mem)
        if soft and cores > 0:
            out[res.cores.format(chip=chip)] = str(cores)
        return out
    if vendor == "Enflame" and cores < 100:
        if len(grants) > 1:
            raise ManifestError("Enflame DRS slices are one device per container (§2.7)")
        return {"enflame.com/gcu-memory": str(mem), "enflame.com/gcu-core": str(max(cores, 1))}
    if res.memory and mem > 0:
        units = math.ceil(mem / res.memory_unit_mib)
        out[res.memory.format(chip=chip)] = f"{units}{res.memory_suffix}"
    if res.cores and cores > 0:
        value = math.ceil(cores * res.cores_per_device / 100)
        out[res.cores.format(chip=chip)] = str(value)
    if vendor == "NVIDIA" and any(g.mig_profile for g in grants):
        annotations["nvidia.com/vgpu-mode"] = "mig"
    return out


def build_hami(assignment: PodAssignment, job: JobMeta, *,
               scheduler_name: str = HAMI_SCHEDULER_NAME,
               catalogue: Catalogue | None = None) -> Manifests:
    """Pod for HAMi ("pin, let HAMi bind", docs/hami.md §8).

    Each container asks, per vendor, for ``<count>`` = number of granted devices,
    ``<memory>`` = granted MiB per device (in the vendor's unit, rounded up) and ``<cores>`` =
    granted percent (in the vendor's unit); the pod carries each vendor's use-uuid
    annotation with the granted uuids in grant order, comma separated (§3.1), required node
    affinity to ``assignment.node`` and ``schedulerName = scheduler_name``. With a
    ``catalogue`` the names, the memory unit and the use-uuid key are the grant model's
    (:func:`_model_resources`; an MLU590 at unit 0 = 798 MiB asks 6 ``vmemory`` units for
    4788 MiB), else HAMi's defaults (:data:`HAMI_RESOURCES`).

    Raises:
        ManifestError: unknown vendor, missing image, MIG on non-NVIDIA, multi-device vNPU
            template, duplicate container names, no app container.
    """
    _check_assignment(assignment)
    annotations: dict[str, str] = {}
    per_container: dict[str, dict[str, str]] = {}
    pins: dict[str, list[str]] = {}
    for c in assignment.containers:
        limits: dict[str, str] = {}
        for (vendor, chip), grants in _group_by_vendor(c.devices).items():
            res = _model_resources(vendor, chip, grants, catalogue)
            limits.update(_hami_container_resources(vendor, chip, grants, annotations, res))
            key = res.use_uuid.format(chip=chip)
            for g in grants:
                if g.uuid not in pins.setdefault(key, []):
                    pins[key].append(g.uuid)
        per_container[c.name] = limits
    for key, uuids in pins.items():
        annotations[key] = ",".join(uuids)
    pod = _pod(assignment, job, scheduler_name=scheduler_name, annotations=annotations)
    for cname, c in _containers_by_name(pod).items():
        if per_container.get(cname):
            res = c["resources"]
            res.setdefault("limits", {}).update(per_container[cname])
    return Manifests(pod=pod, mode="hami")


# ------------------------------------------------------------------------------------------
# whole
# ------------------------------------------------------------------------------------------


def _ascend_family(chip: str) -> str:
    for family in ("Ascend910", "Ascend310P", "Ascend310"):
        if chip.startswith(family):
            return family
    return chip


def build_whole(assignment: PodAssignment, job: JobMeta) -> Manifests:
    """Pod with plain device-plugin count resources (whole devices), pinned to the node.

    Each container asks for ``<vendor count resource>: <number of granted devices>``
    (:data:`WHOLE_RESOURCES`). The vendor's device plugin chooses which devices; only the
    node is pinned. Default scheduler.

    Raises:
        ManifestError: a grant is fractional (cores < 100, or a MIG/template partition),
            unknown vendor, or the other :func:`build_hami` input errors.
    """
    _check_assignment(assignment)
    per_container: dict[str, dict[str, str]] = {}
    for c in assignment.containers:
        limits: dict[str, str] = {}
        for (vendor, chip), grants in _group_by_vendor(c.devices).items():
            for g in grants:
                if g.cores_percent < 100 or g.mig_profile or g.template:
                    raise ManifestError(
                        f"container {c.name!r}: device {g.uuid!r} is shared or partitioned "
                        f"(cores {g.cores_percent}%, profile {g.mig_profile or g.template!r});"
                        " whole mode needs whole devices")
            name = WHOLE_RESOURCES.get(vendor)
            if name is None:
                raise ManifestError(f"vendor {vendor!r} has no device-plugin resource name")
            name = name.format(family=_ascend_family(chip or grants[0].type))
            limits[name] = str(int(limits.get(name, "0")) + len(grants))
        per_container[c.name] = limits
    pod = _pod(assignment, job, scheduler_name=None, annotations={})
    for cname, c in _containers_by_name(pod).items():
        if per_container.get(cname):
            c["resources"].setdefault("limits", {}).update(per_container[cname])
    return Manifests(pod=pod, mode="whole")


# ------------------------------------------------------------------------------------------
# dra
# ------------------------------------------------------------------------------------------


def dra_drivers_for(assignment: PodAssignment, catalogue: Catalogue,
                    fallback: Mapping[str, DraDriver] = DEFAULT_DRA_DRIVERS
                    ) -> dict[str, DraDriver]:
    """Vendor -> :class:`DraDriver` of the granted models, from each model's ``dra`` spec in
    the catalogue (driver, device class with ``{model}`` filled in, consumable capacity,
    attribute and capacity names); vendors whose model has none keep ``fallback``'s.

    Raises:
        ManifestError: one vendor's grants in the pod name models with different drivers or
            device classes (one request set per vendor cannot serve both).
    """
    out: dict[str, DraDriver] = {}
    for c in assignment.containers:
        for g in c.devices:
            cfg = catalogue.for_device(g.vendor, g.model or g.type)
            if cfg is None or cfg.dra is None:
                continue
            d = cfg.dra
            drv = DraDriver(d.driver, dra_device_class(cfg), d.consumable_capacity,
                            d.uuid_attribute, d.parent_attribute, d.profile_attribute,
                            d.memory_capacity, d.cores_capacity)
            if out.setdefault(g.vendor, drv) != drv:
                raise ManifestError(f"vendor {g.vendor!r}: grants of models with different "
                                    f"DRA drivers or device classes in one pod")
    return {**fallback, **out}


def _cel_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _cel_attr(driver: DraDriver, attribute: str) -> str:
    return f"device.attributes[{_cel_string(driver.driver)}].{attribute}"


def _dra_requests(container: ContainerAssignment, drivers: Mapping[str, DraDriver]
                  ) -> list[dict]:
    """One v1 DeviceRequest per device set of the container.

    A set = grants of one vendor with the same (memory, cores) and no partition; each
    partition (MIG instance / vNPU template) is its own request of count 1.
    """
    sets: dict[tuple, list[DeviceGrant]] = {}
    for g in container.devices:
        drv = drivers.get(g.vendor)
        if drv is None:
            raise ManifestError(f"container {container.name!r}: no DRA driver configured for "
                                f"vendor {g.vendor!r}")
        part = g.mig_profile or g.template
        key = (g.vendor, part, g.uuid if part else "", g.mig_start if part else 0,
               g.memory_mib, g.cores_percent)
        sets.setdefault(key, []).append(g)
    requests = []
    for i, ((vendor, part, _u, _s, mem, cores), grants) in enumerate(sets.items()):
        drv = drivers[vendor]
        sel = [f"device.driver == {_cel_string(drv.driver)}"]
        exact: dict = {"deviceClassName": drv.device_class, "allocationMode": "ExactCount",
                       "count": len(grants)}
        if part:
            if not drv.parent_attribute or not drv.profile_attribute:
                raise ManifestError(f"DRA driver {drv.driver!r} has no partition devices "
                                    f"(grant {grants[0].uuid!r} profile {part!r})")
            sel.append(f"{_cel_attr(drv, drv.parent_attribute)} == "
                       f"{_cel_string(grants[0].uuid)}")
            sel.append(f"{_cel_attr(drv, drv.profile_attribute)} == {_cel_string(part)}")
        else:
            uuids = ", ".join(_cel_string(g.uuid) for g in grants)
            if len(grants) == 1:
                sel.append(f"{_cel_attr(drv, drv.uuid_attribute)} == "
                           f"{_cel_string(grants[0].uuid)}")
            else:
                sel.append(f"{_cel_attr(drv, drv.uuid_attribute)} in [{uuids}]")
            if drv.consumable_capacity:
                exact["capacity"] = {"requests": {drv.memory_capacity: _mem(mem),
                                                  drv.cores_capacity: str(cores)}}
            elif cores < 100:
                raise ManifestError(f"DRA driver {drv.driver!r} has no consumable capacity; "
                                    f"cannot share device {grants[0].uuid!r}")
        exact["selectors"] = [{"cel": {"expression": " && ".join(sel)}}]
        requests.append({"name": dns_label(container.name, str(i)), "exactly": exact})
    return requests


def _claim_for_version(claim: dict, api_version: str) -> dict:
    if api_version in ("resource.k8s.io/v1", "resource.k8s.io/v1beta2"):
        return {**claim, "apiVersion": api_version}
    if api_version == "resource.k8s.io/v1beta1":
        flat = []
        for r in claim["spec"]["devices"]["requests"]:
            flat.append({"name": r["name"], **r["exactly"]})
        spec = {**claim["spec"], "devices": {**claim["spec"]["devices"], "requests": flat}}
        return {**claim, "apiVersion": api_version, "spec": spec}
    raise ManifestError(f"unsupported ResourceClaim apiVersion {api_version!r}")


def build_dra(assignment: PodAssignment, job: JobMeta, *,
              api_version: str = "resource.k8s.io/v1",
              drivers: Mapping[str, DraDriver] = DEFAULT_DRA_DRIVERS,
              scheduler_name: str | None = None) -> Manifests:
    """ResourceClaim + Pod for DRA (docs/hami.md §7).

    The claim (name :func:`claim_name`) has one request per container device set (see
    :func:`_dra_requests`): ``exactly{deviceClassName, allocationMode: ExactCount, count,
    selectors: [CEL pinning driver and uuid(s)], capacity.requests{memory: "<MiB>Mi",
    cores: "<percent>"}}``; capacity requests apply to each device of the request (KEP-5075),
    so a set only groups grants with equal memory and cores. Partition grants (MIG profile or
    vNPU template) select the partition device by parent uuid + profile. The Pod lists the
    claim under ``spec.resourceClaims[{name: "devices", resourceClaimName}]`` and each
    container its requests under ``resources.claims``. A pod without devices gets no claim.

    Args:
        api_version: ``resource.k8s.io/v1`` (1.34+), ``/v1beta2`` (1.33, same shape) or
            ``/v1beta1`` (1.32, flat requests; consumable capacity needs 1.34 either way).
        drivers: vendor word -> :class:`DraDriver`.
        scheduler_name: Pod ``schedulerName`` (None = default scheduler).

    Raises:
        ManifestError: vendor without driver, sharing on a driver without consumable
            capacity, partition on a driver without partition attributes, bad api_version.
    """
    _check_assignment(assignment)
    name = pod_name(job.placement_id, assignment.pod)
    cname = claim_name(name)
    per_container: dict[str, list[dict]] = {}
    requests: list[dict] = []
    for c in assignment.containers:
        reqs = _dra_requests(c, drivers)
        per_container[c.name] = reqs
        requests.extend(reqs)
    pod = _pod(assignment, job, scheduler_name=scheduler_name, annotations={})
    claims: tuple[dict, ...] = ()
    if requests:
        claim = {"apiVersion": api_version, "kind": "ResourceClaim",
                 "metadata": _meta(job, cname, assignment.pod),
                 "spec": {"devices": {"requests": requests}}}
        claims = (_claim_for_version(claim, api_version),)
        pod["spec"]["resourceClaims"] = [{"name": POD_CLAIM_NAME, "resourceClaimName": cname}]
        for cn, c in _containers_by_name(pod).items():
            if per_container.get(cn):
                c["resources"]["claims"] = [{"name": POD_CLAIM_NAME, "request": r["name"]}
                                            for r in per_container[cn]]
    return Manifests(pod=pod, claims=claims, mode="dra")


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
        return build_whole(assignment, job)
    raise ManifestError(f"unknown submission mode {mode!r}; expected one of {MODES}")


def owner_reference_patch(pod: Mapping) -> dict:
    """Merge patch making a created Pod the owner of a claim (see module docstring).

    Args:
        pod: the Pod as returned by the server (needs ``metadata.name`` and ``metadata.uid``).

    Raises:
        ManifestError: the pod has no uid (not a server-returned object).
    """
    meta = pod.get("metadata") or {}
    if not meta.get("uid") or not meta.get("name"):
        raise ManifestError("owner pod needs metadata.name and metadata.uid from the server")
    return {"metadata": {"ownerReferences": [
        {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]}]}}
