"""Large-database phase: generate 10,000 nodes / 80,000 devices / 200,000 jobs (times
``scale``) with ``bulk_create``, then time every dashboard page and API list in process
(Django's test client: server time from request to rendered response, no network) with the
number of SQL queries each one ran.

Data: one simulated cluster ``big`` (8 A100 per node), one resource group over it, 20 tenants
with a queue and quotas each; jobs cycle through the states succeeded (55 %), running (25 %,
one placement booking half a device each), queued (12 %), failed (5 %) and cancelled (3 %),
round-robin over the tenants; queued jobs carry a pending reason. The aggregates the pages
read are then computed once, as the beat tasks keep them on a running console (the gauges
task's overview panels, the rollup task's usage months), and their times reported.
"""

from __future__ import annotations

import statistics
import time
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from scheduling.choices import FINAL_JOB_STATES, JobState, PlacementState
from scheduling.models import (
    Cluster,
    Device,
    DeviceModel,
    Job,
    JobContainer,
    Node,
    Placement,
    PlacementDevice,
    Queue,
)
from scheduling.services.usage import check_usage
from telemetry.services.gauges import compute_group_gauges
from telemetry.services.usage_months import refresh_usage_months
from tenants.models import Membership, Quota, ResourceGroup, Tenant

MODEL = "NVIDIA-A100-SXM4-80GB"
TENANTS = 20
#: (state, share of jobs), cycled in this order.
STATES = (
    (JobState.SUCCEEDED, 55),
    (JobState.RUNNING, 25),
    (JobState.QUEUED, 12),
    (JobState.FAILED, 5),
    (JobState.CANCELLED, 3),
)
BATCH = 5000


def _state_cycle() -> list[str]:
    return [state for state, share in STATES for _ in range(share)]


def _inventory(n_nodes: int) -> list[Device]:
    """Cluster ``big``: ``n_nodes`` nodes of 8 A100 each (labels ``pool=big``)."""
    cluster = Cluster.objects.create(name="big", backend="simulated")
    model, _ = DeviceModel.objects.get_or_create(
        name=MODEL,
        defaults={"vendor": "NVIDIA", "config": {"memory_mib": 81920, "split_count": 10}},
    )
    nodes = Node.objects.bulk_create(
        (
            Node(
                cluster=cluster,
                name=f"big-n{i:06d}",
                cpu_milli=256_000,
                host_memory_mib=2_097_152,
                labels={"pool": "big"},
            )
            for i in range(n_nodes)
        ),
        batch_size=BATCH,
    )
    return Device.objects.bulk_create(
        (
            Device(
                uuid=f"GPU-big-{i:06d}-{j}",
                node=node,
                model=model,
                index=j,
                memory_mib=81920,
                split_count=10,
            )
            for i, node in enumerate(nodes)
            for j in range(8)
        ),
        batch_size=BATCH,
    )


def _tenants() -> list[Queue]:
    """Resource group ``big`` over the cluster; :data:`TENANTS` tenants with a queue and
    quotas each."""
    group = ResourceGroup.objects.create(
        name="big", device_models=[MODEL], node_selector={"pool": "big"}
    )
    queues = []
    for t in range(TENANTS):
        tenant = Tenant.objects.create(name=f"big-team-{t:02d}")
        queues.append(Queue.objects.create(tenant=tenant, resource_group=group, name="default"))
        for dim, amount in (
            ("devices", 4000 * 1000),
            ("memory_mib", 4000 * 81920),
            ("cores_percent", 4000 * 100),
        ):
            Quota.objects.create(
                tenant=tenant, resource_group=group, flavor="*", dimension=dim, nominal=amount
            )
    return queues


def _job(i: int, q: Queue, state: str, now) -> Job:
    done = state in FINAL_JOB_STATES
    queued = state == JobState.QUEUED
    return Job(
        tenant_id=q.tenant_id,
        queue=q,
        name=f"big-{i}",
        state=state,
        cpu_milli=1000,
        host_memory_mib=2048,
        duration_s=3600,
        source="bench",
        pending_reason="0/10000 nodes fit; 10000 node(s): Insufficient cpu" if queued else "",
        admitted_at=None if queued else now - timedelta(hours=2),
        started_at=None if queued else now - timedelta(hours=2),
        finished_at=now - timedelta(hours=1) if done else None,
    )


