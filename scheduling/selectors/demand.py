"""What jobs ask, in devices: the task shapes of device containers and the demand of jobs.

One rule for the whole console (fragmentation's target workload, the pending-demand trends and
capacity planning): a device container asks ``device_count`` devices of ``10 x max(cores %,
memory %)`` milli each, where memory % is its ``memory_percent``, or its ``memory_mib`` over
the largest registered memory of the models it accepts, or 100 when neither is given (HAMi:
the whole card). The models it accepts are its ``device_types``, else its resource group's
device models, else every present model of its vendor, less its ``device_types_exclude`` and
the models whose memory is below its ``memory_mib``; names match as in the placement core
(:func:`~scheduling.devices.matching.type_matches`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Max

from scheduling.devices.matching import any_type_matches, type_excluded
from scheduling.models import Device, JobContainer
from scheduling.placement.fragmentation import GPU_MILLI, TaskClass
from scheduling.placement.types import ClusterSnapshot

__all__ = ["JobDemand", "PresentModels", "job_demands", "task_class"]

CONTAINER_FIELDS = (
    "job_id",
    "vendor",
    "device_count",
    "device_memory_mib",
    "memory_percent",
    "cores_percent",
    "device_types",
    "device_types_exclude",
)


@dataclass(frozen=True)
class PresentModels:
    """Present device models: vendor and largest registered memory (MiB) of each."""

    vendor: dict[str, str]
    memory_mib: dict[str, int]

    @classmethod
    def of(cls, snapshot: ClusterSnapshot) -> PresentModels:
        """The models of a snapshot's devices (no query)."""
        vendor: dict[str, str] = {}
        memory: dict[str, int] = {}
        for node in snapshot.nodes.values():
            for d in node.devices:
                vendor[d.type] = d.vendor
                memory[d.type] = max(memory.get(d.type, 0), d.memory_mib)
        return cls(vendor, memory)

    @classmethod
    def present(cls) -> PresentModels:
        """The models of the present devices (one query)."""
        vendor: dict[str, str] = {}
        memory: dict[str, int] = {}
        for name, vendor_name, mem in (
            Device.objects.filter(removed_at__isnull=True, node__removed_at__isnull=True)
            .values("model__name", "model__vendor")
            .annotate(mem=Max("memory_mib"))
            .values_list("model__name", "model__vendor", "mem")
        ):
            vendor[name] = vendor_name
            memory[name] = mem
        return cls(vendor, memory)


def task_class(
    cpu_milli: int, container: dict, group_models: Sequence[str], models: PresentModels
) -> TaskClass | None:
    """The task class of one device container (module docstring), None when no present
    device model can serve it.

    Args:
        cpu_milli: the pod's CPU request.
        container: a ``JobContainer`` as a dict of at least the fields of
            :data:`CONTAINER_FIELDS` (less ``job_id``).
        group_models: the job's resource group's device models ([] = any).
        models: the present models.
    """
    wanted = container["device_types"] or group_models
    by_mib = not container["memory_percent"] and container["device_memory_mib"]
    types = tuple(
        sorted(
            m
            for m, vendor in models.vendor.items()
            if vendor == container["vendor"]
            and (not wanted or any_type_matches(m, wanted))
            and not type_excluded(m, container.get("device_types_exclude") or ())
            and (not by_mib or models.memory_mib[m] >= container["device_memory_mib"])
        )
    )
    if not types:
        return None
    if container["memory_percent"]:
        memory_pct = container["memory_percent"]
    elif by_mib:  # every type has >= memory_mib > 0 MiB: no division by zero
        biggest = max(models.memory_mib[t] for t in types)
        memory_pct = -(-container["device_memory_mib"] * 100 // biggest)  # ceiling
    else:
        memory_pct = 100
    share = min(100, max(container["cores_percent"], memory_pct))
    return TaskClass(cpu_milli, share * GPU_MILLI // 100, container["device_count"], types)


@dataclass(frozen=True)
class JobDemand:
    """What one job asks.

    Attributes:
        job_id, tenant_id, group_id: the job, its tenant and its queue's resource group.
        created / admitted_at: submitted, and admitted (None while it waits).
        state: the job's state.
        pods: pods of the job (a gang).
        tasks: the task class of each device container of one pod (None entries left out:
            containers no present model can serve).
        duration_s: the runtime the job declared.
    """

    job_id: int
    tenant_id: int
    group_id: int
    created: datetime
    admitted_at: datetime | None
    state: str
    pods: int
    tasks: tuple[TaskClass, ...]
    duration_s: float

    @property
    def devices(self) -> float:
        """Devices the whole job asks (pods x containers x count x share)."""
        return self.pods * sum(t.num_gpu * t.gpu_milli for t in self.tasks) / GPU_MILLI


def job_demands(jobs, models: PresentModels | None = None) -> list[JobDemand]:
    """:class:`JobDemand` of each job of the ``jobs`` queryset (in its order): two queries,
    three without ``models``."""
    models = models or PresentModels.present()
    rows = list(
        jobs.values_list(
            "id",
            "tenant_id",
            "queue__resource_group_id",
            "queue__resource_group__device_models",
            "created",
            "admitted_at",
            "state",
            "pod_count",
            "cpu_milli",
            "duration_s",
        )
    )
    containers: dict[int, list[dict]] = defaultdict(list)
    for c in (
        JobContainer.objects.filter(job_id__in=[r[0] for r in rows], init=False, device_count__gt=0)
        .order_by("job_id", "id")
        .values(*CONTAINER_FIELDS)
    ):
        containers[c["job_id"]].append(c)
    out = []
    for (
        pk,
        tenant_id,
        group_id,
        group_models,
        created,
        admitted_at,
        state,
        pods,
        cpu,
        duration_s,
    ) in rows:
        tasks = tuple(
            t
            for t in (
                task_class(cpu, c, group_models or [], models) for c in containers.get(pk, ())
            )
            if t is not None
        )
        out.append(
            JobDemand(
                pk,
                tenant_id,
                group_id,
                created,
                admitted_at,
                state,
                max(1, pods),
                tasks,
                duration_s,
            )
        )
    return out
