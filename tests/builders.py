"""Small builders for database tests (explicit values, no randomness)."""

from __future__ import annotations

from django.contrib.auth import get_user_model

from scheduling.models import Cluster, Device, DeviceModel, Node, Queue
from scheduling.services.jobs import ContainerSpec, JobSpec, enqueue_job
from tenants.models import Membership, Quota, ResourceGroup, Tenant

A100 = "NVIDIA-A100-SXM4-80GB"


def make_cluster(
    name="c1",
    nodes=2,
    gpus=2,
    memory_mib=81920,
    model=A100,
    vendor="NVIDIA",
    cpu_milli=64000,
    node_memory_mib=262144,
    split_count=10,
):
    """A simulated cluster of ``nodes`` nodes "<name>-n<i>" with ``gpus`` devices each."""
    cluster = Cluster.objects.create(name=name, backend="simulated")
    device_model, _ = DeviceModel.objects.get_or_create(
        name=model,
        defaults={
            "vendor": vendor,
            "config": {"memory_mib": memory_mib, "split_count": split_count},
        },
    )
    for i in range(nodes):
        node = Node.objects.create(
            cluster=cluster,
            name=f"{name}-n{i}",
            cpu_milli=cpu_milli,
            host_memory_mib=node_memory_mib,
            labels={"pool": name},
        )
        for j in range(gpus):
            Device.objects.create(
                uuid=f"GPU-{name}-{i}-{j}",
                node=node,
                model=device_model,
                index=j,
                memory_mib=memory_mib,
                split_count=split_count,
            )
    return cluster


def make_group(name="g1", models=(A100,), kind="shared", selector=None):
    return ResourceGroup.objects.create(
        name=name, kind=kind, device_models=list(models), node_selector=selector or {}
    )


def make_tenant(
    name,
    group,
    *,
    devices_milli=None,
    memory_mib=None,
    cores_percent=None,
    flavor="*",
    strategy="BestEffortFIFO",
):
    """A tenant with a queue "default" on ``group`` and the given nominal quotas."""
    tenant = Tenant.objects.create(name=name)
    queue = Queue.objects.create(
        tenant=tenant, resource_group=group, name="default", strategy=strategy
    )
    for dimension, nominal in (
        ("devices", devices_milli),
        ("memory_mib", memory_mib),
        ("cores_percent", cores_percent),
    ):
        if nominal is not None:
            Quota.objects.create(
                tenant=tenant,
                resource_group=group,
                flavor=flavor,
                dimension=dimension,
                nominal=nominal,
            )
    return tenant, queue


def make_user(username, tenant=None, role="member", **extra):
    user = get_user_model().objects.create_user(
        username=username, password="pw-" + username, **extra
    )
    if tenant is not None:
        Membership.objects.create(user=user, tenant=tenant, role=role)
    return user


def gpu_job(
    queue,
    name="job",
    *,
    count=1,
    memory_mib=0,
    memory_percent=None,
    cores=0,
    pods=1,
    priority=0,
    duration_s=60.0,
    cpu_milli=1000,
    types=(),
    enqueue=False,
    check_fit=False,
):
    """Submit a one-container job asking ``count`` NVIDIA devices (by default without the
    submit-time "can it ever fit" check, so tests can build jobs that never fit and watch
    the cycle handle them; the check has its own tests)."""
    spec = JobSpec(
        name=name,
        priority=priority,
        pod_count=pods,
        cpu_milli=cpu_milli,
        host_memory_mib=1024,
        duration_s=duration_s,
        containers=[
            ContainerSpec(
                device_count=count,
                device_memory_mib=memory_mib,
                memory_percent=memory_percent,
                cores_percent=cores,
                device_types=list(types),
            )
        ],
    )
    return enqueue_job(queue, spec, enqueue=enqueue, check_fit=check_fit)


def submit_form(queue, name="from-ui", **fields):
    """The dashboard submit form's fields (``/jobs/new/``) for a one-pod job asking one
    NVIDIA device with 1 GiB of its memory and 10 % of its cores; ``fields`` override or add
    (``device_memory_percent=50`` with ``device_memory_mib=None`` drops the MiB field)."""
    form = {
        "queue": queue.pk,
        "name": name,
        "pod_count": 1,
        "cpu_milli": 1000,
        "host_memory_mib": 1024,
        "duration_s": 60,
        "vendor": "NVIDIA",
        "device_count": 1,
        "device_memory_mib": 1024,
        "cores_percent": 10,
        **fields,
    }
    return {key: value for key, value in form.items() if value is not None}


def two_team_cohort():
    """4 A100s (cluster c1, 2 nodes x 2) in group g1; team-a and team-b each have 2 whole
    devices nominal. Returns ``(group, (team_a, queue_a), (team_b, queue_b))``."""
    make_cluster("c1", nodes=2, gpus=2)
    group = make_group("g1")
    a, qa = make_tenant("team-a", group, devices_milli=2000, flavor=A100)
    b, qb = make_tenant("team-b", group, devices_milli=2000, flavor=A100)
    return group, (a, qa), (b, qb)


def two_team_world(cohort=None, *, viewer=False, root=False):
    """:func:`two_team_cohort` (or the given one) with its users: ``{"group", "qa", "qb",
    "alice" (member of team-a), "bob" (member of team-b)}``, plus ``"vera"`` (viewer of
    team-a) and ``"root"`` (platform admin) when asked."""
    group, (a, qa), (b, qb) = cohort or two_team_cohort()
    world = {
        "group": group,
        "qa": qa,
        "qb": qb,
        "alice": make_user("alice", a, "member"),
        "bob": make_user("bob", b, "member"),
    }
    if viewer:
        world["vera"] = make_user("vera", a, "viewer")
    if root:
        world["root"] = make_user("root", is_superuser=True)
    return world
