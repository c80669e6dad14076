"""The patches that record the console's decisions in workloads users created
(:mod:`scheduling.kube.workloads` says what each kind allows): admission (pins, then
unsuspend / ungate), suspension with the user's templates restored, the pending reason, the
scheduling gate of a Deployment's template, the DRA claim template of a pod set, and Events.

Pure: dicts in, dicts out; every patch is a JSON merge patch (RFC 7386).
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduling.devices.overlay import Catalogue
from scheduling.devices.schema import DeviceModelConfig
from scheduling.kube.device_resources import DraDriver, ManifestError, model_resources
from scheduling.kube.manifests.claims import POD_CLAIM_NAME, dra_requests
from scheduling.kube.manifests.pod import group_by_vendor
from scheduling.kube.names import dns_label
from scheduling.kube.workloads import (
    ANNOTATION_ADMITTED,
    ANNOTATION_PENDING,
    KINDS,
    LABEL_QUEUE,
    LABEL_WORKLOAD,
    SCHEDULING_GATE,
    PodSet,
    Workload,
    _at,
    _get,
)
from scheduling.placement.types import PodAssignment

__all__ = [
    "Admission",
    "admission_patch",
    "suspend_patch",
    "pending_patch",
    "gate_template_patch",
    "pod_admission_patch",
    "claim_template",
    "claim_template_name",
    "merge_diff",
    "event_body",
]


def _affinity(spec: Mapping[str, Any], nodes: Sequence[str]) -> dict:
    """``spec.affinity`` with ``metadata.name In nodes`` ANDed into every required term."""
    affinity = copy.deepcopy(dict(spec.get("affinity") or {}))
    node_aff = affinity.setdefault("nodeAffinity", {})
    required = node_aff.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    terms = required.get("nodeSelectorTerms") or [{}]
    pin = {"key": "metadata.name", "operator": "In", "values": sorted(set(nodes))}
    required["nodeSelectorTerms"] = [
        {**t, "matchFields": [*(t.get("matchFields") or []), pin]} for t in terms
    ]
    return affinity


def _pins(assignments: Sequence[PodAssignment], catalogue: Catalogue | None) -> dict[str, str]:
    """Each vendor's use-uuid annotation listing every device granted to ``assignments``."""
    pins: dict[str, list[str]] = {}
    for a in assignments:
        for c in a.containers:
            for (vendor, chip), grants in group_by_vendor(c.devices).items():
                key = model_resources(vendor, chip, grants, catalogue).use_uuid.format(chip=chip)
                for g in grants:
                    if g.uuid not in pins.setdefault(key, []):
                        pins[key].append(g.uuid)
    return {k: ",".join(v) for k, v in pins.items() if k}


def claim_template_name(workload: Workload, pod_set: str) -> str:
    """Deterministic ResourceClaimTemplate name of one pod set (DNS label)."""
    return dns_label(workload.name, pod_set, "devices")


def _shape(request: dict) -> tuple:
    """What must agree between the pods' requests for one template to serve them all."""
    exact = request["exactly"]
    return (
        request["name"],
        exact.get("deviceClassName"),
        exact.get("count"),
        repr(exact.get("capacity")),
    )


def claim_template(
    workload: Workload,
    pod_set: PodSet,
    assignments: Sequence[PodAssignment],
    drivers: Mapping[str, DraDriver],
    api_version: str,
    job_id: str,
) -> tuple[dict, dict]:
    """The ResourceClaimTemplate of one pod set and, per container name, its claim requests.

    Every pod of the set gets a claim from the template; request ``i`` selects, by CEL, any
    device one of the set's pods was granted for it (the selectors of each pod ORed).

    Raises:
        ManifestError: pods of one set were granted differently shaped requests, or the
            errors of the DRA request builder (no driver, no consumable capacity ...).
    """
    per_pod = []
    for a in assignments:
        per_pod.append({c.name: dra_requests(c, drivers) for c in a.containers})
    first = per_pod[0]
    requests: list[dict] = []
    refs: dict[str, list[str]] = {}
    for cname, reqs in first.items():
        for i, req in enumerate(reqs):
            exprs = []
            for other in per_pod:
                if len(other.get(cname, [])) != len(reqs) or _shape(other[cname][i]) != _shape(req):
                    raise ManifestError(
                        f"pod set {pod_set.name!r}: pods were granted "
                        "differently shaped device requests"
                    )
                expr = other[cname][i]["exactly"]["selectors"][0]["cel"]["expression"]
                if expr not in exprs:
                    exprs.append(expr)
            merged = copy.deepcopy(req)
            cel = exprs[0] if len(exprs) == 1 else " || ".join(f"({e})" for e in exprs)
            merged["exactly"]["selectors"] = [{"cel": {"expression": cel}}]
            requests.append(merged)
            refs.setdefault(cname, []).append(req["name"])
    devices: dict = {"requests": requests}
    if api_version.endswith("/v1beta1"):
        devices = {"requests": [{"name": r["name"], **r["exactly"]} for r in requests]}
    template = {
        "apiVersion": api_version,
        "kind": "ResourceClaimTemplate",
        "metadata": {
            "name": claim_template_name(workload, pod_set.name),
            "namespace": workload.namespace,
            "labels": {LABEL_WORKLOAD: job_id},
        },
        "spec": {"spec": {"devices": devices}},
    }
    return template, refs


