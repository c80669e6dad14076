"""What console job a workload taken in from a cluster becomes
(:mod:`scheduling.services.intake`): one pod set per template, each container's HAMi request
as a :class:`~scheduling.services.jobs.ContainerSpec`."""

from __future__ import annotations

from scheduling.choices import JOB_SOURCE_KUBE, JobKind
from scheduling.kube import workloads as wl
from scheduling.kube.hami.requests import pin_annotation_names
from scheduling.kube.topology import read_topology_annotations
from scheduling.models import PriorityClass
from scheduling.selectors.topology import TopologyRefused, TopologySpec, resolve_topology_spec
from scheduling.services.jobs import ContainerSpec, JobSpec, PodSetSpec, spec_bound_errors
from tenants.models import ResourceGroup

__all__ = ["job_spec", "TRAINING_OBJECT_KINDS"]


def _container_specs(pod_set: wl.PodSet) -> list[ContainerSpec]:
    out = []
    for c in pod_set.request.containers:
        if not c.devices:
            out.append(ContainerSpec(name=c.name, init=c.init, device_count=0))
            continue
        if len(c.devices) > 1:
            raise wl.WorkloadError(
                f"container {c.name!r} asks for devices of several vendors; "
                "the console admits one device request per container"
            )
        d = c.devices[0]
        types = list(d.types_include) or ([d.chip] if d.chip else [])
        out.append(
            ContainerSpec(
                name=c.name,
                init=c.init,
                vendor=d.vendor,
                device_count=d.count,
                device_memory_mib=d.memory_mib,
                memory_percent=d.memory_percent,
                cores_percent=d.cores_percent,  # above 100 refused when read (workloads)
                device_types=types,
                device_types_exclude=list(d.types_exclude),
            )
        )
    return out


def _pin_annotations(workload: wl.Workload) -> dict[str, str]:
    """The HAMi device pins of the workload's pod templates (use/nouse uuid, numa-bind:
    :func:`~scheduling.kube.hami.requests.pin_annotation_names`) as the job's annotations,
    which placement reads as it reads an API job's.

    Raises:
        WorkloadError: pod sets pin differently (a job carries one set of pins).
    """
    names = pin_annotation_names()
    per_set = [{k: v for k, v in p.annotations.items() if k in names} for p in workload.pod_sets]
    differ = sorted({k for a in per_set for k in a if any(b.get(k) != a[k] for b in per_set)})
    if differ:
        raise wl.WorkloadError(
            f"the pod templates set {', '.join(differ)} differently; the console places a "
            "workload with one set of device pins (give every template the same, or split it)"
        )
    return per_set[0] if per_set else {}


def _topology(pod_set: wl.PodSet, group: ResourceGroup | None) -> TopologySpec:
    """The pod set's topology request from its template's Kueue TAS annotations
    (:mod:`scheduling.kube.topology`), its levels resolved against ``group``'s topology.

    Raises:
        WorkloadError: malformed annotations, an unknown level (naming the topology's
            levels), or a request on a group without a topology.
    """
    asked = read_topology_annotations(pod_set.annotations, f"pod set {pod_set.name}")
    spec = TopologySpec(*asked)
    if not spec.asks or group is None:
        return TopologySpec(group=spec.group)
    try:
        return resolve_topology_spec(group, spec, pod_set.count)
    except TopologyRefused as exc:
        raise wl.WorkloadError(f"pod set {pod_set.name}: {exc.message}") from None


TRAINING_OBJECT_KINDS = ("JobSet", "PyTorchJob")
"""Object kinds taken in as ``training`` jobs (ranked, gang-scheduled pods); a batch/v1 Job is
``batch`` and a gated Deployment / StatefulSet replica too: each is a single queued pod, and
the console's ``inference`` kind is a service it runs itself (never queued)."""


def job_spec(
    workload: wl.Workload,
    priority_class: PriorityClass | None = None,
    group: ResourceGroup | None = None,
) -> JobSpec:
    """The console job of a workload: one pod set per template, ``pod_count`` their sum;
    ``kind`` training for a JobSet or PyTorchJob, else batch. ``priority_class`` (resolved
    by :func:`scheduling.services.priorities.resolve_priority_class`) gives the priority and
    whether the job is preemptible, as an API submission's class does (none: 0, preemptible).
    Each pod set's Kueue topology annotations become its topology request, resolved against
    ``group`` (the queue's resource group).

    Raises:
        WorkloadError: a container asks several vendors, a size is beyond the bounds of
            :func:`scheduling.services.jobs.spec_bound_errors` (e.g. a JobSet of 10^10 pods),
            or a topology annotation is refused (:func:`_topology`).
    """
    sets = [
        PodSetSpec(
            name=p.name[:63],
            count=p.count,
            containers=_container_specs(p),
            cpu_milli=p.request.cpu_milli,
            host_memory_mib=p.request.memory_mib,
            topology=_topology(p, group),
        )
        for p in workload.pod_sets
    ]
    name = f"{workload.kind}/{workload.namespace}/{workload.name}"[:200]
    spec = JobSpec(
        name=name,
        containers=[],
        pod_count=workload.pod_count,
        priority=priority_class.value if priority_class is not None else 0,
        priority_class=priority_class,
        preemptible=priority_class is None or priority_class.preemptible,
        cpu_milli=sets[0].cpu_milli,
        host_memory_mib=sets[0].host_memory_mib,
        source=JOB_SOURCE_KUBE,
        restart_policy="OnFailure",
        pod_sets=sets,
        kind=JobKind.TRAINING if workload.kind in TRAINING_OBJECT_KINDS else JobKind.BATCH,
        allow_consolidation=workload.annotations.get(wl.ANNOTATION_ALLOW_CONSOLIDATION) == "true",
        annotations=_pin_annotations(workload),
    )
    errors = spec_bound_errors(spec)
    if errors:
        raise wl.WorkloadError("; ".join(errors))
    return spec
