"""The built-in demo: a small heterogeneous simulated cluster, tenants with quotas, users, and
a stream of sample jobs. Seeded once: once the demo cluster exists, seeding again (``make run``
seeds at every start) writes nothing but the shipped device models the database lacks, so what
an operator changed or removed in the demo stays so (issue 29)."""

from __future__ import annotations

import random
import uuid

from django.contrib.auth import get_user_model
from django.db import transaction

from scheduling.choices import Backend, JobKind, JobState, QueueStrategy
from scheduling.devices.vendors import vendor_traits
from scheduling.models import Cluster, Device, DeviceModel, Job, Node, Queue
from scheduling.placement.topology_names import RACK_LAYOUT_LEVELS
from scheduling.services.inventory.device_models import load_missing_device_models
from scheduling.services.job_kinds import submit_job
from scheduling.services.jobs import ContainerSpec, JobSpec, enqueue_job
from tenants.choices import Role
from tenants.models import Membership, Quota, ResourceGroup, Tenant, Topology

DEMO_CLUSTER = "demo"
_NS = uuid.UUID("6f1c1a44-3f0e-4d8e-9a51-4d1f0b7c2e10")

# name, vendor, memory MiB, split count, slicing mode, resource names
# model (a shipped fixture row), vendor, registered MiB per device, tasks per device
DEMO_MODELS = [
    ("NVIDIA-A100-SXM4-80GB", "NVIDIA", 81920, 10),
    ("NVIDIA-H20", "NVIDIA", 97871, 10),
    ("Ascend910B3", "Ascend", 65536, 4),
    ("MLU370-X8", "MLU", 24576, 10),
    ("K100_AI", "DCU", 65520, 4),
]
# node name, model, devices, cpu_milli, host_memory_mib
DEMO_NODES = [
    ("gpu-a100-0", "NVIDIA-A100-SXM4-80GB", 8, 128000, 1048576),
    ("gpu-a100-1", "NVIDIA-A100-SXM4-80GB", 8, 128000, 1048576),
    ("gpu-h20-0", "NVIDIA-H20", 8, 192000, 2097152),
    ("npu-910b3-0", "Ascend910B3", 8, 192000, 1572864),
    ("mlu-370-0", "MLU370-X8", 8, 96000, 524288),
    ("dcu-k100-0", "K100_AI", 8, 128000, 1048576),
]
# node -> (block, rack) of the demo topology (every node in zone-a; the node level is its
# kubernetes.io/hostname label): the two A100 nodes share a rack, the H20 node has its own
DEMO_RACKS = {
    "gpu-a100-0": ("block-0", "rack-0"),
    "gpu-a100-1": ("block-0", "rack-0"),
    "gpu-h20-0": ("block-0", "rack-1"),
    "npu-910b3-0": ("block-1", "rack-2"),
    "mlu-370-0": ("block-1", "rack-3"),
    "dcu-k100-0": ("block-1", "rack-3"),
}
DEMO_ZONE = "zone-a"
DEMO_TOPOLOGY = "demo-dc"
"""The demo's topology (levels :data:`~scheduling.placement.topology_names.RACK_LAYOUT_LEVELS`),
attached to every demo resource group."""
# group, kind, models
DEMO_GROUPS = [
    ("nvidia-shared", "shared", ["NVIDIA-A100-SXM4-80GB", "NVIDIA-H20"]),
    ("ascend-exclusive", "exclusive", ["Ascend910B3"]),
    ("domestic-elastic", "elastic", ["MLU370-X8", "K100_AI"]),
]
# tenant, parent, display name
DEMO_TENANTS = [
    ("research", None, "Research department"),
    ("team-nlp", "research", "NLP team"),
    ("team-vision", "research", "Vision team"),
    ("platform", None, "Platform team"),
]
# user, tenant, role
DEMO_USERS = [
    ("alice", "team-nlp", Role.MEMBER),
    ("bob", "team-vision", Role.MEMBER),
    ("carol", "team-nlp", Role.VIEWER),
    ("dave", "research", Role.TENANT_ADMIN),
]


