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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from scheduling.devices.overlay import Catalogue
from scheduling.kube.device_resources import (
    DEFAULT_DRA_DRIVERS,
    HAMI_RESOURCES,
    WHOLE_RESOURCES,
    DraDriver,
    HamiResources,
    ManifestError,
    dra_drivers_for,
    hami_container_resources,
    model_resources,
    whole_resource,
)
from scheduling.kube.names import claim_name, dns_label, label_value, pod_name
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
class Manifests:
    """Objects to create for one pod, in order: the namespace, ``claims``, then ``pod``.

    Attributes:
        pod: the Pod dict.
        claims: ResourceClaim dicts (dra mode: exactly one; other modes: none).
        mode: ``"hami"`` | ``"dra"`` | ``"whole"``.
        namespace_object: the tenant's Namespace (``scheduling.kube.namespaces``), created
            or labelled before anything else; None = the namespace is not the console's.
        services: the workload's Service (``scheduling.kube.workload_pods``), created before
            the claims and owned by every pod that uses it.
    """

    pod: dict
    claims: tuple[dict, ...] = ()
    mode: str = "hami"
    namespace_object: dict | None = None
    services: tuple[dict, ...] = ()

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
# Shared pieces
# ------------------------------------------------------------------------------------------


def _meta(job: JobMeta, name: str, pod: str) -> dict:
    labels = dict(job.extra_labels)
    labels.update(
        {
            LABEL_MANAGED_BY: MANAGED_BY,
            LABEL_TENANT: label_value(job.tenant),
            LABEL_JOB: label_value(job.job_id),
            LABEL_PLACEMENT: label_value(job.placement_id),
            LABEL_POD: label_value(pod),
        }
    )
    annotations = dict(job.extra_annotations)
    annotations.update(
        {
            ANNOTATION_TENANT: job.tenant,
            ANNOTATION_JOB: job.job_id,
            ANNOTATION_PLACEMENT: job.placement_id,
        }
    )
    return {"name": name, "namespace": job.namespace, "labels": labels, "annotations": annotations}


def _node_affinity(node: str) -> dict:
    # matchFields on metadata.name pins the exact node object (the DaemonSet controller's
    # way); the kubernetes.io/hostname label may differ from the node name.
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                ]
            }
        }
    }


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
    shares = {
        c.name: (job.spec_for(c.name).cpu_milli, job.spec_for(c.name).memory_mib)
        for c in assignment.containers
    }
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


def _pod(
    assignment: PodAssignment,
    job: JobMeta,
    *,
    scheduler_name: str | None,
    annotations: Mapping[str, str],
) -> dict:
    """The Pod of ``assignment`` (already checked by the calling builder)."""
    name = pod_name(job.placement_id, assignment.pod)
    meta = _meta(job, name, assignment.pod)
    meta["annotations"].update(annotations)
    shares = _host_shares(assignment, job)
    init = [_container(job, c, shares[c.name]) for c in assignment.containers if c.init]
    app = [_container(job, c, shares[c.name]) for c in assignment.containers if not c.init]
    spec: dict = {
        "restartPolicy": job.restart_policy,
        "affinity": _node_affinity(assignment.node),
        "containers": app,
    }
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


def build_hami(
    assignment: PodAssignment,
    job: JobMeta,
    *,
    scheduler_name: str = HAMI_SCHEDULER_NAME,
    catalogue: Catalogue | None = None,
) -> Manifests:
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
            res = model_resources(vendor, chip, grants, catalogue)
            limits.update(hami_container_resources(vendor, chip, grants, annotations, res))
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


