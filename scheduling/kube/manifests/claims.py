"""``dra`` mode: one ResourceClaim per pod (shared/docs/hami.md §7) and the Pod that refers to it.

The claim (resource.k8s.io v1, or v1beta2 / v1beta1 when the server serves only those;
KEP-4381) has one request per container device set: ``exactly`` with ``deviceClassName``,
``count``, a CEL selector pinning the chosen device(s) by uuid and ``capacity.requests``
(memory, cores) for drivers with consumable capacity (KEP-5075, e.g.
``hami-core-gpu.project-hami.io``; §7.1). Template devices (NVIDIA MIG, Ascend vNPU) are
requested as partitionable devices (KEP-4815): the driver publishes one device per
partition consuming the parent's shared counters; the selector pins parent uuid + profile.
The Pod references the claim in ``spec.resourceClaims`` and each container lists its
requests in ``resources.claims``. Ownership (claim -> pod -> owner patch): see
:mod:`scheduling.kube.manifests`.
"""

from __future__ import annotations

from collections.abc import Mapping

from scheduling.kube.device_resources import DEFAULT_DRA_DRIVERS, DraDriver, ManifestError
from scheduling.kube.manifests.pod import (
    build_pod,
    check_assignment,
    containers_by_name,
    mebibytes,
    object_meta,
)
from scheduling.kube.manifests.specs import JobMeta, Manifests
from scheduling.kube.names import claim_name, dns_label, pod_name
from scheduling.placement.types import ContainerAssignment, DeviceGrant, PodAssignment

__all__ = ["POD_CLAIM_NAME", "build_dra", "dra_requests", "owner_reference_patch"]

POD_CLAIM_NAME = "devices"
"""Name of the Pod's ``spec.resourceClaims`` entry that refers to the pod's ResourceClaim."""

# (vendor, partition profile, parent uuid, partition start, memory MiB, cores percent)
_SetKey = tuple[str, str, str, int, int, int]


def _cel_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _cel_attr(driver: DraDriver, attribute: str) -> str:
    return f"device.attributes[{_cel_string(driver.driver)}].{attribute}"


def _device_sets(
    container: ContainerAssignment, drivers: Mapping[str, DraDriver]
) -> dict[_SetKey, list[DeviceGrant]]:
    """The container's grants by device set: one vendor, same (memory, cores), no partition;
    each partition (MIG instance / vNPU template) is a set of its own."""
    sets: dict[_SetKey, list[DeviceGrant]] = {}
    for g in container.devices:
        if g.vendor not in drivers:
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
    return sets


def _exactly(drv: DraDriver, key: _SetKey, grants: list[DeviceGrant]) -> dict:
    """The ``exactly`` of one device set: class, count, CEL pin and capacity requests."""
    _vendor, part, _uuid, _start, mem, cores = key
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
                "requests": {drv.memory_capacity: mebibytes(mem), drv.cores_capacity: str(cores)}
            }
        elif cores < 100:
            raise ManifestError(
                f"DRA driver {drv.driver!r} has no consumable capacity; "
                f"cannot share device {grants[0].uuid!r}"
            )
    exact["selectors"] = [{"cel": {"expression": " && ".join(sel)}}]
    return exact


def dra_requests(container: ContainerAssignment, drivers: Mapping[str, DraDriver]) -> list[dict]:
    """One v1 DeviceRequest per device set of the container (:func:`_device_sets`), named
    ``<container>-<i>``.

    Raises:
        ManifestError: a vendor without driver, sharing on a driver without consumable
            capacity, a partition on a driver without partition attributes.
    """
    return [
        {"name": dns_label(container.name, str(i)), "exactly": _exactly(drivers[key[0]], key, gs)}
        for i, (key, gs) in enumerate(_device_sets(container, drivers).items())
    ]


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
    """ResourceClaim + Pod for DRA (shared/docs/hami.md §7).

    The claim (name :func:`~scheduling.kube.names.claim_name`) has one request per container
    device set (see :func:`dra_requests`): ``exactly{deviceClassName, allocationMode:
    ExactCount, count, selectors: [CEL pinning driver and uuid(s)], capacity.requests{memory:
    "<MiB>Mi", cores: "<percent>"}}``; capacity requests apply to each device of the request
    (KEP-5075), so a set only groups grants with equal memory and cores. Partition grants (MIG
    profile or vNPU template) select the partition device by parent uuid + profile. The Pod
    lists the claim under ``spec.resourceClaims[{name: "devices", resourceClaimName}]`` and
    each container its requests under ``resources.claims``. A pod without devices gets no
    claim.

    Args:
        api_version: ``resource.k8s.io/v1`` (1.34+), ``/v1beta2`` (1.33, same shape) or
            ``/v1beta1`` (1.32, flat requests; consumable capacity needs 1.34 either way).
        drivers: vendor word -> :class:`~scheduling.kube.device_resources.DraDriver`.
        scheduler_name: Pod ``schedulerName`` (None = default scheduler).

    Raises:
        ManifestError: vendor without driver, sharing on a driver without consumable
            capacity, partition on a driver without partition attributes, bad api_version.
    """
    check_assignment(assignment)
    cname = claim_name(pod_name(job.placement_id, assignment.pod))
    per_container = {c.name: dra_requests(c, drivers) for c in assignment.containers}
    requests = [r for reqs in per_container.values() for r in reqs]
    pod = build_pod(assignment, job, scheduler_name=scheduler_name, annotations={})
    if not requests:
        return Manifests(pod=pod, claims=(), mode="dra")
    claim = {
        "apiVersion": api_version,
        "kind": "ResourceClaim",
        "metadata": object_meta(job, cname, assignment.pod),
        "spec": {"devices": {"requests": requests}},
    }
    pod["spec"]["resourceClaims"] = [{"name": POD_CLAIM_NAME, "resourceClaimName": cname}]
    for name, container in containers_by_name(pod).items():
        if per_container.get(name):
            container["resources"]["claims"] = [
                {"name": POD_CLAIM_NAME, "request": r["name"]} for r in per_container[name]
            ]
    return Manifests(pod=pod, claims=(_claim_for_version(claim, api_version),), mode="dra")


def owner_reference_patch(pod: Mapping) -> dict:
    """Merge patch making a created Pod the owner of a claim (see :mod:`scheduling.kube.manifests`).

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