# devices' worth of nominal quota per tenant in every group. research's row is the quota of
# its whole subtree (tenants.services.quotas): its children's rows are carved out of it
# (6 + 6), and the rest (4) is research's own, for the jobs of its own queues.
DEMO_QUOTA_DEVICES = {"research": 16, "team-nlp": 6, "team-vision": 6, "platform": 6}
# nominal quota of one device's worth, per dimension (milli-devices, MiB, percent)
DEMO_QUOTA_PER_DEVICE = {"devices": 1000, "memory_mib": 98304, "cores_percent": 100}
# Tenants whose queues the stream of sample jobs (submit_demo_job) fills: background load that
# borrows what the teams leave idle and is reclaimed when a team needs its nominal quota, so
# the teams' own quota stays free for their people (alice's README examples).
DEMO_STREAM_TENANTS = ("research", "platform")


def _serial(node: str, index: int, vendor: str) -> str:
    return vendor_traits(vendor).made_up_device_id(uuid.uuid5(_NS, f"{node}/{index}"))


def seed_demo(password: str) -> dict[str, int]:
    """Load the shipped device models the database lacks, then, unless the demo cluster exists
    (the demo was seeded before), create the demo cluster, tenants, quotas, users and sample
    jobs.

    A demo seeded before is not seeded again: a quota row, member, user or job an operator
    deleted would come back, and a quota row given back to a team lets its next cycle reclaim
    the team's nominal quota from a borrower, evicting a running job (issue 29: ``make run``
    seeds at every start). Existing device models keep their ``config`` and ``family``
    (:func:`~scheduling.services.inventory.device_models.load_missing_device_models`).

    Args:
        password: password of every demo user (``admin`` is a platform admin).

    Returns:
        Counts ``{"nodes", "devices", "jobs"}`` of what this call created.
    """
    created = {"nodes": 0, "devices": 0, "jobs": 0}
    with transaction.atomic():
        load_missing_device_models()
        if Cluster.objects.filter(name=DEMO_CLUSTER).exists():
            return created
        _seed_inventory(created)
        tenants = _seed_tenants()
        _seed_users(tenants, password)
        if not Job.objects.filter(source="demo").exists():
            rng = random.Random(42)  # noqa: S311 - reproducible sample jobs, not security
            for _ in range(12):
                submit_demo_job(rng)
                created["jobs"] += 1
        created["jobs"] += seed_demo_workloads()
    return created


def _seed_inventory(created: dict[str, int]) -> None:
    """The demo cluster, its nodes and devices (``created`` counts the new rows)."""
    cluster, _ = Cluster.objects.get_or_create(
        name=DEMO_CLUSTER,
        defaults={"backend": Backend.SIMULATED, "description": "built-in demo cluster"},
    )
    models = {}
    for name, vendor, mem, split in DEMO_MODELS:
        models[name] = (
            DeviceModel.objects.get_or_create(name=name, defaults={"vendor": vendor})[0],
            mem,
            split,
        )
    for node_name, model_name, count, cpu, mem in DEMO_NODES:
        node, made = Node.objects.get_or_create(
            cluster=cluster,
            name=node_name,
            defaults={
                "cpu_milli": cpu,
                "host_memory_mib": mem,
                "labels": {
                    "console.llmops.io/cluster": DEMO_CLUSTER,
                    **demo_node_labels(node_name),
                },
            },
        )
        created["nodes"] += int(made)
        model, device_mib, split = models[model_name]
        for index in range(count):
            _, made = Device.objects.get_or_create(
                uuid=_serial(node_name, index, model.vendor),
                defaults={
                    "node": node,
                    "model": model,
                    "index": index,
                    "numa": index // 4,
                    "memory_mib": device_mib,
                    "split_count": split,
                },
            )
            created["devices"] += int(made)