def build_whole(
    assignment: PodAssignment, job: JobMeta, *, catalogue: Catalogue | None = None
) -> Manifests:
    """Pod with plain device-plugin count resources (whole devices), pinned to the node.

    Each container asks for ``<count resource>: <number of granted devices>``: the grant
    model's ``whole_resource`` from the ``catalogue``, else :data:`WHOLE_RESOURCES`. The
    vendor's device plugin chooses which devices; only the node is pinned. Default
    scheduler.

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
                        " whole mode needs whole devices"
                    )
            name = whole_resource(vendor, chip, grants, catalogue)
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


def _cel_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _cel_attr(driver: DraDriver, attribute: str) -> str:
    return f"device.attributes[{_cel_string(driver.driver)}].{attribute}"


def _dra_requests(container: ContainerAssignment, drivers: Mapping[str, DraDriver]) -> list[dict]:
    """One v1 DeviceRequest per device set of the container.

    A set = grants of one vendor with the same (memory, cores) and no partition; each
    partition (MIG instance / vNPU template) is its own request of count 1.
    """
    sets: dict[tuple, list[DeviceGrant]] = {}
    for g in container.devices:
        drv = drivers.get(g.vendor)
        if drv is None:
            raise ManifestError(
                f"container {container.name!r}: no DRA driver configured for vendor {g.vendor!r}"
            )
        part = g.mig_profile or g.template
        key = (
            g.vendor,
            part,
            g.uuid if part else "",
            g.mig_start if part else 0,
            g.memory_mib,
            g.cores_percent,
        )
        sets.setdefault(key, []).append(g)
    requests = []
    for i, ((vendor, part, _u, _s, mem, cores), grants) in enumerate(sets.items()):
        drv = drivers[vendor]
        sel = [f"device.driver == {_cel_string(drv.driver)}"]
        exact: dict = {
            "deviceClassName": drv.device_class,
            "allocationMode": "ExactCount",
            "count": len(grants),
        }
        if part:
            if not drv.parent_attribute or not drv.profile_attribute:
                raise ManifestError(
                    f"DRA driver {drv.driver!r} has no partition devices "
                    f"(grant {grants[0].uuid!r} profile {part!r})"
                )
            sel.append(f"{_cel_attr(drv, drv.parent_attribute)} == {_cel_string(grants[0].uuid)}")
            sel.append(f"{_cel_attr(drv, drv.profile_attribute)} == {_cel_string(part)}")
        else:
            uuids = ", ".join(_cel_string(g.uuid) for g in grants)
            if len(grants) == 1:
                sel.append(f"{_cel_attr(drv, drv.uuid_attribute)} == {_cel_string(grants[0].uuid)}")
            else:
                sel.append(f"{_cel_attr(drv, drv.uuid_attribute)} in [{uuids}]")
            if drv.consumable_capacity:
                exact["capacity"] = {
                    "requests": {drv.memory_capacity: _mem(mem), drv.cores_capacity: str(cores)}
                }
            elif cores < 100:
                raise ManifestError(
                    f"DRA driver {drv.driver!r} has no consumable capacity; "
                    f"cannot share device {grants[0].uuid!r}"
                )
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


def build_dra(
    assignment: PodAssignment,
    job: JobMeta,
    *,
    api_version: str = "resource.k8s.io/v1",
    drivers: Mapping[str, DraDriver] = DEFAULT_DRA_DRIVERS,
    scheduler_name: str | None = None,
) -> Manifests:
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
        claim = {
            "apiVersion": api_version,
            "kind": "ResourceClaim",
            "metadata": _meta(job, cname, assignment.pod),
            "spec": {"devices": {"requests": requests}},
        }
        claims = (_claim_for_version(claim, api_version),)
        pod["spec"]["resourceClaims"] = [{"name": POD_CLAIM_NAME, "resourceClaimName": cname}]
        for cn, c in _containers_by_name(pod).items():
            if per_container.get(cn):
                c["resources"]["claims"] = [
                    {"name": POD_CLAIM_NAME, "request": r["name"]} for r in per_container[cn]
                ]
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
        return build_whole(assignment, job, **options)  # type: ignore[arg-type]
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
    return {
        "metadata": {
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]}
            ]
        }
    }