def _jobs(n_jobs: int, queues: list[Queue], devices: list[Device]) -> None:
    """``n_jobs`` jobs in the states of :data:`STATES`, round-robin over the tenants; each
    running job holds one placement booking half a device."""
    cycle = _state_cycle()
    now = timezone.now()
    for start in range(0, n_jobs, BATCH):
        jobs = Job.objects.bulk_create(
            _job(i, queues[i % TENANTS], cycle[i % len(cycle)], now)
            for i in range(start, min(n_jobs, start + BATCH))
        )
        JobContainer.objects.bulk_create(
            JobContainer(job=j, name="main", device_count=1, memory_percent=50, cores_percent=50)
            for j in jobs
        )
        placements = Placement.objects.bulk_create(
            Placement(
                job=j,
                pod_index=0,
                node_id=devices[j.pk % len(devices)].node_id,
                state=PlacementState.RUNNING,
                cpu_milli=1000,
                host_memory_mib=2048,
                started_at=now - timedelta(hours=2),
                charged=True,
                assignment={},
            )
            for j in jobs
            if j.state == JobState.RUNNING
        )
        PlacementDevice.objects.bulk_create(
            PlacementDevice(
                placement=p,
                device=devices[p.job_id % len(devices)],
                memory_mib=40960,
                cores_percent=50,
                slots=1,
            )
            for p in placements
        )


def generate(scale: float = 1.0) -> dict:
    """Create the large inventory and job history (module docstring), then compute the
    aggregates the pages read, as the beat tasks keep them (the gauges task's panels, the
    rollup task's usage months); returns counts and the seconds each step took."""
    started = time.monotonic()
    n_nodes, n_jobs = int(10_000 * scale), int(200_000 * scale)
    devices = _inventory(n_nodes)
    queues = _tenants()
    _jobs(n_jobs, queues, devices)
    # the running placements' charges in the stored quota usage, as the cycles' commits
    # would have written them (the usage reconcile's repair computes exactly those)
    check_usage(queues[0].resource_group_id, repair=True)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    generated = time.monotonic()
    _users()
    compute_group_gauges()
    gauges = time.monotonic()
    refresh_usage_months()
    return {
        "scale": scale,
        "nodes": n_nodes,
        "devices": len(devices),
        "jobs": n_jobs,
        "generate_s": round(generated - started, 1),
        "gauges_task_s": round(gauges - generated, 1),
        "usage_months_s": round(time.monotonic() - gauges, 1),
    }


def _users() -> dict:
    User = get_user_model()
    admin, _ = User.objects.get_or_create(
        username="big-admin", defaults={"is_superuser": True, "is_staff": True}
    )
    member, created = User.objects.get_or_create(username="big-member")
    if created:
        Membership.objects.create(
            user=member, tenant=Tenant.objects.get(name="big-team-00"), role="member"
        )
    return {"admin": admin, "member": member}


def _pages(node_pk: int) -> list[str]:
    return [
        "/",
        "/jobs/",
        "/jobs/?state=queued",
        "/nodes/",
        f"/nodes/{node_pk}/",
        "/usage/",
        "/quotas/",
        "/api/jobs/",
        "/api/nodes/",
        "/api/devices/",
        "/api/placements/",
        "/api/queues/",
        "/api/usage/",
    ]


def time_pages(repeat: int = 7) -> dict:
    """p50/p95 server time (ms) and query count of every page and API list, for a platform
    admin and a tenant member."""
    node_pk = (
        Node.objects.filter(cluster__name="big").order_by("pk").values_list("pk", flat=True).first()
    )
    out = {}
    for who, user in _users().items():
        client = Client(HTTP_HOST="127.0.0.1")
        client.force_login(user)
        for url in _pages(node_pk):
            client.get(url)  # warm caches the way a second visitor finds them
            times = []
            with CaptureQueriesContext(connection) as ctx:
                status = client.get(url).status_code
            queries = len(ctx.captured_queries)
            for _ in range(repeat):
                t = time.perf_counter()
                client.get(url)
                times.append(1000 * (time.perf_counter() - t))
            times.sort()
            out[f"{who} {url}"] = {
                "status": status,
                "queries": queries,
                "p50_ms": round(statistics.median(times), 1),
                "p95_ms": round(times[min(len(times) - 1, int(0.95 * len(times)))], 1),
            }
    return out