def demo_node_labels(node_name: str) -> dict[str, str]:
    """The topology labels of a demo node: zone, block, rack and hostname (:data:`DEMO_RACKS`;
    the keys are :data:`~scheduling.placement.topology_names.RACK_LAYOUT_LEVELS`)."""
    zone, block, rack, host = RACK_LAYOUT_LEVELS
    node_block, node_rack = DEMO_RACKS[node_name]
    return {zone: DEMO_ZONE, block: node_block, rack: node_rack, host: node_name}


def _seed_tenants() -> dict[str, Tenant]:
    """Demo tenants, resource groups (with the demo topology), one queue per tenant and
    group, nominal quotas (:data:`DEMO_QUOTA_DEVICES`: research's quota is split among its
    children)."""
    tenants: dict[str, Tenant] = {}
    for name, parent, display in DEMO_TENANTS:
        tenants[name], _ = Tenant.objects.get_or_create(
            name=name,
            defaults={"display_name": display, "parent": tenants.get(parent) if parent else None},
        )
    topology, _ = Topology.objects.get_or_create(
        name=DEMO_TOPOLOGY,
        defaults={
            "levels": list(RACK_LAYOUT_LEVELS),
            "description": "demo cluster: zone > block > rack > node",
        },
    )
    groups = {}
    for name, kind, group_models in DEMO_GROUPS:
        groups[name], _ = ResourceGroup.objects.get_or_create(
            name=name, defaults={"kind": kind, "device_models": group_models, "topology": topology}
        )
    for tenant in ("research", "team-nlp", "team-vision", "platform"):
        for group_name, group in groups.items():
            strategy = (
                QueueStrategy.STRICT_FIFO
                if group_name == "ascend-exclusive"
                else QueueStrategy.BEST_EFFORT_FIFO
            )
            Queue.objects.get_or_create(
                tenant=tenants[tenant],
                name=group_name,
                defaults={"resource_group": group, "strategy": strategy},
            )
            for dimension, per_device in DEMO_QUOTA_PER_DEVICE.items():
                Quota.objects.get_or_create(
                    tenant=tenants[tenant],
                    resource_group=group,
                    flavor="*",
                    dimension=dimension,
                    defaults={"nominal": per_device * DEMO_QUOTA_DEVICES[tenant]},
                )
    return tenants


def _seed_users(tenants: dict[str, Tenant], password: str) -> None:
    """``admin`` (platform admin) and the demo members, all with ``password``."""
    User = get_user_model()  # noqa: N806 - the model class
    admin, made = User.objects.get_or_create(
        username="admin", defaults={"is_staff": True, "is_superuser": True}
    )
    if made:
        admin.set_password(password)
        admin.save()
    for username, tenant, role in DEMO_USERS:
        user, made = User.objects.get_or_create(username=username)
        if made:
            user.set_password(password)
            user.save()
        Membership.objects.get_or_create(user=user, tenant=tenants[tenant], defaults={"role": role})


def _demo_image_container(image: str, memory_mib: int, cores: int, **extra) -> ContainerSpec:
    return ContainerSpec(
        vendor="NVIDIA",
        device_count=1,
        device_memory_mib=memory_mib,
        cores_percent=cores,
        image=image,
        **extra,
    )


