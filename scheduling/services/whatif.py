"""What-if simulation runs: validate and store a request, then replay it in a worker.

A run replays a workload on a resource group's nodes (as registered, empty) under each chosen
placement policy (:func:`scheduling.placement.whatif.run.replay_policy`) and stores one result per
policy. The workload is either

* the group's newest :data:`RECENT_JOBS` jobs: arrival = submit time, run time = the declared
  ``duration_s``, tenant = the job's tenant, shape = the job's device request
  (:func:`scheduling.selectors.demand.job_demands`; one trace pod per pod of the job); or
* an uploaded Alibaba ``openb_pod_list`` CSV (the placement lab's reader, so the same columns
  and errors as ``manage.py import_trace``): pods with ``creation_time`` and
  ``deletion_time``, the first :data:`MAX_PODS` by creation time, tenant = ``qos`` (the trace
  names no user).

Quotas are ``{tenant: nominal milli-GPU}`` (a tenant without one is not limited).
"""

from __future__ import annotations

import logging
import tempfile
from collections import Counter
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from core.exceptions import DomainError
from scheduling.dispatch import enqueue_whatif
from scheduling.models import Job, SimulationRun, SimulationState
from scheduling.placement.whatif.policies import POLICY_NAMES
from scheduling.placement.whatif.run import SimPod, replay_policy
from scheduling.placement.whatif.trace import NodeRecord, PodRecord, TraceError, read_pods
from scheduling.selectors.demand import job_demands
from scheduling.selectors.snapshot import build_cluster_snapshot
from tenants.models import Quota, ResourceGroup

logger = logging.getLogger(__name__)

__all__ = [
    "POLICY_NAMES",
    "MAX_PODS",
    "MAX_TRACE_BYTES",
    "RECENT_JOBS",
    "parse_quotas",
    "create_run",
    "group_quotas",
    "run_whatif",
    "group_nodes",
    "group_workload",
    "trace_workload",
]

#: Most pods replayed per run (the first by arrival).
MAX_PODS = 3000
#: Largest accepted trace upload.
MAX_TRACE_BYTES = 5 * 1024 * 1024
#: Jobs of a group replayed without a trace.
RECENT_JOBS = 500


def parse_quotas(text: str) -> dict[str, int]:
    """``"tenant = devices"`` lines (``#`` comments, blank lines ignored) to
    ``{tenant: milli-GPU}``.

    Raises:
        DomainError: a malformed line, a negative or non-numeric amount, a repeated tenant
            (the message names the line).
    """
    out: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, amount = (part.strip() for part in line.partition("="))
        if not sep or not name:
            raise DomainError(f"quota line {number}: expected 'tenant = devices', got {raw!r}")
        try:
            devices = float(amount)
        except ValueError:
            raise DomainError(
                f"quota line {number}: {amount!r} is not a number of devices"
            ) from None
        if devices < 0 or devices != devices:
            raise DomainError(f"quota line {number}: devices must be >= 0")
        if name in out:
            raise DomainError(f"quota line {number}: tenant {name!r} given twice")
        out[name] = round(devices * 1000)
    return out


def _parse_trace(text: str) -> list[PodRecord]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "trace.csv"
        path.write_text(text, encoding="utf-8")
        try:
            return read_pods(path)
        except TraceError as exc:
            raise DomainError(f"trace: {str(exc).replace(str(path), 'uploaded file')}") from None


def trace_workload(pods: list[PodRecord]) -> list[SimPod]:
    """The timed pods of a trace as a workload (module docstring)."""
    timed = sorted(
        (
            (p.creation_time, p.deletion_time, p)
            for p in pods
            if p.creation_time is not None
            and p.deletion_time is not None
            and p.deletion_time >= p.creation_time
        ),
        key=lambda row: (row[0], row[2].name),
    )[:MAX_PODS]
    if not timed:
        raise DomainError("trace: no pod has both creation_time and deletion_time")
    t0 = timed[0][0]
    return [
        SimPod(p.qos or "default", created - t0, deleted - created, p)
        for created, deleted, p in timed
    ]


def group_nodes(group: ResourceGroup) -> list[NodeRecord]:
    """The group's present nodes with devices, as trace node rows (the most common model of
    each node; capacity only, nothing booked)."""
    snapshot, _ = build_cluster_snapshot(group)
    out = []
    for name in sorted(snapshot.nodes):
        node = snapshot.nodes[name]
        if not node.devices:
            continue
        model = Counter(d.type for d in node.devices).most_common(1)[0][0]
        out.append(
            NodeRecord(name, node.cpu_milli, node.memory_mib, min(8, len(node.devices)), model)
        )
    return out


