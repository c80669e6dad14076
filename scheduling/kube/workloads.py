"""Workloads users create with kubectl: read them, and the patches that admit or suspend them.

Pure (dicts in, dicts out). The console takes in five kinds labelled
``console.llmops.io/queue: <queue>`` (:data:`LABEL_QUEUE`), following Kueue's job integrations
(``pkg/controller/jobs/``):

===========================  =================================  ===============================
kind (apiVersion)            pod sets                           held back by
===========================  =================================  ===============================
Job (batch/v1)               one, ``min(parallelism, completions)`` pods   ``spec.suspend``
JobSet (jobset.x-k8s.io/     one per ``replicatedJobs[]``:      ``spec.suspend``
v1alpha2)                    ``replicas`` x the job's pods
PyTorchJob (kubeflow.org/v1) one per ``pytorchReplicaSpecs``    ``spec.runPolicy.suspend``
                             entry (Master, Worker): replicas
Deployment, StatefulSet      one single-pod workload per Pod    the Pod's scheduling gate
(apps/v1)                    (Kueue's pod integration)          :data:`SCHEDULING_GATE`
===========================  =================================  ===============================

Device requests come from the HAMi resources of each pod template through the HAMi codec
(:func:`scheduling.kube.hami.pods.pod_request_from_kube`), so a template is read exactly as
HAMi's webhook reads a Pod.

Why a scheduling gate for Deployments and StatefulSets: they have no ``suspend``, and holding
``replicas`` at 0 would fight the user's (or an autoscaler's) own writes to that field. A Pod
created with ``spec.schedulingGates`` is not scheduled until every gate is removed
(KEP-3521), and while gated its node affinity may still be narrowed and its annotations set
(KEP-3838). So each Pod is one single-pod workload, as Kueue's pod integration does with its
``kueue.x-k8s.io/admission`` gate: admitting it pins it (annotations, node affinity) and
removes :data:`SCHEDULING_GATE`; preempting it deletes the Pod, and the ReplicaSet /
StatefulSet controller creates a new, gated one that queues again. The gate must be in the
pod template; :func:`gate_template_patch` adds it when the user left it out (one rollout).

What admission writes into a suspended object (:func:`admission_patch`) is limited by what a
suspended Job's template lets one change (KEP-2926, "mutable scheduling directives"): node
affinity, labels and annotations. Node affinity ANDs ``metadata.name In [nodes]`` into every
required term the user wrote; in ``hami`` mode the pod template also gets each vendor's
use-uuid annotation listing the devices the console reserved for that pod set (HAMi's
webhook sets the scheduler name; a Job's ``schedulerName`` cannot change). A pod set of
several pods shares one template, so the annotation and the node list are the union over
its pods: the console reserved exactly that capacity, so HAMi finds room for every pod in it.
``dra`` mode creates one ResourceClaimTemplate per pod set (each pod gets its own claim), with
each request's CEL selector the OR of what each pod was granted, and points the template's
containers at it in place of their HAMi resources. ``whole`` mode pins the nodes only.
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
from scheduling.kube.hami.pods import pod_request_from_kube
from scheduling.kube.manifests import (
    POD_CLAIM_NAME,
    _dra_requests,
    _group_by_vendor,
)
from scheduling.kube.names import dns_label
from scheduling.placement.types import PodAssignment, PodRequest

__all__ = [
    "LABEL_QUEUE",
    "LABEL_PRIORITY",
    "LABEL_WORKLOAD",
    "ANNOTATION_PENDING",
    "ANNOTATION_ADMITTED",
    "SCHEDULING_GATE",
    "KINDS",
    "KindInfo",
    "PodSet",
    "Workload",
    "WorkloadError",
    "read_workload",
    "read_gated_pod",
    "admission_patch",
    "suspend_patch",
    "pending_patch",
    "gate_template_patch",
    "pod_admission_patch",
    "claim_template",
    "event_body",
]

LABEL_QUEUE = "console.llmops.io/queue"
"""Label naming the tenant queue a workload goes to; objects without it are left alone."""
LABEL_PRIORITY = "console.llmops.io/priority"
"""Optional label: the workload's priority in its queue (an integer, default 0; Kueue reads a
``kueue.x-k8s.io/priority-class`` instead)."""
LABEL_WORKLOAD = "console.llmops.io/workload"
"""Label the console puts on an admitted pod template: the console's job id."""
ANNOTATION_PENDING = "console.llmops.io/pending-reason"
"""Why the workload waits (the admission cycle's verdict), on the object."""
ANNOTATION_ADMITTED = "console.llmops.io/admitted"
"""The console job id whose placement is recorded in the object ("" while queued)."""
SCHEDULING_GATE = "console.llmops.io/admission"
"""Pod scheduling gate holding a Deployment / StatefulSet Pod until the console admits it."""