def _demo_workload_specs(team: str) -> list[JobSpec]:
    """The demo workloads of tenant ``team``: a two-pod fine-tune (training), a chat model
    served by two to four replicas (inference) and a notebook, each with a real image."""
    return [
        JobSpec(
            name=f"{team}-finetune",
            kind=JobKind.TRAINING,
            pod_count=2,
            cpu_milli=8000,
            host_memory_mib=32768,
            duration_s=900.0,
            source="demo",
            restart_policy="OnFailure",
            backoff_limit=1,
            max_runtime_s=3600.0,
            containers=[
                _demo_image_container(
                    "nvcr.io/nvidia/pytorch:25.01-py3",
                    20480,
                    50,
                    command=["torchrun", "--nnodes=2", "finetune.py"],
                )
            ],
        ),
        JobSpec(
            name=f"{team}-chat",
            kind=JobKind.INFERENCE,
            replicas=2,
            replicas_min=1,
            replicas_max=4,
            port=8000,
            restart_policy="Always",
            cpu_milli=4000,
            host_memory_mib=16384,
            source="demo",
            priority=10,
            containers=[
                _demo_image_container(
                    "vllm/vllm-openai:v0.6.3",
                    16384,
                    30,
                    args=["--model", "Qwen/Qwen2.5-7B-Instruct"],
                )
            ],
        ),
        JobSpec(
            name=f"{team}-notebook",
            kind=JobKind.NOTEBOOK,
            port=8888,
            restart_policy="Always",
            cpu_milli=2000,
            host_memory_mib=8192,
            source="demo",
            containers=[
                _demo_image_container("quay.io/jupyter/pytorch-notebook:2024-12-02", 8192, 10)
            ],
        ),
    ]


def seed_demo_workloads() -> int:
    """One training job, one inference service and one notebook per demo tenant with a queue
    on ``nvidia-shared`` (skipped when they exist). Returns the number created."""
    made = 0
    queues = Queue.objects.filter(resource_group__name="nvidia-shared").select_related("tenant")
    for queue in queues.order_by("tenant__name"):
        if Job.objects.filter(
            source="demo",
            tenant=queue.tenant,
            kind__in=[JobKind.TRAINING, JobKind.INFERENCE, JobKind.NOTEBOOK],
        ).exists():
            continue
        for spec in _demo_workload_specs(queue.tenant.name):
            submit_job(queue, spec)
            made += 1
    return made


def submit_demo_job(rng: random.Random) -> Job | None:
    """Submit one random sample job to a random queue of :data:`DEMO_STREAM_TENANTS` (None
    when the demo is absent or more than 40 demo jobs are queued already)."""
    if Job.objects.filter(source="demo", state=JobState.QUEUED).count() > 40:
        return None
    queues = list(
        Queue.objects.filter(
            resource_group__name__in=[g for g, _, _ in DEMO_GROUPS],
            tenant__name__in=DEMO_STREAM_TENANTS,
        )
        .select_related("resource_group")
        .order_by("pk")
    )
    if not queues:
        return None
    queue = rng.choice(queues)
    vendor = {
        "nvidia-shared": "NVIDIA",
        "ascend-exclusive": "Ascend",
        "domestic-elastic": rng.choice(["MLU", "DCU"]),
    }[queue.resource_group.name]
    # the elastic group mixes vendors: its jobs name the group's model of their vendor
    group = queue.resource_group.name
    types = [m for m, v, *_ in DEMO_MODELS if v == vendor] if group == "domestic-elastic" else []
    shape = rng.choice(["slice", "slice", "slice", "whole", "multi"])
    if shape == "slice":
        container = ContainerSpec(
            vendor=vendor,
            device_count=1,
            device_memory_mib=rng.choice([4096, 8192, 16384]),
            cores_percent=rng.choice([10, 20, 30, 50]),
            device_types=types,
        )
    else:
        container = ContainerSpec(
            vendor=vendor,
            device_count=1 if shape == "whole" else rng.choice([2, 4]),
            memory_percent=100,
            cores_percent=100,
            device_types=types,
        )
    kind = rng.choice(["notebook", "finetune", "inference", "eval"])
    spec = JobSpec(
        name=f"{kind}-{rng.randrange(10_000):04d}",
        containers=[container],
        priority=rng.choice([0, 0, 10, 100]),
        cpu_milli=rng.choice([2000, 4000, 8000]),
        host_memory_mib=rng.choice([8192, 16384, 32768]),
        duration_s=float(rng.randrange(45, 400)),
        source="demo",
    )
    return enqueue_job(queue, spec)
