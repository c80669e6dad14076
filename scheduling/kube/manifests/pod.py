"""The Pod every submission mode starts from: metadata, node pin, containers, host shares.

:func:`build_pod` turns a checked :class:`~scheduling.placement.types.PodAssignment` into a
Pod dict with the console's labels and annotations (:func:`object_meta`), required node
affinity to the chosen node and one container per assigned container (init containers
first, in assignment order) carrying its image, command, env and host CPU / memory. The mode
builders (:mod:`.hami`, :mod:`.whole`, :mod:`.claims`) add the device part.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from scheduling.devices.vendors import vendor_traits
from scheduling.kube.device_resources import ManifestError
from scheduling.kube.manifests.labels import (
    ANNOTATION_JOB,
    ANNOTATION_PLACEMENT,
    ANNOTATION_TENANT,
    LABEL_JOB,
    LABEL_MANAGED_BY,
    LABEL_PLACEMENT,
    LABEL_POD,
    LABEL_TENANT,
    MANAGED_BY,
)
from scheduling.kube.manifests.specs import JobMeta
from scheduling.kube.names import label_value, pod_name
from scheduling.placement.types import ContainerAssignment, DeviceGrant, PodAssignment

__all__ = [
    "object_meta",
    "check_assignment",
    "build_pod",
    "containers_by_name",
    "group_by_vendor",
    "mebibytes",
]


def object_meta(job: JobMeta, name: str, pod: str) -> dict:
    """``metadata`` of an object of ``job``'s placement (``pod``: the placement's pod name):
    the job's extra labels / annotations, overridden by the console's own keys."""
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


def mebibytes(mib: int) -> str:
    """A MiB count as a Kubernetes quantity (``"512Mi"``)."""
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
        requests["cpu"] = limits["cpu"] = f"{cpu}m"
    if mem > 0:
        requests["memory"] = limits["memory"] = mebibytes(mem)
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


def check_assignment(assignment: PodAssignment) -> None:
    """Refuse an assignment no builder can turn into a Pod.

    Raises:
        ManifestError: no node, no app container, duplicate container names, a grant
            without vendor, or a whole device granted twice to one container.
    """
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


def build_pod(
    assignment: PodAssignment,
    job: JobMeta,
    *,
    scheduler_name: str | None,
    annotations: Mapping[str, str],
) -> dict:
    """The Pod of ``assignment`` (already checked by :func:`check_assignment`), with
    ``annotations`` added and ``schedulerName`` set when given."""
    name = pod_name(job.placement_id, assignment.pod)
    meta = object_meta(job, name, assignment.pod)
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


def containers_by_name(pod: dict) -> dict[str, dict]:
    """The Pod's init and app containers by name (the dicts themselves, to fill in)."""
    out = {c["name"]: c for c in pod["spec"].get("initContainers", [])}
    out.update({c["name"]: c for c in pod["spec"]["containers"]})
    return out


def group_by_vendor(devices: Sequence[DeviceGrant]) -> dict[tuple[str, str], list[DeviceGrant]]:
    """Grants by ``(vendor, chip)``, in grant order; ``chip`` is the grant type for the
    per-chip backends (Ascend, Iluvatar) and "" for the others."""
    groups: dict[tuple[str, str], list[DeviceGrant]] = {}
    for g in devices:
        # Ascend / Iluvatar backends are per chip: the grant type is the common word
        chip = g.type if vendor_traits(g.vendor).per_chip else ""
        groups.setdefault((g.vendor, chip), []).append(g)
    return groups