class WorkloadError(ValueError):
    """The object cannot be taken in (message names the field)."""


@dataclass(frozen=True, slots=True)
class KindInfo:
    """Where a kind lives in the API and how it is suspended.

    Attributes:
        kind / group / version / plural: API coordinates.
        suspend_path: keys of the boolean ``suspend`` field under the object, or () for kinds
            held by the pods' scheduling gate.
    """

    kind: str
    group: str
    version: str
    plural: str
    suspend_path: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


KINDS: dict[str, KindInfo] = {k.kind: k for k in (
    KindInfo("Job", "batch", "v1", "jobs", ("spec", "suspend")),
    KindInfo("JobSet", "jobset.x-k8s.io", "v1alpha2", "jobsets", ("spec", "suspend")),
    KindInfo("PyTorchJob", "kubeflow.org", "v1", "pytorchjobs",
             ("spec", "runPolicy", "suspend")),
    KindInfo("Deployment", "apps", "v1", "deployments"),
    KindInfo("StatefulSet", "apps", "v1", "statefulsets"),
)}


@dataclass(frozen=True, slots=True)
class PodSet:
    """Identical pods of one workload (Kueue ``PodSet``).

    Attributes:
        name: pod set name (``main``, a replicated job's name, ``Master`` / ``Worker``).
        count: number of pods.
        path: keys leading from the object to the pod template (``spec.template`` ...).
        request: one pod's request as the HAMi codec reads the template.
    """

    name: str
    count: int
    path: tuple[str, ...]
    request: PodRequest


@dataclass(frozen=True, slots=True)
class Workload:
    """A labelled object as the console sees it.

    Attributes:
        kind / namespace / name / uid / queue: identity and the queue label's value.
        suspended: held back (suspend true, or the Pod still carries the gate).
        pod_sets: the pods it needs, in template order.
        finished: "" while live, ``"succeeded"`` / ``"failed"`` once its status says so.
        active: pods the object's status reports running or active.
        resource_version / generation: of the object read.
        priority: :data:`LABEL_PRIORITY`.
    """

    kind: str
    namespace: str
    name: str
    uid: str
    queue: str
    suspended: bool
    pod_sets: tuple[PodSet, ...] = ()
    finished: str = ""
    active: int = 0
    resource_version: str = ""
    generation: int = 0
    annotations: Mapping[str, str] = field(default_factory=dict)
    priority: int = 0

    @property
    def pod_count(self) -> int:
        return sum(p.count for p in self.pod_sets)