def _strip_hami(spec: dict, configs: list[DeviceModelConfig]) -> None:
    names = {
        n
        for c in configs
        for n in (c.resource_count, c.resource_memory, c.resource_memory_percent, c.resource_cores)
        if n
    }
    for kind in ("initContainers", "containers"):
        for c in spec.get(kind) or []:
            res = c.get("resources") or {}
            for part in ("limits", "requests"):
                for n in list(res.get(part) or {}):
                    if n in names:
                        del res[part][n]


@dataclass(frozen=True, slots=True)
class Admission:
    """What admission records in one pod set: its pods' assignments (placement order), and
    in dra mode its claim template name and per-container request names."""

    pod_set: PodSet
    assignments: tuple[PodAssignment, ...]
    claim_template: str = ""
    claim_requests: Mapping[str, Sequence[str]] = field(default_factory=dict)


def _admit_template(
    template: dict,
    admission: Admission,
    mode: str,
    job_id: str,
    catalogue: Catalogue | None,
    configs: list[DeviceModelConfig],
) -> None:
    meta = template.setdefault("metadata", {})
    spec = template.setdefault("spec", {})
    meta.setdefault("labels", {})[LABEL_WORKLOAD] = job_id
    nodes = [a.node for a in admission.assignments]
    spec["affinity"] = _affinity(spec, nodes)
    if mode == "hami":
        meta.setdefault("annotations", {}).update(_pins(admission.assignments, catalogue))
    elif mode == "dra" and admission.claim_template:
        _strip_hami(spec, configs)
        claims = [c for c in spec.get("resourceClaims") or [] if c.get("name") != POD_CLAIM_NAME]
        spec["resourceClaims"] = [
            *claims,
            {"name": POD_CLAIM_NAME, "resourceClaimTemplateName": admission.claim_template},
        ]
        for kind in ("initContainers", "containers"):
            for c in spec.get(kind) or []:
                wanted = admission.claim_requests.get(c.get("name"), ())
                if wanted:
                    res = c.setdefault("resources", {})
                    res["claims"] = [
                        *(x for x in res.get("claims") or [] if x.get("name") != POD_CLAIM_NAME),
                        *({"name": POD_CLAIM_NAME, "request": r} for r in wanted),
                    ]


def _set(obj: dict, path: Sequence[str], value: Any) -> None:
    for key in path[:-1]:
        obj = obj[int(key)] if isinstance(obj, list) else obj.setdefault(key, {})
    obj[path[-1]] = value


def admission_patch(
    kind: str,
    obj: Mapping[str, Any],
    admissions: Sequence[Admission],
    *,
    mode: str,
    job_id: str,
    catalogue: Catalogue | None = None,
    configs: list[DeviceModelConfig] | None = None,
) -> dict:
    """JSON merge patch recording the placement in a suspended object and unsuspending it.

    The patch carries the object's ``resourceVersion`` (a concurrent change answers 409
    Conflict: read again, patch again), the whole ``spec`` with each pod set's template
    pinned (module docstring), :data:`ANNOTATION_ADMITTED` = ``job_id`` and no pending reason.

    Raises:
        ManifestError: a pod set cannot be expressed in ``mode``.
    """
    new = copy.deepcopy(dict(obj))
    for adm in admissions:
        template = _at(new, adm.pod_set.path)
        if not isinstance(template, dict):
            raise ManifestError(f"{'.'.join(adm.pod_set.path)}: no pod template")
        _admit_template(template, adm, mode, job_id, catalogue, configs or [])
    _set(new, KINDS[kind].suspend_path, False)
    meta = obj.get("metadata") or {}
    return {
        "metadata": {
            "resourceVersion": meta.get("resourceVersion"),
            "annotations": {ANNOTATION_ADMITTED: job_id, ANNOTATION_PENDING: None},
        },
        "spec": new["spec"],
    }


def merge_diff(current: Mapping[str, Any], wanted: Mapping[str, Any]) -> dict:
    """JSON merge patch (RFC 7386) turning ``current`` into ``wanted``: keys only in
    ``current`` become null, nested mappings recurse, anything else takes ``wanted``'s."""
    out: dict[str, Any] = {}
    for key in current:
        if key not in wanted:
            out[key] = None
    for key, value in wanted.items():
        old = current.get(key)
        if isinstance(value, Mapping) and isinstance(old, Mapping):
            sub = merge_diff(old, value)
            if sub:
                out[key] = sub
        elif old != value:
            out[key] = copy.deepcopy(value)
    return out


