"""Load the Alibaba GPU-sharing trace (``cluster-trace-gpu-v2023``) into a simulated cluster.

Node list → a ``simulated`` Cluster with Nodes and Devices (one DeviceModel per trace model);
pod list → Jobs spread round-robin over N demo tenants, one queue each, on one resource group
covering the cluster. A pod asking ``gpu_milli`` m on ``num_gpu`` k GPUs becomes one container
asking k devices with ``cores_percent`` m/10 and ``memory_percent`` m/10 (HAMi semantics, so
1000 milli = whole exclusive devices). Durations come from ``deletion_time - creation_time``
(seconds) times ``time_scale``. Nodes get a synthetic rack layout (``nodes_per_rack``,
``racks_per_block``: zone, block, rack and hostname labels in node list order) and the group
the topology ``<cluster>-racks`` of those levels (issue 31).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from scheduling.choices import Backend, JobState
from scheduling.models import Cluster, Device, DeviceModel, Job, JobContainer, Node, Queue
from scheduling.placement.topology_names import RACK_LAYOUT_LEVELS, synthetic_rack_labels
from scheduling.placement.whatif.trace import device_memory_mib, read_nodes, read_pods
from tenants.choices import FragmentationPolicy
from tenants.models import ANY_FLAVOR, Quota, ResourceGroup, Tenant, Topology

CLUSTER_LABEL = "console.llmops.io/cluster"
TRACE_SPLIT_COUNT = 100  # 10-milli shares never run out of HAMi slots


@dataclass(frozen=True)
class ImportResult:
    """Counts of what an import created."""

    cluster: str
    group_id: int
    nodes: int
    devices: int
    jobs: int
    tenants: int


def import_trace(
    nodes_path: str | Path,
    pods_path: str | Path,
    *,
    cluster_name: str = "openb",
    tenants: int = 4,
    time_scale: float = 1.0,
    quota_share: float = 1.0,
    default_duration_s: float = 3600.0,
    fragmentation_policy: str = "FragGuard",
    nodes_per_rack: int = 8,
    racks_per_block: int = 16,
) -> ImportResult:
    """Create the cluster, inventory, tenants, quotas and jobs of a trace in one transaction.

    Args:
        nodes_path / pods_path: trace CSVs (``openb_node_list_*.csv``, ``openb_pod_list_*.csv``).
        cluster_name: name of the new simulated cluster (must not exist yet).
        tenants: number of demo tenants the jobs are spread over (round-robin).
        time_scale: multiplier from trace seconds to simulated run time.
        quota_share: each tenant's nominal quota as a share of the cluster's capacity.
        default_duration_s: run time of pods without both timestamps.
        fragmentation_policy: the new resource group's ``fragmentation_policy``
            (``FragGuard`` by default: the trace is the workload it was made for; ``none`` =
            HAMi's node score).
        nodes_per_rack / racks_per_block: the synthetic rack layout
            (:func:`~scheduling.placement.topology_names.synthetic_rack_labels`).

    Raises:
        scheduling.placement.whatif.trace.TraceError: a malformed CSV (file, line, column named).
        ValueError: bad arguments or an existing cluster of that name.
    """
    if tenants < 1:
        raise ValueError("tenants must be at least 1")
    if time_scale <= 0 or quota_share <= 0:
        raise ValueError("time_scale and quota_share must be positive")
    if nodes_per_rack < 1 or racks_per_block < 1:
        raise ValueError("nodes_per_rack and racks_per_block must be at least 1")
    if fragmentation_policy not in FragmentationPolicy.values:
        raise ValueError(
            f"fragmentation_policy {fragmentation_policy!r} is not one of "
            f"{', '.join(FragmentationPolicy.values)}"
        )
    node_records = read_nodes(nodes_path)
    pod_records = read_pods(pods_path)
    with transaction.atomic():
        if Cluster.objects.filter(name=cluster_name).exists():
            raise ValueError(f"cluster {cluster_name!r} already exists")
        cluster = Cluster.objects.create(
            name=cluster_name,
            backend=Backend.SIMULATED,
            description=f"trace {Path(nodes_path).name}",
        )
        layout = (nodes_per_rack, racks_per_block)
        models, nodes, devices = _create_inventory(cluster, node_records, layout)
        group = _create_group(cluster_name, sorted(models), fragmentation_policy, layout)
        queues = _create_tenants(group, devices, tenants, quota_share)
        jobs = _create_jobs(queues, pod_records, time_scale, default_duration_s)
    return ImportResult(cluster_name, group.pk, len(nodes), len(devices), len(jobs), tenants)


def _create_group(
    cluster_name: str, models: list[str], fragmentation_policy: str, layout: tuple[int, int]
) -> ResourceGroup:
    """The resource group of a trace cluster's nodes, under the topology
    ``<cluster>-racks`` of its synthetic rack ``layout`` (nodes per rack, racks per block)."""
    nodes_per_rack, racks_per_block = layout
    topology = Topology.objects.create(
        name=f"{cluster_name}-racks"[:63],
        levels=list(RACK_LAYOUT_LEVELS),
        description=f"synthetic layout of trace cluster {cluster_name}: "
        f"{nodes_per_rack} nodes a rack, {racks_per_block} racks a block",
    )
    return ResourceGroup.objects.create(
        topology=topology,
        name=cluster_name,
        kind="shared",
        device_models=models,
        node_selector={CLUSTER_LABEL: cluster_name},
        description=f"every node of trace cluster {cluster_name}",
        fragmentation_policy=fragmentation_policy,
    )


def _create_inventory(
    cluster: Cluster, node_records: list, layout: tuple[int, int]
) -> tuple[dict[str, DeviceModel], list[Node], list[Device]]:
    """Device models (one per trace GPU model), nodes (labelled with the synthetic rack
    ``layout``: nodes per rack, racks per block) and their devices of a trace cluster."""
    models = {}
    for name in sorted({r.model for r in node_records if r.gpu_count}):
        models[name], _ = DeviceModel.objects.get_or_create(
            name=name,
            defaults={
                "vendor": "NVIDIA",
                "config": {"memory_mib": device_memory_mib(name), "split_count": TRACE_SPLIT_COUNT},
            },
        )
    nodes = Node.objects.bulk_create(
        Node(
            cluster=cluster,
            name=r.name,
            cpu_milli=r.cpu_milli,
            host_memory_mib=r.memory_mib,
            labels={
                CLUSTER_LABEL: cluster.name,
                "gpu-model": r.model,
                **synthetic_rack_labels(position, r.name, *layout),
            },
        )
        for position, r in enumerate(node_records)
    )
    devices = Device.objects.bulk_create(
        (
            Device(
                uuid=f"{cluster.name}-{r.name}-gpu{j}",
                node=node,
                model=models[r.model],
                index=j,
                memory_mib=device_memory_mib(r.model),
                cores_percent=100,
                split_count=TRACE_SPLIT_COUNT,
            )
            for node, r in zip(nodes, node_records, strict=True)
            for j in range(r.gpu_count)
        ),
        batch_size=2000,
    )
    return models, nodes, devices


def _create_tenants(
    group: ResourceGroup, devices: list[Device], tenants: int, quota_share: float
) -> list[Queue]:
    """``tenants`` demo tenants, each with a ``default`` queue on ``group`` and nominal quotas
    of ``quota_share`` × the cluster's capacity (devices, device memory, cores)."""
    capacity_milli = 1000 * len(devices)
    capacity_mem = sum(d.memory_mib for d in devices)
    queues = []
    for i in range(1, tenants + 1):
        tenant = Tenant.objects.create(
            name=f"{group.name}-tenant-{i}", display_name=f"Trace tenant {i}"
        )
        queues.append(Queue.objects.create(tenant=tenant, resource_group=group, name="default"))
        for dimension, capacity in (
            ("devices", capacity_milli),
            ("memory_mib", capacity_mem),
            ("cores_percent", 100 * len(devices)),
        ):
            Quota.objects.create(
                tenant=tenant,
                resource_group=group,
                flavor=ANY_FLAVOR,
                dimension=dimension,
                nominal=int(capacity * quota_share),
            )
    return queues


def _create_jobs(
    queues: list[Queue], pod_records: list, time_scale: float, default_duration_s: float
) -> list[Job]:
    """One queued job per trace pod (in creation order, round-robin over ``queues``) with one
    container asking ``gpu_milli`` / 10 % of each of ``num_gpu`` devices."""
    ordered = sorted(pod_records, key=lambda p: (p.creation_time or 0, p.line))
    jobs = []
    for i, pod in enumerate(ordered):
        queue = queues[i % len(queues)]
        if pod.creation_time is not None and pod.deletion_time is not None:
            duration = max(1.0, (pod.deletion_time - pod.creation_time) * time_scale)
        else:
            duration = default_duration_s * time_scale
        jobs.append(
            Job(
                tenant_id=queue.tenant_id,
                queue=queue,
                name=pod.name,
                state=JobState.QUEUED,
                cpu_milli=pod.cpu_milli,
                host_memory_mib=pod.memory_mib,
                duration_s=duration,
                source="trace",
            )
        )
    jobs = Job.objects.bulk_create(jobs, batch_size=2000)
    JobContainer.objects.bulk_create(
        (
            JobContainer(
                job=job,
                name="main",
                vendor="NVIDIA",
                device_count=pod.num_gpu,
                memory_percent=(pod.gpu_milli // 10) if pod.num_gpu else None,
                cores_percent=(pod.gpu_milli // 10) if pod.num_gpu else 0,
                device_types=list(pod.gpu_spec),
            )
            for job, pod in zip(jobs, ordered, strict=True)
        ),
        batch_size=2000,
    )
    return jobs
