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
pod template; the console adds it when the user left it out (one rollout).

What admission writes into a suspended object
(:func:`scheduling.kube.workload_patches.admission_patch`) is limited by what a
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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduling.devices.resources import cores_limit_error
from scheduling.devices.schema import DeviceModelConfig
from scheduling.kube.hami.pods import pod_request_from_kube
from scheduling.placement.types import PodRequest

__all__ = [
    "LABEL_QUEUE",
    "LABEL_PRIORITY",
    "LABEL_PRIORITY_CLASS",
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
    "is_suspended",
    "pod_specs",
]

LABEL_QUEUE = "console.llmops.io/queue"
"""Label naming the tenant queue a workload goes to; objects without it are left alone."""
LABEL_PRIORITY_CLASS = "kueue.x-k8s.io/priority-class"
"""Optional label: the priority class of the workload (Kueue's label for its
``WorkloadPriorityClass``), resolved against the queue as ``POST /api/jobs/`` resolves
``priority_class`` (:func:`scheduling.services.priorities.resolve_priority_class`)."""
LABEL_PRIORITY = "console.llmops.io/priority"
"""A raw priority value: read only to refuse it (as the API refuses a raw ``priority`` from
anyone but a platform admin); a workload's priority comes from its class."""
ANNOTATION_ALLOW_CONSOLIDATION = "console.llmops.io/allow-consolidation"
"""Optional annotation: ``"true"`` lets consolidation move the workload (restart it elsewhere)
to defragment its resource group (``Job.allow_consolidation``)."""
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


KINDS: dict[str, KindInfo] = {
    k.kind: k
    for k in (
        KindInfo("Job", "batch", "v1", "jobs", ("spec", "suspend")),
        KindInfo("JobSet", "jobset.x-k8s.io", "v1alpha2", "jobsets", ("spec", "suspend")),
        KindInfo(
            "PyTorchJob", "kubeflow.org", "v1", "pytorchjobs", ("spec", "runPolicy", "suspend")
        ),
        KindInfo("Deployment", "apps", "v1", "deployments"),
        KindInfo("StatefulSet", "apps", "v1", "statefulsets"),
    )
}


@dataclass(frozen=True, slots=True)
class PodSet:
    """Identical pods of one workload (Kueue ``PodSet``).

    Attributes:
        name: pod set name (``main``, a replicated job's name, ``Master`` / ``Worker``).
        count: number of pods.
        path: keys leading from the object to the pod template (``spec.template`` ...).
        request: one pod's request as the HAMi codec reads the template.
        annotations: the template's annotations (HAMi reads its per-pod ones there).
    """

    name: str
    count: int
    path: tuple[str, ...]
    request: PodRequest
    annotations: Mapping[str, str] = field(default_factory=dict)


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
        priority_class: :data:`LABEL_PRIORITY_CLASS` ("" = none asked for).
        raw_priority: :data:`LABEL_PRIORITY` as written ("" = absent; refused when given).
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
    priority_class: str = ""
    raw_priority: str = ""

    @property
    def pod_count(self) -> int:
        return sum(p.count for p in self.pod_sets)


def is_suspended(kind: str, obj: Mapping[str, Any]) -> bool:
    """Whether a taken-in kind's object (``Job``, ``JobSet``, ``PyTorchJob``) has its
    ``suspend`` field set (:attr:`KindInfo.suspend_path`); False for a kind not in
    :data:`KINDS` or held by a scheduling gate. Reads the raw object, so it answers for an
    object :func:`read_workload` refuses too."""
    info = KINDS.get(kind)
    return info is not None and bool(info.suspend_path) and bool(_get(obj, info.suspend_path))


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
        out: list[tuple[str, int, tuple[str, ...]]] = []
        for i, rj in enumerate(jobs):
            w = f"spec.replicatedJobs[{i}]"
            if not isinstance(rj, Mapping) or not rj.get("name"):
                raise WorkloadError(f"{w}.name: required")
            replicas = _int(rj.get("replicas"), f"{w}.replicas", 1)
            pods = _job_pods(_get(rj, ("template", "spec")), f"{w}.template.spec")
            out.append(
                (
                    str(rj["name"]),
                    replicas * pods,
                    ("spec", "replicatedJobs", str(i), "template", "spec", "template"),
                )
            )
        return out
    if kind == "PyTorchJob":
        specs = spec.get("pytorchReplicaSpecs")
        if not isinstance(specs, Mapping) or not specs:
            raise WorkloadError("spec.pytorchReplicaSpecs: required")
        # Master first (rank 0), then the others by name: a stable order
        names = sorted(specs, key=lambda n: (n != "Master", n))
        return [
            (
                n,
                _int(_get(specs, (n, "replicas")), f"spec.pytorchReplicaSpecs.{n}.replicas", 1),
                ("spec", "pytorchReplicaSpecs", n, "template"),
            )
            for n in names
        ]
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
        names = (c.resource_count, c.resource_memory, c.resource_memory_percent, c.resource_cores)
        if not any(names) or names in seen:
            continue
        seen.add(names)
        out.append(c)
    return out


def _request(template: Any, where: str, configs: list[DeviceModelConfig]) -> PodRequest:
    if not isinstance(template, Mapping):
        raise WorkloadError(f"{where}: required")
    pod = {"kind": "Pod", "metadata": template.get("metadata") or {}, "spec": template.get("spec")}
    read = codec_configs(configs)
    try:
        request = pod_request_from_kube(pod, read, where)
    except ValueError as exc:
        raise WorkloadError(str(exc)) from None
    _check_cores(request, read, where)
    return request