def group_workload(group: ResourceGroup) -> list[SimPod]:
    """The group's newest :data:`RECENT_JOBS` device jobs as a workload (module docstring)."""
    jobs = Job.objects.filter(queue__resource_group=group).order_by("-id")[:RECENT_JOBS]
    names = dict(Job.objects.filter(pk__in=[j.pk for j in jobs]).values_list("pk", "tenant__name"))
    demands = [
        d
        for d in job_demands(
            Job.objects.filter(pk__in=[j.pk for j in jobs]).order_by("created", "pk")
        )
        if d.tasks
    ]
    if not demands:
        raise DomainError(f"resource group {group.name} has no recent job asking a device")
    t0 = demands[0].created
    out = []
    for d in demands:
        num_gpu = min(8, sum(t.num_gpu for t in d.tasks))
        milli = d.tasks[0].gpu_milli if num_gpu == 1 else 1000
        types = tuple(sorted({m for t in d.tasks for m in t.gpu_types}))
        for pod in range(d.pods):
            record = PodRecord(
                f"job-{d.job_id}-{pod}",
                max(t.cpu_milli for t in d.tasks),
                1024,
                num_gpu,
                milli,
                types,
            )
            out.append(
                SimPod(
                    names[d.job_id],
                    int((d.created - t0).total_seconds()),
                    max(1, int(d.duration_s)),
                    record,
                )
            )
    return out[:MAX_PODS]


def group_quotas(group: ResourceGroup) -> dict[str, int]:
    """The group's nominal ``devices`` quotas per tenant name (every flavor summed), milli."""
    out: dict[str, int] = {}
    for name, nominal in Quota.objects.filter(
        resource_group=group, dimension="devices"
    ).values_list("tenant__name", "nominal"):
        out[name] = out.get(name, 0) + nominal
    return out


def create_run(
    *,
    user,
    group: ResourceGroup,
    policies: list[str],
    quotas_text: str = "",
    trace_name: str = "",
    trace_text: str = "",
    use_group_quotas: bool = False,
) -> SimulationRun:
    """Validate a request, store it and enqueue the worker task after commit.

    ``use_group_quotas`` starts from the group's nominal device quotas (:func:`group_quotas`);
    the lines of ``quotas_text`` then add or replace tenants.

    Raises:
        DomainError: no or unknown policy, a bad quota line, a trace too large or unreadable,
            a group without nodes or (without a trace) without recent device jobs.
    """
    unknown = [p for p in policies if p not in POLICY_NAMES]
    if not policies or unknown:
        raise DomainError(
            f"policies: choose one or more of {', '.join(POLICY_NAMES)}"
            + (f" (unknown: {', '.join(unknown)})" if unknown else "")
        )
    quotas = parse_quotas(quotas_text)
    if use_group_quotas:
        if trace_text:
            raise DomainError(
                "quotas: the group's quotas name its tenants; a trace's tenants "
                "are its qos classes (give them as lines instead)"
            )
        quotas = {**group_quotas(group), **quotas}
    if len(trace_text.encode()) > MAX_TRACE_BYTES:
        raise DomainError(f"trace: larger than {MAX_TRACE_BYTES // (1024 * 1024)} MiB")
    if trace_text:
        trace_workload(_parse_trace(trace_text))
    else:
        group_workload(group)
    if not group_nodes(group):
        raise DomainError(f"resource group {group.name} has no node with devices")
    with transaction.atomic():
        run = SimulationRun.objects.create(
            created_by=user,
            resource_group=group,
            source="trace" if trace_text else "group",
            trace_name=trace_name[:255],
            trace_csv=trace_text,
            policies=list(policies),
            quotas=quotas,
        )
        enqueue_whatif(run.pk)
    return run


def _set_progress(run_id: int, percent: int) -> None:
    SimulationRun.objects.filter(pk=run_id).update(
        progress_percent=max(0, min(100, percent)), updated=timezone.now()
    )


def run_whatif(run_id: int) -> str:
    """Replay a stored run under each of its policies (the worker task); returns its state.
    Failures are stored on the run (``state`` failed, ``error``), never raised."""
    run = SimulationRun.objects.select_related("resource_group").get(pk=run_id)
    if run.state in (SimulationState.DONE, SimulationState.FAILED):
        return run.state
    SimulationRun.objects.filter(pk=run_id).update(state=SimulationState.RUNNING)
    try:
        if run.resource_group is None:
            raise DomainError("the run's resource group was deleted")
        nodes = group_nodes(run.resource_group)
        pods = (
            trace_workload(_parse_trace(run.trace_csv))
            if run.source == "trace"
            else group_workload(run.resource_group)
        )
        results = []
        n = len(run.policies)
        for i, policy in enumerate(run.policies):

            def progress(done, total, i=i):
                _set_progress(run_id, int(100 * (i + done / max(1, total)) / n))

            results.append(
                replay_policy(policy, nodes, pods, quotas=run.quotas, progress=progress).as_dict()
            )
        workload = {
            "pods": len(pods),
            "tenants": sorted({p.tenant for p in pods}),
            "nodes": len(nodes),
            "gpus": sum(r.gpu_count for r in nodes),
        }
        SimulationRun.objects.filter(pk=run_id).update(
            state=SimulationState.DONE,
            progress_percent=100,
            finished_at=timezone.now(),
            result={"policies": results, "workload": workload},
        )
        return SimulationState.DONE
    except (DomainError, ValueError, KeyError) as exc:
        message = exc.message if isinstance(exc, DomainError) else str(exc)
        logger.warning("simulation %s failed: %s", run_id, message)
        SimulationRun.objects.filter(pk=run_id).update(
            state=SimulationState.FAILED, error=message, finished_at=timezone.now()
        )
        return SimulationState.FAILED