def _get(obj: Any, path: Sequence[str]) -> Any:
    for key in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def _int(value: Any, where: str, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise WorkloadError(f"{where}: must be a non-negative integer, got {value!r}")
    return value


def _job_pods(job_spec: Any, where: str) -> int:
    """Pods a Job runs at once: ``parallelism`` (default 1) capped by ``completions``."""
    if not isinstance(job_spec, Mapping):
        raise WorkloadError(f"{where}: required")
    parallelism = _int(job_spec.get("parallelism"), f"{where}.parallelism", 1)
    completions = job_spec.get("completions")
    if completions is not None:
        parallelism = min(parallelism, _int(completions, f"{where}.completions", 1))
    return parallelism


def _pod_sets_of(kind: str, obj: Mapping[str, Any]) -> list[tuple[str, int, tuple[str, ...]]]:
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        raise WorkloadError("spec: required")
    if kind == "Job":
        return [("main", _job_pods(spec, "spec"), ("spec", "template"))]
    if kind == "JobSet":
        jobs = spec.get("replicatedJobs")
        if not isinstance(jobs, list) or not jobs:
            raise WorkloadError("spec.replicatedJobs: required")
        out = []
        for i, rj in enumerate(jobs):
            w = f"spec.replicatedJobs[{i}]"
            if not isinstance(rj, Mapping) or not rj.get("name"):
                raise WorkloadError(f"{w}.name: required")
            replicas = _int(rj.get("replicas"), f"{w}.replicas", 1)
            pods = _job_pods(_get(rj, ("template", "spec")), f"{w}.template.spec")
            out.append((str(rj["name"]), replicas * pods,
                        ("spec", "replicatedJobs", str(i), "template", "spec", "template")))
        return out
    if kind == "PyTorchJob":
        specs = spec.get("pytorchReplicaSpecs")
        if not isinstance(specs, Mapping) or not specs:
            raise WorkloadError("spec.pytorchReplicaSpecs: required")
        # Master first (rank 0), then the others by name: a stable order
        names = sorted(specs, key=lambda n: (n != "Master", n))
        return [(n, _int(_get(specs, (n, "replicas")), f"spec.pytorchReplicaSpecs.{n}"
                         ".replicas", 1), ("spec", "pytorchReplicaSpecs", n, "template"))
                for n in names]
    raise WorkloadError(f"kind {kind!r} is not taken in as a whole object")


def _at(obj: Any, path: Sequence[str]) -> Any:
    """Like :func:`_get`, with digit keys indexing lists."""
    for key in path:
        if isinstance(obj, list) and key.isdigit() and int(key) < len(obj):
            obj = obj[int(key)]
        elif isinstance(obj, Mapping):
            obj = obj.get(key)
        else:
            return None
    return obj


def codec_configs(configs: Sequence[DeviceModelConfig]) -> list[DeviceModelConfig]:
    """One config per set of HAMi resource names, the first in catalogue order (vendor
    defaults come first), so a template asking ``nvidia.com/gpu`` yields one request however
    many NVIDIA models the catalogue knows; per-model names (Cambricon ``<model>.smlu``)
    keep their own config."""
    out, seen = [], set()
    for c in configs:
        names = (c.resource_count, c.resource_memory, c.resource_memory_percent,
                 c.resource_cores)
        if not any(names) or names in seen:
            continue
        seen.add(names)
        out.append(c)
    return out


def _request(template: Any, where: str, configs: list[DeviceModelConfig]) -> PodRequest:
    if not isinstance(template, Mapping):
        raise WorkloadError(f"{where}: required")
    pod = {"kind": "Pod", "metadata": template.get("metadata") or {},
           "spec": template.get("spec")}
    try:
        return pod_request_from_kube(pod, codec_configs(configs), where)
    except ValueError as exc:
        raise WorkloadError(str(exc)) from None


def _finished(kind: str, obj: Mapping[str, Any]) -> tuple[str, int]:
    status = obj.get("status") or {}
    conds = {c.get("type"): c.get("status") for c in status.get("conditions") or []
             if isinstance(c, Mapping)}
    if conds.get("Complete") == "True" or conds.get("Completed") == "True" \
            or conds.get("Succeeded") == "True":
        return "succeeded", 0
    if conds.get("Failed") == "True":
        return "failed", 0
    if kind == "Job":
        return "", int(status.get("active") or 0)
    if kind == "JobSet":
        return "", sum(int(r.get("active") or 0) for r in status.get("replicatedJobsStatus")
                       or [] if isinstance(r, Mapping))
    if kind == "PyTorchJob":
        return "", sum(int((r or {}).get("active") or 0)
                       for r in (status.get("replicaStatuses") or {}).values()
                       if isinstance(r, Mapping))
    return "", 0


def read_workload(kind: str, obj: Mapping[str, Any], configs: list[DeviceModelConfig]
                  ) -> Workload:
    """A suspendable object (Job, JobSet, PyTorchJob) as a :class:`Workload`.

    Raises:
        WorkloadError: the object's shape or a template's HAMi resources are invalid (the
            message names the field, e.g. ``spec.template.spec.containers[0].resources
            .limits.nvidia.com/gpumem: ...``).
    """
    info = KINDS[kind]
    meta = obj.get("metadata") or {}
    sets = []
    for name, count, path in _pod_sets_of(kind, obj):
        where = ".".join(path)
        request = _request(_at(obj, path), where, configs)
        sets.append(PodSet(name, count, path, request))
    if not any(p.count for p in sets):
        raise WorkloadError("the workload runs no pods (every count is 0)")
    finished, active = _finished(kind, obj)
    return Workload(
        kind=kind, namespace=str(meta.get("namespace") or ""), name=str(meta.get("name")),
        uid=str(meta.get("uid") or ""), queue=str((meta.get("labels") or {}).get(LABEL_QUEUE,
                                                                                  "")),
        suspended=bool(_get(obj, info.suspend_path)), pod_sets=tuple(sets),
        finished=finished, active=active,
        resource_version=str(meta.get("resourceVersion") or ""),
        generation=int(meta.get("generation") or 0),
        annotations=dict(meta.get("annotations") or {}), priority=_priority(meta))


def _priority(meta: Mapping[str, Any]) -> int:
    value = str((meta.get("labels") or {}).get(LABEL_PRIORITY, "0")).strip()
    try:
        priority = int(value)
    except ValueError:
        raise WorkloadError(f"metadata.labels.{LABEL_PRIORITY}: {value!r} is not an integer"
                            ) from None
    if abs(priority) > 1_000_000_000:
        raise WorkloadError(f"metadata.labels.{LABEL_PRIORITY}: {priority} is out of range")
    return priority


def _owner(meta: Mapping[str, Any]) -> tuple[str, str]:
    for ref in meta.get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller"):
            return str(ref.get("kind") or ""), str(ref.get("name") or "")
    return "", ""


def read_gated_pod(pod: Mapping[str, Any], configs: list[DeviceModelConfig]) -> Workload:
    """A Pod of a labelled Deployment / StatefulSet as a single-pod :class:`Workload`.

    ``suspended`` is True while the Pod still carries :data:`SCHEDULING_GATE`.

    Raises:
        WorkloadError: the Pod's HAMi resources are invalid.
    """
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    gates = {g.get("name") for g in spec.get("schedulingGates") or [] if isinstance(g, Mapping)}
    phase = (pod.get("status") or {}).get("phase")
    request = _request({"metadata": meta, "spec": spec}, "spec", configs)
    return Workload(
        kind="Pod", namespace=str(meta.get("namespace") or ""), name=str(meta.get("name")),
        uid=str(meta.get("uid") or ""), queue=str((meta.get("labels") or {}).get(LABEL_QUEUE,
                                                                                  "")),
        suspended=SCHEDULING_GATE in gates,
        pod_sets=(PodSet("main", 1, ("spec",), request),),
        finished={"Succeeded": "succeeded", "Failed": "failed"}.get(str(phase), ""),
        active=1 if phase == "Running" else 0,
        resource_version=str(meta.get("resourceVersion") or ""),
        annotations=dict(meta.get("annotations") or {}), priority=_priority(meta))


def pod_owner(pod: Mapping[str, Any]) -> tuple[str, str]:
    """(kind, name) of a Pod's controller (``ReplicaSet``/``StatefulSet``), or ("", "")."""
    return _owner(pod.get("metadata") or {})


# ------------------------------------------------------------------------------------------
# Patches
# ------------------------------------------------------------------------------------------


def _affinity(spec: Mapping[str, Any], nodes: Sequence[str]) -> dict:
    """``spec.affinity`` with ``metadata.name In nodes`` ANDed into every required term."""
    affinity = copy.deepcopy(dict(spec.get("affinity") or {}))
    node_aff = affinity.setdefault("nodeAffinity", {})
    required = node_aff.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    terms = required.get("nodeSelectorTerms") or [{}]
    pin = {"key": "metadata.name", "operator": "In", "values": sorted(set(nodes))}
    required["nodeSelectorTerms"] = [
        {**t, "matchFields": [*(t.get("matchFields") or []), pin]} for t in terms]
    return affinity


def _pins(assignments: Sequence[PodAssignment], catalogue: Catalogue | None) -> dict[str, str]:
    """Each vendor's use-uuid annotation listing every device granted to ``assignments``."""
    pins: dict[str, list[str]] = {}
    for a in assignments:
        for c in a.containers:
            for (vendor, chip), grants in _group_by_vendor(c.devices).items():
                key = model_resources(vendor, chip, grants, catalogue).use_uuid.format(
                    chip=chip)
                for g in grants:
                    if g.uuid not in pins.setdefault(key, []):
                        pins[key].append(g.uuid)
    return {k: ",".join(v) for k, v in pins.items() if k}


def claim_template_name(workload: Workload, pod_set: str) -> str:
    """Deterministic ResourceClaimTemplate name of one pod set (DNS label)."""
    return dns_label(workload.name, pod_set, "devices")


def claim_template(workload: Workload, pod_set: PodSet, assignments: Sequence[PodAssignment],
                   drivers: Mapping[str, DraDriver], api_version: str, job_id: str
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
        per_pod.append({c.name: _dra_requests(c, drivers) for c in a.containers})
    first = per_pod[0]
    requests: list[dict] = []
    refs: dict[str, list[str]] = {}
    for cname, reqs in first.items():
        for i, req in enumerate(reqs):
            exprs = []
            for other in per_pod:
                if len(other.get(cname, [])) != len(reqs):
                    raise ManifestError(f"pod set {pod_set.name!r}: pods were granted "
                                        "differently shaped device requests")
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
    template = {"apiVersion": api_version, "kind": "ResourceClaimTemplate",
                "metadata": {"name": claim_template_name(workload, pod_set.name),
                             "namespace": workload.namespace,
                             "labels": {LABEL_WORKLOAD: job_id}},
                "spec": {"spec": {"devices": devices}}}
    return template, refs


def _strip_hami(spec: dict, configs: list[DeviceModelConfig]) -> None:
    names = {n for c in configs for n in (c.resource_count, c.resource_memory,
                                          c.resource_memory_percent, c.resource_cores) if n}
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


def _admit_template(template: dict, admission: Admission, mode: str, job_id: str,
                    catalogue: Catalogue | None, configs: list[DeviceModelConfig]) -> None:
    meta = template.setdefault("metadata", {})
    spec = template.setdefault("spec", {})
    meta.setdefault("labels", {})[LABEL_WORKLOAD] = job_id
    nodes = [a.node for a in admission.assignments]
    spec["affinity"] = _affinity(spec, nodes)
    if mode == "hami":
        meta.setdefault("annotations", {}).update(_pins(admission.assignments, catalogue))
    elif mode == "dra" and admission.claim_template:
        _strip_hami(spec, configs)
        claims = [c for c in spec.get("resourceClaims") or []
                  if c.get("name") != POD_CLAIM_NAME]
        spec["resourceClaims"] = [*claims, {"name": POD_CLAIM_NAME,
                                            "resourceClaimTemplateName":
                                                admission.claim_template}]
        for kind in ("initContainers", "containers"):
            for c in spec.get(kind) or []:
                wanted = admission.claim_requests.get(c.get("name"), ())
                if wanted:
                    res = c.setdefault("resources", {})
                    res["claims"] = [*(x for x in res.get("claims") or []
                                       if x.get("name") != POD_CLAIM_NAME),
                                     *({"name": POD_CLAIM_NAME, "request": r} for r in wanted)]


def _set(obj: dict, path: Sequence[str], value: Any) -> None:
    for key in path[:-1]:
        obj = obj[int(key)] if isinstance(obj, list) else obj.setdefault(key, {})
    obj[path[-1]] = value


def admission_patch(kind: str, obj: Mapping[str, Any], admissions: Sequence[Admission], *,
                    mode: str, job_id: str, catalogue: Catalogue | None = None,
                    configs: list[DeviceModelConfig] | None = None) -> dict:
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
    return {"metadata": {"resourceVersion": meta.get("resourceVersion"),
                         "annotations": {ANNOTATION_ADMITTED: job_id,
                                         ANNOTATION_PENDING: None}},
            "spec": new["spec"]}


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


def suspend_patch(kind: str, obj: Mapping[str, Any], original_spec: Mapping[str, Any] | None,
                  reason: str) -> dict:
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
    return {"metadata": {"resourceVersion": meta.get("resourceVersion"),
                         "annotations": {ANNOTATION_ADMITTED: None,
                                         ANNOTATION_PENDING: reason[:1000]}},
            "spec": wrapper["spec"]}


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
    return {"spec": {"template": {"metadata": {"labels": {LABEL_QUEUE: queue}},
                                  "spec": {"schedulingGates": gates}}}}


def pod_admission_patch(pod: Mapping[str, Any], assignment: PodAssignment, *, mode: str,
                        job_id: str, catalogue: Catalogue | None = None) -> dict:
    """Merge patch admitting a gated Pod: pinned (node affinity; ``hami``: use-uuid
    annotations) and ungated (:data:`SCHEDULING_GATE` removed, other gates kept).

    Raises:
        ManifestError: ``dra`` mode (a Pod's claims cannot change after creation; use a
            Job, JobSet or PyTorchJob for DRA), or a grant the HAMi tables cannot name.
    """
    if mode == "dra":
        raise ManifestError("a Deployment / StatefulSet Pod cannot get a ResourceClaim after "
                            "creation; submit it as a Job, JobSet or PyTorchJob in dra mode")
    spec = pod.get("spec") or {}
    meta = pod.get("metadata") or {}
    annotations: dict[str, Any] = {ANNOTATION_ADMITTED: job_id, ANNOTATION_PENDING: None}
    if mode == "hami":
        annotations.update(_pins([assignment], catalogue))
    gates = [g for g in spec.get("schedulingGates") or [] if g.get("name") != SCHEDULING_GATE]
    return {"metadata": {"resourceVersion": meta.get("resourceVersion"),
                         "annotations": annotations,
                         "labels": {LABEL_WORKLOAD: job_id}},
            "spec": {"affinity": _affinity(spec, [assignment.node]),
                     "schedulingGates": gates}}


def event_body(*, kind: str, api_version: str, namespace: str, name: str, uid: str,
               reason: str, message: str, type_: str = "Normal", time: str) -> dict:
    """A core/v1 Event about an object. The name derives from the object uid, the reason and
    the message, so the same event is created once (a second create answers AlreadyExists).
    ``time`` is RFC 3339 (``2026-12-01T21:00:00Z``)."""
    digest = hashlib.sha256(f"{uid}/{reason}/{message}".encode()).hexdigest()[:12]
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": f"{dns_label(name, max_len=40)}.{digest}", "namespace": namespace},
        "involvedObject": {"apiVersion": api_version, "kind": kind, "name": name,
                           "namespace": namespace, "uid": uid},
        "reason": reason, "message": message[:1024], "type": type_,
        "source": {"component": "llmops-console"},
        "reportingComponent": "llmops-console", "reportingInstance": "llmops-console",
        "firstTimestamp": time, "lastTimestamp": time, "count": 1,
    }