def suspend_patch(
    kind: str, obj: Mapping[str, Any], original_spec: Mapping[str, Any] | None, reason: str
) -> dict:
    """JSON merge patch suspending an object again (preempted, or created unsuspended).

    ``original_spec`` (the spec first taken in) restores the pod templates the admission
    pinned, as Kueue restores a stopped job's pod sets; the console's admitted annotation is
    cleared and ``reason`` becomes the pending reason.
    """
    current = dict(obj.get("spec") or {})
    spec = merge_diff(current, dict(original_spec)) if original_spec else {}
    wrapper = {"spec": spec}
    _set(wrapper, KINDS[kind].suspend_path, True)
    meta = obj.get("metadata") or {}
    return {
        "metadata": {
            "resourceVersion": meta.get("resourceVersion"),
            "annotations": {ANNOTATION_ADMITTED: None, ANNOTATION_PENDING: reason[:1000]},
        },
        "spec": wrapper["spec"],
    }


def pending_patch(reason: str) -> dict:
    """Merge patch writing why the workload waits (:data:`ANNOTATION_PENDING`)."""
    return {"metadata": {"annotations": {ANNOTATION_PENDING: reason[:1000]}}}


def gate_template_patch(obj: Mapping[str, Any]) -> dict | None:
    """Merge patch adding :data:`SCHEDULING_GATE` and the queue label to a Deployment's /
    StatefulSet's pod template, or None when both are there already."""
    template = _get(obj, ("spec", "template")) or {}
    spec = template.get("spec") or {}
    gates = list(spec.get("schedulingGates") or [])
    queue = ((obj.get("metadata") or {}).get("labels") or {}).get(LABEL_QUEUE, "")
    labels = (template.get("metadata") or {}).get("labels") or {}
    has_gate = any(g.get("name") == SCHEDULING_GATE for g in gates if isinstance(g, Mapping))
    if has_gate and labels.get(LABEL_QUEUE) == queue:
        return None
    if not has_gate:
        gates.append({"name": SCHEDULING_GATE})
    return {
        "spec": {
            "template": {
                "metadata": {"labels": {LABEL_QUEUE: queue}},
                "spec": {"schedulingGates": gates},
            }
        }
    }


def pod_admission_patch(
    pod: Mapping[str, Any],
    assignment: PodAssignment,
    *,
    mode: str,
    job_id: str,
    catalogue: Catalogue | None = None,
) -> dict:
    """Merge patch admitting a gated Pod: pinned (node affinity; ``hami``: use-uuid
    annotations) and ungated (:data:`SCHEDULING_GATE` removed, other gates kept).

    Raises:
        ManifestError: ``dra`` mode (a Pod's claims cannot change after creation; use a
            Job, JobSet or PyTorchJob for DRA), or a grant the HAMi tables cannot name.
    """
    if mode == "dra":
        raise ManifestError(
            "a Deployment / StatefulSet Pod cannot get a ResourceClaim after "
            "creation; submit it as a Job, JobSet or PyTorchJob in dra mode"
        )
    spec = pod.get("spec") or {}
    meta = pod.get("metadata") or {}
    annotations: dict[str, Any] = {ANNOTATION_ADMITTED: job_id, ANNOTATION_PENDING: None}
    if mode == "hami":
        annotations.update(_pins([assignment], catalogue))
    gates = [g for g in spec.get("schedulingGates") or [] if g.get("name") != SCHEDULING_GATE]
    return {
        "metadata": {
            "resourceVersion": meta.get("resourceVersion"),
            "annotations": annotations,
            "labels": {LABEL_WORKLOAD: job_id},
        },
        "spec": {"affinity": _affinity(spec, [assignment.node]), "schedulingGates": gates},
    }


def event_body(
    *,
    kind: str,
    api_version: str,
    namespace: str,
    name: str,
    uid: str,
    reason: str,
    message: str,
    type_: str = "Normal",
    time: str,
) -> dict:
    """A core/v1 Event about an object. The name derives from the object uid, the reason and
    the message, so the same event is created once (a second create answers AlreadyExists).
    ``time`` is RFC 3339 (``2026-12-01T21:00:00Z``)."""
    digest = hashlib.sha256(f"{uid}/{reason}/{message}".encode()).hexdigest()[:12]
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{dns_label(name, max_len=40)}.{digest}", "namespace": namespace},
        "involvedObject": {
            "apiVersion": api_version,
            "kind": kind,
            "name": name,
            "namespace": namespace,
            "uid": uid,
        },
        "reason": reason,
        "message": message[:1024],
        "type": type_,
        "source": {"component": "llmops-console"},
        "reportingComponent": "llmops-console",
        "reportingInstance": "llmops-console",
        "firstTimestamp": time,
        "lastTimestamp": time,
        "count": 1,
    }