def _check_cores(request: PodRequest, configs: list[DeviceModelConfig], where: str) -> None:
    """Refuse cores above the vendor's limit per device (``nvidia.com/gpucores: 150``), where
    HAMi books 100 % (issue 29; :func:`scheduling.devices.resources.cores_limit_error`, the
    rule the placement core applies too).

    Raises:
        WorkloadError: in HAMi's words, naming the container and the resource.
    """
    for c in request.containers:
        for d in c.devices:
            resource = next(
                (g.resource_cores for g in configs if g.vendor == d.vendor and g.resource_cores),
                f"{d.vendor} cores",
            )
            why = cores_limit_error(d.cores_percent, d.vendor, resource)
            if why:
                raise WorkloadError(f"{where}: container {c.name!r}: {why}")


def _active(value: Any) -> int:
    """A status count as written by the object's controller; anything but a non-negative
    integer (a garbled or hand-patched status) counts as 0 instead of stopping the sync."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _finished(kind: str, obj: Mapping[str, Any]) -> tuple[str, int]:
    status = obj.get("status")
    status = status if isinstance(status, Mapping) else {}
    conditions = status.get("conditions")
    conds = {
        c.get("type"): c.get("status")
        for c in (conditions if isinstance(conditions, list) else [])
        if isinstance(c, Mapping)
    }
    if (
        conds.get("Complete") == "True"
        or conds.get("Completed") == "True"
        or conds.get("Succeeded") == "True"
    ):
        return "succeeded", 0
    if conds.get("Failed") == "True":
        return "failed", 0
    if kind == "Job":
        return "", _active(status.get("active"))
    if kind == "JobSet":
        jobs = status.get("replicatedJobsStatus")
        return "", sum(
            _active(r.get("active"))
            for r in (jobs if isinstance(jobs, list) else [])
            if isinstance(r, Mapping)
        )
    if kind == "PyTorchJob":
        replicas = status.get("replicaStatuses")
        return "", sum(
            _active(r.get("active"))
            for r in (replicas.values() if isinstance(replicas, Mapping) else [])
            if isinstance(r, Mapping)
        )
    return "", 0


def read_workload(kind: str, obj: Mapping[str, Any], configs: list[DeviceModelConfig]) -> Workload:
    """A suspendable object (Job, JobSet, PyTorchJob) as a :class:`Workload`.

    Raises:
        WorkloadError: the object's shape or a template's HAMi resources are invalid (the
            message names the field, e.g. ``spec.template.spec.containers[0].resources
            .limits.nvidia.com/gpumem: ...``).
    """
    meta = obj.get("metadata") or {}
    sets = []
    for name, count, path in _pod_sets_of(kind, obj):
        where = ".".join(path)
        template = _at(obj, path)
        request = _request(template, where, configs)
        sets.append(PodSet(name, count, path, request, _annotations(template)))
    if not any(p.count for p in sets):
        raise WorkloadError("the workload runs no pods (every count is 0)")
    finished, active = _finished(kind, obj)
    return Workload(
        kind=kind,
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name")),
        uid=str(meta.get("uid") or ""),
        queue=str((meta.get("labels") or {}).get(LABEL_QUEUE, "")),
        suspended=is_suspended(kind, obj),
        pod_sets=tuple(sets),
        finished=finished,
        active=active,
        resource_version=str(meta.get("resourceVersion") or ""),
        generation=int(meta.get("generation") or 0),
        annotations=dict(meta.get("annotations") or {}),
        priority_class=_label(meta, LABEL_PRIORITY_CLASS),
        raw_priority=_label(meta, LABEL_PRIORITY),
    )


def _annotations(obj: Any) -> dict[str, str]:
    """A template's (or Pod's) ``metadata.annotations`` as strings ({} when malformed)."""
    meta = _get(obj, ("metadata",))
    ann = meta.get("annotations") if isinstance(meta, Mapping) else None
    return {str(k): str(v) for k, v in ann.items()} if isinstance(ann, Mapping) else {}


def _label(meta: Mapping[str, Any], key: str) -> str:
    """A label's value as written ("" when absent); the intake judges it, not this module."""
    return str((meta.get("labels") or {}).get(key, "")).strip()


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
        kind="Pod",
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name")),
        uid=str(meta.get("uid") or ""),
        queue=str((meta.get("labels") or {}).get(LABEL_QUEUE, "")),
        suspended=SCHEDULING_GATE in gates,
        pod_sets=(PodSet("main", 1, ("spec",), request, _annotations(pod)),),
        finished={"Succeeded": "succeeded", "Failed": "failed"}.get(str(phase), ""),
        active=1 if phase == "Running" else 0,
        resource_version=str(meta.get("resourceVersion") or ""),
        annotations=dict(meta.get("annotations") or {}),
        priority_class=_label(meta, LABEL_PRIORITY_CLASS),
        raw_priority=_label(meta, LABEL_PRIORITY),
    )


def pod_specs(obj: Mapping[str, Any], workload: Workload) -> list[tuple[str, Any]]:
    """``(path, pod spec)`` of each pod set of ``workload`` read from ``obj``: a template's
    ``spec`` (``spec.template.spec``, ...), or a gated Pod's own ``spec``."""
    if workload.kind == "Pod":
        return [("spec", obj.get("spec"))]
    return [
        (".".join((*p.path, "spec")), _get(_at(obj, p.path), ("spec",))) for p in workload.pod_sets
    ]


def pod_owner(pod: Mapping[str, Any]) -> tuple[str, str]:
    """(kind, name) of a Pod's controller (``ReplicaSet``/``StatefulSet``), or ("", "")."""
    return _owner(pod.get("metadata") or {})
